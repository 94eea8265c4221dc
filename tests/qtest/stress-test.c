/*
 * The threads under load: af-xdp traffic as fast as a packet socket can
 * send it, into a built-in guest in fwd=macswap, while QMP stops and
 * continues the machine 100 times, resets it 20 times and the peer's link
 * flaps.  Every counter must balance at the end, guest RAM must not change
 * while the machine is stopped, and no frame may wait for a lost
 * interrupt ("woken-late").  Needs root (a network namespace of its own).
 */
#include "libqtest.h"
#include "libqos/eth-frames.h"
#include "libqos/rig.h"
#include "netns.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define STOP_CONT_PAIRS 100
#define RESET_EVERY     5       /* 20 resets */
#define FLAP_EVERY      10      /* 10 link flaps */
#define RAM_CHECK_EVERY 10      /* 10 RAM checksums across a stop */
#define RAM_SIZE        (64u << 20)
#define FRAME_LEN       64

static const uint8_t guest_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t peer_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };

typedef struct Generator {
    int fd;
    GThread *thread;
    bool stop;                  /* atomic */
    guint64 sent;               /* atomic: frames the kernel took */
    guint64 refused;            /* atomic: sends refused (link down, ...) */
} Generator;

static gpointer generate(gpointer opaque)
{
    Generator *gen = opaque;
    uint8_t f[FRAME_LEN];
    guint32 seq = 0;

    while (!__atomic_load_n(&gen->stop, __ATOMIC_ACQUIRE)) {
        eth_frame_udp(f, sizeof(f), guest_mac, peer_mac, seq++);
        if (send(gen->fd, f, sizeof(f), 0) == (ssize_t)sizeof(f)) {
            __atomic_fetch_add(&gen->sent, 1, __ATOMIC_RELAXED);
        } else {
            __atomic_fetch_add(&gen->refused, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

static guint64 gen_sent(Generator *gen)
{
    return __atomic_load_n(&gen->sent, __ATOMIC_RELAXED);
}

static void qmp_ok(QTestState *qts, const char *cmd)
{
    g_autoptr(JsonObject) rsp = qtest_qmp(qts, "%s", cmd);

    g_assert_true(json_object_has_member(rsp, "return"));
}

/* Frames flow: the netdev has taken @more beyond what it had. */
static void wait_traffic(QTestState *qts, gint64 more)
{
    qrig_wait_stat_min(qts, "netdev.rx.frames",
                       qrig_stat(qts, "netdev.rx.frames") + more);
}

typedef struct GenProgress {
    Generator *gen;
    guint64 until;
} GenProgress;

static bool gen_reached(void *opaque)
{
    GenProgress *p = opaque;

    return gen_sent(p->gen) >= p->until;
}

static GChecksum *ram_checksum(QRig *r, const char *name)
{
    g_autofree char *path = qrig_path(r, name);
    g_autofree char *cmd = g_strdup_printf(
        "{'execute': 'pmemsave', 'arguments': {'val': 0, 'size': %u, "
        "'filename': '%s'}}", RAM_SIZE, path);
    g_autofree char *data = NULL;
    gsize len = 0;
    GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA256);

    qmp_ok(r->qts, cmd);
    g_assert_true(g_file_get_contents(path, &data, &len, NULL));
    g_assert_cmpuint(len, ==, RAM_SIZE);
    g_checksum_update(sum, (const guchar *)data, len);
    unlink(path);
    return sum;
}

/*
 * While stopped: the generator sends another 20000 frames, and neither
 * guest RAM nor the netdev's count moves, since the I/O thread and the
 * vCPU are parked and the frames wait in the AF_XDP ring.
 */
static void check_ram_still(QRig *r, Generator *gen)
{
    GChecksum *before = ram_checksum(r, "ram-before");
    gint64 rx = qrig_stat(r->qts, "netdev.rx.frames");
    GenProgress p = { gen, gen_sent(gen) + 20000 };
    GChecksum *after;

    qtest_wait_until(gen_reached, &p, 30, "the generator to send 20000 "
                     "frames while the machine is stopped");
    after = ram_checksum(r, "ram-after");
    g_assert_cmpstr(g_checksum_get_string(before), ==,
                    g_checksum_get_string(after));
    g_assert_cmpint(qrig_stat(r->qts, "netdev.rx.frames"), ==, rx);
    g_checksum_free(before);
    g_checksum_free(after);
}

static void flap_link(const VethPair *v)
{
    netns_run("ip link set dev %s down", v->peer);
    netns_run("ip link set dev %s up", v->peer);
}

/* The frames the device delivered that the guest has dealt with: taken,
 * refused as invalid, or lost in its queue at a reset. */
static gint64 guest_accounted(JsonObject *g)
{
    return qjson_int(g, "rx-frames") + qjson_int(g, "drops.rx-invalid") +
           qjson_int(g, "drops.bad-handle") +
           qjson_int(g, "drops.machine-reset");
}

static gint64 queue_stat(JsonObject *netdev, const char *name)
{
    JsonArray *queues = json_object_get_array_member(
        json_object_get_object_member(netdev, "backend"), "queues");

    return json_object_get_int_member(json_array_get_object_element(queues, 0),
                                      name);
}

typedef struct CatchUp {
    QTestState *qts;
    Generator *gen;
} CatchUp;

/* Every frame sent has left the AF_XDP ring (taken by the netdev or
 * dropped by the kernel), and every frame the device delivered has been
 * dealt with by the guest. */
/* Frames the kernel dropped before the netdev saw them: its socket's
 * ring full or without a free buffer, and those the program dropped
 * while the socket was replaced to take lent buffers back (the machine
 * stopped or reset). */
static gint64 xsk_dropped(JsonObject *nd)
{
    return queue_stat(nd, "rx_dropped") + queue_stat(nd, "rx_ring_full") +
           queue_stat(nd, "rx-reclaim-drops");
}

static bool caught_up(void *opaque)
{
    CatchUp *c = opaque;
    g_autoptr(JsonObject) net = qrig_net_stats(c->qts);
    g_autoptr(JsonObject) gs = qrig_guest_stats(c->qts);
    JsonObject *nd = qrig_stats_netdev(net, "n0");

    return (guint64)(qjson_int(nd, "rx.frames") +
                     xsk_dropped(nd)) == gen_sent(c->gen) &&
           qjson_int(qrig_stats_nic(net), "device.rx-frames") ==
           guest_accounted(qrig_stats_guest(gs));
}

static void check_balance(QRig *r, Generator *gen, unsigned resets)
{
    g_autoptr(JsonObject) net = qrig_net_stats(r->qts);
    g_autoptr(JsonObject) gs = qrig_guest_stats(r->qts);
    JsonObject *nd = qrig_stats_netdev(net, "n0");
    JsonObject *nic = qrig_stats_nic(net);
    JsonObject *g = qrig_stats_guest(gs);
    gint64 rx = qjson_int(nd, "rx.frames");
    gint64 delivered = qjson_int(nd, "rx.delivered");
    gint64 guest_rx = qjson_int(g, "rx-frames");
    gint64 guest_tx = qjson_int(g, "tx-frames");
    gint64 dev_tx = qjson_int(nic, "device.tx-frames");
    gint64 dropped_by_xsk = xsk_dropped(nd);

    /* The kernel: every frame the generator sent reached the netdev or
     * was dropped by the XSK (its ring full while stopped); veth's own
     * drops (a link going down) were refused to send() already. */
    g_assert_cmpint(gen_sent(gen), ==, rx + dropped_by_xsk);
    /* The net core: in = delivered + dropped, the same on both sides. */
    g_assert_cmpint(delivered + qjson_sum(nd, "rx.dropped"), ==, rx);
    g_assert_cmpint(qjson_int(nic, "rx.frames"), ==, rx);
    g_assert_cmpint(qjson_int(nic, "rx.delivered"), ==, delivered);
    g_assert_cmpint(qjson_int(nic, "device.rx-frames"), ==, delivered);
    /* The guest took every delivered frame, or lost it to a reset. */
    g_assert_cmpint(guest_accounted(g), ==, delivered);
    /* macswap sends every frame back; each send is counted once on every
     * layer below. */
    g_assert_cmpint(guest_tx + qjson_int(g, "tx-failed"), ==, guest_rx);
    g_assert_cmpint(dev_tx + qjson_int(nic, "device.tx-errors"), ==,
                    guest_tx + qjson_int(g, "tx-failed"));
    g_assert_cmpint(qjson_int(nic, "tx.frames") + qjson_int(nic, "tx.errors") +
                    qjson_int(nic, "tx.dropped"), ==, dev_tx);
    g_assert_cmpint(qjson_int(g, "woken-late"), ==, 0);
    g_assert_cmpint(qjson_int(g, "resets"), ==, resets);
    g_assert_cmpint(delivered, >, 0);
    g_test_message("generator sent %" G_GUINT64_FORMAT " (%" G_GUINT64_FORMAT
                   " refused, link down); netdev rx %" G_GINT64_FORMAT
                   " = delivered %" G_GINT64_FORMAT " + link-down %"
                   G_GINT64_FORMAT " + not-registered %" G_GINT64_FORMAT
                   " + no-buffer %" G_GINT64_FORMAT " + other %"
                   G_GINT64_FORMAT "; kernel XSK drops %" G_GINT64_FORMAT
                   " (ring full while stopped); guest rx %" G_GINT64_FORMAT
                   " + lost at reset %" G_GINT64_FORMAT "; guest tx %"
                   G_GINT64_FORMAT ", device tx %" G_GINT64_FORMAT
                   " (+%" G_GINT64_FORMAT " errors), netdev tx %"
                   G_GINT64_FORMAT " (+%" G_GINT64_FORMAT " ring full, +%"
                   G_GINT64_FORMAT " link down); woken late %" G_GINT64_FORMAT,
                   gen_sent(gen), __atomic_load_n(&gen->refused,
                                                  __ATOMIC_RELAXED),
                   rx, delivered, qjson_int(nd, "rx.dropped.link-down"),
                   qjson_int(nd, "rx.dropped.not-registered"),
                   qjson_int(nd, "rx.dropped.no-buffer"),
                   qjson_sum(nd, "rx.dropped") -
                   qjson_int(nd, "rx.dropped.link-down") -
                   qjson_int(nd, "rx.dropped.not-registered") -
                   qjson_int(nd, "rx.dropped.no-buffer"),
                   dropped_by_xsk, guest_rx,
                   qjson_int(g, "drops.machine-reset"), guest_tx, dev_tx,
                   qjson_int(nic, "device.tx-errors"),
                   qjson_int(nd, "tx.frames"), qjson_int(nd, "tx.errors"),
                   qjson_int(nd, "tx.dropped"), qjson_int(g, "woken-late"));
}

/* @opaque: the af-xdp option ",guest-umem=off" or ",guest-umem=on". */
static void test_stop_cont_reset_flap(const void *opaque)
{
    const char *netdev_opts = opaque;
    g_autofree char *netdev = NULL, *mem = g_strdup_printf("%uM",
                                                           RAM_SIZE >> 20);
    g_autofree char *why = NULL;
    Generator gen = { 0 };
    unsigned resets = 0, flaps = 0, ram_checks = 0;
    VethPair v;
    QRig r;

    if (!netns_enter_private(&why)) {
        g_test_skip(why);
        return;
    }
    veth_pair_create(&v, 1);
    netdev = g_strdup_printf("af-xdp,id=n0,ifname=%s,mode=native%s", v.dut,
                             netdev_opts);
    qrig_init(&r);
    qrig_start(&r, &(QRigOpts){ .netdev = netdev, .nic = ",id=net0",
                                .mem = mem,
                                .extra = "-guest ibmveth,dev=net0,"
                                         "fwd=macswap" });
    gen.fd = packet_socket_open(v.peer);
    gen.thread = g_thread_new("generator", generate, &gen);
    wait_traffic(r.qts, 1000);

    for (unsigned i = 1; i <= STOP_CONT_PAIRS; i++) {
        qmp_ok(r.qts, "{'execute': 'stop'}");
        if (i % RAM_CHECK_EVERY == 0) {
            check_ram_still(&r, &gen);
            ram_checks++;
        }
        qmp_ok(r.qts, "{'execute': 'cont'}");
        if (i % RESET_EVERY == 0) {
            qmp_ok(r.qts, "{'execute': 'system_reset'}");
            resets++;
        }
        if (i % FLAP_EVERY == 0) {
            flap_link(&v);
            flaps++;
        }
        wait_traffic(r.qts, 2000);
    }

    __atomic_store_n(&gen.stop, true, __ATOMIC_RELEASE);
    g_thread_join(gen.thread);
    /* The counters are read stopped, so that none moves between the
     * queries; a frame still on its way when the guest caught up may
     * have arrived, so it catches up again first. */
    for (CatchUp c = { r.qts, &gen };;) {
        qtest_wait_until(caught_up, &c, 30, "every frame sent to reach the "
                         "netdev or a kernel drop counter, and the guest to "
                         "take every frame delivered");
        qmp_ok(r.qts, "{'execute': 'stop'}");
        if (caught_up(&c)) {
            break;
        }
        qmp_ok(r.qts, "{'execute': 'cont'}");
    }
    check_balance(&r, &gen, resets);
    g_test_message("%u stop/cont pairs, %u resets, %u link flaps, %u RAM "
                   "checksums across a stop, all equal", STOP_CONT_PAIRS,
                   resets, flaps, ram_checks);
    close(gen.fd);
    r.guest = NULL;
    qrig_stop(&r);
    veth_pair_destroy(&v);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    /* The copy: with no guest-umem= the queue would lend. */
    g_test_add_data_func("/stress/stop-cont-reset-flap", ",guest-umem=off",
                         test_stop_cont_reset_flap);
    /* Every stop and reset takes lent buffers back from the kernel. */
    g_test_add_data_func("/stress/stop-cont-reset-flap-zero-copy",
                         ",guest-umem=on", test_stop_cont_reset_flap);
    return g_test_run();
}
