/*
 * Socket addresses for the socket backends, written as QEMU's
 * SocketAddress options:
 *   PREFIX.type=inet  PREFIX.host, PREFIX.port, PREFIX.ipv4, PREFIX.ipv6
 *   PREFIX.type=unix  PREFIX.path, PREFIX.abstract, PREFIX.tight
 *   PREFIX.type=fd    PREFIX.str (an inherited socket's number)
 */
#ifndef NET_SOCKET_ADDR_H
#define NET_SOCKET_ADDR_H

#include <glib.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "qemu/option.h"

/* The keys net_socket_parse_addr() reads after "PREFIX.". */
#define NET_SOCKET_ADDR_KEYS(p) \
    p ".type", p ".host", p ".port", p ".ipv4", p ".ipv6", p ".path", \
    p ".abstract", p ".tight", p ".str"

typedef enum NetSocketAddrType {
    NET_SOCKET_INET,
    NET_SOCKET_UNIX,
    NET_SOCKET_FD,
} NetSocketAddrType;

typedef struct NetSocketAddr {
    NetSocketAddrType type;
    struct sockaddr_storage sa;     /* inet and unix */
    socklen_t len;
    int v6only;                     /* inet: IPV6_V6ONLY for a bound IPv6
                                       socket, from ipv4/ipv6; -1 when
                                       IPv6 was not asked for */
    bool abstract;                  /* unix: no file behind it */
    int fd;                         /* fd: the inherited socket, else -1 */
    char *desc;                     /* for messages: "127.0.0.1:5555",
                                       "[::1]:5555", the path, "fd 5" */
} NetSocketAddr;

/*
 * Parses PREFIX.*.  An inet host resolves in @inet_family (AF_UNSPEC for
 * either) unless PREFIX.ipv4/ipv6 choose; a PREFIX.type=fd socket must be
 * of @socktype.  The caller owns addr->fd and frees with
 * net_socket_addr_clear().
 */
bool net_socket_parse_addr(const QemuOpts *opts, const char *prefix,
                           int inet_family, int socktype,
                           NetSocketAddr *addr, GError **errp);
void net_socket_addr_clear(NetSocketAddr *addr);
/* True when PREFIX.something is set. */
bool net_socket_addr_given(const QemuOpts *opts, const char *prefix);
/* A socket of @socktype bound to the inet or unix @addr (a stale unix
 * socket file is removed first). */
int net_socket_new_bound(int socktype, const NetSocketAddr *addr,
                         GError **errp);
/* Removes the file of a unix socket address; nothing for the others. */
void net_socket_unlink(const NetSocketAddr *addr);

/* QEMU's URI of a socket address: "tcp:HOST:PORT" or "unix:PATH" (an
 * unnamed unix socket gives "unix:"). */
char *net_socket_uri(const struct sockaddr_storage *sa, socklen_t len);
/* QEMU's SocketAddress of it, as an a{sv} dictionary ("type", "host" and
 * "port", or "path" and for an abstract name "abstract" and "tight");
 * a floating reference. */
GVariant *net_socket_addr_variant(const struct sockaddr_storage *sa,
                                  socklen_t len);
/* The address family of @fd's own address as QEMU names it ("inet",
 * "unix"), or NULL. */
const char *net_socket_fd_family(int fd);

#endif
