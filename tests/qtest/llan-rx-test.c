/*
 * spapr-vlan receive and send end to end: frames injected on a unix dgram
 * socket reach guest buffers through the device, as the ibmveth model
 * (libqos) sees them, and frames the guest sends arrive on the socket.
 */
#include "libqtest.h"
#include "libqos/eth-frames.h"
#include "libqos/ibmveth.h"
#include "libqos/rig.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define UNIT        QRIG_UNIT
#define OUR_MAC     QRIG_MAC
/* The qtest number of the device's interrupt source, 0x1100 (reg 0x71000000). */
#define LAN_IRQ     0
/* H_MULTICAST_CTRL: filter modify and enable, as Linux's set_rx_mode. */
#define MCAST_FILTER_ON 0x50000ULL

/* illan on a dgram netdev with pools @pools, and the guest open with
 * @conf (NULL: Linux's defaults). */
static void rig_start(QRig *r, const char *pools, const IbmvethConf *conf)
{
    g_autofree char *nic = g_strdup_printf(",use-rx-buffer-pools=%s", pools);

    qrig_init(r);
    qrig_bind_peer(r);
    qrig_start(r, &(QRigOpts){ .mem = "512M", .nic = nic });
    qrig_open_guest(r, conf);
}

/* A frame to @dst of @len bytes whose last two bytes carry @tag. */
static void inject(QRig *r, const uint8_t *dst, size_t len, uint16_t tag)
{
    g_autofree uint8_t *frame = g_malloc(len);

    eth_frame_tagged(frame, len, dst, qrig_mac, 0, tag, ETH_FRAME_TAG_LAST);
    qrig_send(r, frame, len);
}

/* The next received frame (waiting for it); its tag and buffer size. */
static IbmvethRxEntry expect_frame(QRig *r, uint16_t *tag)
{
    static uint8_t data[65536];
    IbmvethRxEntry e = qibmveth_wait_rx(r->guest, data, sizeof(data));

    g_assert_cmpuint(e.offset, ==, 8);
    g_assert_cmpuint(e.len + 8, <=, e.buf_size);
    *tag = eth_frame_tag(data, e.len, ETH_FRAME_TAG_LAST);
    return e;
}

static void test_modes_table(void)
{
    static const size_t sizes[] = { 60, 600, 1514 };
    const char *modes[] = { "on", "off" };

    for (int m = 0; m < 2; m++) {
        QRig r;
        GHashTable *per_size = g_hash_table_new(g_direct_hash,
                                                g_direct_equal);
        uint64_t buf_bytes = 0, frame_bytes = 0;
        g_autoptr(GString) line = g_string_new(NULL);

        rig_start(&r, modes[m], NULL);
        for (uint16_t i = 0; i < 30; i++) {
            inject(&r, qrig_mac, sizes[i % 3], i);
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
            g_string_append_printf(line, " %u", qibmveth_posted(r.guest, p));
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
        qrig_stop(&r);
    }
}

/* Page mode takes only the first 509 of Linux's buffers: 256 x 64 KiB
 * (replenished first) and 253 x 2 KiB; the 512-byte pool gets none. */
static void test_page_mode_takes_509(void)
{
    QRig r;

    rig_start(&r, "off", NULL);
    g_assert_cmpuint(qibmveth_posted(r.guest, 4), ==, 256);
    g_assert_cmpuint(qibmveth_posted(r.guest, 1), ==, 253);
    g_assert_cmpuint(qibmveth_posted(r.guest, 0), ==, 0);
    qrig_stop(&r);
    rig_start(&r, "on", NULL);
    g_assert_cmpuint(qibmveth_posted(r.guest, 4), ==, 256);
    g_assert_cmpuint(qibmveth_posted(r.guest, 1), ==, 512);
    g_assert_cmpuint(qibmveth_posted(r.guest, 0), ==, 256);
    qrig_stop(&r);
}

/* One pool of three 2 KiB buffers: a four-entry queue wraps every four
 * frames, and the model only accepts entries with the toggle it expects. */
static void test_toggle_across_wraps(void)
{
    for (int m = 0; m < 2; m++) {
        IbmvethConf conf = { .unit = UNIT, .mac = OUR_MAC, .npools = 1,
                              .pool_size = { 2048 }, .pool_count = { 3 },
                              .pool_active = { true } };
        QRig r;
        uint64_t bd;

        rig_start(&r, m ? "off" : "on", &conf);
        for (uint16_t i = 0; i < 14; i++) {
            uint16_t tag;

            inject(&r, qrig_mac, 100 + i, i);
            expect_frame(&r, &tag);
            g_assert_cmpuint(tag, ==, i);
            qibmveth_replenish(r.guest);
        }
        /* 14 entries in a 4-entry queue: 3 wraps, toggle flipped thrice. */
        bd = qtest_readq(r.qts, qibmveth_buffer_list(r.guest));
        g_assert_cmphex(bd & IBMVETH_BD_TOGGLE, ==, IBMVETH_BD_TOGGLE);
        qrig_stop(&r);
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
        QRig r;
        uint16_t tag;

        rig_start(&r, modes[m], &conf);
        inject(&r, qrig_mac, 4000, 1);
        inject(&r, qrig_mac, 3000, 2);
        inject(&r, qrig_mac, 2041, 3);       /* 2041 + 8 > 2048 */
        inject(&r, qrig_mac, 60, 4);
        expect_frame(&r, &tag);
        g_assert_cmpuint(tag, ==, 4);
        g_assert_cmpuint(qibmveth_rx_no_buffer(r.guest), ==, 3);
        qrig_stop(&r);
    }
}

static void mcast(QRig *r, uint64_t flags, uint64_t mac)
{
    g_assert_cmpint(qtest_hcallv(r->qts, H_MULTICAST_CTRL, UNIT, flags, mac),
                    ==, H_SUCCESS);
}

/* Sends one frame per destination, then a marker to us, and returns which
 * tags arrived (bit i for dsts[i]). */
static unsigned delivered_of(QRig *r, const uint8_t (*dsts)[6], unsigned n)
{
    unsigned seen = 0;
    uint16_t tag;

    for (unsigned i = 0; i < n; i++) {
        inject(r, dsts[i], 60, i);
    }
    inject(r, qrig_mac, 60, 0x7fff);
    do {
        expect_frame(r, &tag);
        if (tag != 0x7fff) {
            seen |= 1u << tag;
        }
        qibmveth_replenish(r->guest);
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
    QRig r;

    rig_start(&r, "on", NULL);
    /* After open, filtering is off: all multicast, and unicast to us. */
    g_assert_cmphex(delivered_of(&r, dsts, 5), ==, 0x1d);
    /* Linux's sequence: clear with reception on, add, filter. */
    mcast(&r, 0x80000 | 0x20000 | 0x40000 | 3, 0);
    mcast(&r, 1, 0x01005e000001ULL);
    mcast(&r, 0x40000 | 0x10000, 0);
    g_assert_cmphex(delivered_of(&r, dsts, 5), ==, 0x0d);
    /* Receive-multicast off: no multicast even from the table. */
    mcast(&r, 0x80000, 0);
    g_assert_cmphex(delivered_of(&r, dsts, 5), ==, 0x05);
    /* Receive-multicast on, filtering off: all multicast. */
    mcast(&r, 0x80000 | 0x20000 | 0x40000, 0);
    g_assert_cmphex(delivered_of(&r, dsts, 5), ==, 0x1d);
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
    qrig_stop(&r);
}

/*
 * PAPR filters unicast by MAC whatever the filter switch says: the switch
 * (H_MULTICAST_CTRL's filtering bits) concerns multicast only.  So with
 * filtering off, after open or after Linux's promiscuous call (0xE0000),
 * unicast to another MAC is dropped as filtered, while broadcast and all
 * multicast arrive.
 */
static void test_unicast_filtered_always(void)
{
    static const uint8_t dsts[4][6] = {
        { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 },   /* 0: us */
        { 0x52, 0x54, 0x00, 0x99, 0x99, 0x99 },   /* 1: someone else */
        { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },   /* 2: broadcast */
        { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x07 },   /* 3: any multicast */
    };
    QRig r;

    rig_start(&r, "on", NULL);
    g_assert_cmphex(delivered_of(&r, dsts, 4), ==, 0xd);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-dropped.filtered"), ==,
                    1);
    /* query-rx-filter says so: never promiscuous, unicast normal. */
    {
        g_autoptr(JsonObject) rsp = qtest_qmp(r.qts, "{'execute': "
                                              "'query-rx-filter'}");
        JsonObject *f = json_array_get_object_element(
            json_object_get_array_member(rsp, "return"), 0);

        g_assert_false(json_object_get_boolean_member(f, "promiscuous"));
        g_assert_cmpstr(json_object_get_string_member(f, "unicast"), ==,
                        "normal");
        g_assert_cmpstr(json_object_get_string_member(f, "multicast"), ==,
                        "all");
    }
    /* Linux's promiscuous mode: receive-multicast on, filtering off. */
    mcast(&r, 0x80000 | 0x20000 | 0x40000, 0);
    g_assert_cmphex(delivered_of(&r, dsts, 4), ==, 0xd);
    /* Receive-multicast off: broadcast still arrives. */
    mcast(&r, 0x80000, 0);
    g_assert_cmphex(delivered_of(&r, dsts, 4), ==, 0x5);
    g_assert_cmpint(qrig_stat(r.qts, "nic.rx.dropped.filtered"), ==, 4);
    qrig_stop(&r);
}

static void test_interrupts_only_when_enabled(void)
{
    QRig r;
    uint16_t tag;

    rig_start(&r, "on", NULL);
    qtest_irq_intercept_out(r.qts, "l-lan@71000000");
    qibmveth_set_irq(r.guest, false);
    inject(&r, qrig_mac, 60, 1);
    expect_frame(&r, &tag);
    g_assert_cmpuint(qtest_irq_raise_count(r.qts, LAN_IRQ), ==, 0);
    qibmveth_set_irq(r.guest, true);
    for (uint16_t i = 0; i < 5; i++) {
        inject(&r, qrig_mac, 60, i);
    }
    for (uint16_t i = 0; i < 5; i++) {
        expect_frame(&r, &tag);
    }
    g_assert_cmpuint(qtest_irq_raise_count(r.qts, LAN_IRQ), >=, 1);
    g_assert_cmpuint(qtest_irq_raise_count(r.qts, LAN_IRQ), <=, 5);
    qrig_stop(&r);
}

/* The guest revokes the rx queue's mapping while frames arrive: they are
 * dropped, and once the mapping is back frames land where they should. */
static void test_hostile_unmapped_queue(void)
{
    QRig r;
    uint64_t rxq;
    uint16_t tag;

    rig_start(&r, "on", NULL);
    rxq = qibmveth_rxq(r.guest);
    inject(&r, qrig_mac, 60, 1);
    expect_frame(&r, &tag);
    qtest_tce_map(r.qts, UNIT, rxq, rxq, 4096, 0);
    for (uint16_t i = 2; i < 6; i++) {
        inject(&r, qrig_mac, 60, i);
    }
    /* Each takes a buffer, cannot write its queue entry and is dropped
     * as a DMA error; the queue stays as it was. */
    qrig_wait_stat(r.qts, "nic.rx.frames", 5);
    g_assert_cmpint(qrig_stat(r.qts, "nic.rx.dropped.dma-error"), ==, 4);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-dropped.dma-error"), ==,
                    4);
    g_assert_cmpint(qrig_stat(r.qts, "nic.rx.delivered"), ==, 1);
    g_assert_cmpuint(qtest_readq(r.qts, rxq + 16), ==, 0);
    qtest_tce_map(r.qts, UNIT, rxq, rxq, 4096, 3);
    inject(&r, qrig_mac, 60, 9);
    expect_frame(&r, &tag);
    g_assert_cmpuint(tag, ==, 9);
    qrig_stop(&r);
}

/*
 * Linux unmaps a buffer once its frame is taken: the device must see it
 * unmapped then, through the TCE table and not a copy of its own.  A
 * guest posting it again unmapped is refused; buffers unmapped while
 * still posted get no frame (a DMA error), and once mapped again do.
 * One pool of 8 buffers of 2048 bytes, page fragments of which some
 * cross a 4 KiB page, each slot owning two TCE pages of I/O addresses.
 */
static void test_buffer_unmapped_after_frame(void)
{
    IbmvethConf conf;
    IbmvethRxEntry e;
    uint64_t ioba, base, tces[16];
    uint16_t tag;
    QRig r;

    ibmveth_conf_linux_defaults(&conf, UNIT);
    conf.npools = 1;
    conf.pool_size[0] = 2048;
    conf.pool_count[0] = 8;
    rig_start(&r, "on", &conf);
    inject(&r, qrig_mac, 1000, 1);
    e = expect_frame(&r, &tag);
    ioba = qibmveth_rx_buffer_ioba(r.guest, &e);
    g_assert_cmpint(qtest_hcallv(r.qts, H_ADD_LOGICAL_LAN_BUFFER, UNIT,
                                 ibmveth_bd(2048, ioba)), ==, H_PARAMETER);

    base = (ioba & ~4095ULL) - e.slot * 2 * 4096;
    for (unsigned i = 0; i < 16; i++) {
        g_assert_cmpint(qtest_hcall(r.qts, H_GET_TCE, 2,
                                    (uint64_t[]){ UNIT, base + i * 4096 },
                                    &tces[i], 1), ==, H_SUCCESS);
    }
    g_assert_cmpint(qtest_hcallv(r.qts, H_STUFF_TCE, UNIT, base, 0, 16), ==,
                    H_SUCCESS);
    inject(&r, qrig_mac, 1000, 2);
    qrig_wait_stat(r.qts, "nic.device.rx-dropped.dma-error", 1);
    g_assert_cmpint(qrig_stat(r.qts, "nic.rx.delivered"), ==, 1);

    for (unsigned i = 0; i < 16; i++) {
        g_assert_cmpint(qtest_hcallv(r.qts, H_PUT_TCE, UNIT, base + i * 4096,
                                     tces[i]), ==, H_SUCCESS);
    }
    inject(&r, qrig_mac, 1000, 3);
    expect_frame(&r, &tag);
    g_assert_cmpuint(tag, ==, 3);
    qrig_stop(&r);
}

/* Page mode: the guest scribbles over its buffer-list page.  Every scan
 * is bounded, each frame is dropped under its reason, the device keeps
 * serving and the guest's H_FREE still works. */
static void test_hostile_buffer_list(void)
{
    QRig r;
    uint64_t bl;
    g_autofree char *rsp = NULL;

    rig_start(&r, "off", NULL);
    bl = qibmveth_buffer_list(r.guest);
    qtest_memset(r.qts, bl + 16, 0xff, 4088 - 16);
    for (uint16_t i = 0; i < 8; i++) {
        inject(&r, qrig_mac, 60 + i * 200, i);
    }
    /* Every slot claims a 16 MiB buffer at 0xffffffff, outside the DMA
     * window: each frame takes one and fails to land in it. */
    qrig_wait_stat(r.qts, "nic.rx.frames", 8);
    g_assert_cmpint(qrig_stat(r.qts, "nic.rx.dropped.dma-error"), ==, 8);
    qtest_memset(r.qts, bl + 16, 0x00, 4088 - 16);
    inject(&r, qrig_mac, 60, 99);
    /* Now no slot holds a buffer: no-buffer, in the guest's counter too. */
    qrig_wait_stat(r.qts, "nic.rx.frames", 9);
    g_assert_cmpint(qrig_stat(r.qts, "nic.rx.dropped.no-buffer"), ==, 1);
    g_assert_cmpint(qrig_stat(r.qts, "nic.rx.delivered"), ==, 0);
    g_assert_cmpuint(qibmveth_rx_no_buffer(r.guest), ==, 1);
    rsp = qtest_cmd(r.qts, "endianness");
    g_assert_cmpstr(rsp, ==, "OK big");
    qrig_stop(&r);
}

/* A 4-byte aligned buffer of odd size: the frame lands at buffer + 8. */
static void test_odd_buffer(void)
{
    IbmvethConf conf = { .unit = UNIT, .mac = OUR_MAC, .npools = 1,
                          .pool_size = { 1028 }, .pool_count = { 2 },
                          .pool_active = { true } };
    QRig r;
    uint16_t tag;

    rig_start(&r, "on", &conf);
    inject(&r, qrig_mac, 1020, 5);
    expect_frame(&r, &tag);
    g_assert_cmpuint(tag, ==, 5);
    qrig_stop(&r);
}

static size_t recv_frame(QRig *r, uint8_t *buf, size_t max)
{
    ssize_t n = qrig_recv(r, buf, max, 5000);

    g_assert_cmpint(n, >, 0);
    return n;
}

/* Three descriptors, two of them crossing I/O pages that map to real
 * pages far apart: the peer gets exactly the bytes, in order. */
static void test_send_gather(void)
{
    const uint64_t io = 0x8000000, real_a = 0x3000000, real_b = 0x5000000;
    uint8_t frame[1514], got[2048];
    QRig r;

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
    g_assert_cmpint(qibmveth_send_bds(r.guest, (uint64_t[]){
                        ibmveth_bd(100, io + 4096 - 96),
                        ibmveth_bd(1000, io + 4096 + 0x100),
                        ibmveth_bd(414, io) }, 3), ==, H_SUCCESS);
    g_assert_cmpuint(recv_frame(&r, got, sizeof(got)), ==, sizeof(frame));
    g_assert_cmpmem(got, sizeof(frame), frame, sizeof(frame));
    /* And one frame through the model's own single-BD path. */
    g_assert_cmpint(qibmveth_send(r.guest, frame, 60), ==, H_SUCCESS);
    g_assert_cmpuint(recv_frame(&r, got, sizeof(got)), ==, 60);
    g_assert_cmpmem(got, 60, frame, 60);
    qrig_stop(&r);
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
    QRig r;
    g_autofree char *netdev = NULL;
    size_t done = 0;

    qrig_init(&r);
    netdev = g_strdup_printf("stream,id=n0,server=on,addr.type=unix,"
                             "addr.path=%s", r.dev_path);
    qrig_start(&r, &(QRigOpts){ .netdev = netdev });
    qrig_open_guest(&r, NULL);
    g_strlcpy(addr.sun_path, r.dev_path, sizeof(addr.sun_path));
    r.peer = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(connect(r.peer, (struct sockaddr *)&addr, sizeof(addr)),
                    ==, 0);
    memset(frame, 0x5a, sizeof(frame));
    memcpy(frame, qrig_mac, 6);
    frame[98] = 0x12;
    frame[99] = 0x34;
    write_all(r.peer, len_be, 4);
    write_all(r.peer, frame, sizeof(frame));
    e = expect_frame(&r, &tag);
    g_assert_cmpuint(tag, ==, 0x1234);
    g_assert_cmpuint(e.len, ==, sizeof(frame));
    g_assert_cmpint(qibmveth_send(r.guest, frame, sizeof(frame)), ==,
                    H_SUCCESS);
    setsockopt(r.peer, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    while (done < sizeof(got)) {
        ssize_t n = read(r.peer, got + done, sizeof(got) - done);
        g_assert_cmpint(n, >, 0);
        done += n;
    }
    g_assert_cmpmem(got, 4, len_be, 4);
    g_assert_cmpmem(got + 4, sizeof(frame), frame, sizeof(frame));
    qrig_stop(&r);
}

/* rx: frames = delivered + every drop reason, and the result. */
static gint64 assert_balanced(JsonObject *client)
{
    gint64 sum = qjson_int(client, "rx.delivered") +
                 qjson_sum(client, "rx.dropped");

    g_assert_cmpint(sum, ==, qjson_int(client, "rx.frames"));
    return sum;
}

/* Counters balance with no buffers posted, with filters on and with
 * buffers posted, on the NIC and its netdev alike. */
static void test_counters_balance(void)
{
    IbmvethConf conf = { .unit = UNIT, .mac = OUR_MAC, .npools = 1,
                          .pool_size = { 2048 }, .pool_count = { 2 },
                          .pool_active = { false } };
    const uint8_t other[6] = { 0x52, 0x54, 0x00, 0x77, 0x77, 0x77 };
    QRig r;
    g_autoptr(JsonObject) stats = NULL;
    JsonObject *nic;

    rig_start(&r, "on", &conf);
    for (uint16_t i = 0; i < 5; i++) {
        inject(&r, qrig_mac, 60, i);                /* no buffers posted */
    }
    qrig_wait_stat(r.qts, "nic.rx.frames", 5);
    g_assert_cmpint(qrig_stat(r.qts, "nic.rx.dropped.no-buffer"), ==, 5);
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
        inject(&r, qrig_mac, 60, 100 + i);          /* delivered */
    }
    qrig_wait_stat(r.qts, "nic.rx.frames", 12);
    stats = qrig_net_stats(r.qts);
    nic = qrig_stats_nic(stats);
    g_assert_cmpint(assert_balanced(nic), ==, 12);
    g_assert_cmpint(assert_balanced(qrig_stats_netdev(stats, "n0")), ==, 12);
    g_assert_cmpint(qjson_int(nic, "rx.delivered"), ==, 3);
    g_assert_cmpint(qjson_int(nic, "rx.dropped.no-buffer"), ==, 5);
    g_assert_cmpint(qjson_int(nic, "rx.dropped.filtered"), ==, 4);
    g_assert_cmpint(qjson_int(nic, "device.rx-frames"), ==, 3);
    g_assert_cmpint(qjson_int(nic, "device.rx-dropped.no-buffer"), ==, 5);
    g_assert_cmpuint(qibmveth_rx_no_buffer(r.guest), ==, 5);
    qrig_stop(&r);
}

/* QMP stop: frames are dropped as vm-stopped and touch no guest memory;
 * cont brings delivery back. */
static void test_stop_quiesces(void)
{
    QRig r;
    JsonObject *rsp;
    uint16_t tag;

    rig_start(&r, "on", NULL);
    rsp = qtest_qmp(r.qts, "{'execute': 'stop'}");
    g_assert_true(json_object_has_member(rsp, "return"));
    json_object_unref(rsp);
    json_object_unref(qtest_qmp_eventwait(r.qts, "STOP"));
    for (uint16_t i = 0; i < 4; i++) {
        inject(&r, qrig_mac, 60, i);
    }
    qrig_wait_stat(r.qts, "nic.rx.frames", 4);
    g_assert_cmpint(qrig_stat(r.qts, "nic.rx.dropped.vm-stopped"), ==, 4);
    g_assert_cmphex(qtest_readq(r.qts, qibmveth_rxq(r.guest)), ==, 0);
    json_object_unref(qtest_qmp(r.qts, "{'execute': 'cont'}"));
    json_object_unref(qtest_qmp_eventwait(r.qts, "RESUME"));
    inject(&r, qrig_mac, 60, 9);
    expect_frame(&r, &tag);
    g_assert_cmpuint(tag, ==, 9);
    qrig_stop(&r);
}

/* NIC_RX_FILTER_CHANGED: once per change until query-rx-filter re-arms. */
static void test_rx_filter_event(void)
{
    QRig r;
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
    qrig_stop(&r);
}

static char *main_mac(QRig *r)
{
    g_autoptr(JsonObject) rsp = qtest_qmp(r->qts, "{'execute': "
                                          "'query-rx-filter'}");

    return g_strdup(json_object_get_string_member(
        json_array_get_object_element(
            json_object_get_array_member(rsp, "return"), 0), "main-mac"));
}

/*
 * Linux's MAC rules: "ip link set address X" while up
 * (H_CHANGE_LOGICAL_LAN_MAC), then any close and open (an MTU change,
 * ifdown/ifup): H_FREE, then H_REGISTER with X in r8, then filtering
 * on.  Unicast to X must still arrive, and frames to the old MAC are
 * filtered.  A machine reset brings back mac=.
 */
static void test_mac_across_close_open(void)
{
    static const uint8_t new_mac[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0x01 };
    IbmvethConf conf = { .unit = UNIT, .mac = 0x525400abcd01ULL,
                          .npools = 1, .pool_size = { 2048 },
                          .pool_count = { 8 }, .pool_active = { true } };
    g_autofree char *after_free = NULL, *after_open = NULL;
    g_autofree char *after_reset = NULL;
    QRig r;
    uint16_t tag;

    rig_start(&r, "on", NULL);
    g_assert_cmpint(qtest_hcallv(r.qts, H_CHANGE_LOGICAL_LAN_MAC, UNIT,
                                 conf.mac), ==, H_SUCCESS);
    g_assert_cmpint(qibmveth_close(r.guest), ==, H_SUCCESS);
    r.guest = NULL;
    after_free = main_mac(&r);
    qrig_open_guest(&r, &conf);
    g_assert_cmpint(qtest_hcallv(r.qts, H_MULTICAST_CTRL, UNIT,
                                 MCAST_FILTER_ON, 0), ==, H_SUCCESS);
    inject(&r, qrig_mac, 60, 1);                    /* the old MAC */
    inject(&r, new_mac, 60, 2);
    qrig_wait_stat(r.qts, "nic.rx.frames", 2);
    g_assert_cmpint(qrig_stat(r.qts, "nic.rx.dropped.filtered"), ==, 1);
    g_assert_cmpint(qrig_stat(r.qts, "nic.rx.delivered"), ==, 1);
    expect_frame(&r, &tag);
    g_assert_cmpuint(tag, ==, 2);
    g_assert_cmpstr(after_free, ==, "52:54:00:ab:cd:01");
    after_open = main_mac(&r);
    g_assert_cmpstr(after_open, ==, "52:54:00:ab:cd:01");
    json_object_unref(qtest_qmp(r.qts, "{'execute': 'system_reset'}"));
    after_reset = main_mac(&r);
    g_assert_cmpstr(after_reset, ==, "52:54:00:12:34:56");
    /* The reset closed the adapter too. */
    g_assert_cmpint(qibmveth_close(r.guest), ==, H_RESOURCE);
    r.guest = NULL;
    qrig_stop(&r);
}

/* A MAC in r8 that no adapter may have: refused, nothing registered. */
static void test_register_bad_mac(void)
{
    IbmvethConf conf = { .unit = UNIT, .mac = 0x010203040506ULL,
                          .npools = 1, .pool_size = { 2048 },
                          .pool_count = { 8 }, .pool_active = { true } };
    g_autofree char *mac = NULL;
    QIbmveth *v;
    int64_t rc = 0;
    QRig r;

    qrig_init(&r);
    qrig_bind_peer(&r);
    qrig_start(&r, &(QRigOpts){ .mem = "512M" });
    guest_alloc_init(&r.alloc, 0x100000, QRIG_DMA_END);
    v = qibmveth_open(r.qts, &r.alloc, &conf, &rc);
    g_assert_null(v);
    g_assert_cmpint(rc, ==, H_PARAMETER);
    mac = main_mac(&r);
    g_assert_cmpstr(mac, ==, "52:54:00:12:34:56");
    qrig_stop(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/llan-rx/modes-table", test_modes_table);
    g_test_add_func("/llan-rx/page-mode-takes-509", test_page_mode_takes_509);
    g_test_add_func("/llan-rx/toggle-across-wraps", test_toggle_across_wraps);
    g_test_add_func("/llan-rx/no-buffer-counter", test_no_buffer_counter);
    g_test_add_func("/llan-rx/filters", test_filters);
    g_test_add_func("/llan-rx/unicast-filtered-always",
                    test_unicast_filtered_always);
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
    g_test_add_func("/llan-rx/mac-across-close-open",
                    test_mac_across_close_open);
    g_test_add_func("/llan-rx/register-bad-mac", test_register_bad_mac);
    g_test_add_func("/llan-rx/buffer-unmapped-after-frame",
                    test_buffer_unmapped_after_frame);
    return g_test_run();
}
