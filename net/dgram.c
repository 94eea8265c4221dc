/*
 * -netdev dgram: frames over datagram sockets, one Ethernet frame per
 * datagram and no header, as QEMU's dgram backend carries them.
 *
 *   -netdev dgram,id=ID,local.type=inet,local.host=H,local.port=P,
 *                 remote.type=inet,remote.host=H,remote.port=P
 *   -netdev dgram,id=ID,local.type=unix,local.path=PATH,
 *                 remote.type=unix,remote.path=PATH
 *
 * The socket is bound to the local address and sends to the remote one; it
 * takes datagrams from any sender.  The remote address is required, as in
 * QEMU: without one, every frame the guest sent would be a tx error, and a
 * netdev that cannot send is better refused at start than found later.
 *
 * This file also holds the socket-address helpers that net/stream.c uses.
 */
#include "net/net.h"
#include "qemu/module.h"
#include "qemu/option.h"

#include <errno.h>
#include <glib-unix.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/*
 * Socket addresses, written as QEMU's SocketAddress options:
 * PREFIX.type=inet with PREFIX.host and PREFIX.port, or PREFIX.type=unix
 * with PREFIX.path.  net/stream.c declares these three as well.
 */
bool net_socket_parse_addr(const QemuOpts *opts, const char *prefix,
                           int inet_family, struct sockaddr_storage *addr,
                           socklen_t *addr_len, char **desc, GError **errp);
int net_socket_new_bound(int socktype, const struct sockaddr_storage *addr,
                         socklen_t addr_len, const char *desc, GError **errp);
void net_socket_unlink(const struct sockaddr_storage *addr);

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
static void unlink_stale_socket(const char *path)
{
    struct stat st;

    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
        unlink(path);
    }
}

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
        unlink_stale_socket(((const struct sockaddr_un *)addr)->sun_path);
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

typedef struct DgramState {
    NetClientState *nc;
    char *id;
    int fd;
    guint watch;
    struct sockaddr_storage local;      /* ss_family 0 until bound */
    struct sockaddr_storage remote;
    socklen_t remote_len;
    /* Receive slots, allocated once: NET_BATCH_MAX of NET_FRAME_MAX. */
    uint8_t *slots;
    struct iovec iovs[NET_BATCH_MAX];
    struct mmsghdr msgs[NET_BATCH_MAX];
    uint64_t oversized;                 /* datagrams too big for a frame */
} DgramState;

/* Such a datagram is no frame of ours; it cannot reach the core's
 * counters, so it is counted here and reported. */
static void drop_oversized(DgramState *s)
{
    s->oversized++;
    fprintf(stderr, "illan: dgram netdev '%s': dropped a datagram larger "
            "than %d bytes (%" PRIu64 " so far)\n",
            s->id, NET_FRAME_MAX, s->oversized);
}

/* Takes every queued datagram, up to a batch, with one system call. */
static gboolean dgram_readable(gint fd, GIOCondition cond, gpointer opaque)
{
    DgramState *s = opaque;
    NetFrame frames[NET_BATCH_MAX];
    unsigned n = 0;
    int got = recvmmsg(fd, s->msgs, NET_BATCH_MAX, MSG_DONTWAIT, NULL);

    (void)cond;
    for (int i = 0; i < got; i++) {
        if (s->msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
            drop_oversized(s);
            continue;
        }
        frames[n].data = s->iovs[i].iov_base;
        frames[n].len = s->msgs[i].msg_len;
        n++;
    }
    net_backend_deliver(s->nc, frames, n);
    return G_SOURCE_CONTINUE;
}

/* Never waits: a unix peer that stops reading would otherwise stop the
 * main loop.  A full queue is a tx error like any other failure. */
static bool dgram_send(void *opaque, const uint8_t *data, size_t len)
{
    DgramState *s = opaque;
    ssize_t sent = sendto(s->fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL,
                          (const struct sockaddr *)&s->remote,
                          s->remote_len);

    return sent == (ssize_t)len;
}

static void dgram_free(void *opaque)
{
    DgramState *s = opaque;

    if (s->watch) {
        g_source_remove(s->watch);
    }
    if (s->fd >= 0) {
        close(s->fd);
        net_socket_unlink(&s->local);
    }
    g_free(s->slots);
    g_free(s->id);
    g_free(s);
}

static const NetBackendOps dgram_ops = {
    .send = dgram_send,
    .cleanup = dgram_free,
};

static void dgram_init_slots(DgramState *s)
{
    s->slots = g_malloc((size_t)NET_BATCH_MAX * NET_FRAME_MAX);
    for (unsigned i = 0; i < NET_BATCH_MAX; i++) {
        s->iovs[i].iov_base = s->slots + (size_t)i * NET_FRAME_MAX;
        s->iovs[i].iov_len = NET_FRAME_MAX;
        s->msgs[i].msg_hdr.msg_iov = &s->iovs[i];
        s->msgs[i].msg_hdr.msg_iovlen = 1;
    }
}

static bool dgram_parse(DgramState *s, const QemuOpts *opts,
                        struct sockaddr_storage *local,
                        socklen_t *local_len, char **local_desc,
                        GError **errp)
{
    g_autofree char *remote_desc = NULL;
    int remote_family;

    if (!net_socket_parse_addr(opts, "local", AF_UNSPEC, local, local_len,
                               local_desc, errp)) {
        return false;
    }
    /* A remote host must resolve in the family the socket is bound in. */
    remote_family = local->ss_family == AF_UNIX ? AF_UNSPEC
                                                : local->ss_family;
    if (!net_socket_parse_addr(opts, "remote", remote_family, &s->remote,
                               &s->remote_len, &remote_desc, errp)) {
        return false;
    }
    if ((local->ss_family == AF_UNIX) != (s->remote.ss_family == AF_UNIX)) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "remote.type=%s does not match local.type=%s",
                    qemu_opt_get(opts, "remote.type"),
                    qemu_opt_get(opts, "local.type"));
        return false;
    }
    return true;
}

static bool dgram_create(const char *id, const QemuOpts *opts, GError **errp)
{
    static const char *const keys[] = {
        "type", "id", "local.type", "local.host", "local.port", "local.path",
        "remote.type", "remote.host", "remote.port", "remote.path", NULL
    };
    DgramState *s = g_new0(DgramState, 1);
    struct sockaddr_storage local;
    socklen_t local_len;
    g_autofree char *local_desc = NULL;

    s->fd = -1;
    s->id = g_strdup(id);
    if (!qemu_opts_check_keys(opts, keys, errp) ||
        !dgram_parse(s, opts, &local, &local_len, &local_desc, errp)) {
        dgram_free(s);
        return false;
    }
    s->fd = net_socket_new_bound(SOCK_DGRAM, &local, local_len, local_desc,
                                 errp);
    if (s->fd < 0) {
        dgram_free(s);
        return false;
    }
    s->local = local;
    dgram_init_slots(s);
    s->watch = g_unix_fd_add(s->fd, G_IO_IN, dgram_readable, s);
    s->nc = net_backend_new(id, &dgram_ops, s);
    return true;
}

static const NetdevType dgram_type = {
    .name = "dgram",
    .desc = "UDP or unix datagram socket, one frame per datagram",
    .create = dgram_create,
};

static void dgram_register(void)
{
    netdev_type_register(&dgram_type);
}
illan_init(dgram_register)
