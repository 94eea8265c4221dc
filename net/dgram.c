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
 */
#include "net/net.h"
#include "net/socket-addr.h"
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

/* Reads the addresses and binds the socket. */
static bool dgram_open(DgramState *s, const QemuOpts *opts, GError **errp)
{
    static const char *const keys[] = {
        "type", "id", "local.type", "local.host", "local.port", "local.path",
        "remote.type", "remote.host", "remote.port", "remote.path", NULL
    };
    struct sockaddr_storage local;
    socklen_t local_len;
    g_autofree char *local_desc = NULL;
    g_autofree char *remote_desc = NULL;
    int remote_family;

    if (!qemu_opts_check_keys(opts, keys, errp) ||
        !net_socket_parse_addr(opts, "local", AF_UNSPEC, &local, &local_len,
                               &local_desc, errp)) {
        return false;
    }
    /* A remote host must resolve in the family the socket is bound in. */
    remote_family = local.ss_family == AF_UNIX ? AF_UNSPEC : local.ss_family;
    if (!net_socket_parse_addr(opts, "remote", remote_family, &s->remote,
                               &s->remote_len, &remote_desc, errp)) {
        return false;
    }
    if ((local.ss_family == AF_UNIX) != (s->remote.ss_family == AF_UNIX)) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "remote.type=%s does not match local.type=%s",
                    qemu_opt_get(opts, "remote.type"),
                    qemu_opt_get(opts, "local.type"));
        return false;
    }
    s->fd = net_socket_new_bound(SOCK_DGRAM, &local, local_len, local_desc,
                                 errp);
    if (s->fd < 0) {
        return false;
    }
    s->local = local;
    return true;
}

static bool dgram_create(const char *id, const QemuOpts *opts, GError **errp)
{
    DgramState *s = g_new0(DgramState, 1);

    s->fd = -1;
    s->id = g_strdup(id);
    if (!dgram_open(s, opts, errp)) {
        dgram_free(s);
        return false;
    }
    dgram_init_slots(s);
    s->watch = g_unix_fd_add(s->fd, G_IO_IN, dgram_readable, s);
    s->nc = net_backend_new(id, &dgram_ops, s);
    return true;
}

static const NetdevType dgram_type = {
    .name = "dgram",
    .desc = "UDP or unix datagram socket, one frame per datagram",
    .help =
        "local.type=inet|unix   address family of the bound socket\n"
        "local.host=H,local.port=P   (inet) or local.path=PATH (unix)\n"
        "remote.type=inet|unix  where frames the guest sends go (required)\n"
        "remote.host=H,remote.port=P (inet) or remote.path=PATH (unix)\n",
    .create = dgram_create,
};

static void dgram_register(void)
{
    netdev_type_register(&dgram_type);
}
illan_init(dgram_register)
