/*
 * Socket addresses for the socket backends, written as QEMU's
 * SocketAddress options: PREFIX.type=inet with PREFIX.host and
 * PREFIX.port, or PREFIX.type=unix with PREFIX.path.
 */
#ifndef NET_SOCKET_ADDR_H
#define NET_SOCKET_ADDR_H

#include <glib.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "qemu/option.h"

/* Parses PREFIX.*; @inet_family is AF_UNSPEC, AF_INET or AF_INET6.
 * *desc (caller frees) names the address for messages. */
bool net_socket_parse_addr(const QemuOpts *opts, const char *prefix,
                           int inet_family, struct sockaddr_storage *addr,
                           socklen_t *addr_len, char **desc, GError **errp);
/* A socket of @socktype bound to @addr (a stale unix socket file is
 * removed first). */
int net_socket_new_bound(int socktype, const struct sockaddr_storage *addr,
                         socklen_t addr_len, const char *desc, GError **errp);
/* Removes the file of a unix socket address; nothing for inet. */
void net_socket_unlink(const struct sockaddr_storage *addr);

#endif
