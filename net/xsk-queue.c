/*
 * One AF_XDP queue: UMEM, rings, socket and the I/O thread that owns them.
 *
 * The UMEM holds rx_ring_size frames for receive, all of them in the fill
 * ring, the kernel, the rx ring or the batch in hand, so that returning a
 * batch to the fill ring always finds room; and tx_ring_size frames for
 * transmit, free on a stack until the completion ring gives them back.
 *
 * The socket is created either by libxdp (told to load no program: the
 * netdev attaches its own), or passed in already created (sock-fds), in
 * the map of someone else's program: libxdp 1.3 cannot put a UMEM on a given
 * socket, so that path registers the UMEM, sizes and maps the rings and
 * binds with the raw socket options.  Both paths end in the same
 * xsk_ring_* structures, driven by libxdp's inline ring helpers.
 *
 * Multi-buffer (XDP_USE_SG): the kernel hands a frame longer than a UMEM
 * frame's data room as a chain of descriptors, XDP_PKT_CONTD on all but
 * the last, and takes one the same way.  On receive a chain is gathered
 * into the queue's bounce area, which holds a batch of the largest
 * frames, so that the NIC still sees one contiguous frame; a frame in one
 * descriptor is handed over where it lies in the UMEM, as without
 * multi-buffer.
 */
#include "net/xsk-queue.h"
#include "net/xdp-meta.h"
#include "qemu/thread.h"

#include <errno.h>
#include <glib-unix.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <net/if.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <xdp/xsk.h>

#include "qemu/option.h"
#include "qemu/pause.h"
#include "trace/trace-net.h"

#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif
/* Linux 6.6's multi-buffer AF_XDP, newer than the build's headers. */
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif

/* Descriptors one batch looks at: a batch of single ones, and room for
 * a chain that starts in it to end. */
#define RX_PEEK_MAX (NET_BATCH_MAX + XSK_CHAIN_CAP)
/* The kernel's max_skb_frags when /proc does not say. */
#define DEFAULT_MAX_SKB_FRAGS 17

/* Under load the I/O thread sleeps this long (ns) instead of until the
 * socket has frames (see wait_for_work). */
#define RX_LOAD_SLEEP_NS 50000

/* A transmit the kernel could not finish is retried this soon (ms). */
#define TX_RETRY_MS 1
/* The longest a sender waits for the kernel to finish with a frame it
 * sent in place (us). */
#define TX_IN_PLACE_WAIT_US 1000000

/* Receive zero copy: the UMEM's chunk, so that the kernel's room for a
 * frame after its headroom is exactly what a lent buffer offers. */
#define LEND_CHUNK (NET_LEND_HEADROOM + NET_LEND_DATA_ROOM)
/* While lending, the most frames of the queue's own in the kernel at
 * once (see lend_to_kernel): a batch. */
#define HOST_FILL_MAX NET_BATCH_MAX
/* A closed socket's queue is released by the kernel in the background:
 * binding the next one is retried this long (us) before giving up. */
#define REBIND_DEADLINE_US 1000000
#define REBIND_RETRY_US 1000
/* Frames the program passed to a socket before it was told the socket is
 * going reach the ring when that NAPI poll ends, microseconds later: the
 * drain waits this long (us) for them. */
#define GAP_GRACE_US 1000

/* Counters the I/O thread bumps and any thread reads. */
#define STAT_ADD(field, n) __atomic_fetch_add(&(field), (n), __ATOMIC_RELAXED)
/* Counters written only under tx_lock, where a locked add on every send
 * cost 22 % of the send's own time at 64 B. */
#define STAT_ADD_LOCKED(field, n) qemu_counter_add(&(field), (n))
#define STAT_GET(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

/* The sock-fds path maps the rings itself. */
typedef struct RingMap {
    void *addr;
    size_t len;
} RingMap;

struct XskQueue {
    XskQueueConfig cfg;
    NetClientState *backend;
    int fd;
    void *umem_area;
    size_t umem_size;
    void *own_area;                 /* the queue's own UMEM mapping */
    struct xsk_umem *umem;          /* libxdp path */
    struct xsk_socket *xsk;         /* libxdp path */
    RingMap maps[4];                /* sock-fds path */
    bool zero_copy;
    bool multi_buffer;              /* bound with XDP_USE_SG */
    int sg_refused;                 /* errno of a refused XDP_USE_SG */
    unsigned tx_chain_max;          /* descriptors a sent frame may span */
    uint32_t rx_peek;               /* descriptors a batch looks at */

    /* Receive: the I/O thread's alone, or, while it is parked, the
     * caller of a request, the xsk-switch thread that stands in for it
     * (joined before anyone else looks), or the main thread once the
     * machine has migrated away (drain_watch set). */
    struct xsk_ring_cons rx;
    struct xsk_ring_prod fill;
    uint64_t *rx_free;              /* frames taken from the rx ring and
                                       not yet back in the fill ring */
    uint32_t rx_nfree;
    uint8_t *bounce;                /* batch x NET_FRAME_MAX, mapped with
                                       multi-buffer; touched as used */
    size_t bounce_size;
    bool rx_skip;                   /* dropping the rest of a chain
                                       longer than XSK_CHAIN_CAP */
    bool rx_run;                    /* the last batch went to the NIC
                                       with more to come */
    uint32_t rx_since_sleep;        /* frames taken since the thread last
                                       slept */

    /* Transmit: senders and the I/O thread, under tx_lock. */
    QemuMutex tx_lock;
    struct xsk_ring_prod tx;
    struct xsk_ring_cons comp;
    uint64_t *tx_free;
    uint32_t tx_nfree;
    uint64_t tx_in_place_sent;      /* guest frames sent in place, and */
    uint64_t tx_in_place_done;      /* the completions of guest frames */

    GThread *thread;
    PauseThread *pause;
    int wake_fd;                    /* eventfd: stop, a tx kick, or room
                                       in the NIC again */
    bool stopping;                  /* atomic */
    bool tx_kick;                   /* atomic: frames wait in the tx ring */
    bool rx_held;                   /* the NIC has no room: wait for
                                       xsk_queue_rx_ready(), not frames */
    bool failed;                    /* atomic */
    int io_policy;                  /* atomic: the I/O thread's scheduling
                                       policy, -1 until it runs */
    guint drain_watch;              /* main thread: the socket's watch
                                       while the machine has left */
    XskQueueStats stats;            /* the non-xdp_* part */

    /*
     * Receive zero copy.  The socket changes in the I/O thread, or in the
     * caller of a request (or its xsk-switch thread) while the thread is
     * parked, under tx_lock; the
     * fields from "reclaiming" on are that changer's and the receive
     * side's.
     */
    GuestRam *ram;                  /* atomic: set by xsk_queue_lendable */
    bool lend_wanted;               /* atomic: asked to lend */
    bool lend_retry;                /* atomic: ask the NIC for more */
    bool lending;                   /* atomic: the UMEM is guest RAM */
    XskCopyReason copy_reason;      /* atomic */
    bool reclaiming;                /* the rx ring drains: lend nothing */
    uint32_t host_fill;             /* how many of the queue's own frames
                                       the kernel may hold, by what the
                                       NIC last said it can lend */
    uint64_t lent_end;              /* UMEM addresses below are lent
                                       guest buffers (0: not lending) */
    uint32_t host_out;              /* own frames in the kernel while
                                       lending; atomic for the stats,
                                       written here only */
    uint32_t lent_out;              /* lent buffers in the kernel */
    uint32_t tx_piece;              /* bytes of a frame per descriptor */
    void *host_area;                /* the queue's frames after guest RAM */
    uint64_t host_off;
    struct xdp_statistics xdp_closed;  /* the kernel's counts of the
                                          sockets replaced so far, under
                                          tx_lock */
    GMutex request_lock;
    GCond request_cond;
    bool leaving;                   /* the next switch to the own UMEM is a
                                       leaving machine's (see
                                       switch_to_own_leaving) */
    GThread *switcher;              /* that switch, in the background */
    bool switch_closed;             /* atomic, written under request_lock:
                                       its close is done */
    unsigned request_seq;           /* atomic; written under request_lock */
    unsigned request_done;          /* atomic; written under request_lock */
};

static const char *const copy_reason_names[XSK_COPY__MAX] = {
    [XSK_COPY_NOT_LENDING] = "not-lending",
    [XSK_COPY_OFF] = "off",
    [XSK_COPY_SOCK_FDS] = "sock-fds",
    [XSK_COPY_MAP_PATH] = "map-path",
    [XSK_COPY_RX_METADATA] = "rx-metadata",
    [XSK_COPY_MTU] = "mtu",
    [XSK_COPY_REFUSED] = "refused",
};

const char *xsk_copy_reason_name(XskCopyReason reason)
{
    return copy_reason_names[reason];
}

size_t xsk_queue_umem_size(const XskQueueConfig *cfg)
{
    return ((size_t)cfg->rx_ring_size + cfg->tx_ring_size) * XSK_FRAME_SIZE;
}

/* Raw setup of a passed socket: what xsk_umem__create and
 * xsk_socket__create do, without creating the socket. */

static bool set_int_opt(int fd, int opt, int value)
{
    return setsockopt(fd, SOL_XDP, opt, &value, sizeof(value)) == 0;
}

static bool map_ring(XskQueue *q, unsigned which, off_t pgoff,
                     const struct xdp_ring_offset *off, size_t entry,
                     uint32_t size, struct xsk_ring_cons *ring)
{
    size_t len = off->desc + size * entry;
    void *map = mmap(NULL, len, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_POPULATE, q->fd, pgoff);

    if (map == MAP_FAILED) {
        return false;
    }
    q->maps[which] = (RingMap){ map, len };
    ring->mask = size - 1;
    ring->size = size;
    ring->producer = (uint32_t *)((char *)map + off->producer);
    ring->consumer = (uint32_t *)((char *)map + off->consumer);
    ring->flags = (uint32_t *)((char *)map + off->flags);
    ring->ring = (char *)map + off->desc;
    ring->cached_prod = *ring->producer;
    ring->cached_cons = *ring->consumer;
    return true;
}

/* The producer rings keep cached_cons one ring ahead, as libxdp does. */
static void as_producer(struct xsk_ring_cons *mapped,
                        struct xsk_ring_prod *prod)
{
    memcpy(prod, mapped, sizeof(*prod));
    prod->cached_cons += prod->size;
}

static uint16_t bind_flags(const XskQueue *q, bool sg)
{
    return XDP_USE_NEED_WAKEUP | (q->cfg.force_copy ? XDP_COPY : 0) |
           (sg ? XDP_USE_SG : 0);
}

/* Everything but the bind, which may be tried twice (with and without
 * XDP_USE_SG) on the same socket. */
static bool setup_passed_socket(XskQueue *q)
{
    const XskQueueConfig *c = &q->cfg;
    struct xdp_umem_reg reg = {
        .addr = (uintptr_t)q->umem_area, .len = q->umem_size,
        .chunk_size = XSK_FRAME_SIZE,
    };
    struct xdp_mmap_offsets off;
    socklen_t optlen = sizeof(off);
    struct xsk_ring_cons fill, tx;

    q->fd = c->sock_fd;
    if (setsockopt(q->fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof(reg)) ||
        !set_int_opt(q->fd, XDP_UMEM_FILL_RING, c->rx_ring_size) ||
        !set_int_opt(q->fd, XDP_UMEM_COMPLETION_RING, c->tx_ring_size) ||
        !set_int_opt(q->fd, XDP_RX_RING, c->rx_ring_size) ||
        !set_int_opt(q->fd, XDP_TX_RING, c->tx_ring_size) ||
        getsockopt(q->fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &optlen)) {
        return false;
    }
    if (!map_ring(q, 0, XDP_UMEM_PGOFF_FILL_RING, &off.fr, sizeof(uint64_t),
                  c->rx_ring_size, &fill) ||
        !map_ring(q, 1, XDP_UMEM_PGOFF_COMPLETION_RING, &off.cr,
                  sizeof(uint64_t), c->tx_ring_size, &q->comp) ||
        !map_ring(q, 2, XDP_PGOFF_RX_RING, &off.rx, sizeof(struct xdp_desc),
                  c->rx_ring_size, &q->rx) ||
        !map_ring(q, 3, XDP_PGOFF_TX_RING, &off.tx, sizeof(struct xdp_desc),
                  c->tx_ring_size, &tx)) {
        return false;
    }
    as_producer(&fill, &q->fill);
    as_producer(&tx, &q->tx);
    return true;
}

static bool bind_passed_socket(XskQueue *q, bool sg)
{
    struct sockaddr_xdp sxdp = {
        .sxdp_family = AF_XDP, .sxdp_ifindex = q->cfg.ifindex,
        .sxdp_queue_id = q->cfg.queue_id, .sxdp_flags = bind_flags(q, sg),
    };

    return bind(q->fd, (struct sockaddr *)&sxdp, sizeof(sxdp)) == 0;
}

/* libxdp binds as it creates, and a failed create leaves the UMEM's
 * socket with rings it cannot set again: on failure the UMEM goes too,
 * so that a second try starts afresh. */
static bool setup_own_socket(XskQueue *q, bool sg)
{
    const XskQueueConfig *c = &q->cfg;
    struct xsk_umem_config ucfg = {
        .fill_size = c->rx_ring_size, .comp_size = c->tx_ring_size,
        .frame_size = XSK_FRAME_SIZE,
    };
    struct xsk_socket_config scfg = {
        .rx_size = c->rx_ring_size, .tx_size = c->tx_ring_size,
        .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
        .bind_flags = bind_flags(q, sg),
    };
    int err = xsk_umem__create(&q->umem, q->umem_area, q->umem_size,
                               &q->fill, &q->comp, &ucfg);

    if (!err) {
        err = xsk_socket__create(&q->xsk, c->ifname, c->queue_id, q->umem,
                                 &q->rx, &q->tx, &scfg);
    }
    if (err) {
        if (q->umem) {
            xsk_umem__delete(q->umem);
            q->umem = NULL;
        }
        errno = -err;
        return false;
    }
    q->fd = xsk_socket__fd(q->xsk);
    return true;
}

static bool bind_socket(XskQueue *q, bool sg)
{
    return q->cfg.sock_fd >= 0 ? bind_passed_socket(q, sg)
                               : setup_own_socket(q, sg);
}

/*
 * Binds with XDP_USE_SG if asked; a kernel that refuses it (before 6.6,
 * EINVAL for the unknown flag; EOPNOTSUPP is the kernel's word for a mode
 * without it) gets the socket without it, and the errno is kept for the
 * netdev to report.  A zero-copy driver without multi-buffer does not
 * refuse: the kernel binds the socket in copy mode instead.
 */
static bool open_socket(XskQueue *q)
{
    if (q->cfg.sock_fd >= 0 && !setup_passed_socket(q)) {
        return false;
    }
    if (!q->cfg.multi_buffer) {
        return bind_socket(q, false);
    }
    if (bind_socket(q, true)) {
        q->multi_buffer = true;
        return true;
    }
    if (errno != EINVAL && errno != EOPNOTSUPP) {
        return false;
    }
    q->sg_refused = errno;
    return bind_socket(q, false);
}

/* What the kernel allows a chain it sends (MAX_SKB_FRAGS page frags after
 * the linear part), as far as /proc tells. */
static unsigned tx_chain_max(void)
{
    g_autofree char *text = NULL;
    unsigned frags = DEFAULT_MAX_SKB_FRAGS;

    if (g_file_get_contents("/proc/sys/net/core/max_skb_frags", &text, NULL,
                            NULL)) {
        frags = g_ascii_strtoull(text, NULL, 10);
    }
    return CLAMP(frags + 1, 1, XSK_CHAIN_CAP);
}

/* The bounce area: virtual memory, only the part chains use is ever
 * touched. */
static bool map_bounce(XskQueue *q)
{
    q->bounce_size = (size_t)q->cfg.batch * NET_FRAME_MAX;
    q->bounce = mmap(NULL, q->bounce_size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q->bounce == MAP_FAILED) {
        q->bounce = NULL;
        return false;
    }
    return true;
}

/* On each socket the queue gets, first or replacing one. */
static void set_busy_poll(XskQueue *q)
{
    int one = 1, usecs = q->cfg.busy_poll_usecs, budget = q->cfg.batch;

    if (!usecs) {
        return;
    }
    /* Best effort: kernels without it still work, only without. */
    setsockopt(q->fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one, sizeof(one));
    setsockopt(q->fd, SOL_SOCKET, SO_BUSY_POLL, &usecs, sizeof(usecs));
    setsockopt(q->fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget,
               sizeof(budget));
}

/* The transmit frames, from UMEM address @first on, to the free stack. */
static void stock_tx_frames(XskQueue *q, uint64_t first)
{
    for (uint32_t i = 0; i < q->cfg.tx_ring_size; i++) {
        q->tx_free[i] = first + (uint64_t)i * XSK_FRAME_SIZE;
    }
    q->tx_nfree = q->cfg.tx_ring_size;
}

/* On the queue's own UMEM every receive frame goes to the fill ring;
 * the transmit frames follow them. */
static void populate_frames(XskQueue *q)
{
    uint32_t idx = 0, n = q->cfg.rx_ring_size;

    /* A new fill ring has room for them all.  The reservation stays out
     * of the assertion, which G_DISABLE_ASSERT compiles out. */
    if (xsk_ring_prod__reserve(&q->fill, n, &idx) != n) {
        g_assert_not_reached();
    }
    for (uint32_t i = 0; i < n; i++) {
        *xsk_ring_prod__fill_addr(&q->fill, idx + i) =
            (uint64_t)i * XSK_FRAME_SIZE;
    }
    xsk_ring_prod__submit(&q->fill, n);
    q->rx_nfree = 0;
    stock_tx_frames(q, (uint64_t)n * XSK_FRAME_SIZE);
}

static void read_options(XskQueue *q)
{
    struct xdp_options opts = { 0 };
    socklen_t len = sizeof(opts);

    if (!getsockopt(q->fd, SOL_XDP, XDP_OPTIONS, &opts, &len)) {
        q->zero_copy = opts.flags & XDP_OPTIONS_ZEROCOPY;
    }
}

static void release_socket(XskQueue *q)
{
    if (q->xsk) {
        xsk_socket__delete(q->xsk);
    }
    if (q->umem) {
        xsk_umem__delete(q->umem);
    }
    for (unsigned i = 0; i < G_N_ELEMENTS(q->maps); i++) {
        if (q->maps[i].addr) {
            munmap(q->maps[i].addr, q->maps[i].len);
        }
    }
    if (q->own_area) {
        munmap(q->own_area, q->umem_size);
    }
    if (q->host_area) {
        guest_ram_host_area_give(q->ram, q->host_off, q->umem_size);
    }
    if (q->bounce) {
        munmap(q->bounce, q->bounce_size);
    }
}

static void queue_free(XskQueue *q)
{
    release_socket(q);
    if (q->wake_fd >= 0) {
        close(q->wake_fd);
    }
    qemu_mutex_destroy(&q->tx_lock);
    g_mutex_clear(&q->request_lock);
    g_cond_clear(&q->request_cond);
    g_free(q->tx_free);
    g_free(q->rx_free);
    g_free(q);
}

static XskQueue *queue_new(const XskQueueConfig *cfg,
                           NetClientState *backend)
{
    XskQueue *q = g_new0(XskQueue, 1);

    q->cfg = *cfg;
    q->backend = backend;
    q->fd = -1;
    q->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    q->io_policy = -1;
    qemu_mutex_init(&q->tx_lock);
    g_mutex_init(&q->request_lock);
    g_cond_init(&q->request_cond);
    q->umem_size = xsk_queue_umem_size(cfg);
    q->rx_free = g_new(uint64_t, cfg->rx_ring_size);
    q->tx_free = g_new(uint64_t, cfg->tx_ring_size);
    q->tx_piece = XSK_FRAME_SIZE;
    q->copy_reason = cfg->copy_reason;
    return q;
}

/* The rings are there: what receive and transmit need besides. */
static void queue_ready(XskQueue *q)
{
    q->tx_chain_max = q->multi_buffer ? tx_chain_max() : 1;
    q->rx_peek = q->multi_buffer ? q->cfg.batch + XSK_CHAIN_CAP
                                 : q->cfg.batch;
    populate_frames(q);
}

XskQueue *xsk_queue_open(const XskQueueConfig *cfg, NetClientState *backend,
                         int *errno_out, GError **errp)
{
    XskQueue *q = queue_new(cfg, backend);
    bool ok;

    q->umem_area = mmap(NULL, q->umem_size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q->umem_area == MAP_FAILED) {
        q->umem_area = NULL;
        ok = false;
    } else {
        q->own_area = q->umem_area;
        /* The I/O thread reads every frame of 10 MiB of UMEM: fewer TLB
         * misses with huge pages.  Best effort. */
        madvise(q->umem_area, q->umem_size, MADV_HUGEPAGE);
        ok = open_socket(q) && (!q->multi_buffer || map_bounce(q));
    }
    if (!ok || q->wake_fd < 0) {
        *errno_out = errno;
        g_set_error(errp, ILLAN_ERROR, 0, "queue %u: %s", cfg->queue_id,
                    g_strerror(errno));
        queue_free(q);
        return NULL;
    }
    set_busy_poll(q);
    read_options(q);
    queue_ready(q);
    return q;
}

XskQueue *xsk_queue_new_on_rings(const XskQueueConfig *cfg,
                                 NetClientState *backend,
                                 const struct xsk_ring_cons *rx,
                                 const struct xsk_ring_prod *fill,
                                 void *umem)
{
    XskQueue *q = queue_new(cfg, backend);

    q->umem_area = umem;
    q->own_area = umem;
    q->rx = *rx;
    q->fill = *fill;
    q->multi_buffer = cfg->multi_buffer;
    if (q->multi_buffer && !map_bounce(q)) {
        g_error("mock rings: bounce buffer: %s", g_strerror(errno));
    }
    queue_ready(q);
    return q;
}

/* Receive. */

/*
 * While lending, the fill ring gets what the NIC lends, as far as it has
 * room, each buffer at the address whose data, after the kernel's
 * headroom, starts where the NIC said; the NIC keeps one buffer unlent
 * for each of the queue's own frames the kernel holds.  The queue's own
 * frames go in only when the NIC has nothing to lend: all of them while it
 * lends nothing at all (a stopped or closed guest: frames wait in them
 * as without lending), HOST_FILL_MAX while it may lend any moment (a guest
 * short of buffers, or that has just opened), so that the buffers it
 * posts are lent, behind that many frames at most.
 * True when something was lent.
 */
static bool lend_to_kernel(XskQueue *q)
{
    uint32_t idx = 0, room = xsk_prod_nb_free(&q->fill, q->cfg.rx_ring_size);
    uint64_t addrs[NET_BATCH_MAX];
    NetLendOutlook outlook = NET_LEND_OFF;
    unsigned n, lent = 0;

    /* Asked even without room, for the outlook. */
    do {
        n = net_backend_rx_lend(q->backend, addrs, MIN(room, NET_BATCH_MAX),
                                q->host_out, &outlook);
        if (n == 0 || xsk_ring_prod__reserve(&q->fill, n, &idx) != n) {
            break;
        }
        for (unsigned i = 0; i < n; i++) {
            *xsk_ring_prod__fill_addr(&q->fill, idx + i) =
                addrs[i] - NET_LEND_HEADROOM;
        }
        xsk_ring_prod__submit(&q->fill, n);
        room -= n;
        lent += n;
    } while (room > 0);
    q->lent_out += lent;
    q->host_fill = lent || outlook == NET_LEND_KEPT ? 0
                 : outlook == NET_LEND_EMPTY ? HOST_FILL_MAX
                 : q->cfg.rx_ring_size;
    return lent > 0;
}

/*
 * Gives the fill ring free frames of the queue's own, and while lending
 * asks the NIC first if @ask.  The fill ring has room for all of them but
 * for a moment: the kernel publishes what it took from the fill ring
 * just after it fills the rx ring (xsk_flush), and a thread on another
 * CPU sees that gap several times a second at a few Mpps.  What does not
 * fit stays on the stack for the next pass.
 */
static void refill(XskQueue *q, bool ask)
{
    uint32_t idx = 0, n = 0, room;
    bool lent = false, wakeup;

    if (q->lent_end && ask && !q->reclaiming) {
        lent = lend_to_kernel(q);
    }
    if (!q->lent_end || q->host_out < q->host_fill) {
        room = xsk_prod_nb_free(&q->fill, q->rx_nfree);
        if (q->lent_end) {
            room = MIN(room, q->host_fill - q->host_out);
        }
        n = MIN(q->rx_nfree, room);
    }
    if (n && xsk_ring_prod__reserve(&q->fill, n, &idx) == n) {
        for (uint32_t i = 0; i < n; i++) {
            *xsk_ring_prod__fill_addr(&q->fill, idx + i) =
                q->rx_free[--q->rx_nfree];
        }
        xsk_ring_prod__submit(&q->fill, n);
        if (q->lent_end) {
            __atomic_store_n(&q->host_out, q->host_out + n,
                             __ATOMIC_RELAXED);
        }
    } else if (!lent) {
        return;
    }
    wakeup = xsk_ring_prod__needs_wakeup(&q->fill);
    trace_af_xdp_fill_refill(q->cfg.queue_id, n, wakeup);
    if (wakeup) {
        STAT_ADD(q->stats.rx_wakeups, 1);
        recvfrom(q->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
    }
}

/* The UMEM frame a descriptor lies in (an unaligned-chunk UMEM keeps
 * the data's offset in the address's top bits). */
static inline uint64_t desc_frame(const struct xdp_desc *d)
{
    return xsk_umem__extract_addr(d->addr) & ~(uint64_t)(XSK_FRAME_SIZE - 1);
}

/* A batch as it is parsed from the rx ring: the frames, the first
 * descriptor of each, and the UMEM frame of every descriptor looked at. */
typedef struct RxBatch {
    uint32_t idx;                   /* the ring index of descriptor 0 */
    unsigned n;                     /* descriptors peeked */
    unsigned next;                  /* the first descriptor not parsed */
    unsigned nframes;
    size_t bounced;                 /* bytes of the bounce area in use */
    NetFrame frames[NET_BATCH_MAX];
    uint32_t starts[NET_BATCH_MAX];
    uint64_t addrs[RX_PEEK_MAX];
} RxBatch;

static const struct xdp_desc *rx_desc(XskQueue *q, const RxBatch *b,
                                      unsigned i)
{
    return xsk_ring_cons__rx_desc(&q->rx, b->idx + i);
}

/* Descriptors at b->next of a chain whose head was dropped already, up
 * to and including its last one, in this batch and the next ones.  The
 * kernel publishes a frame's descriptors at once: a chain the ring ends
 * in the middle of (fewer descriptors than a batch looks at) lost its
 * end, and what comes next is another frame. */
static void skip_rest_of_chain(XskQueue *q, RxBatch *b)
{
    while (q->rx_skip && b->next < b->n) {
        const struct xdp_desc *d = rx_desc(q, b, b->next);

        b->addrs[b->next++] = desc_frame(d);
        q->rx_skip = d->options & XDP_PKT_CONTD;
    }
    if (b->n < q->rx_peek) {
        q->rx_skip = false;
    }
}

/* Drops the chain's @len descriptors at b->next, counting it in @stat. */
static void drop_chain(XskQueue *q, RxBatch *b, unsigned len,
                       uint64_t *stat)
{
    for (unsigned i = 0; i < len; i++, b->next++) {
        b->addrs[b->next] = desc_frame(rx_desc(q, b, b->next));
    }
    STAT_ADD(*stat, 1);
    net_backend_rx_error(q->backend);
}

/*
 * The chain that starts at b->next: gathered into the bounce area as the
 * next frame (true), or dropped and counted when it cannot be a frame
 * (true as well, nothing added), or left for the next batch (false): it
 * goes on past what was peeked, or it must be dropped but frames come
 * before it (drops happen only at the head of a batch, which is always
 * consumed, so each is counted once).  The kernel publishes a frame's
 * descriptors at once: a chain the ring ends in the middle of lost its
 * end.
 */
static bool rx_chain(XskQueue *q, RxBatch *b)
{
    unsigned len = 0, i = b->next;
    size_t bytes = 0;
    bool more = true;
    uint8_t *to;

    while (more && i < b->n && len < XSK_CHAIN_CAP) {
        const struct xdp_desc *d = rx_desc(q, b, i++);

        bytes += d->len;
        more = d->options & XDP_PKT_CONTD;
        len++;
    }
    if (more && len < XSK_CHAIN_CAP && b->n == q->rx_peek) {
        return false;
    }
    if (b->nframes > 0 && (more || bytes > NET_FRAME_MAX)) {
        return false;
    }
    if (more && len == XSK_CHAIN_CAP) {
        /* Dropped whole, once: its tail is no frame of its own. */
        q->rx_skip = true;
        drop_chain(q, b, len, &q->stats.rx_too_long);
        skip_rest_of_chain(q, b);
    } else if (more) {
        drop_chain(q, b, len, &q->stats.rx_truncated);
    } else if (bytes > NET_FRAME_MAX) {
        drop_chain(q, b, len, &q->stats.rx_too_long);
    } else {
        to = q->bounce + b->bounced;
        b->starts[b->nframes] = b->next;
        b->frames[b->nframes++] = (NetFrame){ .data = to, .len = bytes };
        b->bounced += bytes;
        for (unsigned k = 0; k < len; k++, b->next++) {
            const struct xdp_desc *d = rx_desc(q, b, b->next);

            memcpy(to, xsk_umem__get_data(q->umem_area, d->addr), d->len);
            to += d->len;
            b->addrs[b->next] = desc_frame(d);
        }
    }
    return true;
}

/* Parses up to a batch of frames; a frame in one descriptor stays where
 * it is in the UMEM.  The loop keeps its indexes in locals: stores into
 * the batch's arrays could otherwise alias them. */
static void rx_parse(XskQueue *q, RxBatch *b)
{
    unsigned next, nframes;
    uint64_t at;

    skip_rest_of_chain(q, b);
    next = b->next;
    nframes = b->nframes;
    while (next < b->n && nframes < q->cfg.batch) {
        const struct xdp_desc *d = rx_desc(q, b, next);

        if (G_UNLIKELY(d->options & XDP_PKT_CONTD)) {
            b->next = next;
            b->nframes = nframes;
            if (!rx_chain(q, b)) {
                break;
            }
            next = b->next;
            nframes = b->nframes;
            continue;
        }
        b->addrs[next] = desc_frame(d);
        b->starts[nframes] = next++;
        /* An unaligned-chunk UMEM (lending) gives the data's offset in
         * the address's top bits; an aligned one leaves them 0. */
        at = xsk_umem__add_offset_to_addr(d->addr);
        b->frames[nframes].data = xsk_umem__get_data(q->umem_area, at);
        b->frames[nframes].lent = at < q->lent_end ? at : 0;
        b->frames[nframes++].len = d->len;
    }
    b->next = next;
    b->nframes = nframes;
}

/* How many of the first @taken frames were gathered chains. */
static unsigned count_chains(XskQueue *q, const RxBatch *b, unsigned taken)
{
    unsigned n = 0;

    for (unsigned i = 0; i < taken; i++) {
        n += b->frames[i].data >= q->bounce &&
             b->frames[i].data < q->bounce + b->bounced;
    }
    return n;
}

/*
 * The struct in front of the batch's last frame, if it is ours (the 4
 * bytes before a frame's first descriptor are the BTF id of what the
 * program wrote there).  Read before the frames are delivered, so that
 * the NIC can keep the stamp beside the frame's rx-queue entry and the
 * guest's sample is not limited to the entries it is slow to take.  The
 * frames of one batch went through one program, so this frame speaks for
 * all of them: one cache line a batch, not one a frame (the line in
 * front of a frame's data is one the copy into the guest never touches).
 */
static bool batch_meta(XskQueue *q, const RxBatch *b,
                       struct illan_xdp_meta *m)
{
    const struct xdp_desc *d = rx_desc(q, b, b->starts[b->nframes - 1]);
    const uint8_t *data = xsk_umem__get_data(q->umem_area, d->addr);

    memcpy(&m->btf_id, data - sizeof(m->btf_id), sizeof(m->btf_id));
    if (m->btf_id != q->cfg.meta_btf_id) {
        return false;
    }
    memcpy(m, data - sizeof(*m), sizeof(*m));
    return true;
}

/* The @taken frames the NIC took, counted as carrying our struct @m or,
 * when it is NULL, another. */
static void count_meta(XskQueue *q, const struct illan_xdp_meta *m,
                       unsigned taken)
{
    if (!m) {
        STAT_ADD(q->stats.rx_meta_foreign, taken);
        return;
    }
    STAT_ADD(q->stats.rx_meta_frames, taken);
    trace_af_xdp_rx_meta(q->cfg.queue_id, taken, m->rx_hash, m->rx_hash_type,
                         m->flags, m->rx_timestamp);
    __atomic_store_n(&q->stats.rx_meta_timestamp, m->rx_timestamp,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&q->stats.rx_meta_flags, m->flags, __ATOMIC_RELAXED);
    __atomic_store_n(&q->stats.rx_meta_hash, m->rx_hash, __ATOMIC_RELAXED);
}

/* The queue's own frames among the @n taken go back on its stack; a
 * lent buffer the kernel filled is the NIC's again. */
static void recycle(XskQueue *q, const uint64_t *addrs, unsigned n)
{
    if (!q->lent_end) {
        memcpy(q->rx_free + q->rx_nfree, addrs, n * sizeof(addrs[0]));
        q->rx_nfree += n;
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        if (addrs[i] >= q->lent_end) {
            q->rx_free[q->rx_nfree++] = addrs[i];
            __atomic_store_n(&q->host_out, q->host_out - 1,
                             __ATOMIC_RELAXED);
        } else {
            q->lent_out--;
        }
    }
}

/* The @taken frames by where the kernel wrote them. */
static void count_lent(XskQueue *q, const RxBatch *b, unsigned taken)
{
    unsigned lent = 0;

    for (unsigned i = 0; q->lent_end && i < taken; i++) {
        lent += b->frames[i].lent != 0;
    }
    STAT_ADD(q->stats.rx_lent_frames, lent);
    STAT_ADD(q->stats.rx_copied[q->copy_reason], taken - lent);
}

/* The batches that went with more to come are over: the NIC hears so
 * even when there is no frame left for it. */
static void end_rx_run(XskQueue *q)
{
    if (q->rx_run) {
        q->rx_run = false;
        net_backend_deliver_or_hold(q->backend, NULL, 0, NULL, false);
    }
}

/*
 * One batch from the rx ring to the NIC, which takes what it has room
 * for in the same call; what it holds goes back to the ring for later.
 * The NIC hears whether the ring has more behind the batch (this thread
 * comes back for it at once), so that it interrupts the guest once per
 * run of batches rather than once per batch.  Returns how many frames it
 * took, or 1 if it only dropped chains.
 */
static unsigned rx_batch(XskQueue *q)
{
    RxBatch b;
    unsigned taken, used;
    NetRxStamp stamp = { 0 };
    struct illan_xdp_meta meta;
    bool ours = false, more;

    b.n = xsk_ring_cons__peek(&q->rx, q->rx_peek, &b.idx);
    q->rx_held = false;
    if (b.n == 0) {
        q->rx_skip = false;         /* see skip_rest_of_chain */
        end_rx_run(q);
        refill(q, q->lent_end &&
                  __atomic_exchange_n(&q->lend_retry, false,
                                      __ATOMIC_ACQ_REL));
        return 0;
    }
    b.next = b.nframes = 0;
    b.bounced = 0;
    rx_parse(q, &b);
    /* While lending, what lies in front of a frame is the guest's. */
    if (q->cfg.meta_btf_id && b.nframes && !q->lent_end) {
        ours = batch_meta(q, &b, &meta);
        if (ours && (meta.flags & ILLAN_XDP_META_TS_KTIME)) {
            stamp.entered = meta.rx_timestamp;
        }
    }
    more = b.next < b.n || b.n == q->rx_peek;
    if (b.nframes) {
        taken = net_backend_deliver_or_hold(q->backend, b.frames, b.nframes,
                                            stamp.entered ? &stamp : NULL,
                                            more);
        /* Otherwise the NIC has ended the run itself. */
        q->rx_run = more && taken == b.nframes;
    } else {
        taken = 0;
        end_rx_run(q);
    }
    if (q->cfg.meta_btf_id && taken) {
        count_meta(q, ours ? &meta : NULL, taken);
    }
    if (stamp.visible) {
        latency_histogram_add(&q->stats.rx_latency, stamp.entered,
                              stamp.visible);
    }
    /* Descriptors of held frames go back to the ring, with any after. */
    used = taken < b.nframes ? b.starts[taken] : b.next;
    recycle(q, b.addrs, used);
    xsk_ring_cons__cancel(&q->rx, b.n - used);
    xsk_ring_cons__release(&q->rx, used);
    q->rx_held = taken < b.nframes;
    /* Guarded so that the arguments are loaded only when the event is
     * on: the compiler loaded them ahead of trace_*()'s own check. */
    if (G_UNLIKELY(trace_event_get_state_af_xdp_rx_batch())) {
        trace_af_xdp_rx_batch(q->cfg.queue_id, b.n, b.nframes, taken);
    }
    if (q->rx_held) {
        trace_af_xdp_rx_hold(q->cfg.queue_id, b.nframes - taken);
    }
    refill(q, true);
    count_lent(q, &b, taken);
    q->rx_since_sleep += taken;
    STAT_ADD(q->stats.rx_frames, taken);
    STAT_ADD(q->stats.rx_batches, 1);
    if (b.bounced) {
        STAT_ADD(q->stats.rx_chains, count_chains(q, &b, taken));
    }
    return taken ? taken : used > 0;
}

unsigned xsk_queue_rx_poll(XskQueue *q)
{
    return rx_batch(q);
}

/* Transmit. */

/* A completed frame of the queue's own is free again; one sent in place
 * (an address in guest RAM, below lent_end) counts for its sender's
 * wait. */
static void reap_completions_locked(XskQueue *q)
{
    uint32_t idx = 0;
    unsigned n = xsk_ring_cons__peek(&q->comp, q->cfg.tx_ring_size, &idx);

    for (unsigned i = 0; i < n; i++) {
        uint64_t addr = *xsk_ring_cons__comp_addr(&q->comp, idx + i);

        if (addr < q->lent_end) {
            q->tx_in_place_done++;
        } else {
            q->tx_free[q->tx_nfree++] = addr;
        }
    }
    xsk_ring_cons__release(&q->comp, n);
    if (n) {
        trace_af_xdp_tx_completed(q->cfg.queue_id, n);
    }
}

/* Frames the kernel has not taken from the tx ring yet. */
static bool tx_pending_locked(XskQueue *q)
{
    return xsk_prod_nb_free(&q->tx, q->cfg.tx_ring_size) <
           q->cfg.tx_ring_size;
}

static void request_tx_kick(XskQueue *q)
{
    /* Read first: while a kick is already pending, every frame's
     * exchange would take the line from the I/O thread for nothing. */
    if (!__atomic_load_n(&q->tx_kick, __ATOMIC_ACQUIRE) &&
        !__atomic_exchange_n(&q->tx_kick, true, __ATOMIC_ACQ_REL) &&
        !q->cfg.spin) {
        eventfd_write(q->wake_fd, 1);
    }
}

/* Makes the kernel send what the tx ring holds, in this thread.  False
 * when it refused (the interface down), counted; a busy or full queue is
 * not a refusal. */
static bool kick_locked(XskQueue *q)
{
    bool refused;

    STAT_ADD(q->stats.tx_kicks, 1);
    refused = sendto(q->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 &&
              errno != EAGAIN && errno != EBUSY && errno != ENOBUFS;
    if (refused) {
        STAT_ADD(q->stats.tx_kick_errors, 1);
    }
    reap_completions_locked(q);
    return !refused;
}

static bool tx_reserve_locked(XskQueue *q, unsigned ndesc, uint32_t *idx)
{
    return q->tx_nfree >= ndesc &&
           xsk_ring_prod__reserve(&q->tx, ndesc, idx) == ndesc;
}

/* The frame into @ndesc free UMEM frames, a descriptor each, all but the
 * last marked to be continued. */
static void tx_fill_locked(XskQueue *q, uint32_t idx, const uint8_t *data,
                           size_t len, unsigned ndesc)
{
    for (unsigned i = 0; i < ndesc; i++) {
        struct xdp_desc *d = xsk_ring_prod__tx_desc(&q->tx, idx + i);
        size_t part = MIN(len, q->tx_piece);

        d->addr = q->tx_free[--q->tx_nfree];
        d->len = part;
        d->options = i + 1 < ndesc ? XDP_PKT_CONTD : 0;
        memcpy(xsk_umem__get_data(q->umem_area, d->addr), data, part);
        data += part;
        len -= part;
    }
    xsk_ring_prod__submit(&q->tx, ndesc);
}

bool xsk_queue_send(XskQueue *q, const uint8_t *data, size_t len)
{
    unsigned ndesc;
    uint32_t idx = 0;
    bool sent;

    qemu_mutex_lock(&q->tx_lock);
    if (q->fd < 0) {
        STAT_ADD_LOCKED(q->stats.tx_no_socket, 1);
        qemu_mutex_unlock(&q->tx_lock);
        return false;
    }
    /* Read under the lock: the socket may have changed. */
    if (len > xsk_queue_tx_max(q)) {
        STAT_ADD_LOCKED(q->stats.tx_oversize, 1);
        qemu_mutex_unlock(&q->tx_lock);
        return false;
    }
    /* Most frames fit one piece: no division for them. */
    ndesc = len <= q->tx_piece ? 1 : (len + q->tx_piece - 1) / q->tx_piece;
    /* The I/O thread reaps after each kick; reaping here only when the
     * free frames run short keeps the sender off the completion ring's
     * cache lines, which the kernel writes on the I/O thread's CPU. */
    if (q->tx_nfree < ndesc) {
        reap_completions_locked(q);
    }
    /*
     * A full ring means the sender outruns the I/O thread's kicks (in
     * copy mode the kernel sends only inside sendto(), 32 descriptors a
     * call): rather than drop, the sender has the kernel send them now,
     * which also slows it to the rate the kernel sends at.
     */
    sent = tx_reserve_locked(q, ndesc, &idx);
    if (!sent) {
        kick_locked(q);
        sent = tx_reserve_locked(q, ndesc, &idx);
    }
    if (sent) {
        tx_fill_locked(q, idx, data, len, ndesc);
    }
    STAT_ADD_LOCKED(*(sent ? &q->stats.tx_frames : &q->stats.tx_ring_full),
                    1);
    if (sent && ndesc > 1) {
        STAT_ADD_LOCKED(q->stats.tx_chains, 1);
    }
    qemu_mutex_unlock(&q->tx_lock);
    /* Guarded as af_xdp_rx_batch is. */
    if (G_UNLIKELY(trace_event_get_state_af_xdp_tx_frame())) {
        trace_af_xdp_tx_frame(q->cfg.queue_id, len, ndesc, sent);
    }
    request_tx_kick(q);
    return sent;
}

/* Transmit zero copy. */

/* Whether the kernel has taken the tx descriptor at @idx. */
static bool tx_taken(const XskQueue *q, uint32_t idx)
{
    return (int32_t)(__atomic_load_n(q->tx.consumer, __ATOMIC_ACQUIRE) -
                     idx) > 0;
}

/*
 * Moves the frame at @idx, not yet taken, into @spare, a frame of the
 * queue's own set aside for it: the kernel then never reads the guest's
 * buffer.  Only a kick on the I/O thread that reads the descriptor in
 * these nanoseconds could still take the old address (if the interface
 * came up again just then): its completion would then end the next
 * in-place frame's wait one completion early, and @spare would be lost to
 * the queue until its socket is replaced.
 */
static void move_in_place_frame_locked(XskQueue *q, uint32_t idx,
                                       uint64_t spare)
{
    struct xdp_desc *d = xsk_ring_prod__tx_desc(&q->tx, idx);

    memcpy(xsk_umem__get_data(q->umem_area, spare),
           xsk_umem__get_data(q->umem_area, d->addr), d->len);
    __atomic_store_n(&d->addr, spare, __ATOMIC_RELEASE);
    q->tx_in_place_sent--;
    STAT_ADD(q->stats.tx_in_place_moved, 1);
}

/* Every guest frame sent in place has completed. */
static bool in_place_done(const XskQueue *q)
{
    return (int64_t)(q->tx_in_place_done - q->tx_in_place_sent) >= 0;
}

/* Kicks until the kernel takes the frame at @idx; false if the
 * interface refuses it (down), or the kernel has taken nothing by
 * @deadline (its queue stopped). */
static bool kick_until_taken_locked(XskQueue *q, uint32_t idx,
                                    gint64 deadline)
{
    while (!tx_taken(q, idx)) {
        if (!kick_locked(q) || g_get_monotonic_time() > deadline) {
            return tx_taken(q, idx);
        }
    }
    return true;
}

/*
 * The frame at @idx, sent in place, is the kernel's until it completes:
 * only then is the guest's buffer the guest's again.  In copy mode the
 * kernel copies the frame inside the kick that takes it, and on veth the
 * completion is there when the kick returns; a driver's zero copy
 * completes when its DMA is done.  A frame the kernel will not take
 * moves into @spare; one it took but has not completed after
 * TX_IN_PLACE_WAIT_US is left to it, counted, and the next frame's wait
 * ends only once it has completed too (or by its own deadline): never
 * early.  Whether @spare was used.
 */
static bool finish_in_place_locked(XskQueue *q, uint32_t idx, uint64_t spare)
{
    gint64 deadline = g_get_monotonic_time() + TX_IN_PLACE_WAIT_US;

    if (!kick_until_taken_locked(q, idx, deadline)) {
        move_in_place_frame_locked(q, idx, spare);
        return true;
    }
    reap_completions_locked(q);
    if (in_place_done(q)) {
        return false;
    }
    STAT_ADD(q->stats.tx_in_place_waits, 1);
    while (!in_place_done(q)) {
        if (g_get_monotonic_time() > deadline) {
            STAT_ADD(q->stats.tx_in_place_late, 1);
            break;
        }
        /* On two CPUs the softirq that completes may need this one. */
        sched_yield();
        reap_completions_locked(q);
    }
    return false;
}

/* Room in the tx ring, and a frame of the queue's own to move the frame
 * into should the kernel not take it. */
static bool in_place_reserve_locked(XskQueue *q, uint32_t *idx)
{
    if (!q->tx_nfree) {
        reap_completions_locked(q);
    }
    if (q->tx_nfree && xsk_ring_prod__reserve(&q->tx, 1, idx) == 1) {
        return true;
    }
    kick_locked(q);
    return q->tx_nfree && xsk_ring_prod__reserve(&q->tx, 1, idx) == 1;
}

bool xsk_queue_send_in_place(XskQueue *q, const uint8_t *data, size_t len)
{
    const uint8_t *base;
    uint32_t idx = 0;
    bool fits, sent = false;

    qemu_mutex_lock(&q->tx_lock);
    base = q->umem_area;
    /* A socket on guest RAM is bound in copy mode (see open_lending). */
    fits = q->lent_end && len <= LEND_CHUNK &&
           data >= base && (uint64_t)(data - base) + len <= q->lent_end;
    sent = fits && in_place_reserve_locked(q, &idx);
    if (sent) {
        struct xdp_desc *d = xsk_ring_prod__tx_desc(&q->tx, idx);
        uint64_t spare = q->tx_free[--q->tx_nfree];

        d->addr = data - base;
        d->len = len;
        d->options = 0;
        q->tx_in_place_sent++;
        xsk_ring_prod__submit(&q->tx, 1);
        if (!finish_in_place_locked(q, idx, spare)) {
            q->tx_free[q->tx_nfree++] = spare;
        }
        STAT_ADD_LOCKED(q->stats.tx_frames, 1);
        STAT_ADD_LOCKED(q->stats.tx_in_place, 1);
    }
    qemu_mutex_unlock(&q->tx_lock);
    if (sent) {
        trace_af_xdp_tx_in_place(q->cfg.queue_id, len);
    }
    return sent;
}

/* In copy mode the kernel transmits inside sendto(), a bounded number of
 * frames per call (32 on this kernel).  True when it took frames and left
 * some: the caller kicks again at once rather than after TX_RETRY_MS,
 * which would cap transmit at a few tens of thousands of frames a second.
 * A refused kick (ring busy, link down) is retried after the delay. */
static bool tx_kick(XskQueue *q)
{
    bool pending, progress = true;

    __atomic_store_n(&q->tx_kick, false, __ATOMIC_RELEASE);
    if (xsk_ring_prod__needs_wakeup(&q->tx)) {
        STAT_ADD(q->stats.tx_kicks, 1);
        if (sendto(q->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0) {
            progress = false;
            if (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS) {
                STAT_ADD(q->stats.tx_kick_errors, 1);
            }
        }
    }
    qemu_mutex_lock(&q->tx_lock);
    reap_completions_locked(q);
    pending = tx_pending_locked(q);
    qemu_mutex_unlock(&q->tx_lock);
    if (pending && !xsk_queue_failed(q)) {
        __atomic_store_n(&q->tx_kick, true, __ATOMIC_RELEASE);
        return progress;
    }
    return false;
}

/* Receive zero copy: changing the UMEM. */

/* The socket and its UMEM; closing drains the fill ring (the kernel's
 * unbind is synchronous), which nothing else can. */
static void close_socket(XskQueue *q)
{
    xsk_socket__delete(q->xsk);
    xsk_umem__delete(q->umem);
    q->xsk = NULL;
    q->umem = NULL;
    q->fd = -1;
}

/* The kernel counts per socket: a socket about to close adds its counts
 * to those the queue reports.  Under tx_lock. */
static void keep_xdp_statistics(XskQueue *q)
{
    struct xdp_statistics x = { 0 };
    socklen_t len = sizeof(x);

    if (getsockopt(q->fd, SOL_XDP, XDP_STATISTICS, &x, &len)) {
        return;
    }
    q->xdp_closed.rx_dropped += x.rx_dropped;
    q->xdp_closed.rx_invalid_descs += x.rx_invalid_descs;
    q->xdp_closed.tx_invalid_descs += x.tx_invalid_descs;
    q->xdp_closed.rx_ring_full += x.rx_ring_full;
    q->xdp_closed.rx_fill_ring_empty_descs += x.rx_fill_ring_empty_descs;
    q->xdp_closed.tx_ring_empty_descs += x.tx_ring_empty_descs;
}

/* libxdp keeps a ring's cached indexes in its struct: a new socket's
 * rings start from zeroed ones. */
static void clear_rings(XskQueue *q)
{
    memset(&q->rx, 0, sizeof(q->rx));
    memset(&q->fill, 0, sizeof(q->fill));
    memset(&q->tx, 0, sizeof(q->tx));
    memset(&q->comp, 0, sizeof(q->comp));
}

/* Receive and transmit frames of the queue's own from UMEM address
 * @first on, none in the kernel. */
static void stock_frames(XskQueue *q, uint64_t first)
{
    for (uint32_t i = 0; i < q->cfg.rx_ring_size; i++) {
        q->rx_free[i] = first + (uint64_t)i * XSK_FRAME_SIZE;
    }
    q->rx_nfree = q->cfg.rx_ring_size;
    stock_tx_frames(q, first + (uint64_t)q->cfg.rx_ring_size * XSK_FRAME_SIZE);
    __atomic_store_n(&q->host_out, 0, __ATOMIC_RELAXED);
    q->lent_out = 0;
}

/*
 * A socket on guest RAM followed by the queue's own frames (the host
 * area), in unaligned-chunk mode so that fill addresses are taken as
 * given, with chunks sized to a lent buffer, and without XDP_USE_SG, so
 * that no frame spans buffers.  In copy mode always: a driver's zero
 * copy would drop, unseen, a lent buffer that crosses pages whose DMA
 * addresses are not contiguous, which guest RAM's need not be.  A
 * closed socket's queue is released by the kernel in the background:
 * the bind is retried while it says EBUSY.
 */
static bool open_lending(XskQueue *q, GuestRam *ram)
{
    struct xsk_umem_config ucfg = {
        .fill_size = q->cfg.rx_ring_size, .comp_size = q->cfg.tx_ring_size,
        .frame_size = LEND_CHUNK, .flags = XDP_UMEM_UNALIGNED_CHUNK_FLAG,
    };
    struct xsk_socket_config scfg = {
        .rx_size = q->cfg.rx_ring_size, .tx_size = q->cfg.tx_ring_size,
        .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
        .bind_flags = bind_flags(q, false) | XDP_COPY,
    };
    gint64 deadline = g_get_monotonic_time() + REBIND_DEADLINE_US;
    int err;

    if (!q->host_area) {
        q->host_area = guest_ram_host_area_take(ram, q->umem_size,
                                                &q->host_off);
        if (!q->host_area) {
            errno = ENOMEM;
            return false;
        }
    }
    /* A failed create leaves the UMEM's socket with rings it cannot set
     * again (see setup_own_socket): each try starts afresh. */
    for (;;) {
        clear_rings(q);
        err = xsk_umem__create(&q->umem, guest_ram_base(ram),
                               q->host_off + q->umem_size, &q->fill, &q->comp,
                               &ucfg);
        if (!err) {
            err = xsk_socket__create(&q->xsk, q->cfg.ifname, q->cfg.queue_id,
                                     q->umem, &q->rx, &q->tx, &scfg);
        }
        if (!err) {
            break;
        }
        if (q->umem) {
            xsk_umem__delete(q->umem);
            q->umem = NULL;
        }
        if (err != -EBUSY || g_get_monotonic_time() > deadline) {
            errno = -err;
            return false;
        }
        g_usleep(REBIND_RETRY_US);
    }
    q->fd = xsk_socket__fd(q->xsk);
    set_busy_poll(q);
    read_options(q);
    q->umem_area = guest_ram_base(ram);
    q->lent_end = guest_ram_size(ram);
    q->multi_buffer = false;
    q->tx_chain_max = 1;
    q->rx_peek = q->cfg.batch;
    q->tx_piece = LEND_CHUNK;
    stock_frames(q, q->host_off);
    return true;
}

/* Back on the queue's own UMEM, as xsk_queue_open() left it. */
static bool open_own(XskQueue *q)
{
    gint64 deadline = g_get_monotonic_time() + REBIND_DEADLINE_US;
    bool ok;

    q->umem_area = q->own_area;
    q->tx_piece = XSK_FRAME_SIZE;
    for (;;) {
        clear_rings(q);
        q->multi_buffer = false;
        q->sg_refused = 0;
        ok = open_socket(q);
        if (ok || errno != EBUSY || g_get_monotonic_time() > deadline) {
            break;
        }
        g_usleep(REBIND_RETRY_US);
    }
    if (ok) {
        set_busy_poll(q);
        read_options(q);
        queue_ready(q);
    }
    return ok;
}

/* What the guest queued goes out before its socket closes; what the
 * kernel would not take is counted as its refusal. */
static void flush_tx_locked(XskQueue *q)
{
    for (unsigned i = 0; i < q->cfg.tx_ring_size && tx_pending_locked(q);
         i++) {
        kick_locked(q);
    }
    if (tx_pending_locked(q)) {
        STAT_ADD(q->stats.tx_kick_errors,
                 q->cfg.tx_ring_size -
                 xsk_prod_nb_free(&q->tx, q->cfg.tx_ring_size));
    }
}

static void drain_rx_ring(XskQueue *q);
static gboolean drain_readable(gint fd, GIOCondition cond, gpointer opaque);

/* The old socket goes: what it holds goes to the NIC first, lending
 * nothing more, and once this returns the kernel writes no lent buffer.
 * Under tx_lock. */
static void close_for_switch_locked(XskQueue *q)
{
    if (q->fd < 0) {
        return;             /* the last switch left none */
    }
    flush_tx_locked(q);
    q->cfg.socket_changed(q->cfg.opaque, q->cfg.queue_id, -1, false);
    g_usleep(GAP_GRACE_US);
    q->reclaiming = true;
    drain_rx_ring(q);
    q->reclaiming = false;
    /* What the NIC held, and what came since, is lost with the socket:
     * counted, from the ring's own indexes (libxdp's cached ones need
     * not have seen the latest). */
    STAT_ADD(q->stats.reclaim_dropped,
             __atomic_load_n(q->rx.producer, __ATOMIC_ACQUIRE) -
             __atomic_load_n(q->rx.consumer, __ATOMIC_RELAXED));
    keep_xdp_statistics(q);
    close_socket(q);
    /* The close took back everything lent. */
    q->lent_end = 0;
    q->lent_out = 0;
    __atomic_store_n(&q->host_out, 0, __ATOMIC_RELAXED);
}

/*
 * The kernel refused the new socket (another socket took the queue, the
 * UMEM could not be registered): the queue has none, and rings that
 * libxdp has unmapped.  It carries nothing until the next switch opens
 * one (cont), or the interface returns; senders count their frames as
 * tx_no_socket, and the I/O thread only waits.
 */
static void no_socket_locked(XskQueue *q)
{
    clear_rings(q);
    q->fd = -1;
    __atomic_store_n(&q->failed, true, __ATOMIC_RELEASE);
}

/* The new socket, on @ram or the queue's own UMEM.  Under tx_lock.  True
 * when it lends. */
static bool open_for_switch_locked(XskQueue *q, GuestRam *ram)
{
    bool lend = ram && open_lending(q, ram);

    if (ram && !lend) {
        __atomic_store_n(&q->stats.lend_error, errno, __ATOMIC_RELAXED);
        __atomic_store_n(&q->copy_reason, XSK_COPY_REFUSED, __ATOMIC_RELAXED);
        trace_af_xdp_lend_refused(q->cfg.queue_id, g_strerror(errno));
    }
    if (!lend && !open_own(q)) {
        no_socket_locked(q);
    } else {
        __atomic_store_n(&q->failed,
                         !q->cfg.socket_changed(q->cfg.opaque,
                                                q->cfg.queue_id, q->fd, lend),
                         __ATOMIC_RELEASE);
    }
    __atomic_store_n(&q->lending, lend, __ATOMIC_RELEASE);
    trace_af_xdp_lend_switch(q->cfg.queue_id, lend);
    return lend;
}

/*
 * A new socket on guest RAM (@ram), or on the queue's own UMEM alone
 * (NULL): the first, or one that replaces a socket whose fill ring holds
 * lent buffers, to take them back.  Frames already in the rx ring go to
 * the NIC first, lending nothing more; the old socket's close takes
 * every buffer on its fill ring back.  Until the new socket is in the
 * program's map, the program drops the queue's frames and counts them
 * (socket_changed with fd -1).  A refused UMEM leaves the queue on its
 * own, the reason kept.
 */
static void switch_umem(XskQueue *q, GuestRam *ram)
{
    bool lend, watched = q->drain_watch != 0;

    /* A machine that has left watches the socket from the main loop,
     * which is where this runs then. */
    if (watched) {
        g_source_remove(q->drain_watch);
        q->drain_watch = 0;
    }
    qemu_mutex_lock(&q->tx_lock);
    close_for_switch_locked(q);
    lend = open_for_switch_locked(q, ram);
    qemu_mutex_unlock(&q->tx_lock);
    /* Frames find buffers at once, even while the I/O thread is parked
     * (a stopped machine's wait in the ring). */
    if (lend) {
        refill(q, true);
    }
    if (watched && !xsk_queue_failed(q)) {
        q->drain_watch = g_unix_fd_add(q->fd, G_IO_IN, drain_readable, q);
    }
}

static gpointer switch_to_own_thread(gpointer opaque)
{
    XskQueue *q = opaque;

    qemu_mutex_lock(&q->tx_lock);
    close_for_switch_locked(q);
    g_mutex_lock(&q->request_lock);
    __atomic_store_n(&q->switch_closed, true, __ATOMIC_RELEASE);
    g_cond_broadcast(&q->request_cond);
    g_mutex_unlock(&q->request_lock);
    open_for_switch_locked(q, NULL);
    qemu_mutex_unlock(&q->tx_lock);
    return NULL;
}

/*
 * Back on the queue's own UMEM for a machine that is leaving: returns
 * once the socket on guest RAM is closed, and a thread of its own binds
 * the new socket, which waits for the kernel to release the queue (about
 * 16 ms, most of a migration's downtime here).  Frames that arrive
 * meanwhile the program drops and counts, as the source drops those that
 * wait in its rings once the machine has left.  It keeps tx_lock
 * throughout, so senders wait for the new socket; the next to touch the
 * receive side joins it first (join_switch).
 */
static void switch_to_own_leaving(XskQueue *q)
{
    __atomic_store_n(&q->switch_closed, false, __ATOMIC_RELAXED);
    q->switcher = g_thread_new("xsk-switch", switch_to_own_thread, q);
    g_mutex_lock(&q->request_lock);
    while (!__atomic_load_n(&q->switch_closed, __ATOMIC_ACQUIRE)) {
        g_cond_wait(&q->request_cond, &q->request_lock);
    }
    g_mutex_unlock(&q->request_lock);
}

static void join_switch(XskQueue *q)
{
    if (G_UNLIKELY(q->switcher)) {
        g_thread_join(q->switcher);
        q->switcher = NULL;
    }
}

unsigned xsk_interface_mtu(const char *ifname)
{
    struct ifreq ifr = { 0 };
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    unsigned mtu = 0;

    g_strlcpy(ifr.ifr_name, ifname, sizeof(ifr.ifr_name));
    if (fd >= 0 && ioctl(fd, SIOCGIFMTU, &ifr) == 0) {
        mtu = ifr.ifr_mtu;
    }
    if (fd >= 0) {
        close(fd);
    }
    return mtu;
}

/* Lending starts, unless this queue never may or the interface's
 * frames would not fit a lent buffer. */
static void start_lending(XskQueue *q)
{
    XskCopyReason why = __atomic_load_n(&q->copy_reason, __ATOMIC_RELAXED);

    if (why != XSK_COPY_NOT_LENDING) {
        return;
    }
    if (xsk_interface_mtu(q->cfg.ifname) > XSK_LEND_MTU_MAX) {
        __atomic_store_n(&q->copy_reason, XSK_COPY_MTU, __ATOMIC_RELAXED);
        return;
    }
    switch_umem(q, __atomic_load_n(&q->ram, __ATOMIC_ACQUIRE));
    STAT_ADD(q->stats.lend_switches, q->lent_end != 0);
}

/* Answers every request made so far: lending to start, or lent buffers
 * to be taken back (and too many frames of the queue's own with them). */
static void serve_requests(XskQueue *q)
{
    unsigned seq = __atomic_load_n(&q->request_seq, __ATOMIC_ACQUIRE);
    bool wanted = __atomic_load_n(&q->lend_wanted, __ATOMIC_ACQUIRE);
    bool leaving = __atomic_exchange_n(&q->leaving, false, __ATOMIC_ACQ_REL);

    /* A switch in the background has lent_end 0 already. */
    if (!q->lent_end && wanted) {
        join_switch(q);
        start_lending(q);
    } else if (q->lent_end && !wanted) {
        if (leaving && !q->drain_watch) {
            switch_to_own_leaving(q);
        } else {
            switch_umem(q, NULL);
        }
        STAT_ADD(q->stats.lend_reclaims, 1);
    } else if (q->lent_end) {
        /* What the NIC can lend now says how many of the queue's own
         * frames the kernel may hold (see lend_to_kernel): more than that
         * go too (a guest that has just opened). */
        refill(q, true);
        if (q->lent_out || q->host_out > q->host_fill) {
            switch_umem(q, __atomic_load_n(&q->ram, __ATOMIC_ACQUIRE));
            STAT_ADD(q->stats.lend_reclaims, 1);
        }
    }
    g_mutex_lock(&q->request_lock);
    __atomic_store_n(&q->request_done, seq, __ATOMIC_RELEASE);
    g_cond_broadcast(&q->request_cond);
    g_mutex_unlock(&q->request_lock);
}

static bool requested(XskQueue *q)
{
    return __atomic_load_n(&q->request_seq, __ATOMIC_ACQUIRE) !=
           __atomic_load_n(&q->request_done, __ATOMIC_ACQUIRE);
}

/*
 * The I/O thread serves the request at its next turn.  A parked thread
 * cannot (a pause that waits for this caller's own thread would never
 * end), so then, or before the thread runs at all, the caller serves it
 * itself: the thread stays parked until the pause ends, which cannot
 * happen while this caller is in the middle of it.
 */
static void request_and_wait(XskQueue *q)
{
    unsigned ticket;

    g_mutex_lock(&q->request_lock);
    ticket = q->request_seq + 1;
    __atomic_store_n(&q->request_seq, ticket, __ATOMIC_RELEASE);
    eventfd_write(q->wake_fd, 1);
    while ((int)(__atomic_load_n(&q->request_done, __ATOMIC_ACQUIRE) -
                 ticket) < 0) {
        if (!q->thread || pause_thread_parked(q->pause)) {
            g_mutex_unlock(&q->request_lock);
            serve_requests(q);
            return;
        }
        g_cond_wait_until(&q->request_cond, &q->request_lock,
                          g_get_monotonic_time() + 1000);
    }
    g_mutex_unlock(&q->request_lock);
}

void xsk_queue_lendable(XskQueue *q, GuestRam *ram)
{
    if (ram) {
        __atomic_store_n(&q->ram, ram, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&q->lend_wanted, ram != NULL, __ATOMIC_RELEASE);
    request_and_wait(q);
}

void xsk_queue_unlend_leaving(XskQueue *q)
{
    __atomic_store_n(&q->leaving, true, __ATOMIC_RELEASE);
    xsk_queue_lendable(q, NULL);
}

void xsk_queue_reclaim(XskQueue *q)
{
    request_and_wait(q);
}

/* The I/O thread. */

/* Sleeps until the socket has frames (unless the NIC has no room for
 * them), the NIC has room, a sender or close wakes us, or a pending
 * transmit needs its retry. */
static void wait_for_work(XskQueue *q)
{
    struct pollfd fds[2] = {
        { .fd = q->wake_fd, .events = POLLIN },
        { .fd = q->fd, .events = POLLIN },
    };
    bool kick = __atomic_load_n(&q->tx_kick, __ATOMIC_ACQUIRE);
    /* A dead socket would report POLLERR forever: wait for close. */
    nfds_t nfds = xsk_queue_failed(q) || q->rx_held ? 1 : 2;
    uint64_t ignored, wait_ns = kick ? TX_RETRY_MS * 1000000ull : 0;
    struct timespec ts;

    /* Frames came faster than a batch per wake-up: rather than be woken
     * by the kernel for every NAPI poll of them, sleep a while and take
     * what came meanwhile in one go.  Not while lending: the fill ring
     * then holds only the guest's buffers, a few hundred, which the
     * kernel used up during such sleeps and then dropped frames for
     * (docs/devel/benchmarks.md). */
    if (q->rx_since_sleep >= q->cfg.batch && !q->lent_end) {
        nfds = 1;
        wait_ns = RX_LOAD_SLEEP_NS;
        STAT_ADD(q->stats.load_sleeps, 1);
    }
    q->rx_since_sleep = 0;
    ts = (struct timespec){ wait_ns / 1000000000, wait_ns % 1000000000 };
    STAT_ADD(q->stats.sleeps, 1);
    if (ppoll(fds, nfds, wait_ns ? &ts : NULL, NULL) <= 0) {
        return;
    }
    if (fds[0].revents & POLLIN) {
        eventfd_read(q->wake_fd, &ignored);
    }
    if (nfds == 2 && (fds[1].revents & (POLLERR | POLLHUP | POLLNVAL))) {
        __atomic_store_n(&q->failed, true, __ATOMIC_RELEASE);
    }
}

static void idle(XskQueue *q)
{
    if (!q->cfg.spin) {
        wait_for_work(q);
    } else if (q->cfg.busy_poll_usecs) {
        /* Lets the kernel run the device's NAPI on this thread. */
        recvfrom(q->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
    } else {
        /* A spinning thread that shares its CPU (with a vCPU, say) hands
         * it over when it has nothing to do, instead of at the end of its
         * time slice; alone on its CPU this returns at once. */
        sched_yield();
    }
}

/*
 * A wake-up of a SCHED_BATCH thread (frames came, a kick was asked for)
 * does not preempt the thread running on its CPU.  A vCPU there finishes
 * its poll and the sends it makes, and this thread then takes them in
 * one kick, instead of being switched to and back for each
 * (docs/devel/benchmarks.md).  Any other policy illan was given stays.
 */
static void set_io_policy(XskQueue *q)
{
    struct sched_param none = { 0 };

    if (q->cfg.sched_batch && sched_getscheduler(0) == SCHED_OTHER) {
        sched_setscheduler(0, SCHED_BATCH, &none);
    }
    __atomic_store_n(&q->io_policy, sched_getscheduler(0), __ATOMIC_RELAXED);
}

static gpointer io_thread(gpointer opaque)
{
    XskQueue *q = opaque;

    set_io_policy(q);

    while (!__atomic_load_n(&q->stopping, __ATOMIC_ACQUIRE)) {
        unsigned n;
        bool more_tx = false;

        if (pause_point(q->pause)) {
            continue;
        }
        if (G_UNLIKELY(requested(q))) {
            serve_requests(q);
        }
        join_switch(q);
        if (G_UNLIKELY(q->fd < 0)) {
            wait_for_work(q);
            continue;
        }
        n = rx_batch(q);
        if (__atomic_load_n(&q->tx_kick, __ATOMIC_ACQUIRE)) {
            more_tx = tx_kick(q);
        }
        if (n == 0 && !more_tx) {
            idle(q);
        }
    }
    return NULL;
}

/* Draining for a machine that has left. */

/* At most a ring's worth, so the main loop gets its turn between. */
static void drain_rx_ring(XskQueue *q)
{
    uint32_t taken = 0, n;

    do {
        n = rx_batch(q);
        taken += n;
    } while (n > 0 && taken < q->cfg.rx_ring_size);
}

static gboolean drain_readable(gint fd, GIOCondition cond, gpointer opaque)
{
    XskQueue *q = opaque;

    (void)fd;
    if (cond & (G_IO_ERR | G_IO_HUP | G_IO_NVAL)) {
        __atomic_store_n(&q->failed, true, __ATOMIC_RELEASE);
        q->drain_watch = 0;
        return G_SOURCE_REMOVE;
    }
    drain_rx_ring(q);
    return G_SOURCE_CONTINUE;
}

void xsk_queue_drain_parked(XskQueue *q, bool on)
{
    if (on == (q->drain_watch != 0)) {
        return;
    }
    if (!on) {
        g_source_remove(q->drain_watch);
        q->drain_watch = 0;
        return;
    }
    join_switch(q);
    if (xsk_queue_failed(q)) {
        return;
    }
    /* What the guest sent just before it stopped still goes out: the
     * I/O thread parked before it kicked the transmit. */
    while (tx_kick(q)) {
    }
    drain_rx_ring(q);
    q->drain_watch = g_unix_fd_add(q->fd, G_IO_IN, drain_readable, q);
}

void xsk_queue_rx_ready(XskQueue *q)
{
    trace_af_xdp_rx_resume(q->cfg.queue_id);
    __atomic_store_n(&q->lend_retry, true, __ATOMIC_RELEASE);
    if (!q->cfg.spin) {
        eventfd_write(q->wake_fd, 1);
    }
}

static void kick_io_thread(void *opaque)
{
    eventfd_write(((XskQueue *)opaque)->wake_fd, 1);
}

void xsk_queue_start(XskQueue *q)
{
    g_autofree char *name = g_strdup_printf("xsk-%s-q%u", q->cfg.ifname,
                                            q->cfg.queue_id);

    q->pause = pause_thread_register(name, kick_io_thread, q);
    q->thread = g_thread_new(name, io_thread, q);
}

void xsk_queue_close(XskQueue *q)
{
    if (!q) {
        return;
    }
    xsk_queue_drain_parked(q, false);
    if (q->thread) {
        __atomic_store_n(&q->stopping, true, __ATOMIC_RELEASE);
        pause_thread_leave(q->pause);
        eventfd_write(q->wake_fd, 1);
        g_thread_join(q->thread);
        pause_thread_free(q->pause);
    }
    join_switch(q);
    queue_free(q);
}

bool xsk_queue_failed(const XskQueue *q)
{
    return __atomic_load_n(&q->failed, __ATOMIC_ACQUIRE);
}

bool xsk_queue_zero_copy(const XskQueue *q)
{
    return q->zero_copy;
}

bool xsk_queue_multi_buffer(const XskQueue *q)
{
    return q->multi_buffer;
}

int xsk_queue_sg_refused(const XskQueue *q)
{
    return q->sg_refused;
}

size_t xsk_queue_tx_max(const XskQueue *q)
{
    return (size_t)q->tx_chain_max * q->tx_piece;
}

int xsk_queue_fd(const XskQueue *q)
{
    return q->fd;
}

uint32_t xsk_queue_id(const XskQueue *q)
{
    return q->cfg.queue_id;
}

void xsk_queue_get_stats(XskQueue *q, XskQueueStats *st)
{
    struct xdp_statistics x = { 0 };
    socklen_t len = sizeof(x);

    st->rx_frames = STAT_GET(q->stats.rx_frames);
    st->rx_batches = STAT_GET(q->stats.rx_batches);
    st->rx_wakeups = STAT_GET(q->stats.rx_wakeups);
    st->sleeps = STAT_GET(q->stats.sleeps);
    st->load_sleeps = STAT_GET(q->stats.load_sleeps);
    st->rx_chains = STAT_GET(q->stats.rx_chains);
    st->rx_too_long = STAT_GET(q->stats.rx_too_long);
    st->rx_truncated = STAT_GET(q->stats.rx_truncated);
    st->tx_frames = STAT_GET(q->stats.tx_frames);
    st->tx_kicks = STAT_GET(q->stats.tx_kicks);
    st->tx_kick_errors = STAT_GET(q->stats.tx_kick_errors);
    st->tx_ring_full = STAT_GET(q->stats.tx_ring_full);
    st->tx_oversize = STAT_GET(q->stats.tx_oversize);
    st->tx_no_socket = STAT_GET(q->stats.tx_no_socket);
    st->failed = xsk_queue_failed(q);
    st->io_policy = __atomic_load_n(&q->io_policy, __ATOMIC_RELAXED);
    st->tx_chains = STAT_GET(q->stats.tx_chains);
    st->tx_in_place = STAT_GET(q->stats.tx_in_place);
    st->tx_in_place_waits = STAT_GET(q->stats.tx_in_place_waits);
    st->tx_in_place_moved = STAT_GET(q->stats.tx_in_place_moved);
    st->tx_in_place_late = STAT_GET(q->stats.tx_in_place_late);
    st->rx_meta_frames = STAT_GET(q->stats.rx_meta_frames);
    st->rx_meta_foreign = STAT_GET(q->stats.rx_meta_foreign);
    st->rx_meta_timestamp = STAT_GET(q->stats.rx_meta_timestamp);
    st->rx_meta_flags = STAT_GET(q->stats.rx_meta_flags);
    st->rx_meta_hash = STAT_GET(q->stats.rx_meta_hash);
    latency_histogram_snapshot(&q->stats.rx_latency, &st->rx_latency);
    st->lending = __atomic_load_n(&q->lending, __ATOMIC_ACQUIRE);
    st->rx_lent_frames = STAT_GET(q->stats.rx_lent_frames);
    for (unsigned i = 0; i < XSK_COPY__MAX; i++) {
        st->rx_copied[i] = STAT_GET(q->stats.rx_copied[i]);
    }
    st->lend_switches = STAT_GET(q->stats.lend_switches);
    st->reclaim_dropped = STAT_GET(q->stats.reclaim_dropped);
    st->host_frames = __atomic_load_n(&q->host_out, __ATOMIC_RELAXED);
    st->lend_reclaims = STAT_GET(q->stats.lend_reclaims);
    st->lend_error = __atomic_load_n(&q->stats.lend_error, __ATOMIC_RELAXED);
    /* The kernel keeps these on the socket; a dead one reads as zero.
     * The lock keeps the socket from changing meanwhile. */
    qemu_mutex_lock(&q->tx_lock);
    getsockopt(q->fd, SOL_XDP, XDP_STATISTICS, &x, &len);
    st->xdp_rx_dropped = x.rx_dropped + q->xdp_closed.rx_dropped;
    st->xdp_rx_invalid_descs = x.rx_invalid_descs +
                               q->xdp_closed.rx_invalid_descs;
    st->xdp_rx_ring_full = x.rx_ring_full + q->xdp_closed.rx_ring_full;
    st->xdp_rx_fill_ring_empty_descs = x.rx_fill_ring_empty_descs +
        q->xdp_closed.rx_fill_ring_empty_descs;
    st->xdp_tx_invalid_descs = x.tx_invalid_descs +
                               q->xdp_closed.tx_invalid_descs;
    st->xdp_tx_ring_empty_descs = x.tx_ring_empty_descs +
                                  q->xdp_closed.tx_ring_empty_descs;
    qemu_mutex_unlock(&q->tx_lock);
}
