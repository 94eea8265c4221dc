/* Socket addresses for the socket backends (see net/socket-addr.h). */
#include "net/socket-addr.h"
#include "qemu/unix-socket.h"

#include <errno.h>
#include <netdb.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

static const char *opt_in(const QemuOpts *opts, const char *prefix,
                          const char *name)
{
    g_autofree char *key = g_strdup_printf("%s.%s", prefix, name);

    return qemu_opt_get(opts, key);
}

/* Fails if PREFIX.@name is set, since PREFIX.type=@type has no use for it. */
static bool refuse_key(const QemuOpts *opts, const char *prefix,
                       const char *name, const char *type, GError **errp)
{
    if (opt_in(opts, prefix, name)) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter '%s.%s' does not apply to %s.type=%s",
                    prefix, name, prefix, type);
        return false;
    }
    return true;
}

static bool parse_port(const char *prefix, const char *value,
                       uint16_t *port, GError **errp)
{
    uint64_t v;

    if (!qemu_parse_uint64("port", value, &v, NULL) || v < 1 || v > 65535) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter '%s.port' expects a port number 1-65535, "
                    "not '%s'", prefix, value);
        return false;
    }
    *port = v;
    return true;
}

/* The first address getaddrinfo() gives for @host, in @family
 * (AF_UNSPEC for either). */
static bool resolve_host(const char *prefix, const char *host, int family,
                         uint16_t port, struct sockaddr_storage *addr,
                         socklen_t *addr_len, GError **errp)
{
    struct addrinfo hints = { .ai_family = family };
    struct addrinfo *res;
    int rc = getaddrinfo(host, NULL, &hints, &res);

    if (rc) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter '%s.host': cannot resolve '%s'%s: %s",
                    prefix, host,
                    family == AF_INET ? " as an IPv4 address" :
                    family == AF_INET6 ? " as an IPv6 address" : "",
                    gai_strerror(rc));
        return false;
    }
    memcpy(addr, res->ai_addr, res->ai_addrlen);
    *addr_len = res->ai_addrlen;
    freeaddrinfo(res);
    if (addr->ss_family == AF_INET6) {
        ((struct sockaddr_in6 *)addr)->sin6_port = htons(port);
    } else {
        ((struct sockaddr_in *)addr)->sin_port = htons(port);
    }
    return true;
}

static bool parse_inet(const QemuOpts *opts, const char *prefix,
                       int family, struct sockaddr_storage *addr,
                       socklen_t *addr_len, char **desc, GError **errp)
{
    const char *host = opt_in(opts, prefix, "host");
    const char *port_str = opt_in(opts, prefix, "port");
    uint16_t port;

    if (!refuse_key(opts, prefix, "path", "inet", errp)) {
        return false;
    }
    if (!host || !*host) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "%s.type=inet needs %s.host (a name or an address)",
                    prefix, prefix);
        return false;
    }
    if (!port_str) {
        g_set_error(errp, ILLAN_ERROR, 0, "%s.type=inet needs %s.port",
                    prefix, prefix);
        return false;
    }
    if (!parse_port(prefix, port_str, &port, errp) ||
        !resolve_host(prefix, host, family, port, addr, addr_len, errp)) {
        return false;
    }
    *desc = g_strdup_printf(strchr(host, ':') ? "[%s]:%u" : "%s:%u",
                            host, port);
    return true;
}

static bool parse_unix(const QemuOpts *opts, const char *prefix,
                       struct sockaddr_storage *addr, socklen_t *addr_len,
                       char **desc, GError **errp)
{
    struct sockaddr_un *sun = (struct sockaddr_un *)addr;
    const char *path = opt_in(opts, prefix, "path");

    if (!refuse_key(opts, prefix, "host", "unix", errp) ||
        !refuse_key(opts, prefix, "port", "unix", errp)) {
        return false;
    }
    if (!path || !*path) {
        g_set_error(errp, ILLAN_ERROR, 0, "%s.type=unix needs %s.path",
                    prefix, prefix);
        return false;
    }
    if (strlen(path) >= sizeof(sun->sun_path)) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter '%s.path' is too long (at most %zu bytes)",
                    prefix, sizeof(sun->sun_path) - 1);
        return false;
    }
    memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    strcpy(sun->sun_path, path);
    *addr_len = sizeof(*sun);
    *desc = g_strdup(path);
    return true;
}

/*
 * Reads PREFIX.type and the keys it needs into @addr, and describes the
 * address in @desc ("127.0.0.1:5555", "[::1]:5555" or the path) for
 * messages.  An inet host resolves in @inet_family (AF_UNSPEC for either).
 */
bool net_socket_parse_addr(const QemuOpts *opts, const char *prefix,
                           int inet_family, struct sockaddr_storage *addr,
                           socklen_t *addr_len, char **desc, GError **errp)
{
    const char *type = opt_in(opts, prefix, "type");

    if (!type) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter '%s.type' is missing (use %s.type=inet or "
                    "%s.type=unix)", prefix, prefix, prefix);
        return false;
    }
    if (!strcmp(type, "inet")) {
        return parse_inet(opts, prefix, inet_family, addr, addr_len, desc,
                          errp);
    }
    if (!strcmp(type, "unix")) {
        return parse_unix(opts, prefix, addr, addr_len, desc, errp);
    }
    g_set_error(errp, ILLAN_ERROR, 0,
                "Parameter '%s.type' expects 'inet' or 'unix', not '%s'",
                prefix, type);
    return false;
}

/* A socket file left by a run that did not clean up would make bind()
 * fail; anything other than a socket is left alone, and bind() says so. */
/* A new socket of @socktype bound to @addr, or -1. */
int net_socket_new_bound(int socktype, const struct sockaddr_storage *addr,
                         socklen_t addr_len, const char *desc, GError **errp)
{
    static const int on = 1;
    int fd = socket(addr->ss_family, socktype | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Failed to create a socket for %s: %s", desc,
                    g_strerror(errno));
        return -1;
    }
    if (addr->ss_family == AF_UNIX) {
        unix_socket_unlink(((const struct sockaddr_un *)addr)->sun_path);
    } else if (socktype == SOCK_STREAM) {
        /* A restarted server must not wait out its old connections. */
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    }
    if (bind(fd, (const struct sockaddr *)addr, addr_len) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "Failed to bind to %s: %s", desc,
                    g_strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Removes the socket file of a unix address this process bound. */
void net_socket_unlink(const struct sockaddr_storage *addr)
{
    if (addr->ss_family == AF_UNIX) {
        unlink(((const struct sockaddr_un *)addr)->sun_path);
    }
}
