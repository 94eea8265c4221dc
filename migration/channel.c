/*
 * Migration channels.  Each URI becomes one file descriptor; exec: runs
 * the command through /bin/sh with the stream on its stdin or stdout.
 */
#include "migration/channel.h"
#include "qemu/option.h"
#include "qemu/unix-socket.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct MigrationChannel {
    int fd;
    GPid child;                 /* exec:, or 0 */
    int listen_fd;              /* unix: incoming, until accepted */
    char *listen_path;
    guint source;               /* the watch or idle that calls ready */
    MigrationChannelReady ready;
    void *opaque;
};

static MigrationChannel *channel_new(void)
{
    MigrationChannel *ch = g_new0(MigrationChannel, 1);

    ch->fd = ch->listen_fd = -1;
    return ch;
}

int migration_channel_fd(const MigrationChannel *ch)
{
    return ch->fd;
}

/* "PATH[,offset=N]" of a file: URI. */
static bool parse_file_uri(const char *rest, char **path, off_t *offset,
                           GError **errp)
{
    const char *comma = strstr(rest, ",offset=");
    uint64_t off = 0;

    if (comma && !qemu_parse_size("offset", comma + strlen(",offset="), 0,
                                  &off, errp)) {
        return false;
    }
    *path = comma ? g_strndup(rest, comma - rest) : g_strdup(rest);
    *offset = off;
    return true;
}

static bool open_file(MigrationChannel *ch, const char *rest, bool output,
                      GError **errp)
{
    g_autofree char *path = NULL;
    off_t offset;
    int flags = output ? O_WRONLY | O_CREAT : O_RDONLY;

    if (!parse_file_uri(rest, &path, &offset, errp)) {
        return false;
    }
    if (output && offset == 0) {
        flags |= O_TRUNC;
    }
    ch->fd = open(path, flags | O_CLOEXEC, 0644);
    if (ch->fd < 0 || lseek(ch->fd, offset, SEEK_SET) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "cannot open '%s': %s", path,
                    g_strerror(errno));
        return false;
    }
    return true;
}

static bool use_fd(MigrationChannel *ch, const char *rest, GError **errp)
{
    uint64_t n;

    if (!g_ascii_isdigit(rest[0])) {
        g_set_error(errp, ILLAN_ERROR, 0, "fd:%s: only a descriptor number "
                    "is supported (illan has no getfd)", rest);
        return false;
    }
    if (!qemu_parse_uint64("fd", rest, &n, errp)) {
        return false;
    }
    if (n > INT32_MAX || fcntl((int)n, F_GETFD) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "fd:%s is not an open descriptor",
                    rest);
        return false;
    }
    ch->fd = n;
    return true;
}

static bool spawn_exec(MigrationChannel *ch, const char *cmd, bool output,
                       GError **errp)
{
    const char *argv[] = { "/bin/sh", "-c", cmd, NULL };

    if (!g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                  G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL,
                                  &ch->child, output ? &ch->fd : NULL,
                                  output ? NULL : &ch->fd, NULL, errp)) {
        return false;
    }
    return true;
}

/* Splits "proto:rest"; known but unsupported protocols get their own
 * message. */
static const char *uri_rest(const char *uri, const char *proto)
{
    size_t n = strlen(proto);

    return !strncmp(uri, proto, n) && uri[n] == ':' ? uri + n + 1 : NULL;
}

static bool unknown_protocol(const char *uri, GError **errp)
{
    static const char *const unsupported[] = { "tcp", "vsock", "rdma" };

    for (size_t i = 0; i < G_N_ELEMENTS(unsupported); i++) {
        if (uri_rest(uri, unsupported[i])) {
            g_set_error(errp, ILLAN_ERROR, 0, "%s: migration is not supported "
                        "by illan (use file:, unix:, fd: or exec:)",
                        unsupported[i]);
            return false;
        }
    }
    g_set_error(errp, ILLAN_ERROR, 0, "unknown migration protocol: %s", uri);
    return false;
}

MigrationChannel *migration_channel_open_outgoing(const char *uri,
                                                  GError **errp)
{
    MigrationChannel *ch = channel_new();
    const char *rest;
    bool ok;

    if ((rest = uri_rest(uri, "file"))) {
        ok = open_file(ch, rest, true, errp);
    } else if ((rest = uri_rest(uri, "unix"))) {
        ch->fd = unix_socket_connect(rest, errp);
        ok = ch->fd >= 0;
    } else if ((rest = uri_rest(uri, "fd"))) {
        ok = use_fd(ch, rest, errp);
    } else if ((rest = uri_rest(uri, "exec"))) {
        ok = spawn_exec(ch, rest, true, errp);
    } else {
        ok = unknown_protocol(uri, errp);
    }
    if (!ok) {
        migration_channel_close(ch, NULL);
        return NULL;
    }
    return ch;
}

static gboolean call_ready(gpointer opaque)
{
    MigrationChannel *ch = opaque;

    ch->source = 0;
    ch->ready(ch, ch->opaque);
    return G_SOURCE_REMOVE;
}

/* unix: the first connection is the source; nobody else gets in. */
static gboolean on_connect(gint fd, GIOCondition cond, gpointer opaque)
{
    MigrationChannel *ch = opaque;
    int conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

    (void)cond;
    if (conn < 0) {
        return G_SOURCE_CONTINUE;
    }
    close(ch->listen_fd);
    ch->listen_fd = -1;
    ch->fd = conn;
    ch->source = 0;
    ch->ready(ch, ch->opaque);
    return G_SOURCE_REMOVE;
}

MigrationChannel *migration_channel_open_incoming(const char *uri,
                                                  MigrationChannelReady ready,
                                                  void *opaque,
                                                  GError **errp)
{
    MigrationChannel *ch = channel_new();
    const char *rest;
    bool ok;

    ch->ready = ready;
    ch->opaque = opaque;
    if ((rest = uri_rest(uri, "unix"))) {
        ch->listen_fd = unix_socket_listen(rest, errp);
        if (ch->listen_fd >= 0) {
            ch->listen_path = g_strdup(rest);
            ch->source = g_unix_fd_add(ch->listen_fd, G_IO_IN, on_connect,
                                       ch);
        }
        ok = ch->listen_fd >= 0;
    } else {
        if ((rest = uri_rest(uri, "file"))) {
            ok = open_file(ch, rest, false, errp);
        } else if ((rest = uri_rest(uri, "fd"))) {
            ok = use_fd(ch, rest, errp);
        } else if ((rest = uri_rest(uri, "exec"))) {
            ok = spawn_exec(ch, rest, false, errp);
        } else {
            ok = unknown_protocol(uri, errp);
        }
        if (ok) {
            ch->source = g_idle_add(call_ready, ch);
        }
    }
    if (!ok) {
        migration_channel_close(ch, NULL);
        return NULL;
    }
    return ch;
}

static bool wait_child(GPid child, GError **errp)
{
    int status;

    if (waitpid(child, &status, 0) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "exec: waiting for the command: %s",
                    g_strerror(errno));
        return false;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "exec: the command %s %d",
                    WIFEXITED(status) ? "exited with status"
                                      : "was killed by signal",
                    WIFEXITED(status) ? WEXITSTATUS(status)
                                      : WTERMSIG(status));
        return false;
    }
    return true;
}

bool migration_channel_close(MigrationChannel *ch, GError **errp)
{
    bool ok = true;

    if (!ch) {
        return true;
    }
    if (ch->source) {
        g_source_remove(ch->source);
    }
    if (ch->fd >= 0 && close(ch->fd) < 0 && errno != EINTR) {
        g_set_error(errp, ILLAN_ERROR, 0, "closing the channel: %s",
                    g_strerror(errno));
        ok = false;
    }
    if (ch->listen_fd >= 0) {
        close(ch->listen_fd);
    }
    if (ch->listen_path) {
        unix_socket_unlink(ch->listen_path);
        g_free(ch->listen_path);
    }
    if (ch->child) {
        ok = wait_child(ch->child, ok ? errp : NULL) && ok;
    }
    g_free(ch);
    return ok;
}
