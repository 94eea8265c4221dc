/* Socket addresses for the socket backends (see net/socket-addr.h). */
#include "net/socket-addr.h"
#include "qemu/unix-socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static const char *opt_in(const QemuOpts *opts, const char *prefix,
                          const char *name)
{
    g_autofree char *key = g_strdup_printf("%s.%s", prefix, name);

    return qemu_opt_get(opts, key);
}

bool net_socket_addr_given(const QemuOpts *opts, const char *prefix)
{
    size_t len = strlen(prefix);

    for (guint i = 0; i < qemu_opts_count(opts); i++) {
        const char *key = qemu_opts_key(opts, i);

        if (!strncmp(key, prefix, len) && key[len] == '.') {
            return true;
        }
    }
    return false;
}

/* Fails if PREFIX.@name is set, since PREFIX.type=@type has no use for it. */
static bool refuse_keys(const QemuOpts *opts, const char *prefix,
                        const char *const *names, const char *type,
                        GError **errp)
{
    for (; *names; names++) {
        if (opt_in(opts, prefix, *names)) {
            g_set_error(errp, ILLAN_ERROR, 0,
                        "Parameter '%s.%s' does not apply to %s.type=%s",
                        prefix, *names, prefix, type);
            return false;
        }
    }
    return true;
}

/* PREFIX.@name as a bool: -1 when absent. */
static bool opt_bool(const QemuOpts *opts, const char *prefix,
                     const char *name, int *out, GError **errp)
{
    const char *value = opt_in(opts, prefix, name);
    g_autofree char *key = g_strdup_printf("%s.%s", prefix, name);
    bool b;

    *out = -1;
    if (!value) {
        return true;
    }
    if (!qemu_parse_bool(key, value, &b, errp)) {
        return false;
    }
    *out = b;
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

/*
 * The family ipv4= and ipv6= ask for, as QEMU reads them: only one of
 * them on, or the other off, picks that family; neither, or both on,
 * leaves the choice to the host name.  A listener bound to an IPv6
 * address serves IPv4 too only when nothing restricted it.
 */
static bool inet_family(const char *prefix, int ipv4, int ipv6,
                        int *family, int *v6only, GError **errp)
{
    if (ipv4 == 0 && ipv6 == 0) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "%s.ipv4=off and %s.ipv6=off leave no address family",
                    prefix, prefix);
        return false;
    }
    if ((ipv4 == 1) == (ipv6 == 1) && ipv4 != 0 && ipv6 != 0) {
        *family = AF_UNSPEC;
        *v6only = 0;
    } else if (ipv6 == 1 || ipv4 == 0) {
        *family = AF_INET6;
        *v6only = 1;
    } else {
        *family = AF_INET;
        *v6only = -1;
    }
    return true;
}

/* The first address getaddrinfo() gives for @host, in @family
 * (AF_UNSPEC for either). */
static bool resolve_host(const char *prefix, const char *host, int family,
                         uint16_t port, NetSocketAddr *addr, GError **errp)
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
    memcpy(&addr->sa, res->ai_addr, res->ai_addrlen);
    addr->len = res->ai_addrlen;
    freeaddrinfo(res);
    if (addr->sa.ss_family == AF_INET6) {
        ((struct sockaddr_in6 *)&addr->sa)->sin6_port = htons(port);
    } else {
        ((struct sockaddr_in *)&addr->sa)->sin_port = htons(port);
    }
    return true;
}

static bool parse_inet(const QemuOpts *opts, const char *prefix,
                       int family, NetSocketAddr *addr, GError **errp)
{
    static const char *const others[] = { "path", "abstract", "tight", "str",
                                          NULL };
    const char *host = opt_in(opts, prefix, "host");
    const char *port_str = opt_in(opts, prefix, "port");
    int ipv4, ipv6, chosen;
    uint16_t port;

    if (!refuse_keys(opts, prefix, others, "inet", errp) ||
        !opt_bool(opts, prefix, "ipv4", &ipv4, errp) ||
        !opt_bool(opts, prefix, "ipv6", &ipv6, errp) ||
        !inet_family(prefix, ipv4, ipv6, &chosen, &addr->v6only, errp)) {
        return false;
    }
    if (chosen != AF_UNSPEC && family != AF_UNSPEC && chosen != family) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "%s.ipv4 and %s.ipv6 ask for IPv%d, but the other "
                    "address is IPv%d", prefix, prefix,
                    chosen == AF_INET ? 4 : 6, family == AF_INET ? 4 : 6);
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
        !resolve_host(prefix, host, chosen != AF_UNSPEC ? chosen : family,
                      port, addr, errp)) {
        return false;
    }
    addr->type = NET_SOCKET_INET;
    addr->desc = g_strdup_printf(strchr(host, ':') ? "[%s]:%u" : "%s:%u",
                                 host, port);
    return true;
}

/* A Linux abstract name starts with a NUL byte and has no file; "tight"
 * (the default) makes the address exactly as long as the name. */
static bool parse_unix(const QemuOpts *opts, const char *prefix,
                       NetSocketAddr *addr, GError **errp)
{
    static const char *const others[] = { "host", "port", "ipv4", "ipv6",
                                          "str", NULL };
    struct sockaddr_un *sun = (struct sockaddr_un *)&addr->sa;
    const char *path = opt_in(opts, prefix, "path");
    int abstract, tight;
    size_t max;

    if (!refuse_keys(opts, prefix, others, "unix", errp) ||
        !opt_bool(opts, prefix, "abstract", &abstract, errp) ||
        !opt_bool(opts, prefix, "tight", &tight, errp)) {
        return false;
    }
    if (tight >= 0 && abstract != 1) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter '%s.tight' applies only with %s.abstract=on",
                    prefix, prefix);
        return false;
    }
    if (!path || !*path) {
        g_set_error(errp, ILLAN_ERROR, 0, "%s.type=unix needs %s.path",
                    prefix, prefix);
        return false;
    }
    max = sizeof(sun->sun_path) - 1;
    if (strlen(path) > max) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter '%s.path' is too long (at most %zu bytes)",
                    prefix, max);
        return false;
    }
    memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    addr->type = NET_SOCKET_UNIX;
    addr->abstract = abstract == 1;
    if (addr->abstract) {
        memcpy(sun->sun_path + 1, path, strlen(path));
        addr->len = tight == 0 ? sizeof(*sun)
                    : offsetof(struct sockaddr_un, sun_path) + 1 +
                      strlen(path);
        addr->desc = g_strdup_printf("@%s", path);
    } else {
        strcpy(sun->sun_path, path);
        addr->len = sizeof(*sun);
        addr->desc = g_strdup(path);
    }
    return true;
}

static const char *socktype_name(int socktype)
{
    return socktype == SOCK_STREAM ? "stream" : "datagram";
}

/* An inherited socket, by number, as QEMU takes one without a monitor. */
static bool parse_fd(const QemuOpts *opts, const char *prefix, int socktype,
                     NetSocketAddr *addr, GError **errp)
{
    static const char *const others[] = { "host", "port", "ipv4", "ipv6",
                                          "path", "abstract", "tight",
                                          NULL };
    const char *str = opt_in(opts, prefix, "str");
    struct stat st;
    int type;
    socklen_t type_len = sizeof(type);
    uint64_t n;

    if (!refuse_keys(opts, prefix, others, "fd", errp)) {
        return false;
    }
    if (!str || !*str) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "%s.type=fd needs %s.str (a descriptor number)",
                    prefix, prefix);
        return false;
    }
    if (!g_ascii_isdigit(str[0]) ||
        !g_ascii_string_to_unsigned(str, 10, 0, G_MAXINT, &n, NULL)) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter '%s.str' expects a file descriptor number, "
                    "not '%s' (illan has no named descriptors)",
                    prefix, str);
        return false;
    }
    if (fstat(n, &st) < 0 || !S_ISSOCK(st.st_mode)) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "File descriptor '%s' is not a socket", str);
        return false;
    }
    if (getsockopt(n, SOL_SOCKET, SO_TYPE, &type, &type_len) < 0 ||
        type != socktype) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "File descriptor '%s' is not a %s socket", str,
                    socktype_name(socktype));
        return false;
    }
    /* Ours now: a child illan starts (an exec: migration) must not
     * inherit it. */
    fcntl(n, F_SETFD, FD_CLOEXEC);
    addr->type = NET_SOCKET_FD;
    addr->fd = n;
    addr->desc = g_strdup_printf("fd %s", str);
    return true;
}

bool net_socket_parse_addr(const QemuOpts *opts, const char *prefix,
                           int inet_family, int socktype,
                           NetSocketAddr *addr, GError **errp)
{
    const char *type = opt_in(opts, prefix, "type");

    memset(addr, 0, sizeof(*addr));
    addr->fd = -1;
    addr->v6only = -1;
    if (!type) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter '%s.type' is missing (use %s.type=inet or "
                    "%s.type=unix)", prefix, prefix, prefix);
        return false;
    }
    if (!strcmp(type, "inet")) {
        return parse_inet(opts, prefix, inet_family, addr, errp);
    }
    if (!strcmp(type, "unix")) {
        return parse_unix(opts, prefix, addr, errp);
    }
    if (!strcmp(type, "fd")) {
        return parse_fd(opts, prefix, socktype, addr, errp);
    }
    g_set_error(errp, ILLAN_ERROR, 0,
                "Parameter '%s.type' expects 'inet', 'unix' or 'fd', "
                "not '%s'", prefix, type);
    return false;
}

void net_socket_addr_clear(NetSocketAddr *addr)
{
    g_clear_pointer(&addr->desc, g_free);
}

/* A socket file left by a run that did not clean up would make bind()
 * fail; anything other than a socket is left alone, and bind() says so. */
int net_socket_new_bound(int socktype, const NetSocketAddr *addr,
                         GError **errp)
{
    static const int on = 1;
    int fd = socket(addr->sa.ss_family, socktype | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Failed to create a socket for %s: %s", addr->desc,
                    g_strerror(errno));
        return -1;
    }
    if (addr->type == NET_SOCKET_UNIX && !addr->abstract) {
        unix_socket_unlink(((const struct sockaddr_un *)&addr->sa)->sun_path);
    } else if (socktype == SOCK_STREAM) {
        /* A restarted server must not wait out its old connections. */
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    }
    if (addr->sa.ss_family == AF_INET6 && addr->v6only >= 0) {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &addr->v6only,
                   sizeof(addr->v6only));
    }
    if (bind(fd, (const struct sockaddr *)&addr->sa, addr->len) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "Failed to bind to %s: %s",
                    addr->desc, g_strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* Removes the socket file of a unix address this process bound. */
void net_socket_unlink(const NetSocketAddr *addr)
{
    if (addr->type == NET_SOCKET_UNIX && !addr->abstract) {
        unlink(((const struct sockaddr_un *)&addr->sa)->sun_path);
    }
}

/* The name in a unix address: the path, or an abstract name (after its
 * NUL byte); empty for an unnamed socket. */
static char *unix_name(const struct sockaddr_un *sun, socklen_t len,
                       bool *abstract)
{
    size_t n = len > offsetof(struct sockaddr_un, sun_path)
               ? len - offsetof(struct sockaddr_un, sun_path) : 0;

    *abstract = n > 0 && sun->sun_path[0] == '\0';
    if (*abstract) {
        return g_strndup(sun->sun_path + 1, n - 1);
    }
    return g_strndup(sun->sun_path, n);
}

static void inet_host_port(const struct sockaddr_storage *sa, char *host,
                           size_t host_len, unsigned *port)
{
    if (sa->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

        inet_ntop(AF_INET6, &in6->sin6_addr, host, host_len);
        *port = ntohs(in6->sin6_port);
    } else {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

        inet_ntop(AF_INET, &in->sin_addr, host, host_len);
        *port = ntohs(in->sin_port);
    }
}

char *net_socket_uri(const struct sockaddr_storage *sa, socklen_t len)
{
    char host[INET6_ADDRSTRLEN];
    unsigned port;
    bool abstract;
    g_autofree char *name = NULL;

    if (sa->ss_family == AF_UNIX) {
        name = unix_name((const struct sockaddr_un *)sa, len, &abstract);
        return g_strdup_printf("unix:%s", name);
    }
    inet_host_port(sa, host, sizeof(host), &port);
    return g_strdup_printf("tcp:%s:%u", host, port);
}

GVariant *net_socket_addr_variant(const struct sockaddr_storage *sa,
                                  socklen_t len)
{
    GVariantBuilder b;
    char host[INET6_ADDRSTRLEN];
    unsigned port;
    bool abstract;
    g_autofree char *name = NULL;
    g_autofree char *port_str = NULL;

    g_variant_builder_init(&b, G_VARIANT_TYPE_VARDICT);
    if (sa->ss_family == AF_UNIX) {
        name = unix_name((const struct sockaddr_un *)sa, len, &abstract);
        g_variant_builder_add(&b, "{sv}", "type", g_variant_new_string("unix"));
        g_variant_builder_add(&b, "{sv}", "path", g_variant_new_string(name));
        if (abstract) {
            g_variant_builder_add(&b, "{sv}", "abstract",
                                  g_variant_new_boolean(TRUE));
            g_variant_builder_add(&b, "{sv}", "tight", g_variant_new_boolean(
                len < sizeof(struct sockaddr_un)));
        }
        return g_variant_builder_end(&b);
    }
    inet_host_port(sa, host, sizeof(host), &port);
    port_str = g_strdup_printf("%u", port);
    g_variant_builder_add(&b, "{sv}", "type", g_variant_new_string("inet"));
    g_variant_builder_add(&b, "{sv}", "host", g_variant_new_string(host));
    g_variant_builder_add(&b, "{sv}", "port", g_variant_new_string(port_str));
    return g_variant_builder_end(&b);
}

const char *net_socket_fd_family(int fd)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);

    if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
        return NULL;
    }
    switch (sa.ss_family) {
    case AF_UNIX:
        return "unix";
    case AF_INET:
    case AF_INET6:
        return "inet";
    default:
        return NULL;
    }
}
