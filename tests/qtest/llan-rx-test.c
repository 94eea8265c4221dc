/*
 * spapr-vlan receive and send end to end: frames injected on a unix dgram
 * socket reach guest buffers through the device, as the ibmveth model
 * (libqos) sees them, and frames the guest sends arrive on the socket.
 */
#include "libqtest.h"
#include "libqos/ibmveth.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define UNIT        0x71000000u
#define OUR_MAC     0x525400123456ULL
#define WAIT_US     (5 * G_USEC_PER_SEC)

typedef struct Rig {
    QTestState *qts;
    QGuestAllocator alloc;
    QIbmveth *veth;
    int peer;
    char *dev_path, *peer_path;
} Rig;

static const uint8_t our_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

static void rig_open_guest(Rig *r, const IbmvethConf *conf)
{
    IbmvethConf linux_conf;
    int64_t rc = 0;

    guest_alloc_init(&r->alloc, 0x100000, 0x10000000);
    if (!conf) {
        ibmveth_conf_linux_defaults(&linux_conf, UNIT);
        linux_conf.mac = OUR_MAC;
        conf = &linux_conf;
    }
    r->veth = qibmveth_open(r->qts, &r->alloc, conf, &rc);
    g_assert_nonnull(r->veth);
}

static void rig_start(Rig *r, const char *pools, const IbmvethConf *conf)
{
    static int n;

    r->dev_path = g_strdup_printf("%s/llan-rx-%d-%d.dev", g_get_tmp_dir(),
                                  getpid(), n);
    r->peer_path = g_strdup_printf("%s/llan-rx-%d-%d.peer", g_get_tmp_dir(),
                                   getpid(), n++);
    r->peer = qtest_bind_dgram(r->peer_path);
    r->qts = qtest_initf("-nodefaults -m 512M -netdev dgram,id=n0,"
                         "local.type=unix,local.path=%s,remote.type=unix,"
                         "remote.path=%s -device spapr-vlan,netdev=n0,"
                         "mac=52:54:00:12:34:56,use-rx-buffer-pools=%s",
                         r->dev_path, r->peer_path, pools);
    rig_open_guest(r, conf);
}

static void rig_stop(Rig *r)
{
    g_assert_cmpint(qibmveth_close(r->veth), ==, H_SUCCESS);
    qtest_quit(r->qts);
    close(r->peer);
    unlink(r->peer_path);
    g_free(r->dev_path);
    g_free(r->peer_path);
}

/* A frame to @dst of @len bytes whose last two bytes carry @tag. */
static void inject(Rig *r, const uint8_t *dst, size_t len, uint16_t tag)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    g_autofree uint8_t *frame = g_malloc0(len);

    g_strlcpy(addr.sun_path, r->dev_path, sizeof(addr.sun_path));
    memcpy(frame, dst, 6);
    memcpy(frame + 6, our_mac, 6);
    for (size_t i = 14; i < len; i++) {
        frame[i] = i * 13 + tag;
    }
    frame[len - 2] = tag >> 8;
    frame[len - 1] = tag;
    g_assert_cmpint(sendto(r->peer, frame, len, 0, (struct sockaddr *)&addr,
                           sizeof(addr)), ==, (ssize_t)len);
}

/* The next received frame (waiting for it); its tag and buffer size. */
static IbmvethRxEntry expect_frame(Rig *r, uint16_t *tag)
{
    static uint8_t data[65536];
    gint64 deadline = g_get_monotonic_time() + WAIT_US;
    IbmvethRxEntry e;

    while (!qibmveth_poll(r->veth, &e, data, sizeof(data))) {
        if (g_get_monotonic_time() > deadline) {
            g_error("no frame arrived within %d s", WAIT_US / 1000000);
        }
        g_usleep(1000);
    }
    g_assert_true(e.valid);
    g_assert_cmpuint(e.offset, ==, 8);
    g_assert_cmpuint(e.len + 8, <=, e.buf_size);
    *tag = data[e.len - 2] << 8 | data[e.len - 1];
    return e;
}

static void test_modes_table(void)
{
    static const size_t sizes[] = { 60, 600, 1514 };
    const char *modes[] = { "on", "off" };

    for (int m = 0; m < 2; m++) {
        Rig r;
        GHashTable *per_size = g_hash_table_new(g_direct_hash,
                                                g_direct_equal);
        uint64_t buf_bytes = 0, frame_bytes = 0;
        g_autoptr(GString) line = g_string_new(NULL);

        rig_start(&r, modes[m], NULL);
        for (uint16_t i = 0; i < 30; i++) {
            inject(&r, our_mac, sizes[i % 3], i);
        }
        for (uint16_t i = 0; i < 30; i++) {
            uint16_t tag;
            IbmvethRxEntry e = expect_frame(&r, &tag);
            uint32_t want = m == 0 ? (sizes[tag % 3] == 60 ? 512 : 2048)
                                   : 65536;
            unsigned c;

            g_assert_cmpuint(tag, ==, i);
            g_assert_cmpuint(e.len, ==, sizes[i % 3]);
            /* Per frame, through its handle: which buffer it landed in. */
            g_assert_cmpuint(e.buf_size, ==, want);
            c = GPOINTER_TO_UINT(g_hash_table_lookup(
                per_size, GUINT_TO_POINTER(e.buf_size)));
            g_hash_table_insert(per_size, GUINT_TO_POINTER(e.buf_size),
                                GUINT_TO_POINTER(c + 1));
            buf_bytes += e.buf_size;
            frame_bytes += e.len;
        }
        g_string_printf(line, "use-rx-buffer-pools=%s: posted", modes[m]);
        for (unsigned p = 0; p < IBMVETH_NUM_POOLS; p++) {
            g_string_append_printf(line, " %u", qibmveth_posted(r.veth, p));
        }
        g_string_append(line, "; frames per buffer size:");
        for (uint32_t size = 512; size <= 65536; size *= 2) {
            unsigned c = GPOINTER_TO_UINT(g_hash_table_lookup(
                per_size, GUINT_TO_POINTER(size)));
            if (c) {
                g_string_append_printf(line, " %u x %u", c, size);
            }
        }
        g_string_append_printf(line, "; guest buffer bytes per byte "
                               "received: %.2f", (double)buf_bytes /
                               frame_bytes);
        g_test_message("%s", line->str);
        g_hash_table_destroy(per_size);
        rig_stop(&r);
    }
}

/* Page mode takes only the first 509 of Linux's buffers: 256 x 64 KiB
 * (replenished first) and 253 x 2 KiB; the 512-byte pool gets none. */
static void test_page_mode_takes_509(void)
{
    Rig r;

    rig_start(&r, "off", NULL);
    g_assert_cmpuint(qibmveth_posted(r.veth, 4), ==, 256);
    g_assert_cmpuint(qibmveth_posted(r.veth, 1), ==, 253);
    g_assert_cmpuint(qibmveth_posted(r.veth, 0), ==, 0);
    rig_stop(&r);
    rig_start(&r, "on", NULL);
    g_assert_cmpuint(qibmveth_posted(r.veth, 4), ==, 256);
    g_assert_cmpuint(qibmveth_posted(r.veth, 1), ==, 512);
    g_assert_cmpuint(qibmveth_posted(r.veth, 0), ==, 256);
    rig_stop(&r);
}

/* One pool of three 2 KiB buffers: a four-entry queue wraps every four
 * frames, and the model only accepts entries with the toggle it expects. */
static void test_toggle_across_wraps(void)
{
    for (int m = 0; m < 2; m++) {
        IbmvethConf conf = { .unit = UNIT, .mac = OUR_MAC, .npools = 1,
                              .pool_size = { 2048 }, .pool_count = { 3 },
                              .pool_active = { true } };
        Rig r;
        uint64_t bd;

        rig_start(&r, m ? "off" : "on", &conf);
        for (uint16_t i = 0; i < 14; i++) {
            uint16_t tag;

            inject(&r, our_mac, 100 + i, i);
            expect_frame(&r, &tag);
            g_assert_cmpuint(tag, ==, i);
            qibmveth_replenish(r.veth);
        }
        /* 14 entries in a 4-entry queue: 3 wraps, toggle flipped thrice. */
        bd = qtest_readq(r.qts, qibmveth_buffer_list(r.veth));
        g_assert_cmphex(bd & IBMVETH_BD_TOGGLE, ==, IBMVETH_BD_TOGGLE);
        rig_stop(&r);
    }
}

/* Frames no buffer can hold are dropped at once and counted once each
 * in the guest's counter; the frames behind them are not held up. */
static void test_no_buffer_counter(void)
{
    IbmvethConf conf = { .unit = UNIT, .mac = OUR_MAC, .npools = 2,
                          .pool_size = { 512, 2048 },
                          .pool_count = { 8, 8 },
                          .pool_active = { true, true } };
    const char *modes[] = { "on", "off" };

    for (int m = 0; m < 2; m++) {
        Rig r;
        uint16_t tag;

        rig_start(&r, modes[m], &conf);
        inject(&r, our_mac, 4000, 1);
        inject(&r, our_mac, 3000, 2);
        inject(&r, our_mac, 2041, 3);       /* 2041 + 8 > 2048 */
        inject(&r, our_mac, 60, 4);
        expect_frame(&r, &tag);
        g_assert_cmpuint(tag, ==, 4);
        g_assert_cmpuint(qibmveth_rx_no_buffer(r.veth), ==, 3);
        rig_stop(&r);
    }
}

static void mcast(Rig *r, uint64_t flags, uint64_t mac)
{
    g_assert_cmpint(qtest_hcallv(r->qts, H_MULTICAST_CTRL, UNIT, flags, mac),
                    ==, H_SUCCESS);
}

/* Sends one frame per destination, then a marker to us, and returns which
 * tags arrived (bit i for dsts[i]). */
static unsigned delivered_of(Rig *r, const uint8_t (*dsts)[6], unsigned n)
{
    unsigned seen = 0;
    uint16_t tag;

    for (unsigned i = 0; i < n; i++) {
        inject(r, dsts[i], 60, i);
    }
    inject(r, our_mac, 60, 0x7fff);
    do {
        expect_frame(r, &tag);
        if (tag != 0x7fff) {
            seen |= 1u << tag;
        }
        qibmveth_replenish(r->veth);
    } while (tag != 0x7fff);
    return seen;
}

static void test_filters(void)
{
    static const uint8_t dsts[5][6] = {
        { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 },   /* 0: us */
        { 0x52, 0x54, 0x00, 0x99, 0x99, 0x99 },   /* 1: someone else */
        { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },   /* 2: broadcast */
        { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 },   /* 3: in the table */
        { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x02 },   /* 4: not in it */
    };
    Rig r;

    rig_start(&r, "on", NULL);
    /* After open, filtering is off: everything, as QEMU delivered. */
    g_assert_cmphex(delivered_of(&r, dsts, 5), ==, 0x1f);
    /* Linux's sequence: clear with reception on, add, filter. */
    mcast(&r, 0x80000 | 0x20000 | 0x40000 | 3, 0);
    mcast(&r, 1, 0x01005e000001ULL);
    mcast(&r, 0x40000 | 0x10000, 0);
    g_assert_cmphex(delivered_of(&r, dsts, 5), ==, 0x0d);
    /* Receive-multicast off: no multicast even from the table. */
    mcast(&r, 0x80000, 0);
    g_assert_cmphex(delivered_of(&r, dsts, 5), ==, 0x05);
    /* Receive-multicast on, filtering off: all multicast, everything. */
    mcast(&r, 0x80000 | 0x20000 | 0x40000, 0);
    g_assert_cmphex(delivered_of(&r, dsts, 5), ==, 0x1f);
    /* A new MAC is ours from then on. */
    mcast(&r, 0x40000 | 0x10000, 0);
    g_assert_cmpint(qtest_hcallv(r.qts, H_CHANGE_LOGICAL_LAN_MAC, UNIT,
                                 0x525400999999ULL), ==, H_SUCCESS);
    inject(&r, dsts[0], 60, 0);
    inject(&r, dsts[1], 60, 1);
    {
        uint16_t tag;
        expect_frame(&r, &tag);
        g_assert_cmpuint(tag, ==, 1);
    }
    rig_stop(&r);
}

static void test_interrupts_only_when_enabled(void)
{
    Rig r;
    uint16_t tag;

    rig_start(&r, "on", NULL);
    qtest_irq_intercept_out(r.qts, "l-lan@71000000");
    qibmveth_set_irq(r.veth, false);
    inject(&r, our_mac, 60, 1);
    expect_frame(&r, &tag);
    g_assert_cmpuint(qtest_irq_raise_count(r.qts, 0x1100), ==, 0);
    qibmveth_set_irq(r.veth, true);
    for (uint16_t i = 0; i < 5; i++) {
        inject(&r, our_mac, 60, i);
    }
    for (uint16_t i = 0; i < 5; i++) {
        expect_frame(&r, &tag);
    }
    g_assert_cmpuint(qtest_irq_raise_count(r.qts, 0x1100), >=, 1);
    g_assert_cmpuint(qtest_irq_raise_count(r.qts, 0x1100), <=, 5);
    rig_stop(&r);
}

/* The guest revokes the rx queue's mapping while frames arrive: they are
 * dropped, and once the mapping is back frames land where they should. */
static void test_hostile_unmapped_queue(void)
{
    Rig r;
    uint64_t rxq;
    uint16_t tag;

    rig_start(&r, "on", NULL);
    rxq = qibmveth_rxq(r.veth);
    inject(&r, our_mac, 60, 1);
    expect_frame(&r, &tag);
    qtest_tce_map(r.qts, UNIT, rxq, rxq, 4096, 0);
    for (uint16_t i = 2; i < 6; i++) {
        inject(&r, our_mac, 60, i);
    }
    /* A round trip through the unmapped state, then back. */
    g_assert_cmpuint(qtest_readq(r.qts, rxq + 16), ==, 0);
    g_usleep(50000);
    qtest_tce_map(r.qts, UNIT, rxq, rxq, 4096, 3);
    inject(&r, our_mac, 60, 9);
    expect_frame(&r, &tag);
    g_assert_cmpuint(tag, ==, 9);
    rig_stop(&r);
}

/* Page mode: the guest scribbles over its buffer-list page.  Every scan
 * is bounded, the device keeps serving, and a fresh register works. */
static void test_hostile_buffer_list(void)
{
    Rig r;
    uint64_t bl;
    g_autofree char *rsp = NULL;

    rig_start(&r, "off", NULL);
    bl = qibmveth_buffer_list(r.veth);
    qtest_memset(r.qts, bl + 16, 0xff, 4088 - 16);
    for (uint16_t i = 0; i < 8; i++) {
        inject(&r, our_mac, 60 + i * 200, i);
    }
    qtest_memset(r.qts, bl + 16, 0x00, 4088 - 16);
    inject(&r, our_mac, 60, 99);
    g_usleep(50000);
    rsp = qtest_cmd(r.qts, "endianness");
    g_assert_cmpstr(rsp, ==, "OK big");
    rig_stop(&r);
}

/* A 4-byte aligned buffer of odd size: the frame lands at buffer + 8. */
static void test_odd_buffer(void)
{
    IbmvethConf conf = { .unit = UNIT, .mac = OUR_MAC, .npools = 1,
                          .pool_size = { 1028 }, .pool_count = { 2 },
                          .pool_active = { true } };
    Rig r;
    uint16_t tag;

    rig_start(&r, "on", &conf);
    inject(&r, our_mac, 1020, 5);
    expect_frame(&r, &tag);
    g_assert_cmpuint(tag, ==, 5);
    rig_stop(&r);
}

static size_t recv_frame(Rig *r, uint8_t *buf, size_t max)
{
    struct timeval tv = { .tv_sec = 5 };
    ssize_t n;

    setsockopt(r->peer, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    n = recv(r->peer, buf, max, 0);
    g_assert_cmpint(n, >, 0);
    return n;
}

/* Three descriptors, two of them crossing I/O pages that map to real
 * pages far apart: the peer gets exactly the bytes, in order. */
static void test_send_gather(void)
{
    const uint64_t io = 0x8000000, real_a = 0x3000000, real_b = 0x5000000;
    uint8_t frame[1514], got[2048];
    Rig r;

    rig_start(&r, "on", NULL);
    for (size_t i = 0; i < sizeof(frame); i++) {
        frame[i] = i * 7 + 3;
    }
    qtest_tce_map(r.qts, UNIT, io, real_a, 4096, 1);
    qtest_tce_map(r.qts, UNIT, io + 4096, real_b, 4096, 1);
    /* BD1: 100 bytes ending 4 bytes past the page boundary. */
    qtest_memwrite(r.qts, real_a + 4096 - 96, frame, 96);
    qtest_memwrite(r.qts, real_b, frame + 96, 4);
    /* BD2: 1000 bytes from within the second page. */
    qtest_memwrite(r.qts, real_b + 0x100, frame + 100, 1000);
    /* BD3: 414 bytes at the start of the first page. */
    qtest_memwrite(r.qts, real_a, frame + 1100, 414);
    g_assert_cmpint(qibmveth_send_bds(r.veth, (uint64_t[]){
                        ibmveth_bd(100, io + 4096 - 96),
                        ibmveth_bd(1000, io + 4096 + 0x100),
                        ibmveth_bd(414, io) }, 3), ==, H_SUCCESS);
    g_assert_cmpuint(recv_frame(&r, got, sizeof(got)), ==, sizeof(frame));
    g_assert_cmpmem(got, sizeof(frame), frame, sizeof(frame));
    /* And one frame through the model's own single-BD path. */
    g_assert_cmpint(qibmveth_send(r.veth, frame, 60), ==, H_SUCCESS);
    g_assert_cmpuint(recv_frame(&r, got, sizeof(got)), ==, 60);
    g_assert_cmpmem(got, 60, frame, 60);
    rig_stop(&r);
}

static void write_all(int fd, const void *buf, size_t len)
{
    g_assert_cmpint(write(fd, buf, len), ==, (ssize_t)len);
}

/* The stream backend as server: the test connects, and frames go both
 * ways with their 4-byte big-endian length. */
static void test_stream_backend(void)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    uint8_t frame[100], got[4 + sizeof(frame)];
    uint8_t len_be[4] = { 0, 0, 0, sizeof(frame) };
    struct timeval tv = { .tv_sec = 5 };
    IbmvethRxEntry e;
    uint16_t tag;
    Rig r = { 0 };
    size_t done = 0;

    r.dev_path = g_strdup_printf("%s/llan-rx-%d.stream", g_get_tmp_dir(),
                                 getpid());
    r.qts = qtest_initf("-nodefaults -netdev stream,id=n0,server=on,"
                        "addr.type=unix,addr.path=%s "
                        "-device spapr-vlan,netdev=n0", r.dev_path);
    rig_open_guest(&r, NULL);
    g_strlcpy(addr.sun_path, r.dev_path, sizeof(addr.sun_path));
    r.peer = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(connect(r.peer, (struct sockaddr *)&addr, sizeof(addr)),
                    ==, 0);
    memset(frame, 0x5a, sizeof(frame));
    memcpy(frame, our_mac, 6);
    frame[98] = 0x12;
    frame[99] = 0x34;
    write_all(r.peer, len_be, 4);
    write_all(r.peer, frame, sizeof(frame));
    e = expect_frame(&r, &tag);
    g_assert_cmpuint(tag, ==, 0x1234);
    g_assert_cmpuint(e.len, ==, sizeof(frame));
    g_assert_cmpint(qibmveth_send(r.veth, frame, sizeof(frame)), ==,
                    H_SUCCESS);
    setsockopt(r.peer, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    while (done < sizeof(got)) {
        ssize_t n = read(r.peer, got + done, sizeof(got) - done);
        g_assert_cmpint(n, >, 0);
        done += n;
    }
    g_assert_cmpmem(got, 4, len_be, 4);
    g_assert_cmpmem(got + 4, sizeof(frame), frame, sizeof(frame));
    g_assert_cmpint(qibmveth_close(r.veth), ==, H_SUCCESS);
    qtest_quit(r.qts);
    close(r.peer);
    g_free(r.dev_path);
}

/* The NIC's entry of x-query-net-stats (owned by @stats). */
static JsonObject *nic_stats(JsonObject *stats)
{
    JsonObject *ret = json_object_get_object_member(stats, "return");
    JsonArray *nics = json_object_get_array_member(ret, "nics");

    g_assert_cmpuint(json_array_get_length(nics), ==, 1);
    return json_array_get_object_element(nics, 0);
}

static JsonObject *netdev_stats(JsonObject *stats)
{
    JsonObject *ret = json_object_get_object_member(stats, "return");
    JsonArray *netdevs = json_object_get_array_member(ret, "netdevs");

    g_assert_cmpuint(json_array_get_length(netdevs), ==, 1);
    return json_array_get_object_element(netdevs, 0);
}

static gint64 dropped(JsonObject *rx, const char *reason)
{
    return json_object_get_int_member(
        json_object_get_object_member(rx, "dropped"), reason);
}

/* frames = delivered + every drop reason, and the result. */
static gint64 assert_balanced(JsonObject *rx)
{
    JsonObject *drops = json_object_get_object_member(rx, "dropped");
    g_autoptr(GList) reasons = json_object_get_members(drops);
    gint64 sum = json_object_get_int_member(rx, "delivered");

    for (GList *l = reasons; l; l = l->next) {
        sum += json_object_get_int_member(drops, l->data);
    }
    g_assert_cmpint(sum, ==, json_object_get_int_member(rx, "frames"));
    return sum;
}

/* Waits until the NIC has counted @total frames. */
static JsonObject *stats_after(Rig *r, gint64 total)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_US;

    for (;;) {
        JsonObject *stats = qtest_qmp(r->qts,
                                      "{'execute': 'x-query-net-stats'}");
        JsonObject *rx = json_object_get_object_member(nic_stats(stats), "rx");

        if (json_object_get_int_member(rx, "frames") >= total) {
            return stats;
        }
        json_object_unref(stats);
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(2000);
    }
}

/* Counters balance with no buffers posted, with filters on and with
 * buffers posted, on the NIC and its netdev alike. */
static void test_counters_balance(void)
{
    IbmvethConf conf = { .unit = UNIT, .mac = OUR_MAC, .npools = 1,
                          .pool_size = { 2048 }, .pool_count = { 2 },
                          .pool_active = { false } };
    const uint8_t other[6] = { 0x52, 0x54, 0x00, 0x77, 0x77, 0x77 };
    Rig r;
    JsonObject *stats, *nic_rx, *dev;

    rig_start(&r, "on", &conf);
    for (uint16_t i = 0; i < 5; i++) {
        inject(&r, our_mac, 60, i);                 /* no buffers posted */
    }
    stats = stats_after(&r, 5);
    g_assert_cmpint(dropped(json_object_get_object_member(nic_stats(stats),
                                                          "rx"),
                            "no-buffer"), ==, 5);
    json_object_unref(stats);
    g_assert_cmpint(qtest_hcallv(r.qts, H_MULTICAST_CTRL, UNIT, 0x50000, 0),
                    ==, H_SUCCESS);
    for (uint16_t i = 0; i < 4; i++) {
        inject(&r, other, 60, i);                   /* filtered */
    }
    /* Not mapped yet: refused, and nothing is posted. */
    g_assert_cmpint(qtest_hcallv(r.qts, H_ADD_LOGICAL_LAN_BUFFER, UNIT,
                                 ibmveth_bd(2048, 0x8000000)), ==,
                    H_PARAMETER);
    qtest_tce_map(r.qts, UNIT, 0x8000000, 0x8000000, 0x2000, 3);
    for (int i = 0; i < 3; i++) {
        g_assert_cmpint(qtest_hcallv(r.qts, H_ADD_LOGICAL_LAN_BUFFER, UNIT,
                                     ibmveth_bd(2048, 0x8000000 + i * 2048)),
                        ==, H_SUCCESS);
    }
    for (uint16_t i = 0; i < 3; i++) {
        inject(&r, our_mac, 60, 100 + i);           /* delivered */
    }
    stats = stats_after(&r, 12);
    nic_rx = json_object_get_object_member(nic_stats(stats), "rx");
    g_assert_cmpint(assert_balanced(nic_rx), ==, 12);
    g_assert_cmpint(assert_balanced(json_object_get_object_member(
                        netdev_stats(stats), "rx")), ==, 12);
    g_assert_cmpint(json_object_get_int_member(nic_rx, "delivered"), ==, 3);
    g_assert_cmpint(dropped(nic_rx, "no-buffer"), ==, 5);
    g_assert_cmpint(dropped(nic_rx, "filtered"), ==, 4);
    dev = json_object_get_object_member(nic_stats(stats), "device");
    g_assert_cmpint(json_object_get_int_member(dev, "rx-frames"), ==, 3);
    g_assert_cmpint(json_object_get_int_member(
                        json_object_get_object_member(dev, "rx-dropped"),
                        "no-buffer"), ==, 5);
    g_assert_cmpuint(qibmveth_rx_no_buffer(r.veth), ==, 5);
    json_object_unref(stats);
    rig_stop(&r);
}

/* QMP stop: frames are dropped as vm-stopped and touch no guest memory;
 * cont brings delivery back. */
static void test_stop_quiesces(void)
{
    Rig r;
    JsonObject *rsp, *stats;
    uint16_t tag;

    rig_start(&r, "on", NULL);
    rsp = qtest_qmp(r.qts, "{'execute': 'stop'}");
    g_assert_true(json_object_has_member(rsp, "return"));
    json_object_unref(rsp);
    json_object_unref(qtest_qmp_eventwait(r.qts, "STOP"));
    for (uint16_t i = 0; i < 4; i++) {
        inject(&r, our_mac, 60, i);
    }
    stats = stats_after(&r, 4);
    g_assert_cmpint(dropped(json_object_get_object_member(nic_stats(stats),
                                                          "rx"),
                            "vm-stopped"), ==, 4);
    json_object_unref(stats);
    g_assert_cmphex(qtest_readq(r.qts, qibmveth_rxq(r.veth)), ==, 0);
    json_object_unref(qtest_qmp(r.qts, "{'execute': 'cont'}"));
    json_object_unref(qtest_qmp_eventwait(r.qts, "RESUME"));
    inject(&r, our_mac, 60, 9);
    expect_frame(&r, &tag);
    g_assert_cmpuint(tag, ==, 9);
    rig_stop(&r);
}

/* NIC_RX_FILTER_CHANGED: once per change until query-rx-filter re-arms. */
static void test_rx_filter_event(void)
{
    Rig r;
    JsonObject *ev, *data, *rsp;

    rig_start(&r, "on", NULL);
    mcast(&r, 0x50000, 0);
    ev = qtest_qmp_eventwait(r.qts, "NIC_RX_FILTER_CHANGED");
    data = json_object_get_object_member(ev, "data");
    g_assert_cmpstr(json_object_get_string_member(data, "name"), ==,
                    "l-lan@71000000");
    g_assert_cmpstr(json_object_get_string_member(data, "path"), ==,
                    "/machine/peripheral/l-lan@71000000");
    json_object_unref(ev);
    /* Not re-armed: a second change says nothing. */
    mcast(&r, 1, 0x01005e000001ULL);
    rsp = qtest_qmp(r.qts, "{'execute': 'query-rx-filter'}");
    g_assert_false(qtest_qmp_event_pending(r.qts, "NIC_RX_FILTER_CHANGED"));
    g_assert_cmpstr(json_object_get_string_member(
                        json_array_get_object_element(
                            json_object_get_array_member(rsp, "return"), 0),
                        "unicast"), ==, "normal");
    json_object_unref(rsp);
    /* Re-armed by the query: the MAC change is reported. */
    g_assert_cmpint(qtest_hcallv(r.qts, H_CHANGE_LOGICAL_LAN_MAC, UNIT,
                                 0x525400999999ULL), ==, H_SUCCESS);
    json_object_unref(qtest_qmp_eventwait(r.qts, "NIC_RX_FILTER_CHANGED"));
    rig_stop(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/llan-rx/modes-table", test_modes_table);
    g_test_add_func("/llan-rx/page-mode-takes-509", test_page_mode_takes_509);
    g_test_add_func("/llan-rx/toggle-across-wraps", test_toggle_across_wraps);
    g_test_add_func("/llan-rx/no-buffer-counter", test_no_buffer_counter);
    g_test_add_func("/llan-rx/filters", test_filters);
    g_test_add_func("/llan-rx/interrupts-only-when-enabled",
                    test_interrupts_only_when_enabled);
    g_test_add_func("/llan-rx/hostile-unmapped-queue",
                    test_hostile_unmapped_queue);
    g_test_add_func("/llan-rx/hostile-buffer-list",
                    test_hostile_buffer_list);
    g_test_add_func("/llan-rx/odd-buffer", test_odd_buffer);
    g_test_add_func("/llan-rx/send-gather", test_send_gather);
    g_test_add_func("/llan-rx/stream-backend", test_stream_backend);
    g_test_add_func("/llan-rx/counters-balance", test_counters_balance);
    g_test_add_func("/llan-rx/stop-quiesces", test_stop_quiesces);
    g_test_add_func("/llan-rx/rx-filter-event", test_rx_filter_event);
    return g_test_run();
}
