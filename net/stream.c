/*
 * -netdev stream: frames over a stream socket, each preceded by its length
 * as a 4-byte big-endian integer, as QEMU's stream backend carries them.
 *
 *   -netdev stream,id=ID,server=on|off,addr.type=inet,addr.host=H,
 *                  addr.port=P[,addr.ipv4=on|off,addr.ipv6=on|off]
 *   -netdev stream,id=ID,server=on|off,addr.type=unix,addr.path=PATH
 *                  [,addr.abstract=on|off,addr.tight=on|off]
 *   -netdev stream,id=ID,server=on|off,addr.type=fd,addr.str=N
 *   server=off takes reconnect-ms=MS
 *
 * server=on listens and serves one peer at a time: a connection that
 * arrives while another is active is closed at once, and the next one is
 * accepted when the active peer goes away.  server=off (the default)
 * connects when the netdev is created; without reconnect-ms a refused
 * connection fails the netdev, and a peer that goes away is not replaced.
 * With reconnect-ms it tries again every MS milliseconds, without
 * blocking the main loop, from creation on and after every loss.  An fd
 * is an inherited socket: listening for server=on, connected for off.
 * Peers that come and go change the "info network" text and are announced
 * (net_backend_stream_event()).
 *
 * A frame is written whole or not at all; the sender (the main thread for
 * qtest, a vCPU thread for a built-in guest) waits for a full socket at
 * most STREAM_TX_STALL_MS, after which the peer counts as gone, so that a
 * peer that stops reading can delay a pause but never block it.  Senders
 * are serialised by tx_lock; the connection is closed only on the main
 * thread, which watches it.
 */
#include "net/net.h"
#include "net/socket-addr.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "qemu/main-loop.h"
#include "qemu/option.h"
#include "qemu/thread.h"

#include <errno.h>
#include <glib-unix.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define STREAM_HEADER_LEN 4
#define STREAM_TX_STALL_MS 1000
/*
 * Once the frames of a read are handed over, a partial frame moves to the
 * front; the rest must still hold the largest frame.  Four times that lets
 * one read carry a full batch of ordinary frames.
 */
#define STREAM_BUF_SIZE (4 * (STREAM_HEADER_LEN + NET_FRAME_MAX))

typedef struct StreamState {
    NetClientState *nc;         /* NULL until the netdev is created */
    char *id;
    NetSocketAddr addr;         /* bound (server=on) or connected to */
    bool server;
    uint32_t reconnect_ms;      /* server=off: 0 for never */
    guint reconnect_timer;
    int connecting_fd;          /* a connect() under way, or -1 */
    guint connecting_watch;
    int listen_fd;              /* server=on, else -1 */
    guint listen_watch;
    QemuMutex tx_lock;          /* fd against its close; one sender */
    int fd;                     /* the peer, or -1; set on the main thread,
                                   under tx_lock */
    bool tx_broken;             /* under tx_lock: a send failed, the main
                                   thread is to close fd */
    guint watch;
    uint8_t *buf;               /* received bytes not yet handed over */
    size_t fill;
} StreamState;

static gboolean stream_readable(gint fd, GIOCondition cond, gpointer opaque);
static void stream_try_connect(StreamState *s);

/* The peer's address as QEMU reports it: a server on a unix socket names
 * its own path, anything else the other end. */
static bool peer_address(StreamState *s, struct sockaddr_storage *sa,
                         socklen_t *len)
{
    *len = sizeof(*sa);
    memset(sa, 0, sizeof(*sa));
    if (getsockname(s->fd, (struct sockaddr *)sa, len) < 0) {
        return false;
    }
    if (s->server && sa->ss_family == AF_UNIX) {
        return true;
    }
    *len = sizeof(*sa);
    return getpeername(s->fd, (struct sockaddr *)sa, len) == 0;
}

/* Shows and announces the peer once the netdev exists. */
static void stream_announce_peer(StreamState *s)
{
    struct sockaddr_storage sa;
    socklen_t len;
    g_autofree char *uri = NULL;

    if (!peer_address(s, &sa, &len)) {
        sa.ss_family = AF_UNIX;
        len = 0;
    }
    uri = net_socket_uri(&sa, len);
    net_client_set_info_str(s->nc, "%s", uri);
    net_backend_stream_event(s->nc, net_socket_addr_variant(&sa, len));
}

static void stream_attach_peer(StreamState *s, int fd)
{
    static const int on = 1;

    /* Frames are written whole: Nagle would only delay small ones.  A
     * unix socket refuses the option, which changes nothing. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    qemu_mutex_lock(&s->tx_lock);
    s->fd = fd;
    s->tx_broken = false;
    qemu_mutex_unlock(&s->tx_lock);
    s->fill = 0;
    s->watch = g_unix_fd_add(fd, G_IO_IN, stream_readable, s);
    if (s->nc) {
        stream_announce_peer(s);
    }
}

static void stream_close_peer(StreamState *s)
{
    g_source_remove(s->watch);
    s->watch = 0;
    qemu_mutex_lock(&s->tx_lock);
    close(s->fd);
    s->fd = -1;
    s->tx_broken = false;
    qemu_mutex_unlock(&s->tx_lock);
}

static gboolean stream_reconnect(gpointer opaque)
{
    StreamState *s = opaque;

    s->reconnect_timer = 0;
    stream_try_connect(s);
    return G_SOURCE_REMOVE;
}

static void stream_arm_reconnect(StreamState *s)
{
    net_client_set_info_str(s->nc, "connecting");
    s->reconnect_timer = g_timeout_add(s->reconnect_ms, stream_reconnect, s);
}

/* The peer went away: announced, and the netdev waits for the next. */
static void stream_lose_peer(StreamState *s)
{
    stream_close_peer(s);
    net_backend_stream_event(s->nc, NULL);
    if (s->server) {
        net_client_set_info_str(s->nc, "listening");
    } else if (s->reconnect_ms) {
        stream_arm_reconnect(s);
    } else {
        net_client_set_info_str(s->nc, "disconnected");
    }
}

/* Posted by a sender whose write failed. */
static void stream_close_broken(void *opaque)
{
    StreamState *s = opaque;
    bool broken;

    qemu_mutex_lock(&s->tx_lock);
    broken = s->tx_broken && s->fd >= 0;
    qemu_mutex_unlock(&s->tx_lock);
    if (broken) {
        stream_lose_peer(s);
    }
}

/* The net core has no counter for a broken connection, so it is counted
 * here and reported in one line. */
static void G_GNUC_PRINTF(2, 3) stream_drop_peer(StreamState *s,
                                                 const char *fmt, ...)
{
    g_autofree char *why = NULL;
    va_list ap;

    va_start(ap, fmt);
    why = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    fprintf(stderr, "illan: stream netdev '%s': %s; connection dropped "
            "(%" PRIu64 " rx errors so far)\n", s->id, why,
            net_backend_rx_error(s->nc));
    stream_lose_peer(s);
}

/*
 * Hands over every complete frame in the buffer, in batches, and keeps a
 * partial one for the next read.  The NIC may send from within a batch and
 * lose the peer doing so; what is left of the buffer then goes with it.
 */
static void stream_deliver_frames(StreamState *s)
{
    NetFrame frames[NET_BATCH_MAX];
    unsigned n = 0;
    size_t pos = 0;
    int fd = s->fd;

    while (s->fill - pos >= STREAM_HEADER_LEN) {
        uint32_t len = ldn_be_p(s->buf + pos, STREAM_HEADER_LEN);

        if (len == 0 || len > NET_FRAME_MAX) {
            net_backend_deliver(s->nc, frames, n);
            if (s->fd == fd) {
                stream_drop_peer(s, "peer sent a frame length of %" PRIu32
                                 " (expected 1-%d)", len, NET_FRAME_MAX);
            }
            return;
        }
        if (s->fill - pos - STREAM_HEADER_LEN < len) {
            break;
        }
        frames[n].data = s->buf + pos + STREAM_HEADER_LEN;
        frames[n].len = len;
        n++;
        pos += STREAM_HEADER_LEN + len;
        if (n == NET_BATCH_MAX) {
            net_backend_deliver(s->nc, frames, n);
            n = 0;
            if (s->fd != fd) {
                return;
            }
        }
    }
    net_backend_deliver(s->nc, frames, n);
    if (s->fd == fd) {
        memmove(s->buf, s->buf + pos, s->fill - pos);
        s->fill -= pos;
    }
}

static gboolean stream_readable(gint fd, GIOCondition cond, gpointer opaque)
{
    StreamState *s = opaque;
    ssize_t got = recv(fd, s->buf + s->fill, STREAM_BUF_SIZE - s->fill,
                       MSG_DONTWAIT);

    (void)cond;
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
        return G_SOURCE_CONTINUE;
    }
    if (got < 0) {
        stream_drop_peer(s, "read failed: %s", g_strerror(errno));
    } else if (got == 0 && s->fill) {
        stream_drop_peer(s, "peer hung up in the middle of a frame "
                         "(%zu bytes discarded)", s->fill);
    } else if (got == 0) {
        stream_lose_peer(s);
    } else {
        s->fill += got;
        stream_deliver_frames(s);
    }
    /* A closed peer's watch is already gone; this return is then moot. */
    return G_SOURCE_CONTINUE;
}

static gboolean stream_acceptable(gint listen_fd, GIOCondition cond,
                                  gpointer opaque)
{
    StreamState *s = opaque;
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

    (void)cond;
    if (fd < 0) {
        return G_SOURCE_CONTINUE;
    }
    if (s->fd >= 0) {
        close(fd);
        fprintf(stderr, "illan: stream netdev '%s': refused a second "
                "connection on %s while a peer is connected\n",
                s->id, s->addr.desc);
        return G_SOURCE_CONTINUE;
    }
    stream_attach_peer(s, fd);
    return G_SOURCE_CONTINUE;
}

/* Steps @msg past @n bytes already written. */
static void msg_advance(struct msghdr *msg, size_t n)
{
    while (n > 0) {
        struct iovec *iov = msg->msg_iov;
        size_t step = MIN(n, iov->iov_len);

        iov->iov_base = (uint8_t *)iov->iov_base + step;
        iov->iov_len -= step;
        n -= step;
        if (iov->iov_len == 0) {
            msg->msg_iov++;
            msg->msg_iovlen--;
        }
    }
}

static bool write_all(int fd, struct iovec *iov, size_t iovcnt)
{
    struct msghdr msg = { .msg_iov = iov, .msg_iovlen = iovcnt };

    while (msg.msg_iovlen > 0) {
        ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        struct pollfd pfd = { .fd = fd, .events = POLLOUT };

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && errno == EAGAIN &&
            poll(&pfd, 1, STREAM_TX_STALL_MS) > 0) {
            continue;
        }
        if (n < 0) {
            return false;
        }
        msg_advance(&msg, n);
    }
    return true;
}

/* Without a peer, or when the write fails (the peer is then gone and the
 * connection closed), the frame is not sent: the core counts a tx error. */
static bool stream_send(void *opaque, const uint8_t *data, size_t len)
{
    StreamState *s = opaque;
    uint8_t header[STREAM_HEADER_LEN];
    struct iovec iov[2] = {
        { .iov_base = header, .iov_len = sizeof(header) },
        { .iov_base = (void *)data, .iov_len = len },
    };

    bool sent = false, broke = false;

    stn_be_p(header, sizeof(header), len);
    qemu_mutex_lock(&s->tx_lock);
    if (s->fd >= 0 && !s->tx_broken) {
        sent = write_all(s->fd, iov, G_N_ELEMENTS(iov));
        broke = s->tx_broken = !sent;
    }
    qemu_mutex_unlock(&s->tx_lock);
    if (broke) {
        main_loop_run_or_post(stream_close_broken, s);
    }
    return sent;
}

static void stream_free(void *opaque)
{
    StreamState *s = opaque;

    if (s->fd >= 0) {
        stream_close_peer(s);
    }
    if (s->reconnect_timer) {
        g_source_remove(s->reconnect_timer);
    }
    if (s->connecting_watch) {
        g_source_remove(s->connecting_watch);
    }
    if (s->connecting_fd >= 0) {
        close(s->connecting_fd);
    }
    if (s->listen_watch) {
        g_source_remove(s->listen_watch);
    }
    if (s->listen_fd >= 0) {
        close(s->listen_fd);
        net_socket_unlink(&s->addr);
    }
    net_socket_addr_clear(&s->addr);
    qemu_mutex_destroy(&s->tx_lock);
    g_free(s->buf);
    g_free(s->id);
    g_free(s);
}

static const NetBackendOps stream_ops = {
    .send = stream_send,
    .cleanup = stream_free,
};

/* Serves on @fd, a listening socket. */
static bool stream_serve(StreamState *s, int fd, GError **errp)
{
    s->listen_fd = fd;
    /* A connection may be gone again by the time accept4() runs. */
    if (!g_unix_set_fd_nonblocking(fd, TRUE, NULL)) {
        g_set_error(errp, ILLAN_ERROR, 0, "Failed to set up %s: %s",
                    s->addr.desc, g_strerror(errno));
        return false;
    }
    s->listen_watch = g_unix_fd_add(fd, G_IO_IN, stream_acceptable, s);
    return true;
}

static bool stream_listen(StreamState *s, GError **errp)
{
    int fd = net_socket_new_bound(SOCK_STREAM, &s->addr, errp);

    if (fd < 0) {
        return false;
    }
    /* One peer at a time: others are accepted only to be closed. */
    if (listen(fd, 1) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "Failed to listen on %s: %s",
                    s->addr.desc, g_strerror(errno));
        close(fd);
        return false;
    }
    return stream_serve(s, fd, errp);
}

/* An inherited socket: listening for a server, connected for a client. */
static bool stream_take_fd(StreamState *s, GError **errp)
{
    int fd = s->addr.fd, listening = 0;
    socklen_t len = sizeof(listening);
    struct sockaddr_storage peer;
    socklen_t peer_len = sizeof(peer);

    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len);
    if (s->server && !listening) {
        g_set_error(errp, ILLAN_ERROR, 0, "server=on needs a listening "
                    "socket, and %s is not listening", s->addr.desc);
        return false;
    }
    if (s->server) {
        return stream_serve(s, fd, errp);
    }
    if (listening ||
        getpeername(fd, (struct sockaddr *)&peer, &peer_len) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "server=off needs a connected "
                    "socket, and %s is not connected", s->addr.desc);
        return false;
    }
    stream_attach_peer(s, fd);
    return true;
}

/* Without reconnect-ms: one blocking attempt, and its failure is the
 * netdev's. */
static bool stream_connect(StreamState *s, GError **errp)
{
    int fd = socket(s->addr.sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0 || connect(fd, (const struct sockaddr *)&s->addr.sa,
                          s->addr.len) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "Failed to connect to %s: %s",
                    s->addr.desc, g_strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return false;
    }
    stream_attach_peer(s, fd);
    return true;
}

static gboolean stream_connect_done(gint fd, GIOCondition cond,
                                    gpointer opaque)
{
    StreamState *s = opaque;
    int err = 0;
    socklen_t len = sizeof(err);

    (void)cond;
    s->connecting_watch = 0;
    s->connecting_fd = -1;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
        close(fd);
        stream_arm_reconnect(s);
    } else {
        stream_attach_peer(s, fd);
    }
    return G_SOURCE_REMOVE;
}

/* With reconnect-ms: a connect() that never blocks the main loop; a
 * failure only schedules the next try. */
static void stream_try_connect(StreamState *s)
{
    int fd = socket(s->addr.sa.ss_family,
                    SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    if (fd < 0) {
        stream_arm_reconnect(s);
        return;
    }
    if (connect(fd, (const struct sockaddr *)&s->addr.sa, s->addr.len) == 0) {
        stream_attach_peer(s, fd);
    } else if (errno == EINPROGRESS) {
        s->connecting_fd = fd;
        s->connecting_watch = g_unix_fd_add(fd, G_IO_OUT, stream_connect_done,
                                            s);
    } else {
        close(fd);
        stream_arm_reconnect(s);
    }
}

static bool stream_parse_reconnect(StreamState *s, const QemuOpts *opts,
                                   GError **errp)
{
    const char *value = qemu_opt_get(opts, "reconnect-ms");
    uint64_t ms;

    if (!value) {
        return true;
    }
    if (s->server) {
        g_set_error(errp, ILLAN_ERROR, 0, "'reconnect-ms' option is "
                    "incompatible with socket in server mode");
        return false;
    }
    if (!qemu_parse_uint64("reconnect-ms", value, &ms, errp)) {
        return false;
    }
    if (ms > UINT32_MAX) {
        g_set_error(errp, ILLAN_ERROR, 0, "Parameter 'reconnect-ms' expects "
                    "0 to %u milliseconds", UINT32_MAX);
        return false;
    }
    s->reconnect_ms = ms;
    return true;
}

static bool stream_open(StreamState *s, const QemuOpts *opts, GError **errp)
{
    static const char *const keys[] = {
        "type", "id", "server", "reconnect-ms", NET_SOCKET_ADDR_KEYS("addr"),
        NULL
    };
    const char *server_str = qemu_opt_get(opts, "server");

    if (!qemu_opts_check_keys(opts, keys, errp)) {
        return false;
    }
    if (server_str &&
        !qemu_parse_bool("server", server_str, &s->server, errp)) {
        return false;
    }
    if (!stream_parse_reconnect(s, opts, errp) ||
        !net_socket_parse_addr(opts, "addr", AF_UNSPEC, SOCK_STREAM,
                               &s->addr, errp)) {
        return false;
    }
    if (s->addr.type == NET_SOCKET_FD) {
        if (s->reconnect_ms) {
            g_set_error(errp, ILLAN_ERROR, 0, "reconnect-ms needs an address "
                        "to connect to again, not addr.type=fd");
            return false;
        }
        return stream_take_fd(s, errp);
    }
    if (s->server) {
        return stream_listen(s, errp);
    }
    /* With reconnect-ms the first try waits for the netdev to exist. */
    return s->reconnect_ms || stream_connect(s, errp);
}

static bool stream_create(const char *id, const QemuOpts *opts, GError **errp)
{
    StreamState *s = g_new0(StreamState, 1);

    s->id = g_strdup(id);
    s->listen_fd = -1;
    s->connecting_fd = -1;
    s->fd = -1;
    s->addr.fd = -1;
    qemu_mutex_init(&s->tx_lock);
    s->buf = g_malloc(STREAM_BUF_SIZE);
    if (!stream_open(s, opts, errp)) {
        /* An inherited socket is ours once it passed its checks. */
        if (s->addr.fd >= 0 && s->addr.fd != s->fd &&
            s->addr.fd != s->listen_fd) {
            close(s->addr.fd);
        }
        stream_free(s);
        return false;
    }
    s->nc = net_backend_new(id, &stream_ops, s);
    if (s->fd >= 0) {
        stream_announce_peer(s);
    } else if (s->server) {
        net_client_set_info_str(s->nc, "listening");
    } else {
        net_client_set_info_str(s->nc, "connecting");
        stream_try_connect(s);
    }
    return true;
}

static const NetdevType stream_type = {
    .name = "stream",
    .desc = "TCP or unix stream socket, each frame after its 4-byte length",
    .help =
        "server=on|off          listen (on) or connect (off)\n"
        "addr.type=inet|unix|fd address kind\n"
        "addr.host=H,addr.port=P[,addr.ipv4=on|off,addr.ipv6=on|off] "
        "(inet)\n"
        "addr.path=PATH[,addr.abstract=on|off,addr.tight=on|off] (unix)\n"
        "addr.str=N             (fd) an inherited socket: listening, or "
        "connected\n"
        "reconnect-ms=MS        server=off: connect again every MS ms until "
        "a peer answers\n",
    .create = stream_create,
};

static void stream_register(void)
{
    netdev_type_register(&stream_type);
}
illan_init(stream_register)
