/*
 * Live migration under real traffic, on real kernel parts.  The test
 * process takes a network namespace of its own and builds a Linux bridge
 * there with three veth ports: the traffic generator's, the source
 * illan's and the destination illan's (each illan on AF_XDP, native mode,
 * on the far end of its veth).  A generator thread sends numbered UDP
 * frames to the guest's MAC as fast as a packet socket allows; the
 * built-in guest (fwd=macswap) sends each back; a receiver thread checks
 * that every number comes back at most once and whole.  The bridge
 * floods no unknown unicast to the destination's port, so the
 * destination sees frames only once its self-announce (RARP) has moved
 * the guest's MAC there, as a real switch learns it.  At the end every
 * frame sent was echoed or counted as dropped, by a netdev, an AF_XDP
 * socket, a guest, a veth or the receiver's socket.
 *
 * Also the source's side alone: frames that reach a source which has
 * migrated away are taken from its AF_XDP ring and counted vm-stopped.
 *
 * Needs root (a network namespace, XDP), and says so when it skips.
 */
#include "libqtest.h"
#include "libqos/eth-frames.h"
#include "libqos/rig.h"
#include "migration-helpers.h"
#include "netns.h"

#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define FRAME_LEN       64
#define ETH_P_RARP_     0x8035
#define ANNOUNCE_ROUNDS 5       /* QEMU's default announce-rounds */
#define RX_BATCH        64
#define BRIDGE          "ilbr0"

static const uint8_t gen_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
static const uint8_t *const guest_mac = qrig_mac;

/* ---- Traffic: the generator and the receiver of its echoes ---- */

typedef struct Traffic {
    int tx_fd, rx_fd;
    int stop_fd;                /* eventfd: the receiver drains and ends */
    GThread *gen, *recv;
    bool stop;                  /* atomic: the generator ends */
    guint64 sent;               /* atomic: frames the kernel took */
    guint64 echoed;             /* atomic: distinct numbers echoed */
    guint64 duplicates;         /* atomic */
    guint64 damaged;            /* atomic */
    guint64 strangers;          /* atomic: frames not from the guest */
    guint64 sock_drops;         /* main: the receiver socket's drops */
    uint8_t *seen;              /* the receiver's: a bit per number */
    guint64 seen_bits;
} Traffic;

static guint64 load(const guint64 *counter)
{
    return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

static gpointer generate(gpointer opaque)
{
    Traffic *t = opaque;
    uint8_t f[FRAME_LEN];
    guint64 seq = 0;

    while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
        eth_frame_udp_seq(f, sizeof(f), guest_mac, gen_mac, seq);
        /* A refused send (the qdisc-less queue full) is sent again: the
         * numbers are those of frames on the wire. */
        if (send(t->tx_fd, f, sizeof(f), 0) == (ssize_t)sizeof(f)) {
            __atomic_store_n(&t->sent, ++seq, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

static void count_echo(Traffic *t, const uint8_t *f, size_t len)
{
    uint64_t seq;

    if (len < ETH_FRAME_HLEN || memcmp(f + 6, guest_mac, 6)) {
        __atomic_fetch_add(&t->strangers, 1, __ATOMIC_RELAXED);
        return;
    }
    if (!eth_frame_udp_seq_check(f, len, gen_mac, guest_mac, &seq)) {
        __atomic_fetch_add(&t->damaged, 1, __ATOMIC_RELAXED);
        return;
    }
    if (seq >= t->seen_bits) {
        guint64 bits = MAX(t->seen_bits * 2, (seq + 1 + 4095) & ~4095ULL);

        t->seen = g_realloc(t->seen, bits / 8);
        memset(t->seen + t->seen_bits / 8, 0, (bits - t->seen_bits) / 8);
        t->seen_bits = bits;
    }
    if (t->seen[seq / 8] & (1u << seq % 8)) {
        __atomic_fetch_add(&t->duplicates, 1, __ATOMIC_RELAXED);
        return;
    }
    t->seen[seq / 8] |= 1u << seq % 8;
    __atomic_fetch_add(&t->echoed, 1, __ATOMIC_RELAXED);
}

static gpointer receive(gpointer opaque)
{
    Traffic *t = opaque;
    static __thread uint8_t bufs[RX_BATCH][256];
    struct mmsghdr msgs[RX_BATCH];
    struct iovec iov[RX_BATCH];
    struct pollfd pfd[2] = { { .fd = t->rx_fd, .events = POLLIN },
                             { .fd = t->stop_fd, .events = POLLIN } };

    for (int i = 0; i < RX_BATCH; i++) {
        iov[i] = (struct iovec){ bufs[i], sizeof(bufs[i]) };
        msgs[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[i],
                                                 .msg_iovlen = 1 } };
    }
    for (;;) {
        int n = recvmmsg(t->rx_fd, msgs, RX_BATCH, MSG_DONTWAIT, NULL);

        for (int i = 0; i < n; i++) {
            count_echo(t, bufs[i], msgs[i].msg_hdr.msg_flags & MSG_TRUNC
                                   ? 0 : msgs[i].msg_len);
        }
        if (n > 0) {
            continue;
        }
        g_assert_true(n < 0 && errno == EAGAIN);
        if (pfd[1].revents & POLLIN) {
            return NULL;        /* told to end, and nothing is left */
        }
        poll(pfd, 2, -1);
    }
}

static void traffic_start(Traffic *t, const char *ifname)
{
    int rcvbuf = 32 << 20;

    *t = (Traffic){ 0 };
    t->tx_fd = packet_socket_open_proto(ifname, 0);
    /* IPv4 only: what comes in, not the generator's own frames. */
    t->rx_fd = packet_socket_open_proto(ifname, ETH_P_IP);
    setsockopt(t->rx_fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
    t->stop_fd = eventfd(0, EFD_CLOEXEC);
    g_assert_cmpint(t->stop_fd, >=, 0);
    packet_socket_drops(t->rx_fd);
    t->recv = g_thread_new("receiver", receive, t);
    t->gen = g_thread_new("generator", generate, t);
}

static void traffic_stop_generator(Traffic *t)
{
    __atomic_store_n(&t->stop, true, __ATOMIC_RELEASE);
    g_thread_join(t->gen);
}

/* Once every echo is in: the receiver ends, and its bitmap is ours. */
static void traffic_stop_receiver(Traffic *t)
{
    eventfd_write(t->stop_fd, 1);
    g_thread_join(t->recv);
}

static void traffic_free(Traffic *t)
{
    close(t->tx_fd);
    close(t->rx_fd);
    close(t->stop_fd);
    g_free(t->seen);
}

typedef struct EchoWait {
    Traffic *t;
    guint64 until;
} EchoWait;

static bool echoed_enough(void *opaque)
{
    EchoWait *w = opaque;

    return load(&w->t->echoed) >= w->until;
}

static void wait_echoes(Traffic *t, guint64 more, const char *where)
{
    EchoWait w = { t, load(&t->echoed) + more };

    qtest_wait_until(echoed_enough, &w, QTEST_WAIT_S, "%" G_GUINT64_FORMAT
                     " more echoes %s", more, where);
}

/* How many numbers in [@first, @last] never came back. */
static guint64 unechoed(const Traffic *t, guint64 first, guint64 last)
{
    guint64 n = 0;

    for (guint64 seq = first; seq <= last; seq++) {
        n += !(seq < t->seen_bits && (t->seen[seq / 8] >> seq % 8 & 1));
    }
    return n;
}

/* ---- The source's port: which numbers crossed it ---- */

/*
 * What the bridge sent toward the source and what the source sent back,
 * seen on the bridge's end of the source's veth: the highest number of
 * each.  Every frame that reached the source after its last echo (its
 * guest stopped, or its ring full) has a number between the two.
 */
typedef struct PortWatch {
    int fd, stop_fd;
    GThread *thread;
    guint64 to_end, from_end;   /* the highest number + 1, 0 for none;
                                   the thread's until joined */
} PortWatch;

static void watch_frame(PortWatch *p, const uint8_t *f, size_t len,
                        uint8_t pkttype)
{
    bool outgoing = pkttype == PACKET_OUTGOING;
    uint64_t seq;

    if (!eth_frame_udp_seq_check(f, len, outgoing ? guest_mac : gen_mac,
                                 outgoing ? gen_mac : guest_mac, &seq)) {
        return;
    }
    if (outgoing) {
        p->to_end = MAX(p->to_end, seq + 1);
    } else {
        p->from_end = MAX(p->from_end, seq + 1);
    }
}

static gpointer port_watch_run(gpointer opaque)
{
    PortWatch *p = opaque;
    static __thread uint8_t bufs[RX_BATCH][256];
    static __thread struct sockaddr_ll from[RX_BATCH];
    struct mmsghdr msgs[RX_BATCH];
    struct iovec iov[RX_BATCH];
    struct pollfd pfd[2] = { { .fd = p->fd, .events = POLLIN },
                             { .fd = p->stop_fd, .events = POLLIN } };

    for (int i = 0; i < RX_BATCH; i++) {
        iov[i] = (struct iovec){ bufs[i], sizeof(bufs[i]) };
        msgs[i] = (struct mmsghdr){ .msg_hdr = {
            .msg_name = &from[i], .msg_namelen = sizeof(from[i]),
            .msg_iov = &iov[i], .msg_iovlen = 1 } };
    }
    for (;;) {
        int n = recvmmsg(p->fd, msgs, RX_BATCH, MSG_DONTWAIT, NULL);

        for (int i = 0; i < n; i++) {
            watch_frame(p, bufs[i], msgs[i].msg_len, from[i].sll_pkttype);
            msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
        }
        if (n > 0) {
            continue;
        }
        g_assert_true(n < 0 && errno == EAGAIN);
        if (pfd[1].revents & POLLIN) {
            return NULL;
        }
        poll(pfd, 2, -1);
    }
}

static void port_watch_start(PortWatch *p, const char *ifname)
{
    int rcvbuf = 64 << 20;

    *p = (PortWatch){ .fd = packet_socket_open(ifname) };
    setsockopt(p->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
    packet_socket_drops(p->fd);
    p->stop_fd = eventfd(0, EFD_CLOEXEC);
    g_assert_cmpint(p->stop_fd, >=, 0);
    p->thread = g_thread_new("port-watch", port_watch_run, p);
}

/* Once every frame has crossed: asserts it saw them all. */
static void port_watch_stop(PortWatch *p)
{
    eventfd_write(p->stop_fd, 1);
    g_thread_join(p->thread);
    g_assert_cmpuint(packet_socket_drops(p->fd), ==, 0);
    close(p->fd);
    close(p->stop_fd);
}

/* ---- What each illan counted ---- */

typedef struct SideCounts {
    gint64 rx;              /* frames the netdev took from its rings */
    gint64 dropped;         /* of them dropped, any reason */
    gint64 vm_stopped;      /* of them dropped as vm-stopped */
    gint64 xsk_dropped;     /* the kernel's XSK drops (ring full, ...),
                               and those while lent buffers were taken
                               back (receive zero copy) */
    gint64 delivered;       /* into guest memory */
    gint64 guest_taken;     /* taken from the queue by the guest */
    gint64 guest_lost;      /* taken but not echoed by the guest */
    gint64 tx_lost;         /* echoes the netdev could not send */
} SideCounts;

static gint64 queue_stat(JsonObject *netdev, const char *name)
{
    JsonArray *queues = json_object_get_array_member(
        json_object_get_object_member(netdev, "backend"), "queues");

    return json_object_get_int_member(json_array_get_object_element(queues, 0),
                                      name);
}

static SideCounts side_counts(QTestState *qts)
{
    g_autoptr(JsonObject) net = qrig_net_stats(qts);
    g_autoptr(JsonObject) gs = qrig_guest_stats(qts);
    JsonObject *nd = qrig_stats_netdev(net, "n0");
    JsonObject *nic = qrig_stats_nic(net);
    JsonArray *guests = json_object_get_array_member(gs, "guests");
    SideCounts c = {
        .rx = qjson_int(nd, "rx.frames"),
        .dropped = qjson_sum(nd, "rx.dropped"),
        .vm_stopped = qjson_int(nd, "rx.dropped.vm-stopped"),
        .xsk_dropped = queue_stat(nd, "rx_dropped") +
                       queue_stat(nd, "rx_ring_full") +
                       queue_stat(nd, "rx-reclaim-drops"),
        .delivered = qjson_int(nic, "device.rx-frames"),
        .tx_lost = qjson_int(nic, "tx.errors") + qjson_int(nic, "tx.dropped"),
    };

    if (json_array_get_length(guests)) {
        JsonObject *g = qrig_stats_guest(gs);
        gint64 rx_lost = qjson_int(g, "drops.rx-invalid") +
                         qjson_int(g, "drops.bad-handle") +
                         qjson_int(g, "drops.machine-reset");

        c.guest_taken = qjson_int(g, "rx-frames") + rx_lost;
        c.guest_lost = rx_lost + qjson_int(g, "tx-failed");
    }
    return c;
}

/* Every frame this side counted lost, at any layer. */
static gint64 side_lost(const SideCounts *c)
{
    return c->dropped + c->xsk_dropped + c->guest_lost + c->tx_lost;
}

/* ---- The wire ---- */

/* Each pair's dut end is illan's (for the generator, the bridge's), its
 * peer end the bridge's (for the generator, the test's). */
typedef struct Wire {
    VethPair gen, src, dst;
} Wire;

static void wire_up(Wire *w)
{
    netns_bridge_create(BRIDGE);
    veth_pair_create(&w->gen, 1);
    veth_pair_create(&w->src, 1);
    veth_pair_create(&w->dst, 1);
    netns_bridge_add_port(BRIDGE, w->gen.dut, true, true);
    /* Unknown unicast reaches the source until the guest's echoes teach
     * the bridge where it is; no broadcast or multicast (the bridge's
     * own IGMP), so that every frame it counts is the generator's. */
    netns_bridge_add_port(BRIDGE, w->src.peer, true, false);
    /* Only what the bridge learnt is there: after the RARP. */
    netns_bridge_add_port(BRIDGE, w->dst.peer, false, false);
}

/* The kernel's drops on the way: a veth counts what it could not pass
 * to its peer as its own tx drop.  On illan's ends only those: what
 * their XDP program fails to hand to a full AF_XDP ring is also the
 * socket's drop, which the netdev reports.  Not the bridge's own: those
 * are frames to its local stack (the RARPs), none forwarded. */
static guint64 wire_drops(const Wire *w)
{
    const char *both[] = { w->gen.peer, w->gen.dut, w->src.peer,
                           w->dst.peer };
    guint64 sum = netns_if_drops(w->src.dut).tx + netns_if_drops(w->dst.dut).tx;

    for (size_t i = 0; i < G_N_ELEMENTS(both); i++) {
        IfDrops d = netns_if_drops(both[i]);

        sum += d.rx + d.tx;
    }
    return sum;
}

static void wire_down(Wire *w)
{
    veth_pair_destroy(&w->gen);
    veth_pair_destroy(&w->src);
    veth_pair_destroy(&w->dst);
    netns_run("ip link del " BRIDGE);
}

/* ---- illan ---- */

/* An illan whose built-in guest echoes what it receives. */
/* @netdev_opts: more af-xdp options (guest-umem=), or NULL. */
static QTestState *start_illan(const char *ifname, const char *mem,
                               const char *netdev_opts, const char *extra)
{
    return qtest_initf("-nodefaults -m %s -netdev af-xdp,id=n0,ifname=%s,"
                       "mode=native%s -device spapr-vlan,netdev=n0,"
                       "mac=52:54:00:12:34:56,id=net0 -guest ibmveth,id=g0,"
                       "dev=net0,fwd=macswap %s", mem, ifname,
                       netdev_opts ? netdev_opts : "", extra ? extra : "");
}

/* ---- The source alone after it migrated away ---- */

typedef struct StatWait {
    QTestState *qts;
    gint64 vm_stopped;
} StatWait;

static bool stopped_reached(void *opaque)
{
    StatWait *w = opaque;
    SideCounts c = side_counts(w->qts);

    return c.vm_stopped >= w->vm_stopped;
}

static void send_frames(int fd, unsigned n, guint64 *seq)
{
    uint8_t f[FRAME_LEN];

    for (unsigned i = 0; i < n; i++) {
        eth_frame_udp_seq(f, sizeof(f), guest_mac, gen_mac, (*seq)++);
        g_assert_true(packet_send(fd, f, sizeof(f)));
    }
}

/* The netdev took @vm_stopped frames in all and dropped each as
 * vm-stopped; none reached the guest and the kernel dropped none. */
static void assert_drained(QTestState *qts, const SideCounts *before,
                           gint64 vm_stopped)
{
    StatWait w = { qts, vm_stopped };
    SideCounts c;

    qtest_wait_until(stopped_reached, &w, QTEST_WAIT_S, "%" G_GINT64_FORMAT
                     " frames counted vm-stopped", vm_stopped);
    c = side_counts(qts);
    g_assert_cmpint(c.vm_stopped, ==, vm_stopped);
    g_assert_cmpint(c.rx - before->rx, ==, vm_stopped - before->vm_stopped);
    g_assert_cmpint(c.dropped - before->dropped, ==,
                    vm_stopped - before->vm_stopped);
    g_assert_cmpint(c.xsk_dropped, ==, before->xsk_dropped);
    g_assert_cmpint(c.delivered, ==, before->delivered);
    g_assert_cmpint(c.guest_taken, ==, before->guest_taken);
}

/*
 * Frames that reach a source after its migration: those that waited in
 * the AF_XDP ring while it was stopped are taken as it enters
 * postmigrate, and later ones as they come, each counted vm-stopped,
 * with the guest's vCPU still parked; after cont the I/O thread has the
 * ring again and the guest echoes.
 */
static void test_postmigrate_drain(void)
{
    g_autofree char *why = NULL, *dir = NULL, *uri = NULL, *cmd = NULL;
    g_autofree char *state = NULL;
    SideCounts before;
    guint64 seq = 0;
    QTestState *src;
    VethPair v;
    int fd;

    if (!netns_enter_private(&why)) {
        g_test_skip(why);
        return;
    }
    veth_pair_create(&v, 1);
    dir = g_dir_make_tmp("illan-live-XXXXXX", NULL);
    uri = g_strdup_printf("file:%s/stream", dir);
    src = start_illan(v.dut, "64M", NULL, NULL);
    fd = packet_socket_open_proto(v.peer, 0);

    /* Running: the guest echoes. */
    send_frames(fd, 100, &seq);
    qrig_wait_stat(src, "guest.tx-frames", 100);
    json_object_unref(qmp_ok(src, "{'execute': 'stop'}"));
    before = side_counts(src);
    g_assert_cmpint(before.vm_stopped, ==, 0);

    /* Stopped: frames wait in the ring, for the machine running again. */
    send_frames(fd, 1000, &seq);
    g_assert_cmpint(side_counts(src).rx, ==, before.rx);
    cmd = g_strdup_printf("{'execute': 'migrate', 'arguments': "
                          "{'uri': '%s'}}", uri);
    json_object_unref(qmp_ok(src, cmd));
    assert_completed(src);
    state = run_state(src);
    g_assert_cmpstr(state, ==, "postmigrate");
    /* Migrated away: what waited goes, counted. */
    assert_drained(src, &before, 1000);
    /* And what comes later, burst by burst, none beyond the ring. */
    for (int i = 1; i <= 3; i++) {
        send_frames(fd, 1500, &seq);
        assert_drained(src, &before, 1000 + 1500 * i);
    }
    g_test_message("postmigrate: %d frames counted vm-stopped, none left "
                   "in the ring or dropped by the kernel, none to the guest",
                   1000 + 1500 * 3);

    /* cont: the I/O thread has its ring again and the guest echoes. */
    json_object_unref(qmp_ok(src, "{'execute': 'cont'}"));
    send_frames(fd, 100, &seq);
    qrig_wait_stat(src, "guest.tx-frames", 200);
    g_assert_cmpint(side_counts(src).vm_stopped, ==, 1000 + 1500 * 3);

    close(fd);
    qtest_quit(src);
    veth_pair_destroy(&v);
    g_assert_cmpint(unlink(uri + strlen("file:")), ==, 0);
    rmdir(dir);
}

/* ---- Migrating while the traffic flows ---- */

typedef struct Balance {
    Traffic *t;
    const Wire *w;
    QTestState *src, *dst;
    SideCounts s, d;
    guint64 wire;
    gint64 in_queues;           /* delivered, not yet taken by a guest */
    gint64 lost;                /* counted lost, everywhere */
} Balance;

static void balance_read(Balance *b)
{
    b->s = side_counts(b->src);
    b->d = side_counts(b->dst);
    b->wire = wire_drops(b->w);
    b->t->sock_drops += packet_socket_drops(b->t->rx_fd);
    b->in_queues = b->s.delivered + b->d.delivered - b->s.guest_taken -
                   b->d.guest_taken;
    b->lost = side_lost(&b->s) + side_lost(&b->d) + b->wire +
              b->t->sock_drops;
}

static char *side_text(const SideCounts *c)
{
    return g_strdup_printf("netdev rx %" G_GINT64_FORMAT ", dropped %"
                           G_GINT64_FORMAT " (vm-stopped %" G_GINT64_FORMAT
                           "), XSK %" G_GINT64_FORMAT ", delivered %"
                           G_GINT64_FORMAT ", guest took %" G_GINT64_FORMAT
                           ", lost %" G_GINT64_FORMAT ", tx lost %"
                           G_GINT64_FORMAT, c->rx, c->dropped, c->vm_stopped,
                           c->xsk_dropped, c->delivered, c->guest_taken,
                           c->guest_lost, c->tx_lost);
}

/* Why the frames do not add up (caller frees). */
static char *balance_text(const Balance *b)
{
    g_autofree char *src = side_text(&b->s), *dst = side_text(&b->d);

    return g_strdup_printf("sent %" G_GUINT64_FORMAT " != echoed %"
                           G_GUINT64_FORMAT " + lost %" G_GINT64_FORMAT
                           " + in guest memory %" G_GINT64_FORMAT
                           "; veth %" G_GUINT64_FORMAT ", receiver %"
                           G_GUINT64_FORMAT "; source: %s; destination: %s",
                           load(&b->t->sent), load(&b->t->echoed), b->lost,
                           b->in_queues, b->wire, b->t->sock_drops, src, dst);
}

/* Every frame sent was echoed or counted lost, and no guest has a frame
 * it has not dealt with (a frame delivered on the source and taken by
 * the destination's guest after the switchover counts on both sides). */
static bool balanced(void *opaque)
{
    Balance *b = opaque;

    balance_read(b);
    return b->in_queues == 0 &&
           load(&b->t->sent) == load(&b->t->echoed) + (guint64)b->lost;
}

static void assert_rarps(int fd)
{
    uint8_t f[128];

    for (int i = 0; i < ANNOUNCE_ROUNDS; i++) {
        ssize_t n = packet_recv(fd, ETH_P_RARP_, f, sizeof(f),
                                QTEST_WAIT_S * 1000);

        g_assert_cmpint(n, >=, 42);
        g_assert_cmpmem(f, 6, "\xff\xff\xff\xff\xff\xff", 6);
        g_assert_cmpmem(f + 6, 6, guest_mac, 6);
    }
    /* The announce is over: a sixth never comes. */
    g_assert_cmpint(packet_recv(fd, ETH_P_RARP_, f, sizeof(f), 0), ==, -1);
}

/* What a case measured, for the log and the bench table. */
typedef struct LiveFigures {
    gint64 downtime_ms, total_ms, setup_ms;     /* -1: not reported */
    guint64 sent, echoed_before, echoed_after;
    guint64 window_first, window_last;  /* the source's last echo + 1, the
                                           last frame sent to it */
    guint64 window_lost;        /* numbers in the window never echoed */
    gint64 src_vm_stopped, src_xsk_dropped;     /* during the migration */
    gint64 dst_lost;
    gint64 lost;                /* all frames counted lost */
} LiveFigures;

static gint64 int_or_none(JsonObject *o, const char *name)
{
    return json_object_has_member(o, name) ? json_object_get_int_member(o, name)
                                           : -1;
}

typedef struct LiveCase {
    const char *transport;      /* "tcp" or "unix" */
    const char *mem;
    int downtime_limit_ms;      /* 0: the default */
    const char *netdev_opts;    /* ",guest-umem=off" or ",guest-umem=on" */
    const char *name;           /* the test path's last part, if not mem */
} LiveCase;

/* The URI the source gives migrate, once the destination listens. */
static char *incoming_uri(QTestState *dst, const char *transport,
                          const char *dir)
{
    g_autoptr(JsonObject) info = NULL;
    JsonObject *addr;

    if (!strcmp(transport, "unix")) {
        return g_strdup_printf("unix:%s/mig.sock", dir);
    }
    info = query_migrate(dst);
    addr = json_array_get_object_element(
        json_object_get_array_member(info, "socket-address"), 0);
    return g_strdup_printf("tcp:127.0.0.1:%s",
                           json_object_get_string_member(addr, "port"));
}

static void set_parameter(QTestState *qts, const char *name, gint64 value)
{
    g_autofree char *cmd = g_strdup_printf(
        "{'execute': 'migrate-set-parameters', 'arguments': "
        "{'%s': %" G_GINT64_FORMAT "}}", name, value);

    json_object_unref(qmp_ok(qts, cmd));
}

/* One migration under traffic, from the wire's setup to its removal. */
typedef struct Live {
    const LiveCase *lc;
    Wire w;
    Traffic t;
    Balance b;
    char *dir, *uri;
    int rarp_fd;
    PortWatch src_port;
    SideCounts before;          /* the source's, at migrate */
    guint64 echoed_done;        /* echoes when the migration completed */
} Live;

/* Both illans, the traffic, and the source's guest echoing. */
static void live_start(Live *l, const LiveCase *lc)
{
    g_autofree char *listen = NULL;

    *l = (Live){ .lc = lc };
    wire_up(&l->w);
    l->dir = g_dir_make_tmp("illan-live-XXXXXX", NULL);
    listen = !strcmp(lc->transport, "unix")
             ? g_strdup_printf("-incoming unix:%s/mig.sock", l->dir)
             : g_strdup("-incoming tcp:127.0.0.1:0");
    l->b = (Balance){ .t = &l->t, .w = &l->w };
    l->b.src = start_illan(l->w.src.dut, lc->mem, lc->netdev_opts, NULL);
    l->b.dst = start_illan(l->w.dst.dut, lc->mem, lc->netdev_opts, listen);
    l->uri = incoming_uri(l->b.dst, lc->transport, l->dir);
    if (lc->downtime_limit_ms) {
        set_parameter(l->b.src, "downtime-limit", lc->downtime_limit_ms);
    }
    /* The link is a local socket: no limit but its own. */
    set_parameter(l->b.src, "max-bandwidth", 0);
    l->rarp_fd = packet_socket_open_proto(l->w.gen.peer, ETH_P_RARP_);
    port_watch_start(&l->src_port, l->w.src.peer);
    traffic_start(&l->t, l->w.gen.peer);
    /* The guest echoes, and the bridge has learnt where it is. */
    wait_echoes(&l->t, 2000, "from the source");
}

static void live_migrate_start(Live *l, LiveFigures *fig)
{
    *fig = (LiveFigures){ 0 };
    l->before = side_counts(l->b.src);
    fig->echoed_before = load(&l->t.echoed);
    migrate_start(l->b.src, l->uri);
}

/* Neither starting nor moving: completed, failed or cancelled. */
static bool status_over(JsonObject *info)
{
    const char *status = json_object_get_string_member_with_default(
        info, "status", "none");

    return strcmp(status, "setup") && strcmp(status, "active") &&
           strcmp(status, "cancelling");
}

static bool migration_over(QTestState *qts)
{
    g_autoptr(JsonObject) info = query_migrate(qts);

    return status_over(info);
}

/* Under ThreadSanitizer a 1 GiB guest's RAM alone takes some 25 s. */
#define MIGRATION_WAIT_S    120.0

typedef struct Settled {
    QTestState *qts;
    JsonObject *info;           /* query-migrate's last "return" */
} Settled;

static bool settled(void *opaque)
{
    Settled *w = opaque;

    g_clear_pointer(&w->info, json_object_unref);
    w->info = query_migrate(w->qts);
    return status_over(w->info);
}

/* query-migrate's "return" once the migration ended, asserting it
 * completed. */
static JsonObject *wait_completed(QTestState *qts)
{
    Settled w = { qts, NULL };

    qtest_wait_until(settled, &w, MIGRATION_WAIT_S, "the migration to end");
    if (strcmp(json_object_get_string_member(w.info, "status"),
               "completed")) {
        g_error("migration %s: %s", json_object_get_string_member(w.info,
                                                                  "status"),
                json_object_get_string_member_with_default(
                    w.info, "error-desc", ""));
    }
    return w.info;
}

/* Both sides complete; the source's times. */
static void live_migrate_wait(Live *l, LiveFigures *fig)
{
    g_autoptr(JsonObject) info = wait_completed(l->b.src);
    g_autofree char *state = NULL;

    json_object_unref(wait_completed(l->b.dst));
    l->echoed_done = load(&l->t.echoed);
    state = run_state(l->b.src);
    g_assert_cmpstr(state, ==, "postmigrate");
    fig->downtime_ms = int_or_none(info, "downtime");
    fig->total_ms = int_or_none(info, "total-time");
    fig->setup_ms = int_or_none(info, "setup-time");
}

static void live_log(const Live *l, const LiveFigures *fig)
{
    const char *tr = l->lc->transport, *mem = l->lc->mem;
    const Balance *b = &l->b;

    g_test_message("%s %s: downtime %" G_GINT64_FORMAT " ms, total-time %"
                   G_GINT64_FORMAT " ms, setup-time %" G_GINT64_FORMAT
                   " ms (-1: not reported)", tr, mem, fig->downtime_ms,
                   fig->total_ms, fig->setup_ms);
    g_test_message("%s %s: sent %" G_GUINT64_FORMAT ", echoed %"
                   G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT " before migrate, %"
                   G_GUINT64_FORMAT " after it completed), counted lost %"
                   G_GINT64_FORMAT " (source: %" G_GINT64_FORMAT " netdev, %"
                   G_GINT64_FORMAT " XSK, %" G_GINT64_FORMAT " guest; "
                   "destination: %" G_GINT64_FORMAT " netdev, %"
                   G_GINT64_FORMAT " XSK, %" G_GINT64_FORMAT " guest; veth %"
                   G_GUINT64_FORMAT "; receiver %" G_GUINT64_FORMAT ")",
                   tr, mem, fig->sent, load(&l->t.echoed),
                   fig->echoed_before, fig->echoed_after, fig->lost,
                   b->s.dropped, b->s.xsk_dropped,
                   b->s.guest_lost + b->s.tx_lost, b->d.dropped,
                   b->d.xsk_dropped, b->d.guest_lost + b->d.tx_lost, b->wire,
                   l->t.sock_drops);
    g_test_message("%s %s: the switchover's window, numbers %"
                   G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT " (after the "
                   "source's last echo, up to the last frame to it): %"
                   G_GUINT64_FORMAT " never echoed; counted on the source "
                   "during the migration %" G_GINT64_FORMAT " vm-stopped + %"
                   G_GINT64_FORMAT " kernel XSK drops", tr, mem,
                   fig->window_first, fig->window_last, fig->window_lost,
                   fig->src_vm_stopped, fig->src_xsk_dropped);
}

/* The destination takes over, every frame adds up; then all goes. */
static void live_finish(Live *l, LiveFigures *fig)
{
    g_autofree char *sock = g_strdup_printf("%s/mig.sock", l->dir);
    Balance *b = &l->b;

    /* The destination's RARP moved the guest's MAC; its guest carries on. */
    wait_echoes(&l->t, 2000, "from the destination");
    assert_rarps(l->rarp_fd);
    traffic_stop_generator(&l->t);
    if (!qtest_poll_until(balanced, b, QTEST_WAIT_S)) {
        g_error("%s", balance_text(b));
    }
    traffic_stop_receiver(&l->t);
    port_watch_stop(&l->src_port);
    g_assert_cmpuint(load(&l->t.duplicates), ==, 0);
    g_assert_cmpuint(load(&l->t.damaged), ==, 0);
    /* Nothing but the guest sends IPv4 on the wire. */
    g_assert_cmpuint(load(&l->t.strangers), ==, 0);
    fig->sent = load(&l->t.sent);
    fig->echoed_after = load(&l->t.echoed) - l->echoed_done;
    fig->window_first = l->src_port.from_end;
    fig->window_last = l->src_port.to_end - 1;
    fig->window_lost = unechoed(&l->t, fig->window_first, fig->window_last);
    fig->src_vm_stopped = b->s.vm_stopped - l->before.vm_stopped;
    fig->src_xsk_dropped = b->s.xsk_dropped - l->before.xsk_dropped;
    fig->dst_lost = side_lost(&b->d);
    fig->lost = b->lost;
    live_log(l, fig);
    /* What reached the source after it stopped (none, when the
     * generator had no CPU then) is the window's, and what else went
     * in it the kernel dropped at the source, its ring full. */
    g_assert_cmpuint(fig->window_lost, >=, fig->src_vm_stopped);
    g_assert_cmpuint(fig->window_lost, <=, fig->src_vm_stopped +
                     fig->src_xsk_dropped);

    traffic_free(&l->t);
    close(l->rarp_fd);
    qtest_quit(b->src);
    qtest_quit(b->dst);
    unlink(sock);
    rmdir(l->dir);
    g_free(l->dir);
    g_free(l->uri);
    wire_down(&l->w);
}

static void run_live_case(const LiveCase *lc, LiveFigures *fig)
{
    Live l;

    live_start(&l, lc);
    live_migrate_start(&l, fig);
    live_migrate_wait(&l, fig);
    live_finish(&l, fig);
}

static void test_live(gconstpointer data)
{
    g_autofree char *why = NULL;
    LiveFigures fig;

    if (!netns_enter_private(&why)) {
        g_test_skip(why);
        return;
    }
    run_live_case(data, &fig);
}

/* The copy, guest-umem=off, keeps the cases and figures from before
 * receive zero copy became the default. */
#define COPY ",guest-umem=off"

static const LiveCase live_cases[] = {
    { "tcp", "256M", 0, COPY, NULL }, { "tcp", "1G", 0, COPY, NULL },
    { "unix", "256M", 0, COPY, NULL }, { "unix", "1G", 0, COPY, NULL },
    /* Receive zero copy on both sides: the source takes its lent
     * buffers back at the switchover, the destination lends its own. */
    { "tcp", "256M", 0, ",guest-umem=on", "256M-zero-copy" },
};

/* ---- The figures (-m slow, tests/bench/migration-live.sh) ---- */

static const LiveCase bench_cases[] = {
    { "tcp", "256M", 0, COPY, NULL }, { "tcp", "256M", 50, COPY, NULL },
    { "tcp", "1G", 0, COPY, NULL }, { "tcp", "1G", 50, COPY, NULL },
};

static void bench_downtime(void)
{
    g_autofree char *why = NULL;
    LiveFigures fig[G_N_ELEMENTS(bench_cases)];

    if (!netns_enter_private(&why)) {
        g_test_skip(why);
        return;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(bench_cases); i++) {
        run_live_case(&bench_cases[i], &fig[i]);
    }
    g_test_message("TABLE | guest | downtime-limit ms | downtime ms | "
                   "total-time ms | lost in the switchover's window | "
                   "counted: source vm-stopped, source XSK drops (the "
                   "whole migration), destination | all frames lost | "
                   "lost outside the window |");
    for (size_t i = 0; i < G_N_ELEMENTS(bench_cases); i++) {
        g_test_message("TABLE | %s | %d | %" G_GINT64_FORMAT " | %"
                       G_GINT64_FORMAT " | %" G_GUINT64_FORMAT " | %"
                       G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %"
                       G_GINT64_FORMAT " | %" G_GINT64_FORMAT " | %"
                       G_GINT64_FORMAT " |", bench_cases[i].mem,
                       bench_cases[i].downtime_limit_ms
                       ? bench_cases[i].downtime_limit_ms : 300,
                       fig[i].downtime_ms, fig[i].total_ms,
                       fig[i].window_lost,
                       fig[i].src_vm_stopped, fig[i].src_xsk_dropped,
                       fig[i].dst_lost, fig[i].lost,
                       fig[i].lost - (gint64)fig[i].window_lost);
    }
}

#define LATENCY_PERIOD_US   10000
#define LATENCY_BASELINE    300             /* 3 s of requests */
#define LATENCY_BANDWIDTH   (256LL << 20)   /* bytes/s: 3 s for 768 MiB */

/* One query-status on the 10 ms beat: its round trip, in ms. */
static void sample_qmp(QTestState *qts, GArray *ms, gint64 *next_us)
{
    gint64 now = g_get_monotonic_time(), t0;

    /* Pacing, not waiting for something to happen. */
    if (*next_us > now) {
        g_usleep(*next_us - now);
    }
    *next_us += LATENCY_PERIOD_US;
    t0 = g_get_monotonic_time();
    json_object_unref(qmp_ok(qts, "{'execute': 'query-status'}"));
    g_array_append_val(ms, ((double){ (g_get_monotonic_time() - t0) /
                                      1000.0 }));
}

static int compare_ms(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double percentile(GArray *ms, unsigned pct)
{
    g_array_sort(ms, compare_ms);
    return g_array_index(ms, double, (ms->len - 1) * pct / 100);
}

/*
 * query-status every 10 ms on the source of a 1 GiB guest, with traffic:
 * 3 s with no migration, then for as long as a migration of 768 MiB of
 * written RAM at 256 MiB/s takes.
 */
static void bench_qmp_latency(void)
{
    static const LiveCase lc = { "tcp", "1G", 0, NULL, NULL };
    g_autofree char *why = NULL;
    g_autoptr(GArray) idle = g_array_new(FALSE, FALSE, sizeof(double));
    g_autoptr(GArray) busy = g_array_new(FALSE, FALSE, sizeof(double));
    LiveFigures fig;
    gint64 next;
    Live l;

    if (!netns_enter_private(&why)) {
        g_test_skip(why);
        return;
    }
    live_start(&l, &lc);
    /* Above the DMA window: none of it is the guest's driver's. */
    qtest_memset(l.b.src, QRIG_DMA_END, 0xa5, (1ULL << 30) - QRIG_DMA_END);
    set_parameter(l.b.src, "max-bandwidth", LATENCY_BANDWIDTH);
    next = g_get_monotonic_time();
    while (idle->len < LATENCY_BASELINE) {
        sample_qmp(l.b.src, idle, &next);
    }
    live_migrate_start(&l, &fig);
    next = g_get_monotonic_time();
    do {
        sample_qmp(l.b.src, busy, &next);
    } while (!migration_over(l.b.src));
    live_migrate_wait(&l, &fig);
    live_finish(&l, &fig);
    g_test_message("LATENCY query-status every 10 ms, 1 GiB guest, traffic "
                   "flowing: no migration: %u requests, p50 %.2f ms, p99 "
                   "%.2f ms, max %.2f ms; migrating (total-time %"
                   G_GINT64_FORMAT " ms, downtime %" G_GINT64_FORMAT
                   " ms): %u requests, p50 %.2f ms, p99 %.2f ms, max "
                   "%.2f ms", idle->len, percentile(idle, 50),
                   percentile(idle, 99), percentile(idle, 100),
                   fig.total_ms, fig.downtime_ms, busy->len,
                   percentile(busy, 50), percentile(busy, 99),
                   percentile(busy, 100));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/migration-live/postmigrate-drain",
                    test_postmigrate_drain);
    for (size_t i = 0; i < G_N_ELEMENTS(live_cases); i++) {
        g_autofree char *path = g_strdup_printf(
            "/migration-live/%s/%s", live_cases[i].transport,
            live_cases[i].name ? live_cases[i].name : live_cases[i].mem);

        g_test_add_data_func(path, &live_cases[i], test_live);
    }
    if (g_test_slow()) {
        g_test_add_func("/migration-live/bench/downtime", bench_downtime);
        g_test_add_func("/migration-live/bench/qmp-latency",
                        bench_qmp_latency);
    }
    return g_test_run();
}
