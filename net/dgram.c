/*
 * -netdev dgram: frames over datagram sockets, one Ethernet frame per
 * datagram and no header, as QEMU's dgram backend carries them.
 *
 *   -netdev dgram,id=ID,local.type=inet,local.host=H,local.port=P,
 *                 remote.type=inet,remote.host=H,remote.port=P
 *   -netdev dgram,id=ID,local.type=unix,local.path=PATH,
 *                 remote.type=unix,remote.path=PATH
 *   -netdev dgram,id=ID,remote.type=inet,remote.host=GROUP,remote.port=P
 *                 [,local.type=inet,local.host=INTERFACE-ADDRESS]
 *   -netdev dgram,id=ID,local.type=fd,local.str=N
 *
 * Unicast: the socket is bound to the local address and sends to the
 * remote one; it takes datagrams from any sender.  The remote address is
 * required, as in QEMU: without one, every frame the guest sent would be a
 * tx error, and a netdev that cannot send is better refused at start than
 * found later.
 *
 * Multicast (an IPv4 group as remote): the socket joins the group on the
 * interface with the local address (any, without one), binds the group's
 * port, sends to the group and loops its datagrams back to this host, so
 * several processes on one host share the segment; it hears its own too,
 * as QEMU's does.
 *
 * fd: an inherited datagram socket, already bound and connected (one end
 * of a socketpair), used as it is: the netdev sends with send().
 */
#include "net/net.h"
#include "net/socket-addr.h"
#include "qemu/module.h"
#include "qemu/option.h"

#include <arpa/inet.h>
#include <errno.h>
#include <glib-unix.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

typedef struct DgramState {
    NetClientState *nc;
    char *id;
    int fd;
    guint watch;
    NetSocketAddr local;        /* unlinked at the end when a unix path */
    struct sockaddr_storage remote;     /* where frames go; ss_family 0
                                           for an fd: send() */
    socklen_t remote_len;
    char *info;                 /* "info network" text, until nc exists */
    /* Receive slots, allocated once: NET_BATCH_MAX of NET_FRAME_MAX. */
    uint8_t *slots;
    struct iovec iovs[NET_BATCH_MAX];
    struct mmsghdr msgs[NET_BATCH_MAX];
} DgramState;

/* Such a datagram is no frame of ours: an rx error, not a frame result. */
static void drop_oversized(DgramState *s)
{
    uint64_t n = net_backend_rx_error(s->nc);

    fprintf(stderr, "illan: dgram netdev '%s': dropped a datagram larger "
            "than %d bytes (%" PRIu64 " rx errors so far)\n",
            s->id, NET_FRAME_MAX, n);
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
                          s->remote_len ? (const struct sockaddr *)&s->remote
                                        : NULL, s->remote_len);

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
    net_socket_addr_clear(&s->local);
    g_free(s->info);
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

static const char *const dgram_keys[] = {
    "type", "id", NET_SOCKET_ADDR_KEYS("local"), NET_SOCKET_ADDR_KEYS("remote"),
    NULL
};

static bool is_ipv4_multicast(const NetSocketAddr *addr)
{
    const struct sockaddr_in *in = (const struct sockaddr_in *)&addr->sa;

    return addr->type == NET_SOCKET_INET && in->sin_family == AF_INET &&
           IN_MULTICAST(ntohl(in->sin_addr.s_addr));
}

static char *inet_text(const struct sockaddr_storage *sa)
{
    const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
    char host[INET_ADDRSTRLEN];

    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return g_strdup_printf("%s:%u", host, ntohs(in->sin_port));
}

/* The interface of a multicast netdev: local.host, an IPv4 address; the
 * group's port is the one bound, so local.port has no use. */
static bool mcast_interface(const QemuOpts *opts, struct in_addr *ifaddr,
                            GError **errp)
{
    static const char *const allowed[] = { "local.type", "local.host" };
    const char *type = qemu_opt_get(opts, "local.type");
    const char *host = qemu_opt_get(opts, "local.host");

    ifaddr->s_addr = htonl(INADDR_ANY);
    if (!net_socket_addr_given(opts, "local")) {
        return true;
    }
    if (!type || strcmp(type, "inet")) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "A multicast remote takes local.type=inet (the "
                    "interface's address) or no local address");
        return false;
    }
    for (guint i = 0; i < qemu_opts_count(opts); i++) {
        const char *key = qemu_opts_key(opts, i);

        if (g_str_has_prefix(key, "local.") && strcmp(key, allowed[0]) &&
            strcmp(key, allowed[1])) {
            g_set_error(errp, ILLAN_ERROR, 0,
                        "Parameter '%s' does not apply to a multicast "
                        "netdev: local.host is the interface", key);
            return false;
        }
    }
    if (!host || !inet_aton(host, ifaddr)) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter 'local.host' expects the IPv4 address of "
                    "the interface for the group, not '%s'",
                    host ? host : "");
        return false;
    }
    return true;
}

static bool set_opt(int fd, int level, int name, const void *val,
                    socklen_t len, const char *what, GError **errp)
{
    if (setsockopt(fd, level, name, val, len) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "Failed to %s: %s", what,
                    g_strerror(errno));
        return false;
    }
    return true;
}

/* Joins the group in s->remote on @ifaddr and binds its port. */
static bool dgram_open_mcast(DgramState *s, const QemuOpts *opts,
                             GError **errp)
{
    static const int on = 1;
    struct in_addr ifaddr;
    struct ip_mreq mreq;
    g_autofree char *group = inet_text(&s->remote);
    bool local = net_socket_addr_given(opts, "local");

    if (!mcast_interface(opts, &ifaddr, errp)) {
        return false;
    }
    mreq.imr_multiaddr = ((struct sockaddr_in *)&s->remote)->sin_addr;
    mreq.imr_interface = ifaddr;
    s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s->fd < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "Failed to create a socket for "
                    "%s: %s", group, g_strerror(errno));
        return false;
    }
    /* Every process on the host that joins binds the same group:port. */
    if (!set_opt(s->fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on),
                 "share the group's port", errp)) {
        return false;
    }
    if (bind(s->fd, (struct sockaddr *)&s->remote, s->remote_len) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "Failed to bind to %s: %s", group,
                    g_strerror(errno));
        return false;
    }
    if (!set_opt(s->fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq, sizeof(mreq),
                 "join the multicast group", errp) ||
        !set_opt(s->fd, IPPROTO_IP, IP_MULTICAST_LOOP, &on, sizeof(on),
                 "loop multicast back to this host", errp) ||
        (local && !set_opt(s->fd, IPPROTO_IP, IP_MULTICAST_IF, &ifaddr,
                           sizeof(ifaddr), "send from the interface",
                           errp))) {
        return false;
    }
    s->info = g_strdup_printf("mcast=%s", group);
    return true;
}

/* The descriptor is used as it is; it may not be given a remote. */
static bool dgram_open_fd(DgramState *s, const QemuOpts *opts, GError **errp)
{
    const char *family = net_socket_fd_family(s->local.fd);

    if (net_socket_addr_given(opts, "remote")) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "remote.* does not apply to local.type=fd: the socket "
                    "sends where it is connected");
        return false;
    }
    s->fd = s->local.fd;
    s->info = family ? g_strdup_printf("fd=%d %s", s->fd, family)
                     : g_strdup_printf("fd=%d", s->fd);
    return true;
}

static char *unicast_info(const DgramState *s)
{
    g_autofree char *local = NULL, *remote = NULL;

    if (s->local.type == NET_SOCKET_UNIX) {
        return g_strdup_printf("udp=%s:%s", s->local.desc,
                               ((const struct sockaddr_un *)&s->remote)
                                   ->sun_path);
    }
    if (s->local.sa.ss_family == AF_INET) {
        local = inet_text(&s->local.sa);
        remote = inet_text(&s->remote);
        return g_strdup_printf("udp=%s/%s", local, remote);
    }
    local = net_socket_uri(&s->local.sa, s->local.len);
    remote = net_socket_uri(&s->remote, s->remote_len);
    /* Past "tcp:", the host and port, as for IPv4. */
    return g_strdup_printf("udp=%s/%s", local + 4, remote + 4);
}

/* Whether remote.* names an IPv4 multicast group; if so, it is in
 * s->remote.  Anything else is left to the unicast checks. */
static bool remote_is_group(DgramState *s, const QemuOpts *opts)
{
    NetSocketAddr remote;
    const char *type = qemu_opt_get(opts, "remote.type");
    bool group;

    if (!type || strcmp(type, "inet") ||
        !net_socket_parse_addr(opts, "remote", AF_INET, SOCK_DGRAM, &remote,
                               NULL)) {
        return false;
    }
    group = is_ipv4_multicast(&remote);
    if (group) {
        s->remote = remote.sa;
        s->remote_len = remote.len;
    }
    net_socket_addr_clear(&remote);
    return group;
}

/* A local and a remote address of one family: bind one, send to the
 * other. */
static bool dgram_open_unicast(DgramState *s, const QemuOpts *opts,
                               GError **errp)
{
    NetSocketAddr remote;
    int remote_family = AF_UNSPEC;
    bool same;

    /* A remote host must resolve in the family the socket is bound in. */
    if (s->local.type == NET_SOCKET_INET) {
        remote_family = s->local.sa.ss_family;
    }
    if (!net_socket_parse_addr(opts, "remote", remote_family, SOCK_DGRAM,
                               &remote, errp)) {
        return false;
    }
    s->remote = remote.sa;
    s->remote_len = remote.len;
    same = remote.type == s->local.type;
    net_socket_addr_clear(&remote);
    if (!same) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "remote.type=%s does not match local.type=%s",
                    qemu_opt_get(opts, "remote.type"),
                    qemu_opt_get(opts, "local.type"));
        return false;
    }
    s->fd = net_socket_new_bound(SOCK_DGRAM, &s->local, errp);
    if (s->fd < 0) {
        return false;
    }
    s->info = unicast_info(s);
    return true;
}

/* Reads the addresses and opens the socket of the kind they make. */
static bool dgram_open(DgramState *s, const QemuOpts *opts, GError **errp)
{
    if (!qemu_opts_check_keys(opts, dgram_keys, errp)) {
        return false;
    }
    if (remote_is_group(s, opts)) {
        return dgram_open_mcast(s, opts, errp);
    }
    if (!net_socket_parse_addr(opts, "local", AF_UNSPEC, SOCK_DGRAM,
                               &s->local, errp)) {
        return false;
    }
    if (s->local.type == NET_SOCKET_FD) {
        return dgram_open_fd(s, opts, errp);
    }
    return dgram_open_unicast(s, opts, errp);
}

static bool dgram_create(const char *id, const QemuOpts *opts, GError **errp)
{
    DgramState *s = g_new0(DgramState, 1);

    s->fd = -1;
    s->local.fd = -1;
    s->id = g_strdup(id);
    if (!dgram_open(s, opts, errp)) {
        /* An inherited socket is ours once it passed its checks. */
        if (s->fd < 0 && s->local.fd >= 0) {
            close(s->local.fd);
        }
        dgram_free(s);
        return false;
    }
    dgram_init_slots(s);
    s->watch = g_unix_fd_add(s->fd, G_IO_IN, dgram_readable, s);
    s->nc = net_backend_new(id, &dgram_ops, s);
    net_client_set_info_str(s->nc, "%s", s->info);
    return true;
}

static const NetdevType dgram_type = {
    .name = "dgram",
    .desc = "UDP or unix datagram socket, one frame per datagram",
    .help =
        "local.type=inet|unix|fd  the bound socket\n"
        "local.host=H,local.port=P[,local.ipv4=on|off,local.ipv6=on|off] "
        "(inet)\n"
        "local.path=PATH[,local.abstract=on|off,local.tight=on|off] "
        "(unix)\n"
        "local.str=N            (fd) an inherited, connected socket\n"
        "remote.type=inet|unix  where frames the guest sends go (required "
        "but for fd)\n"
        "remote.host=H,remote.port=P (inet) or remote.path=PATH (unix)\n"
        "remote.host=GROUP      an IPv4 multicast group: join it; local.host "
        "is then the interface\n",
    .create = dgram_create,
};

static void dgram_register(void)
{
    netdev_type_register(&dgram_type);
}
illan_init(dgram_register)
