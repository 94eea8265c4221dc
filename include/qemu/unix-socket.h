/* Unix stream sockets for the monitor and the qtest server. */
#ifndef QEMU_UNIX_SOCKET_H
#define QEMU_UNIX_SOCKET_H

#include <glib.h>

/* A connected socket, or -1 with "Failed to connect to 'PATH': ...". */
int unix_socket_connect(const char *path, GError **errp);
/* A listening socket; a stale socket file at @path is replaced, any other
 * file is left alone and the bind fails. */
int unix_socket_listen(const char *path, GError **errp);
/* Removes @path only if it is a socket. */
void unix_socket_unlink(const char *path);

#endif
