/*
 * Receive zero copy on -netdev af-xdp (guest-umem): guest RAM is the
 * UMEM and the spapr-vlan lends the guest's posted 2048-byte buffers to
 * the kernel's fill ring.  A veth pair in a network namespace of the
 * test's own, frames sent from the peer end with an AF_PACKET socket, the
 * libqos ibmveth model as the guest.  Frames must arrive byte-exact in
 * the buffers Linux would pick; once the guest gives its buffers back
 * (H_FREE_LOGICAL_LAN, a system reset, Linux's close and open for a new
 * MTU) not one byte of guest RAM may change however many frames follow;
 * where zero copy cannot be had (sock-fds, an MTU over 2048-byte
 * buffers) frames are copied and counted by reason.
 */
#include "libqtest.h"
#include "libqos/eth-frames.h"
#include "libqos/ibmveth.h"
#include "libqos/rig.h"
#include "netns.h"
#include "net/net.h"
#include "net/xdp-prog.h"

#include <errno.h>
#include <ifaddrs.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <linux/if_xdp.h>

#define RAM_SIZE        (64u << 20)
#define LENDING_NETDEV  ",mode=native,queues=1,guest-umem=on"
#define ETHERTYPE_TEST  0x88b5
/* Frames the flood sends after the guest let go of its buffers, between
 * the two images of RAM. */
#define FRAMES_AFTER_RELEASE 400

/* Linux's pools (guest/ibmveth.c): their index by buffer size. */
enum { POOL_512, POOL_2048, POOL_16K, POOL_32K, POOL_64K };

static const uint8_t peer_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };

/*
 * The statistics zero copy adds, each named once.  Queue keys are read
 * under queue 0 of the netdev's backend part, the rest by their
 * qrig_stat() path.
 */
#define Q_UMEM_ACTIVE       "guest-umem-active"
#define Q_LENT_FRAMES       "rx-lent-frames"
#define Q_RECLAIMS          "guest-umem-reclaims"
#define Q_COPIED(reason)    "rx-copied." reason
#define NIC_ZERO_COPY       "nic.device.rx-zero-copy"
#define NIC_COPY_DOWN       "nic.device.rx-copy-down"
#define NIC_LENT            "nic.device.rx-lent"
#define Q_HOST_FRAMES       "rx-host-frames"
#define Q_FAILED            "failed"
#define Q_TX_NO_SOCKET      "tx-no-socket"
#define Q_TX_IN_PLACE       "tx-in-place"
#define NIC_TX_IN_PLACE     "nic.device.tx-in-place"
#define NIC_TX_COPIED(why)  "nic.device.tx-copied." why

typedef struct Rig {
    VethPair veth;
    QRig q;                 /* q.peer: AF_PACKET on the peer end */
} Rig;

/* Statistics. */

/* Queue 0 of netdev n0's backend in @net_stats, owned by it. */
static JsonObject *queue0(JsonObject *net_stats)
{
    JsonObject *backend = json_object_get_object_member(
        qrig_stats_netdev(net_stats, "n0"), "backend");
    JsonArray *queues;

    g_assert_nonnull(backend);
    queues = json_object_get_array_member(backend, "queues");
    g_assert_nonnull(queues);
    return json_array_get_object_element(queues, 0);
}

static gint64 queue_stat(Rig *r, const char *path)
{
    g_autoptr(JsonObject) st = qrig_net_stats(r->q.qts);

    return qjson_int(queue0(st), path);
}

static bool umem_active(Rig *r)
{
    g_autoptr(JsonObject) st = qrig_net_stats(r->q.qts);
    JsonObject *q = queue0(st);

    if (!json_object_has_member(q, Q_UMEM_ACTIVE)) {
        g_error("no member '" Q_UMEM_ACTIVE "' in queue 0 of netdev n0");
    }
    return json_object_get_boolean_member(q, Q_UMEM_ACTIVE);
}

static bool queue_bool(Rig *r, const char *member)
{
    g_autoptr(JsonObject) st = qrig_net_stats(r->q.qts);
    JsonObject *q = queue0(st);

    if (!json_object_has_member(q, member)) {
        g_error("no member '%s' in queue 0 of netdev n0", member);
    }
    return json_object_get_boolean_member(q, member);
}

static bool umem_became_active(void *opaque)
{
    return umem_active(opaque);
}

/* Zero copy engages (a socket is re-created) some time after the guest
 * posted its 2048-byte buffers. */
static void wait_umem_active(Rig *r)
{
    qtest_wait_until(umem_became_active, r, QTEST_WAIT_S,
                     "queue 0 to take guest RAM as its UMEM");
}

/* The rig. */

/* Linux's pool sizes and counts, only the pools in @active (a mask of
 * pool indexes) active. */
static void pools_conf(IbmvethConf *conf, unsigned active)
{
    ibmveth_conf_linux_defaults(conf, QRIG_UNIT);
    conf->mac = QRIG_MAC;
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        conf->pool_active[i] = active & 1u << i;
    }
}

/* illan on the dut end of @r->veth (created by the caller) with
 * "-netdev af-xdp,id=n0,ifname=DUT@netdev_opts" and @extra (or NULL)
 * on its command line. */
static void rig_start(Rig *r, const char *netdev_opts, const char *extra)
{
    g_autofree char *netdev = g_strdup_printf("af-xdp,id=n0,ifname=%s%s",
                                              r->veth.dut, netdev_opts);
    g_autofree char *mem = g_strdup_printf("%uM", RAM_SIZE >> 20);

    qrig_init(&r->q);
    qrig_start(&r->q, &(QRigOpts){ .mem = mem, .netdev = netdev,
                                   .extra = extra });
    r->q.peer = packet_socket_open(r->veth.peer);
}

/* The guest opens with the pools of @conf, in all of its RAM. */
static void guest_open(Rig *r, const IbmvethConf *conf)
{
    g_assert_null(r->q.guest);
    r->q.guest = qrig_guest_open(r->q.qts, &r->q.alloc, conf, RAM_SIZE);
}

/* H_FREE_LOGICAL_LAN, as Linux's close makes it. */
static void guest_free(Rig *r)
{
    g_assert_cmpint(qibmveth_close(r->q.guest), ==, H_SUCCESS);
    r->q.guest = NULL;
}

static void rig_stop(Rig *r)
{
    qrig_stop(&r->q);
    veth_pair_destroy(&r->veth);
}

/* illan lending, on a new veth pair, to a guest that opened with
 * Linux's 512- and 2048-byte pools. */
static void rig_start_lending(Rig *r)
{
    IbmvethConf conf;

    veth_pair_create(&r->veth, 1);
    rig_start(r, LENDING_NETDEV, NULL);
    pools_conf(&conf, 1u << POOL_512 | 1u << POOL_2048);
    guest_open(r, &conf);
    wait_umem_active(r);
}

/* Frames. */

typedef struct PacketSend {
    int fd;
    const uint8_t *frame;
    size_t len;
} PacketSend;

static bool packet_sent(void *opaque)
{
    PacketSend *p = opaque;

    return packet_send(p->fd, p->frame, p->len);
}

/* Sends test frame @tag of @len bytes from the peer end. */
static void send_tagged(Rig *r, size_t len, uint16_t tag)
{
    g_autofree uint8_t *f = g_malloc(len);
    PacketSend p = { r->q.peer, f, len };

    eth_frame_tagged(f, len, qrig_mac, peer_mac, ETHERTYPE_TEST, tag,
                     ETH_FRAME_TAG_FIRST);
    /* A link that just came up may refuse for a moment. */
    qtest_wait_until(packet_sent, &p, QTEST_WAIT_S, "%s to take frame %u",
                     r->veth.peer, tag);
}

/* The guest takes the next frame: test frame @tag of @len bytes, byte
 * for byte, in a buffer of @buf_size; the buffer is posted again. */
static void receive_tagged(Rig *r, size_t len, uint16_t tag,
                           uint32_t buf_size)
{
    static uint8_t data[65536];
    IbmvethRxEntry e = qibmveth_wait_rx(r->q.guest, data, sizeof(data));

    g_assert_cmpuint(e.len, ==, len);
    g_assert_cmpuint(eth_frame_assert_tagged(data, e.len, qrig_mac, peer_mac,
                                             ETHERTYPE_TEST,
                                             ETH_FRAME_TAG_FIRST), ==, tag);
    g_assert_cmpuint(e.buf_size, ==, buf_size);
    qibmveth_replenish(r->q.guest);
}

/* The buffer Linux's default pools give a frame of @len: the smallest
 * that holds it after the 8 bytes the device writes first. */
static uint32_t linux_buffer(size_t len)
{
    return len + 8 <= 512 ? 512 : 2048;
}

/* The flood: numbered UDP frames, alternately 60 bytes (a 512-byte
 * buffer's) and 1000 (a 2048-byte buffer's, the pool zero copy lends),
 * up to 4000 a second. */
#define FLOOD_PACE_US 250

static size_t flood_len(guint64 seq)
{
    return seq % 2 ? 1000 : 60;
}

static size_t flood_frame(uint8_t *frame, guint64 seq)
{
    eth_frame_udp_seq(frame, flood_len(seq), qrig_mac, peer_mac, seq);
    return flood_len(seq);
}

/* What the kernel counts as received on @ifname (getifaddrs() answers
 * for this namespace, /sys for the one it was mounted in): with native
 * XDP, veth counts each frame its program redirected, after the copy
 * into the UMEM buffer the fill ring gave it. */
static guint64 if_rx_packets(const char *ifname)
{
    struct ifaddrs *list;
    guint64 packets = G_MAXUINT64;

    g_assert_cmpint(getifaddrs(&list), ==, 0);
    for (struct ifaddrs *i = list; i; i = i->ifa_next) {
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_PACKET &&
            i->ifa_data && !strcmp(i->ifa_name, ifname)) {
            packets = ((struct rtnl_link_stats *)i->ifa_data)->rx_packets;
        }
    }
    freeifaddrs(list);
    g_assert_cmpuint(packets, !=, G_MAXUINT64);
    return packets;
}

typedef struct RxCount {
    const char *ifname;
    guint64 want;
} RxCount;

static bool if_rx_reached(void *opaque)
{
    RxCount *c = opaque;

    return if_rx_packets(c->ifname) >= c->want;
}

/* Waits until the dut end has taken @n more frames from the flood. */
static void wait_flood_frames(Rig *r, unsigned n)
{
    RxCount c = { r->veth.dut, if_rx_packets(r->veth.dut) + n };

    qtest_wait_until(if_rx_reached, &c, QTEST_WAIT_S,
                     "%s to take %u more frames", r->veth.dut, n);
}

/* Guest RAM. */

/* All of guest RAM, saved with pmemsave (caller frees). */
static char *ram_image(Rig *r, const char *name)
{
    g_autofree char *path = qrig_path(&r->q, name);
    g_autoptr(JsonObject) rsp = qtest_qmp(r->q.qts,
        "{'execute': 'pmemsave', 'arguments': {'val': 0, 'size': %u, "
        "'filename': '%s'}}", RAM_SIZE, path);
    char *data = NULL;
    gsize len = 0;

    g_assert_true(json_object_has_member(rsp, "return"));
    g_assert_true(g_file_get_contents(path, &data, &len, NULL));
    g_assert_cmpuint(len, ==, RAM_SIZE);
    unlink(path);
    return data;
}

/* Guest RAM now, and again after FRAMES_AFTER_RELEASE more frames of the
 * flood: byte for byte the same, since the guest owns no buffer the
 * device may write. */
static void assert_ram_still(Rig *r, const char *after)
{
    g_autofree char *before = ram_image(r, "ram-before");
    g_autofree char *later = NULL;

    wait_flood_frames(r, FRAMES_AFTER_RELEASE);
    later = ram_image(r, "ram-after");
    for (gsize i = 0; i < RAM_SIZE; i += 4096) {
        if (memcmp(before + i, later + i, 4096)) {
            g_error("guest RAM page 0x%zx changed during %d frames after "
                    "%s", (size_t)i, FRAMES_AFTER_RELEASE, after);
        }
    }
}

/*
 * Frames of 60 bytes, each received before the next, until the kernel
 * holds none of the queue's own frames, which it fills before any lent
 * buffer behind them (those it got while the guest had none); from
 * @tag on, returns the next tag.
 */
static uint16_t drain_host_frames(Rig *r, uint16_t tag)
{
    for (unsigned i = 0; queue_stat(r, Q_HOST_FRAMES) > 0; i++) {
        g_assert_cmpuint(i, <, 4096);
        send_tagged(r, 60, tag);
        receive_tagged(r, 60, tag++, linux_buffer(60));
    }
    return tag;
}

/* The test cases. */

/* Frames of 60, 1000 and 1500 bytes arrive byte-exact, each in the
 * buffer Linux's pools give it: 1000 and 1500 where the kernel wrote
 * them, 60 copied down from a lent 2048-byte buffer to a 512-byte one. */
static void test_deliver(void)
{
    static const size_t sizes[] = { 60, 1000, 1500 };
    enum { ROUNDS = 4 };
    Rig r = { 0 };
    uint16_t tag;

    rig_start_lending(&r);
    tag = drain_host_frames(&r, 0);
    for (unsigned i = 0; i < ROUNDS * G_N_ELEMENTS(sizes); i++) {
        send_tagged(&r, sizes[i % G_N_ELEMENTS(sizes)], tag + i);
    }
    for (unsigned i = 0; i < ROUNDS * G_N_ELEMENTS(sizes); i++) {
        size_t len = sizes[i % G_N_ELEMENTS(sizes)];

        receive_tagged(&r, len, tag++, linux_buffer(len));
    }
    g_assert_true(umem_active(&r));
    g_assert_cmpint(qrig_stat(r.q.qts, NIC_ZERO_COPY), >=, ROUNDS * 2);
    g_assert_cmpint(qrig_stat(r.q.qts, NIC_COPY_DOWN), >=, 1);
    g_assert_cmpint(queue_stat(&r, Q_LENT_FRAMES), >=, ROUNDS * 2);
    g_test_message("%d frames of 60/1000/1500 bytes byte-exact; "
                   "rx-zero-copy %" G_GINT64_FORMAT ", rx-copy-down %"
                   G_GINT64_FORMAT, ROUNDS * 3,
                   qrig_stat(r.q.qts, NIC_ZERO_COPY),
                   qrig_stat(r.q.qts, NIC_COPY_DOWN));
    rig_stop(&r);
}

/*
 * guest-umem= not given is auto: the queue lends, and its frames arrive
 * where the kernel wrote them, none copied for the reason off.  Nor was
 * rx-metadata= given, so nothing is looked for in front of a lent frame.
 */
static void test_lends_by_default(void)
{
    enum { FRAMES = 8 };
    IbmvethConf conf;
    Rig r = { 0 };
    gint64 lent, meta;
    uint16_t tag;

    veth_pair_create(&r.veth, 1);
    rig_start(&r, ",mode=native,queues=1", NULL);
    pools_conf(&conf, 1u << POOL_512 | 1u << POOL_2048);
    guest_open(&r, &conf);
    send_tagged(&r, 1000, 0);
    receive_tagged(&r, 1000, 0, linux_buffer(1000));
    g_assert_cmpint(queue_stat(&r, Q_COPIED("off")), ==, 0);
    wait_umem_active(&r);
    tag = drain_host_frames(&r, 1);
    lent = queue_stat(&r, Q_LENT_FRAMES);
    meta = queue_stat(&r, "rx-meta-frames");
    for (unsigned i = 0; i < FRAMES; i++) {
        send_tagged(&r, 1000, tag + i);
    }
    for (unsigned i = 0; i < FRAMES; i++) {
        receive_tagged(&r, 1000, tag + i, linux_buffer(1000));
    }
    g_assert_cmpint(queue_stat(&r, Q_LENT_FRAMES) - lent, >=, FRAMES);
    g_assert_cmpint(queue_stat(&r, "rx-meta-frames"), ==, meta);
    g_assert_cmpint(queue_stat(&r, Q_COPIED("off")), ==, 0);
    rig_stop(&r);
}

/* Transmit zero copy. */

/* I/O pages the test maps itself, above what the guest model uses. */
#define TEST_IOBA     0x8000000u
#define TEST_PAGE     4096u

/* The next test frame the peer end receives is @want, byte for byte. */
static void peer_receives(Rig *r, const uint8_t *want, size_t len)
{
    static uint8_t got[2048];

    g_assert_cmpint(packet_recv(r->q.peer, ETHERTYPE_TEST, got, sizeof(got),
                                QTEST_WAIT_S * 1000), ==, len);
    g_assert_cmpmem(got, len, want, len);
}

/* H_SEND_LOGICAL_LAN of test frame @tag, @len bytes at I/O address @ioba
 * (real address @gpa), in one descriptor; asserts it succeeds, then
 * scribbles over the buffer, which is the guest's again. */
static void guest_sends_at(Rig *r, uint64_t ioba, uint64_t gpa, size_t len,
                           uint16_t tag, uint8_t *frame)
{
    eth_frame_tagged(frame, len, peer_mac, qrig_mac, ETHERTYPE_TEST, tag,
                     ETH_FRAME_TAG_FIRST);
    qtest_memwrite(r->q.qts, gpa, frame, len);
    g_assert_cmpint(qibmveth_send_bds(r->q.guest,
                                      (uint64_t[]){ ibmveth_bd(len, ioba) },
                                      1), ==, H_SUCCESS);
    qtest_memset(r->q.qts, gpa, 0xEE, len);
}

/*
 * tx-in-place=on: a frame in one descriptor on one run of guest RAM goes
 * out from there, and the hcall returns only once the kernel is done with
 * it, so that a guest that reuses the buffer at once still sends what it
 * wrote.  A frame in two descriptors, or across I/O pages whose real
 * pages lie apart, is copied and counted by reason.
 */
static void test_tx_in_place(void)
{
    static const size_t sizes[] = { 60, 1000, 1514 };
    enum { ROUNDS = 4 };
    uint8_t frame[1514];
    uint64_t run, page_a, page_b;
    uint16_t tag = 0;
    Rig r = { 0 };
    IbmvethConf conf;

    veth_pair_create(&r.veth, 1);
    rig_start(&r, LENDING_NETDEV ",tx-in-place=on", NULL);
    pools_conf(&conf, 1u << POOL_512 | 1u << POOL_2048);
    guest_open(&r, &conf);
    wait_umem_active(&r);
    /* Two I/O pages on consecutive real pages; two more on real pages
     * with a page between them. */
    run = guest_alloc(&r.q.alloc, 2 * TEST_PAGE, TEST_PAGE);
    qtest_tce_map(r.q.qts, QRIG_UNIT, TEST_IOBA, run, 2 * TEST_PAGE, 1);
    page_a = guest_alloc(&r.q.alloc, 3 * TEST_PAGE, TEST_PAGE);
    page_b = page_a + 2 * TEST_PAGE;
    qtest_tce_map(r.q.qts, QRIG_UNIT, TEST_IOBA + 2 * TEST_PAGE, page_a, TEST_PAGE,
                  1);
    qtest_tce_map(r.q.qts, QRIG_UNIT, TEST_IOBA + 3 * TEST_PAGE, page_b, TEST_PAGE,
                  1);

    /* Each frame crosses the first page boundary. */
    for (unsigned i = 0; i < ROUNDS * G_N_ELEMENTS(sizes); i++) {
        size_t len = sizes[i % G_N_ELEMENTS(sizes)];
        uint32_t at = TEST_PAGE - len / 2;

        guest_sends_at(&r, TEST_IOBA + at, run + at, len, tag++, frame);
        peer_receives(&r, frame, len);
    }
    g_assert_cmpint(qrig_stat(r.q.qts, NIC_TX_IN_PLACE), ==,
                    ROUNDS * G_N_ELEMENTS(sizes));
    g_assert_cmpint(queue_stat(&r, Q_TX_IN_PLACE), ==,
                    ROUNDS * G_N_ELEMENTS(sizes));

    /* Across the I/O pages whose real pages lie apart: copied. */
    eth_frame_tagged(frame, 1000, peer_mac, qrig_mac, ETHERTYPE_TEST, tag++,
                     ETH_FRAME_TAG_FIRST);
    qtest_memwrite(r.q.qts, page_a + TEST_PAGE - 500, frame, 500);
    qtest_memwrite(r.q.qts, page_b, frame + 500, 500);
    g_assert_cmpint(qibmveth_send_bds(r.q.guest, (uint64_t[]){
                        ibmveth_bd(1000, TEST_IOBA + 3 * TEST_PAGE - 500) }, 1),
                    ==, H_SUCCESS);
    peer_receives(&r, frame, 1000);

    /* In two descriptors: copied. */
    eth_frame_tagged(frame, 1000, peer_mac, qrig_mac, ETHERTYPE_TEST, tag++,
                     ETH_FRAME_TAG_FIRST);
    qtest_memwrite(r.q.qts, run, frame, 1000);
    g_assert_cmpint(qibmveth_send_bds(r.q.guest, (uint64_t[]){
                        ibmveth_bd(400, TEST_IOBA),
                        ibmveth_bd(600, TEST_IOBA + 400) }, 2), ==, H_SUCCESS);
    peer_receives(&r, frame, 1000);

    g_assert_cmpint(qrig_stat(r.q.qts, NIC_TX_COPIED("not-contiguous")), ==,
                    1);
    g_assert_cmpint(qrig_stat(r.q.qts, NIC_TX_COPIED("gathered")), ==, 1);
    g_assert_cmpint(qrig_stat(r.q.qts, NIC_TX_IN_PLACE), ==,
                    ROUNDS * G_N_ELEMENTS(sizes));
    g_test_message("%zu frames of 60/1000/1514 bytes sent in place, "
                   "byte-exact; tx-copied.not-contiguous %" G_GINT64_FORMAT
                   ", tx-copied.gathered %" G_GINT64_FORMAT,
                   ROUNDS * G_N_ELEMENTS(sizes),
                   qrig_stat(r.q.qts, NIC_TX_COPIED("not-contiguous")),
                   qrig_stat(r.q.qts, NIC_TX_COPIED("gathered")));
    rig_stop(&r);
}

/*
 * The built-in guest (fwd=txonly, the IMIX sizes) writes each frame into
 * the one transmit buffer the moment the last hcall returns: had the
 * kernel not finished with the last frame by then, it would send it with
 * the next one's bytes, its IP length not its own.
 */
static void test_tx_in_place_buffer_reused(void)
{
    enum { FRAMES = 400 };
    g_autofree char *netdev = NULL, *mem = NULL;
    uint8_t f[2048];
    Rig r = { 0 };

    veth_pair_create(&r.veth, 1);
    netdev = g_strdup_printf("af-xdp,id=n0,ifname=%s" LENDING_NETDEV
                             ",tx-in-place=on", r.veth.dut);
    mem = g_strdup_printf("%uM", RAM_SIZE >> 20);
    qrig_init(&r.q);
    r.q.peer = packet_socket_open_proto(r.veth.peer, 0x0800);
    qrig_start(&r.q, &(QRigOpts){ .mem = mem, .netdev = netdev,
                                  .nic = ",id=net0",
                                  .extra = "-guest ibmveth,dev=net0,"
                                           "fwd=txonly,size=mix,"
                                           "dst=02:00:00:00:00:02" });
    for (unsigned i = 0; i < FRAMES; i++) {
        ssize_t len = packet_recv(r.q.peer, 0x0800, f, sizeof(f),
                                  QTEST_WAIT_S * 1000);

        g_assert_cmpint(len, >=, 60);
        g_assert_cmpint(f[ETH_FRAME_HLEN + 2] << 8 | f[ETH_FRAME_HLEN + 3],
                        ==, len - ETH_FRAME_HLEN);
    }
    g_assert_cmpint(qrig_stat(r.q.qts, NIC_TX_IN_PLACE), >=, FRAMES / 2);
    g_test_message("%u frames, each with its own IP length; tx-in-place %"
                   G_GINT64_FORMAT, FRAMES,
                   qrig_stat(r.q.qts, NIC_TX_IN_PLACE));
    rig_stop(&r);
}

/* Without tx-in-place=on every frame is copied, counted as the
 * backend's reason, even while guest RAM is the UMEM. */
static void test_tx_copied_by_default(void)
{
    enum { FRAMES = 5 };
    uint8_t frame[1000];
    uint64_t run;
    Rig r = { 0 };

    rig_start_lending(&r);
    run = guest_alloc(&r.q.alloc, TEST_PAGE, TEST_PAGE);
    qtest_tce_map(r.q.qts, QRIG_UNIT, TEST_IOBA, run, TEST_PAGE, 1);
    for (uint16_t tag = 0; tag < FRAMES; tag++) {
        guest_sends_at(&r, TEST_IOBA, run, sizeof(frame), tag, frame);
        peer_receives(&r, frame, sizeof(frame));
    }
    g_assert_cmpint(qrig_stat(r.q.qts, NIC_TX_COPIED("backend")), ==, FRAMES);
    g_assert_cmpint(qrig_stat(r.q.qts, NIC_TX_IN_PLACE), ==, 0);
    g_assert_cmpint(queue_stat(&r, Q_TX_IN_PLACE), ==, 0);
    rig_stop(&r);
}

/*
 * A guest whose only buffers of a lendable size are not one run of RAM
 * (each crosses an I/O page boundary onto real pages apart) still gets
 * its frames: the device refuses to lend those buffers, and the queue's
 * own frames must keep the fill ring fed.  Here the other frames are 60
 * bytes, for the 512-byte pool; more of them than the kernel held of the
 * queue's own when the buffers were posted.
 */
static void test_refused_buffers_receive(void)
{
    enum { BUFS = 8, FRAMES = 200 };
    Rig r = { 0 };
    IbmvethConf conf;
    uint64_t far;

    veth_pair_create(&r.veth, 1);
    rig_start(&r, LENDING_NETDEV, NULL);
    pools_conf(&conf, 1u << POOL_512);
    guest_open(&r, &conf);
    wait_umem_active(&r);
    far = guest_alloc(&r.q.alloc, 2 * BUFS * 2 * TEST_PAGE, TEST_PAGE);
    for (unsigned i = 0; i < BUFS; i++) {
        uint64_t io = TEST_IOBA + 2 * i * TEST_PAGE;
        uint64_t first = far + 4 * i * TEST_PAGE;
        uint64_t handle = 0xF00D0000 + i;

        qtest_tce_map(r.q.qts, QRIG_UNIT, io, first, TEST_PAGE, 3);
        qtest_tce_map(r.q.qts, QRIG_UNIT, io + TEST_PAGE, first + 2 * TEST_PAGE,
                      TEST_PAGE, 3);
        qtest_memwrite(r.q.qts, first + TEST_PAGE - 1024, &handle,
                       sizeof(handle));
        g_assert_cmpint(qtest_hcallv(r.q.qts, H_ADD_LOGICAL_LAN_BUFFER,
                                     QRIG_UNIT,
                                     ibmveth_bd(2048,
                                                io + TEST_PAGE - 1024)),
                        ==, H_SUCCESS);
    }
    for (uint16_t tag = 0; tag < FRAMES; tag++) {
        send_tagged(&r, 60, tag);
        receive_tagged(&r, 60, tag, 512);
    }
    g_assert_cmpint(qrig_stat(r.q.qts, "nic.device.rx-lend-refused"), >=,
                    BUFS);
    g_assert_cmpint(qrig_stat(r.q.qts, NIC_LENT), ==, 0);
    rig_stop(&r);
}

typedef struct QueueStatWait {
    Rig *r;
    const char *path;
    gint64 want;
} QueueStatWait;

static bool queue_stat_is(void *opaque)
{
    QueueStatWait *w = opaque;

    return queue_stat(w->r, w->path) == w->want;
}

/*
 * A guest that has taken every buffer it posted leaves the device
 * nothing to lend; the queue gives the kernel a batch of its own frames
 * meanwhile.  The buffers the guest posts next are lent at once, with no
 * frame on the wire to wake the queue: lending waits neither for
 * traffic nor for those frames to be used.
 */
static void test_lend_on_post(void)
{
    enum { COUNT = 128, BURST = 16 };
    static uint8_t data[2048];
    IbmvethConf conf;
    Rig r = { 0 };
    QueueStatWait hungry = { &r, Q_HOST_FRAMES, NET_BATCH_MAX };
    unsigned posted;
    uint16_t tag = 0;

    veth_pair_create(&r.veth, 1);
    rig_start(&r, LENDING_NETDEV, NULL);
    pools_conf(&conf, 1u << POOL_2048);
    conf.pool_count[POOL_2048] = COUNT;
    guest_open(&r, &conf);
    wait_umem_active(&r);
    while (qibmveth_posted(r.q.guest, POOL_2048) > 0) {
        unsigned n = MIN(BURST, qibmveth_posted(r.q.guest, POOL_2048));

        for (unsigned i = 0; i < n; i++) {
            send_tagged(&r, 1000, tag + i);
        }
        for (unsigned i = 0; i < n; i++) {
            IbmvethRxEntry e = qibmveth_wait_rx(r.q.guest, data,
                                                sizeof(data));

            g_assert_cmpuint(e.len, ==, 1000);
            g_assert_cmpuint(e.buf_size, ==, 2048);
        }
        tag += n;
    }
    g_assert_cmpint(qrig_stat(r.q.qts, NIC_LENT), ==, 0);
    qtest_wait_until(queue_stat_is, &hungry, QTEST_WAIT_S,
                     "the queue to give the kernel %d frames of its own "
                     "once the guest had no buffer left", NET_BATCH_MAX);
    posted = qibmveth_replenish(r.q.guest);
    g_assert_cmpuint(posted, ==, COUNT);
    /* One buffer stays unlent for each of the queue's frames. */
    qrig_wait_stat(r.q.qts, NIC_LENT, COUNT - NET_BATCH_MAX);
    g_test_message("%u buffers posted with the link quiet: %u lent",
                   posted, COUNT - NET_BATCH_MAX);
    rig_stop(&r);
}

static void qmp_ok(Rig *r, const char *command)
{
    g_autoptr(JsonObject) rsp = qtest_qmp(r->q.qts, "{'execute': %s}",
                                          command);

    g_assert_true(json_object_has_member(rsp, "return"));
}

/* @n frames of 1000 bytes from @tag on, to a machine that does not run:
 * the interface takes them, and they wait for it. */
static void send_while_stopped(Rig *r, uint16_t tag, unsigned n)
{
    RxCount arrived = { r->veth.dut, if_rx_packets(r->veth.dut) + n };

    for (unsigned i = 0; i < n; i++) {
        send_tagged(r, 1000, tag + i);
    }
    qtest_wait_until(if_rx_reached, &arrived, QTEST_WAIT_S,
                     "%s to take %u frames", r->veth.dut, n);
}

/*
 * A stopped machine lends nothing: by the time stop returns, the queue
 * is back on its own UMEM, and frames that come meanwhile wait in its
 * own frames.  cont lends again, and those frames arrive.
 */
static void test_stop_cont(void)
{
    enum { FRAMES = 5 };
    Rig r = { 0 };
    uint16_t tag;

    rig_start_lending(&r);
    tag = drain_host_frames(&r, 0);
    g_assert_cmpint(qrig_stat(r.q.qts, NIC_LENT), >, 0);
    qmp_ok(&r, "'stop'");
    g_assert_false(umem_active(&r));
    g_assert_cmpint(qrig_stat(r.q.qts, NIC_LENT), ==, 0);
    g_assert_cmpint(queue_stat(&r, Q_HOST_FRAMES), ==, 0);
    send_while_stopped(&r, tag, FRAMES);
    qmp_ok(&r, "'cont'");
    g_assert_true(umem_active(&r));
    for (unsigned i = 0; i < FRAMES; i++) {
        receive_tagged(&r, 1000, tag++, linux_buffer(1000));
    }
    g_assert_cmpint(queue_stat(&r, "guest-umem-switches"), ==, 2);
    g_test_message("%d frames sent while stopped, on the queue's own "
                   "UMEM, arrived after cont", FRAMES);
    rig_stop(&r);
}

typedef struct StatusIs {
    Rig *r;
    const char *status;
} StatusIs;

static bool run_status_is(void *opaque)
{
    StatusIs *w = opaque;
    g_autoptr(JsonObject) rsp = qtest_qmp(w->r->q.qts,
                                          "{'execute': 'query-status'}");

    return !strcmp(json_object_get_string_member(
                       json_object_get_object_member(rsp, "return"),
                       "status"), w->status);
}

static bool umem_left(void *opaque)
{
    return !umem_active(opaque);
}

/*
 * A migration's switchover stops the machine without waiting for the
 * queue's own socket (it binds in the background): once bound, frames
 * that come wait in it as after a stop.  A cancelled migration runs the
 * machine again, which lends again, and those frames arrive.
 */
static void test_switchover_cancelled(void)
{
    enum { FRAMES = 5 };
    Rig r = { 0 };
    uint16_t tag;
    g_autofree char *cmd = NULL;

    rig_start_lending(&r);
    tag = drain_host_frames(&r, 0);
    /* The stream's reader stays, so the switchover never ends. */
    cmd = g_strdup_printf("'migrate', 'arguments': {'uri': "
                          "'exec:cat > %s/stream; exec sleep 60'}", r.q.dir);
    qmp_ok(&r, cmd);
    qtest_wait_until(run_status_is, &(StatusIs){ &r, "finish-migrate" },
                     QTEST_WAIT_S, "the source to stop for the switchover");
    g_assert_cmpint(qrig_stat(r.q.qts, NIC_LENT), ==, 0);
    qtest_wait_until(umem_left, &r, QTEST_WAIT_S,
                     "queue 0 to bind its own socket");
    send_while_stopped(&r, tag, FRAMES);
    qmp_ok(&r, "'migrate_cancel'");
    qtest_wait_until(run_status_is, &(StatusIs){ &r, "running" },
                     QTEST_WAIT_S, "the source to run again");
    wait_umem_active(&r);
    for (unsigned i = 0; i < FRAMES; i++) {
        receive_tagged(&r, 1000, tag++, linux_buffer(1000));
    }
    g_assert_cmpint(queue_stat(&r, "guest-umem-switches"), ==, 2);
    rig_stop(&r);
}

/* SO_BUSY_POLL of the queue's socket now, in illan. */
static int socket_busy_poll(Rig *r)
{
    int fd_there, usecs = -1;
    int xsk = process_xsk(qtest_pid(r->q.qts), NULL, 0, &fd_there);
    socklen_t len = sizeof(usecs);

    g_assert_cmpint(getsockopt(xsk, SOL_SOCKET, SO_BUSY_POLL, &usecs, &len),
                    ==, 0);
    close(xsk);
    return usecs;
}

/* busy-poll= holds for each socket the queue gets: on guest RAM, and on
 * its own UMEM while stopped. */
static void test_busy_poll_kept(void)
{
    IbmvethConf conf;
    Rig r = { 0 };

    veth_pair_create(&r.veth, 1);
    rig_start(&r, LENDING_NETDEV ",busy-poll=25", NULL);
    pools_conf(&conf, 1u << POOL_512 | 1u << POOL_2048);
    guest_open(&r, &conf);
    wait_umem_active(&r);
    g_assert_cmpint(socket_busy_poll(&r), ==, 25);
    qmp_ok(&r, "'stop'");
    g_assert_false(umem_active(&r));
    g_assert_cmpint(socket_busy_poll(&r), ==, 25);
    qmp_ok(&r, "'cont'");
    g_assert_true(umem_active(&r));
    g_assert_cmpint(socket_busy_poll(&r), ==, 25);
    rig_stop(&r);
}

/*
 * A migration's destination keeps its socket on guest RAM while it waits
 * for the stream: it never ran, so it has nothing lent to take back, and
 * registering guest RAM again when it starts would be the guest's
 * outage.
 */
static void test_incoming_keeps_guest_umem(void)
{
    Rig r = { 0 };

    veth_pair_create(&r.veth, 1);
    rig_start(&r, LENDING_NETDEV, "-incoming defer");
    g_assert_true(umem_active(&r));
    g_assert_cmpint(queue_stat(&r, "guest-umem-switches"), ==, 1);
    g_assert_cmpint(queue_stat(&r, Q_RECLAIMS), ==, 0);
    rig_stop(&r);
}

/* Waits for netdev n0's NETDEV_LINK_CHANGED with @state. */
static void wait_link_state(Rig *r, const char *state)
{
    for (;;) {
        g_autoptr(JsonObject) ev = qtest_qmp_eventwait(r->q.qts,
                                                       "NETDEV_LINK_CHANGED");
        JsonObject *data = json_object_get_object_member(ev, "data");

        if (!strcmp(json_object_get_string_member(data, "state"), state)) {
            return;
        }
    }
}

/* The interface illan lost comes back under its name: its queues open
 * again, and the test's peer socket is on the new peer end. */
static void bring_interface_back(Rig *r)
{
    close(r->q.peer);
    veth_pair_recreate(&r->veth);
    wait_link_state(r, "reopened");
    r->q.peer = packet_socket_open(r->veth.peer);
}

/*
 * The interface goes away while the queue lends: the buffers its socket
 * held died with it and are the device's again; when an interface of
 * that name returns, the new queue lends again.
 */
static void test_interface_returns(void)
{
    Rig r = { 0 };
    uint16_t tag;

    rig_start_lending(&r);
    tag = drain_host_frames(&r, 0);
    g_assert_cmpint(qrig_stat(r.q.qts, NIC_LENT), >, 0);
    netns_run("ip link del %s", r.veth.dut);
    wait_link_state(&r, "removed");
    g_assert_cmpint(qrig_stat(r.q.qts, NIC_LENT), ==, 0);
    bring_interface_back(&r);
    wait_umem_active(&r);
    tag = drain_host_frames(&r, tag);
    send_tagged(&r, 1000, tag);
    receive_tagged(&r, 1000, tag, linux_buffer(1000));
    g_assert_cmpint(queue_stat(&r, Q_LENT_FRAMES), >=, 1);
    rig_stop(&r);
}

/* How the guest lets go of its buffers while the flood runs. */
typedef void (*ReleaseFn)(Rig *r);

/*
 * A socket of the test's own that takes queue 0 of @ifname the moment
 * the kernel releases it (bind is retried on the same socket, where
 * illan retries each millisecond), for illan's next socket to find it
 * taken.
 */
typedef struct QueueGrab {
    unsigned ifindex;
    int fd;
    void *umem;
    bool bound;
} QueueGrab;

#define GRAB_FRAMES 16

static gpointer grab_queue(gpointer opaque)
{
    QueueGrab *g = opaque;
    struct sockaddr_xdp sxdp = { .sxdp_family = AF_XDP,
                                 .sxdp_ifindex = g->ifindex,
                                 .sxdp_flags = XDP_COPY };
    gint64 deadline = g_get_monotonic_time() + QTEST_WAIT_S * G_USEC_PER_SEC;

    do {
        if (bind(g->fd, (struct sockaddr *)&sxdp, sizeof(sxdp)) == 0) {
            g->bound = true;
            break;
        }
        g_assert_cmpint(errno, ==, EBUSY);
    } while (g_get_monotonic_time() < deadline);
    return NULL;
}

static GThread *queue_grab_start(QueueGrab *g, const char *ifname)
{
    struct xdp_umem_reg reg = { .len = GRAB_FRAMES * 4096,
                                .chunk_size = 4096 };
    int n = GRAB_FRAMES;

    *g = (QueueGrab){ .ifindex = veth_ifindex(ifname) };
    g->umem = mmap(NULL, reg.len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    g_assert_true(g->umem != MAP_FAILED);
    reg.addr = (uintptr_t)g->umem;
    g->fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
    g_assert_cmpint(g->fd, >=, 0);
    g_assert_cmpint(setsockopt(g->fd, SOL_XDP, XDP_UMEM_REG, &reg,
                               sizeof(reg)), ==, 0);
    g_assert_cmpint(setsockopt(g->fd, SOL_XDP, XDP_UMEM_FILL_RING, &n,
                               sizeof(n)), ==, 0);
    g_assert_cmpint(setsockopt(g->fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &n,
                               sizeof(n)), ==, 0);
    g_assert_cmpint(setsockopt(g->fd, SOL_XDP, XDP_RX_RING, &n, sizeof(n)),
                    ==, 0);
    return g_thread_new("grab", grab_queue, g);
}

static void queue_grab_release(QueueGrab *g)
{
    close(g->fd);
    munmap(g->umem, GRAB_FRAMES * 4096);
}

/*
 * A queue whose new socket the kernel refuses (another socket took the
 * queue while illan's closed one was being released) has none: it
 * reports so, drops what the guest sends, counted, and leaves alone the
 * rings it no longer has, through the next switch (cont, refused too
 * while the queue stays taken) and its I/O thread's turns.  When the
 * interface returns it lends again.  The grab races illan's own retries,
 * so the stop is tried until it wins.
 */
static void test_socket_taken(void)
{
    enum { TRIES = 5 };
    Rig r = { 0 };
    uint8_t frame[200];
    uint16_t tag;
    QueueGrab grab;
    unsigned try;

    rig_start_lending(&r);
    tag = drain_host_frames(&r, 0);
    for (try = 0; try < TRIES; try++) {
        GThread *t = queue_grab_start(&grab, r.veth.dut);

        qmp_ok(&r, "'stop'");
        g_thread_join(t);
        if (grab.bound) {
            break;
        }
        queue_grab_release(&grab);
        qmp_ok(&r, "'cont'");
        wait_umem_active(&r);
    }
    g_assert_cmpuint(try, <, TRIES);
    qmp_ok(&r, "'cont'");
    g_assert_true(queue_bool(&r, Q_FAILED));
    eth_frame_tagged(frame, sizeof(frame), peer_mac, qrig_mac,
                     ETHERTYPE_TEST, tag, ETH_FRAME_TAG_FIRST);
    g_assert_cmpint(qibmveth_send(r.q.guest, frame, sizeof(frame)), ==,
                    H_SUCCESS);
    g_assert_cmpint(queue_stat(&r, Q_TX_NO_SOCKET), ==, 1);
    queue_grab_release(&grab);

    netns_run("ip link del %s", r.veth.dut);
    wait_link_state(&r, "removed");
    bring_interface_back(&r);
    wait_umem_active(&r);
    g_assert_false(queue_bool(&r, Q_FAILED));
    tag = drain_host_frames(&r, tag + 1);
    send_tagged(&r, 1000, tag);
    receive_tagged(&r, 1000, tag, linux_buffer(1000));
    g_test_message("the grab won the queue at try %u of %d", try + 1, TRIES);
    rig_stop(&r);
}

static void release_by_free(Rig *r)
{
    guest_free(r);
}

static void release_by_reset(Rig *r)
{
    qmp_ok(r, "'system_reset'");
    /* The reset closed the adapter: the model's H_FREE finds none. */
    g_assert_cmpint(qibmveth_close(r->q.guest), ==, H_RESOURCE);
    r->q.guest = NULL;
}

/*
 * Zero copy running under a flood, then @release: at once nothing is
 * lent any more, and guest RAM stays as it is while the flood goes on.
 * Returns with the flood still running.
 */
static void release_under_flood(Rig *r, PacketFlood *flood,
                                ReleaseFn release,
                                const char *what)
{
    rig_start_lending(r);
    packet_flood_start(flood, r->q.peer, flood_frame, FLOOD_PACE_US);
    qrig_wait_stat_min(r->q.qts, NIC_ZERO_COPY, 1);
    release(r);
    g_assert_cmpint(qrig_stat(r->q.qts, NIC_LENT), ==, 0);
    g_assert_cmpint(queue_stat(r, Q_RECLAIMS), >=, 1);
    assert_ram_still(r, what);
    g_test_message("%s with %" G_GINT64_FORMAT " frames delivered in place: "
                   "guest RAM unchanged during %d further frames", what,
                   qrig_stat(r->q.qts, NIC_ZERO_COPY),
                   FRAMES_AFTER_RELEASE);
}

static void check_release(ReleaseFn release, const char *what)
{
    PacketFlood flood;
    Rig r = { 0 };

    release_under_flood(&r, &flood, release, what);
    packet_flood_stop(&flood);
    rig_stop(&r);
}

static void test_free_under_flood(void)
{
    check_release(release_by_free, "H_FREE_LOGICAL_LAN");
}

static void test_reset_under_flood(void)
{
    check_release(release_by_reset, "system_reset");
}

/*
 * Linux's MTU change: close (H_FREE), then open with other pools.  RAM
 * stays still between the two; after the open the flood's frames arrive
 * byte-exact in the new pools, none in a 2048-byte buffer of the old
 * ones, and nothing is lent since the guest posted no 2048-byte buffer.
 */
static void test_mtu_reopen_under_flood(void)
{
    enum { CHECKED = 40 };
    static uint8_t data[65536];
    IbmvethConf conf;
    PacketFlood flood;
    Rig r = { 0 };

    release_under_flood(&r, &flood, release_by_free, "H_FREE_LOGICAL_LAN "
                        "of an MTU change");
    pools_conf(&conf, 1u << POOL_512 | 1u << POOL_64K);
    guest_open(&r, &conf);
    for (unsigned i = 0; i < CHECKED; i++) {
        IbmvethRxEntry e = qibmveth_wait_rx(r.q.guest, data, sizeof(data));
        uint64_t seq;

        g_assert_true(eth_frame_udp_seq_check(data, e.len, qrig_mac,
                                              peer_mac, &seq));
        g_assert_cmpuint(e.len, ==, flood_len(seq));
        /* The smallest buffer that holds it, or a larger one when the
         * flood has used those up; never one of the old pools. */
        g_assert_cmpuint(e.buf_size, >=, e.len + 8);
        g_assert_true(e.buf_size == 512 || e.buf_size == 65536);
        qibmveth_replenish(r.q.guest);
    }
    packet_flood_stop(&flood);
    rig_stop(&r);
}

/* Passed sockets have their own UMEM: every frame is copied, counted
 * under sock-fds. */
static void test_fallback_sock_fds(void)
{
    enum { FRAMES = 12 };
    static const size_t sizes[] = { 60, 1000, 1500 };
    g_autofree char *opts = NULL;
    XdpRedirect *prog;
    IbmvethConf conf;
    Rig r = { 0 };
    int xsk;

    veth_pair_create(&r.veth, 1);
    /* The privileged helper's part: illan's redirect program, and an
     * AF_XDP socket without FD_CLOEXEC in its map for illan to inherit. */
    prog = xdp_redirect_attach(veth_ifindex(r.veth.dut), XDP_FLAGS_DRV_MODE);
    g_assert_nonnull(prog);
    xsk = socket(AF_XDP, SOCK_RAW, 0);
    g_assert_cmpint(xsk, >=, 0);
    g_assert_true(xdp_redirect_add_socket(prog, 0, xsk));
    opts = g_strdup_printf(",inhibit=on,sock-fds=%d,guest-umem=auto", xsk);
    rig_start(&r, opts, NULL);
    pools_conf(&conf, 1u << POOL_512 | 1u << POOL_2048);
    guest_open(&r, &conf);
    for (unsigned i = 0; i < FRAMES; i++) {
        send_tagged(&r, sizes[i % G_N_ELEMENTS(sizes)], i);
    }
    for (unsigned i = 0; i < FRAMES; i++) {
        size_t len = sizes[i % G_N_ELEMENTS(sizes)];

        receive_tagged(&r, len, i, linux_buffer(len));
    }
    g_assert_false(umem_active(&r));
    g_assert_cmpint(queue_stat(&r, Q_COPIED("sock-fds")), ==, FRAMES);
    g_assert_cmpint(qrig_stat(r.q.qts, NIC_ZERO_COPY), ==, 0);
    /* Counted only while lending: a copying queue's frames are all the
     * kernel's but those in flight. */
    g_assert_cmpint(queue_stat(&r, Q_HOST_FRAMES), ==, 0);
    rig_stop(&r);
    close(xsk);
    xdp_redirect_detach(prog);
}

/* At MTU 9000 a frame outgrows a 2048-byte buffer: frames are copied
 * (multi-buffer chains), counted under mtu. */
static void test_fallback_mtu(void)
{
    enum { LEN = 6000 };
    IbmvethConf conf;
    Rig r = { 0 };

    veth_pair_create(&r.veth, 1);
    netns_run("ip link set %s mtu 9000", r.veth.dut);
    netns_run("ip link set %s mtu 9000", r.veth.peer);
    rig_start(&r, ",mode=native,queues=1,multi-buffer=on,guest-umem=auto",
              NULL);
    pools_conf(&conf, 1u << POOL_512 | 1u << POOL_2048 | 1u << POOL_16K);
    guest_open(&r, &conf);
    send_tagged(&r, LEN, 1);
    receive_tagged(&r, LEN, 1, 16384);
    g_assert_cmpint(queue_stat(&r, Q_COPIED("mtu")), >=, 1);
    rig_stop(&r);
}

typedef struct Child {
    GPid pid;
    int status;
} Child;

static bool child_exited(void *opaque)
{
    Child *c = opaque;

    return waitpid(c->pid, &c->status, WNOHANG) == c->pid;
}

/* Runs illan with @args, keeping the test's descriptors, until it exits
 * (failing the test if it still runs after QTEST_WAIT_S); returns its
 * exit status and its stderr. */
static int run_illan_keeping_fds(const char *args, char **err)
{
    g_autofree char *cmd = g_strdup_printf("%s %s", illan_binary(), args);
    g_auto(GStrv) argv = NULL;
    g_autoptr(GIOChannel) ch = NULL;
    Child c = { 0 };
    int err_fd;

    g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, NULL));
    g_assert_true(g_spawn_async_with_pipes(NULL, argv, NULL,
                                           G_SPAWN_LEAVE_DESCRIPTORS_OPEN |
                                           G_SPAWN_DO_NOT_REAP_CHILD |
                                           G_SPAWN_STDOUT_TO_DEV_NULL,
                                           NULL, NULL, &c.pid, NULL, NULL,
                                           &err_fd, NULL));
    if (!qtest_poll_until(child_exited, &c, QTEST_WAIT_S)) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, NULL, 0);
        g_error("illan %s still ran after %.0f s", args, QTEST_WAIT_S);
    }
    ch = g_io_channel_unix_new(err_fd);
    g_io_channel_set_close_on_unref(ch, TRUE);
    g_assert_cmpint(g_io_channel_read_to_end(ch, err, NULL, NULL), ==,
                    G_IO_STATUS_NORMAL);
    g_assert_true(WIFEXITED(c.status));
    return WEXITSTATUS(c.status);
}

/* guest-umem=on cannot be kept with sockets illan did not open: one
 * line, exit 1.  The same option without sock-fds starts. */
static void test_on_refuses_sock_fds(void)
{
    g_autofree char *args = NULL;
    g_autofree char *err = NULL;
    XdpRedirect *prog;
    VethPair v;
    Rig r = { 0 };
    int xsk;

    veth_pair_create(&v, 1);
    /* A socket illan inherits, so that only guest-umem can be what it
     * refuses. */
    prog = xdp_redirect_attach(veth_ifindex(v.dut), XDP_FLAGS_DRV_MODE);
    g_assert_nonnull(prog);
    xsk = socket(AF_XDP, SOCK_RAW, 0);
    g_assert_cmpint(xsk, >=, 0);
    g_assert_true(xdp_redirect_add_socket(prog, 0, xsk));
    args = g_strdup_printf("-nodefaults -netdev af-xdp,id=n0,ifname=%s,"
                           "inhibit=on,sock-fds=%d,guest-umem=on", v.dut,
                           xsk);
    g_assert_cmpint(run_illan_keeping_fds(args, &err), ==, 1);
    g_test_message("guest-umem=on,sock-fds -> %s", err);
    g_assert_nonnull(strstr(err, "guest-umem"));
    g_assert_cmpint(strchr(err, '\n') - err, ==, (long)strlen(err) - 1);
    close(xsk);
    xdp_redirect_detach(prog);

    r.veth = v;
    rig_start(&r, LENDING_NETDEV, NULL);
    rig_stop(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (!netns_enter_private_or_skip_all("/af-xdp-zc/needs-namespace")) {
        return g_test_run();
    }
    g_test_add_func("/af-xdp-zc/deliver", test_deliver);
    g_test_add_func("/af-xdp-zc/lends-by-default", test_lends_by_default);
    g_test_add_func("/af-xdp-zc/lend-on-post", test_lend_on_post);
    g_test_add_func("/af-xdp-zc/stop-cont", test_stop_cont);
    g_test_add_func("/af-xdp-zc/switchover-cancelled",
                    test_switchover_cancelled);
    g_test_add_func("/af-xdp-zc/socket-taken", test_socket_taken);
    g_test_add_func("/af-xdp-zc/busy-poll-kept", test_busy_poll_kept);
    g_test_add_func("/af-xdp-zc/incoming-keeps-guest-umem",
                    test_incoming_keeps_guest_umem);
    g_test_add_func("/af-xdp-zc/interface-returns", test_interface_returns);
    g_test_add_func("/af-xdp-zc/free-under-flood", test_free_under_flood);
    g_test_add_func("/af-xdp-zc/reset-under-flood", test_reset_under_flood);
    g_test_add_func("/af-xdp-zc/mtu-reopen-under-flood",
                    test_mtu_reopen_under_flood);
    g_test_add_func("/af-xdp-zc/refused-buffers-receive",
                    test_refused_buffers_receive);
    g_test_add_func("/af-xdp-zc/tx-in-place", test_tx_in_place);
    g_test_add_func("/af-xdp-zc/tx-in-place/buffer-reused",
                    test_tx_in_place_buffer_reused);
    g_test_add_func("/af-xdp-zc/tx-copied-by-default",
                    test_tx_copied_by_default);
    g_test_add_func("/af-xdp-zc/fallback/sock-fds", test_fallback_sock_fds);
    g_test_add_func("/af-xdp-zc/fallback/mtu", test_fallback_mtu);
    g_test_add_func("/af-xdp-zc/on-refuses-sock-fds",
                    test_on_refuses_sock_fds);
    return g_test_run();
}
