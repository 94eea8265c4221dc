/*
 * Descriptors handed to illan (see qemu/passed-fds.h).  An inherited
 * descriptor is known by its number and the file it referred to at
 * start, so a number illan reused after closing it is not mistaken for
 * it.  Taking one sets close-on-exec (a child illan starts must not get
 * it), which is also how a taker that never calls passed_fds_take() is
 * recognised.
 */
#include "qemu/passed-fds.h"
#include "qemu/option.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef AF_XDP
#define AF_XDP 44
#endif

typedef struct Inherited {
    int fd;
    dev_t dev;
    ino_t ino;
    bool taken;
} Inherited;

static GArray *inherited;           /* Inherited */
static GHashTable *named;           /* name -> fd (GINT_TO_POINTER) */

static bool same_file(const Inherited *in)
{
    struct stat st;

    return fstat(in->fd, &st) == 0 && st.st_dev == in->dev &&
           st.st_ino == in->ino;
}

static void record(int fd)
{
    struct stat st;
    int flags = fcntl(fd, F_GETFD);

    if (flags < 0 || (flags & FD_CLOEXEC) || fstat(fd, &st) < 0) {
        return;
    }
    g_array_append_val(inherited, ((Inherited){ fd, st.st_dev, st.st_ino,
                                                false }));
}

void passed_fds_record_inherited(void)
{
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *de;

    inherited = g_array_new(FALSE, FALSE, sizeof(Inherited));
    if (!dir) {
        return;                 /* no /proc: no fd:N at all */
    }
    while ((de = readdir(dir))) {
        char *end;
        long fd = strtol(de->d_name, &end, 10);

        if (*end == '\0' && end != de->d_name && fd != dirfd(dir)) {
            record(fd);
        }
    }
    closedir(dir);
}

static Inherited *find_inherited(int fd)
{
    for (guint i = 0; inherited && i < inherited->len; i++) {
        Inherited *in = &g_array_index(inherited, Inherited, i);

        if (in->fd == fd) {
            return in;
        }
    }
    return NULL;
}

bool passed_fds_take(int fd)
{
    Inherited *in = find_inherited(fd);

    if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
        return false;
    }
    if (in) {
        in->taken = true;
    }
    return true;
}

static bool is_af_xdp(int fd)
{
    int domain = 0;
    socklen_t len = sizeof(domain);

    return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
           domain == AF_XDP;
}

/* Why @fd may not be used, or NULL.  @xsk: for af-xdp's sock-fds,
 * which take only AF_XDP sockets, where fd: takes anything else. */
static const char *refusal(int fd, Inherited *in, bool xsk)
{
    static const char *const standard[] = {
        "it is illan's standard input", "it is illan's standard output",
        "it is illan's standard error",
    };
    int flags = fcntl(fd, F_GETFD);

    if (flags < 0) {
        return "it is not open";
    }
    if (fd < 3) {
        return standard[fd];
    }
    if (!in || !same_file(in)) {
        return "it is one of illan's own descriptors";
    }
    if (in->taken || (flags & FD_CLOEXEC)) {
        return "another option took it";
    }
    if (is_af_xdp(fd) != xsk) {
        return xsk ? "it is not an AF_XDP socket"
                   : "it is an AF_XDP socket, for af-xdp's sock-fds";
    }
    return NULL;
}

const char *passed_fds_xsk_refusal(int fd)
{
    return refusal(fd, find_inherited(fd), true);
}

int passed_fds_claim_inherited(int fd, GError **errp)
{
    Inherited *in = find_inherited(fd);
    const char *why = refusal(fd, in, false);

    if (why) {
        g_set_error(errp, ILLAN_ERROR, 0, "descriptor %d was not handed to "
                    "illan for this: %s (only a descriptor inherited at "
                    "start and not taken by another option is accepted; "
                    "pass one with getfd and use its name)", fd, why);
        return -1;
    }
    passed_fds_take(fd);
    return fd;
}

static void close_fd(gpointer fd)
{
    close(GPOINTER_TO_INT(fd));
}

bool passed_fds_add_named(const char *name, int fd, GError **errp)
{
    if (g_ascii_isdigit(name[0])) {
        close(fd);
        g_set_error(errp, ILLAN_ERROR, 0, "Parameter 'fdname' expects a name "
                    "not starting with a digit");
        return false;
    }
    if (!named) {
        named = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                      close_fd);
    }
    g_hash_table_replace(named, g_strdup(name), GINT_TO_POINTER(fd));
    return true;
}

bool passed_fds_close_named(const char *name, GError **errp)
{
    if (!named || !g_hash_table_remove(named, name)) {
        g_set_error(errp, ILLAN_ERROR, 0, "File descriptor named '%s' not "
                    "found", name);
        return false;
    }
    return true;
}

int passed_fds_claim_named(const char *name, GError **errp)
{
    gpointer key, fd;

    if (!named || !g_hash_table_steal_extended(named, name, &key, &fd)) {
        g_set_error(errp, ILLAN_ERROR, 0, "File descriptor named '%s' has "
                    "not been found", name);
        return -1;
    }
    g_free(key);
    return GPOINTER_TO_INT(fd);
}

void passed_fds_cleanup(void)
{
    g_clear_pointer(&named, g_hash_table_unref);
    g_clear_pointer(&inherited, g_array_unref);
}
