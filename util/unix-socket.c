/* Unix stream sockets.  Only socket files are ever removed, so a path
 * typed wrongly can never delete a user's file. */
#include "qemu/unix-socket.h"
#include "qemu/option.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static bool make_addr(const char *path, struct sockaddr_un *addr,
                      GError **errp)
{
    *addr = (struct sockaddr_un){ .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof(addr->sun_path)) {
        g_set_error(errp, ILLAN_ERROR, 0, "socket path '%s' is too long",
                    path);
        return false;
    }
    strcpy(addr->sun_path, path);
    return true;
}

void unix_socket_unlink(const char *path)
{
    struct stat st;

    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
        unlink(path);
    }
}

static int fail(int fd, GError **errp, const char *what, const char *path)
{
    g_set_error(errp, ILLAN_ERROR, 0, "Failed to %s '%s': %s", what, path,
                g_strerror(errno));
    if (fd >= 0) {
        close(fd);
    }
    return -1;
}

int unix_socket_connect(const char *path, GError **errp)
{
    struct sockaddr_un addr;
    int fd;

    if (!make_addr(path, &addr, errp)) {
        return -1;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        return fail(fd, errp, "connect to", path);
    }
    return fd;
}

int unix_socket_listen(const char *path, GError **errp)
{
    struct sockaddr_un addr;
    int fd;

    if (!make_addr(path, &addr, errp)) {
        return -1;
    }
    unix_socket_unlink(path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
        listen(fd, 8) < 0) {
        return fail(fd, errp, "listen on", path);
    }
    return fd;
}
