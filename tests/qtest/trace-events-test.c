/*
 * The trace events of each family, driven once on a real illan and read
 * back from its log: the spapr-vlan hcalls, receive (pool choice, drops,
 * offload verdicts), the TCE hcalls, the af-xdp queues (root), migration,
 * and pause and run state.  Lines are checked with their arguments; and
 * with every event off the same traffic writes nothing.
 */
#include "hw/ppc/hcall.h"
#include "libqtest.h"
#include "libqos/eth-frames.h"
#include "libqos/ibmveth.h"
#include "libqos/rig.h"
#include "libqos/trace-log.h"
#include "migration-helpers.h"
#include "netns.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define LIOBN           0x71000000ULL
#define MCAST_FILTER_ON 0x50000ULL
#define NEW_MAC         0x525400abcdefULL
#define ATTR_IPV4_CSUM  0x2ULL
#define BD_VALID        0x8000000000000000ULL
#define BD_NO_CSUM      0x0200000000000000ULL
#define BD_LRG_SND      0x0400000000000000ULL

static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static const uint8_t other_mac[6] = { 0x02, 0, 0, 0, 0, 0x09 };

/* The first line of @log that starts with @prefix (freed by the caller);
 * fails the test, showing the log, when there is none. */
static char *line_starting(const char *log, const char *prefix)
{
    g_auto(GStrv) lines = g_strsplit(log, "\n", -1);

    for (char **l = lines; *l; l++) {
        if (g_str_has_prefix(*l, prefix)) {
            return g_strdup(*l);
        }
    }
    g_error("no line starting \"%s\" in the log:\n%s", prefix, log);
}

static unsigned lines_starting(const char *log, const char *prefix)
{
    g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
    unsigned n = 0;

    for (char **l = lines; *l; l++) {
        n += g_str_has_prefix(*l, prefix);
    }
    return n;
}

static void assert_line(const char *log, const char *line)
{
    g_autofree char *got = line_starting(log, line);

    if (strcmp(got, line)) {
        g_error("line \"%s\" is not \"%s\"; the log:\n%s", got, line, log);
    }
}

/* The first line of event @name starts with @start. */
static void assert_line_starts(const char *log, const char *name,
                               const char *start)
{
    g_autofree char *got = line_starting(log, name);

    if (!g_str_has_prefix(got, start)) {
        g_error("line \"%s\" does not start \"%s\"; the log:\n%s", got,
                start, log);
    }
}

/* Lines @first, ... in that order, each the next line starting with its
 * event's name; the list ends with NULL. */
static void assert_in_order(const char *log, const char *first, ...)
{
    const char *at = log;
    va_list ap;

    va_start(ap, first);
    for (const char *want = first; want; want = va_arg(ap, const char *)) {
        g_autofree char *name = g_strndup(want, strcspn(want, " ") + 1);
        g_autofree char *got = NULL;
        const char *next;

        for (next = at; *next && !g_str_has_prefix(next, name);) {
            next = strchr(next, '\n');
            next = next ? next + 1 : "";
        }
        if (!*next) {
            g_error("no %.*s line after the last one checked; wanted "
                    "\"%s\"; the log:\n%s", (int)strlen(name) - 1, name,
                    want, log);
        }
        got = g_strndup(next, strcspn(next, "\n"));
        if (strcmp(got, want)) {
            g_error("line \"%s\" is not \"%s\"; the log:\n%s", got, want,
                    log);
        }
        at = next + strlen(got);
    }
    va_end(ap);
}

/* A dgram rig whose LAN is called lan0, logging @events to @t. */
static void rig_traced_extra(QRig *r, TraceLog *t, const char *events,
                             const char *nic, const char *extra)
{
    g_autofree char *trace = NULL, *args = NULL;
    g_autofree char *nic_opts = g_strdup_printf(",id=lan0%s", nic);

    trace_log_init(t);
    trace = trace_log_args(t, events);
    args = g_strdup_printf("%s %s", trace, extra);
    qrig_init(r);
    qrig_bind_peer(r);
    qrig_start(r, &(QRigOpts){ .mem = "512M", .nic = nic_opts,
                               .extra = args });
}

static void rig_traced(QRig *r, TraceLog *t, const char *events,
                       const char *nic)
{
    rig_traced_extra(r, t, events, nic, "");
}

static unsigned posted(QRig *r)
{
    unsigned n = 0;

    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        n += qibmveth_posted(r->guest, i);
    }
    return n;
}

/* The spapr-vlan hcalls. */

static void llan_hcall_traffic(QRig *r)
{
    uint8_t f[60];

    qrig_open_guest(r, NULL);
    g_assert_cmpint(qtest_hcallv(r->qts, H_MULTICAST_CTRL, QRIG_UNIT,
                                 MCAST_FILTER_ON, 0), ==, H_SUCCESS);
    g_assert_cmpint(qtest_hcallv(r->qts, H_CHANGE_LOGICAL_LAN_MAC, QRIG_UNIT,
                                 NEW_MAC), ==, H_SUCCESS);
    g_assert_cmpint(qtest_hcallv(r->qts, H_CHANGE_LOGICAL_LAN_MAC, QRIG_UNIT,
                                 0x010000000001ULL), ==, H_PARAMETER);
    eth_frame_tagged(f, sizeof(f), peer_mac, qrig_mac, 0, 7,
                     ETH_FRAME_TAG_LAST);
    g_assert_cmpint(qibmveth_send(r->guest, f, sizeof(f)), ==, H_SUCCESS);
}

static void test_llan_hcalls(void)
{
    g_autofree char *log = NULL, *reg = NULL, *send_bd = NULL;
    g_autofree char *rxbufs = NULL, *rxq = NULL, *reg_line = NULL;
    QRig r;
    TraceLog t;
    unsigned added = 0;

    rig_traced(&r, &t, "spapr_vlan_h_*", "");
    llan_hcall_traffic(&r);
    reg = g_strdup_printf("spapr_vlan_h_register_logical_lan "
                          "H_REGISTER_LOGICAL_LAN(0x71000000, 0x%" PRIx64
                          ", 0x8000", qibmveth_buffer_list(r.guest));
    rxq = g_strdup_printf("%08" PRIx64 ", 0x", qibmveth_rxq(r.guest));
    send_bd = g_strdup_printf("spapr_vlan_h_send_logical_lan_buf_desc    "
                              "buf desc: 0x%" PRIx64,
                              (uint64_t)(BD_VALID | 60ULL << 32 |
                                         qibmveth_tx_buffer(r.guest)));
    rxbufs = g_strdup_printf("spapr_vlan_h_send_logical_lan_rxbufs "
                             "rxbufs = %u", posted(&r));
    added = posted(&r);
    g_assert_cmpint(qibmveth_close(r.guest), ==, H_SUCCESS);
    r.guest = NULL;
    g_assert_cmpint(qtest_hcallv(r.qts, H_FREE_LOGICAL_LAN, QRIG_UNIT), ==,
                    H_RESOURCE);
    log = trace_log_read(&t);
    /* The receive queue's descriptor: VALID, its length, its address. */
    reg_line = line_starting(log, reg);
    g_assert_nonnull(strstr(reg_line, rxq));
    g_assert_true(g_str_has_suffix(reg_line, ") ret=0"));
    /* Linux's bulk add: its lines' counts make every buffer posted. */
    {
        g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
        unsigned bulk = 0;

        for (char **l = lines; *l; l++) {
            unsigned n;

            if (sscanf(*l, "spapr_vlan_h_add_logical_lan_buffers "
                       "H_ADD_LOGICAL_LAN_BUFFERS(0x71000000, %u bufs", &n)
                == 1) {
                g_assert_true(g_str_has_suffix(*l, ") ret=0"));
                bulk += n;
            }
        }
        g_assert_cmpuint(bulk + lines_starting(log,
                         "spapr_vlan_h_add_logical_lan_buffer "), ==, added);
    }
    assert_line(log, "spapr_vlan_h_multicast_ctrl "
                "H_MULTICAST_CTRL(0x71000000, 0x50000, 0x0) ret=0");
    assert_in_order(log,
        "spapr_vlan_h_change_logical_lan_mac "
        "H_CHANGE_LOGICAL_LAN_MAC(0x71000000, 0x525400abcdef) ret=0",
        "spapr_vlan_h_change_logical_lan_mac "
        "H_CHANGE_LOGICAL_LAN_MAC(0x71000000, 0x10000000001) ret=-4",
        "spapr_vlan_h_send_logical_lan "
        "H_SEND_LOGICAL_LAN(0x71000000, <bufs>, 0x0)",
        rxbufs, send_bd,
        "spapr_vlan_h_send_logical_lan_buf_desc    buf desc: 0x0",
        "spapr_vlan_h_send_logical_lan_total 1 buffers, total length 0x3c",
        "spapr_vlan_h_free_logical_lan H_FREE_LOGICAL_LAN(0x71000000) ret=0",
        "spapr_vlan_h_free_logical_lan "
        "H_FREE_LOGICAL_LAN(0x71000000) ret=-16",
        NULL);
    qrig_stop(&r);
    trace_log_free(&t);
}

/* The bulk add illan has beyond QEMU's hcalls, and device reset. */
/* As QEMU, the add and the send are traced before the unit address is
 * looked up: a unit that is no LAN shows too. */
static void test_llan_unknown_unit(void)
{
    g_autofree char *log = NULL;
    QRig r;
    TraceLog t;

    rig_traced(&r, &t, "spapr_vlan_h_*", "");
    g_assert_cmpint(qtest_hcallv(r.qts, H_ADD_LOGICAL_LAN_BUFFER, 0x1234,
                                 BD_VALID | 2048ULL << 32 | 0x10000), ==,
                    H_PARAMETER);
    g_assert_cmpint(qtest_hcall(r.qts, H_SEND_LOGICAL_LAN, 8,
                                (uint64_t[8]){ 0x1234, 0, 0, 0, 0, 0, 0,
                                               0x77 }, NULL, 0), ==,
                    H_PARAMETER);
    log = trace_log_read(&t);
    g_assert_cmpstr(log, ==,
        "spapr_vlan_h_add_logical_lan_buffer "
        "H_ADD_LOGICAL_LAN_BUFFER(0x1234, 0x8000080000010000)\n"
        "spapr_vlan_h_send_logical_lan "
        "H_SEND_LOGICAL_LAN(0x1234, <bufs>, 0x77)\n");
    qrig_stop(&r);
    trace_log_free(&t);
}

static void test_llan_bulk_add_reset(void)
{
    g_autofree char *log = NULL, *bulk = NULL;
    uint64_t bd;
    QRig r;
    TraceLog t;

    rig_traced(&r, &t, "spapr_vlan_h_add_logical_lan_buffers,"
               "spapr_vlan_h_free_logical_lan,spapr_vlan_reset", "");
    qrig_open_guest(&r, NULL);
    /* Memory the guest mapped both ways (part of its buffer list's page:
     * no frame comes to be written there), in the second of eight. */
    bd = BD_VALID | 512ULL << 32 | (qibmveth_buffer_list(r.guest) + 0x200);
    g_assert_cmpint(qtest_hcall(r.qts, H_ADD_LOGICAL_LAN_BUFFERS, 9,
                                (uint64_t[]){ QRIG_UNIT, 0, bd, 0, 0, 0, 0,
                                              0, 0 }, NULL, 0), ==,
                    H_SUCCESS);
    json_object_unref(qmp_ok(r.qts, "{'execute': 'system_reset'}"));
    g_assert_cmpint(qibmveth_close(r.guest), ==, H_RESOURCE);
    r.guest = NULL;
    log = trace_log_read(&t);
    bulk = g_strdup_printf("spapr_vlan_h_add_logical_lan_buffers "
                           "H_ADD_LOGICAL_LAN_BUFFERS(0x71000000, 1 bufs, "
                           "first 0x%" PRIx64 ") ret=0", bd);
    assert_in_order(log, bulk, "spapr_vlan_reset [lan0]",
                    "spapr_vlan_h_free_logical_lan "
                    "H_FREE_LOGICAL_LAN(0x71000000) ret=-16", NULL);
    qrig_stop(&r);
    trace_log_free(&t);
}

/* Receive. */

#define RX_EVENTS "spapr_vlan_receive*,spapr_vlan_get_rx_bd_*," \
                  "spapr_vlan_rx_*,spapr_vlan_add_rxbuf_*"

/* A frame of @len bytes to @dst; when it is the guest's, waits for it. */
static void rx_frame(QRig *r, const uint8_t *dst, size_t len, uint16_t tag)
{
    static uint8_t f[4096], got[65536];
    IbmvethRxEntry e;

    eth_frame_tagged(f, len, dst, peer_mac, 0, tag, ETH_FRAME_TAG_LAST);
    qrig_send(r, f, len);
    if (dst == qrig_mac) {
        e = qibmveth_wait_rx(r->guest, got, sizeof(got));
        g_assert_cmpuint(e.len, ==, len);
    }
}

/* Pools on, Linux's three: creation, each frame's pool and why, the
 * entry written, and a drop by its counter's name. */
static void test_llan_rx_pools(void)
{
    g_autofree char *log = NULL, *recv1 = NULL, *found1 = NULL;
    g_autofree char *recv2 = NULL, *found2 = NULL, *recv3 = NULL;
    unsigned bufs, in_512, in_64k;
    QRig r;
    TraceLog t;

    rig_traced(&r, &t, RX_EVENTS, "");
    qrig_open_guest(&r, NULL);
    bufs = posted(&r);
    in_512 = qibmveth_posted(r.guest, 0);
    in_64k = qibmveth_posted(r.guest, IBMVETH_NUM_POOLS - 1);
    rx_frame(&r, qrig_mac, 60, 1);
    rx_frame(&r, qrig_mac, 3000, 2);
    rx_frame(&r, other_mac, 61, 3);
    qrig_wait_stat(r.qts, "nic.device.rx-dropped.filtered", 1);
    log = trace_log_read(&t);
    /* Linux fills its largest pool first; each new pool is the smallest
     * so far, so it comes first in size order. The count is QEMU's: the
     * buffers in the pool before this one is stored. */
    assert_in_order(log,
        "spapr_vlan_add_rxbuf_to_pool_create created RX pool 0 for size 65536",
        "spapr_vlan_add_rxbuf_to_pool add buf using pool 0 (size 65536, "
        "count=0)",
        "spapr_vlan_add_rxbuf_to_pool_create created RX pool 0 for size 2048",
        "spapr_vlan_add_rxbuf_to_pool add buf using pool 0 (size 2048, "
        "count=0)",
        "spapr_vlan_add_rxbuf_to_pool_create created RX pool 0 for size 512",
        "spapr_vlan_add_rxbuf_to_pool add buf using pool 0 (size 512, "
        "count=0)", NULL);
    /* As QEMU, the pool's count includes the buffer being taken. */
    recv1 = g_strdup_printf("spapr_vlan_receive [lan0] rx_bufs=%u", bufs);
    found1 = g_strdup_printf("spapr_vlan_get_rx_bd_from_pool_found pool=0 "
                             "count=%u rxbufs=%u", in_512, bufs);
    recv2 = g_strdup_printf("spapr_vlan_receive [lan0] rx_bufs=%u", bufs - 1);
    found2 = g_strdup_printf("spapr_vlan_get_rx_bd_from_pool_found pool=2 "
                             "count=%u rxbufs=%u", in_64k, bufs - 1);
    recv3 = g_strdup_printf("spapr_vlan_receive [lan0] rx_bufs=%u", bufs - 2);
    assert_in_order(log, recv1, found1,
        "spapr_vlan_rx_pool_choice need=68 pool=0 size=512 best fit",
        "spapr_vlan_receive_dma_completed DMA write completed",
        recv2, found2,
        "spapr_vlan_rx_pool_choice need=3008 pool=2 size=65536 only fit",
        "spapr_vlan_receive_dma_completed DMA write completed",
        recv3, NULL);
    assert_line_starts(log, "spapr_vlan_receive_wrote ",
                       "spapr_vlan_receive_wrote rxq entry (ptr=0x0): "
                       "0xc00000080000003c 0x");
    assert_line(log, "spapr_vlan_rx_drop [lan0] dropped filtered len=61");
    qrig_stop(&r);
    trace_log_free(&t);
}

/* A LAN without id has QEMU's default one, its node name and unit
 * address, in the events as in QEMU's. */
static void test_llan_no_id(void)
{
    g_autofree char *log = NULL, *trace = NULL;
    QRig r;
    TraceLog t;

    trace_log_init(&t);
    trace = trace_log_args(&t, "spapr_vlan_receive,spapr_vlan_rx_drop");
    qrig_init(&r);
    qrig_bind_peer(&r);
    qrig_start(&r, &(QRigOpts){ .mem = "512M", .nic = "", .extra = trace });
    qrig_send(&r, (uint8_t[60]){ 0 }, 60);
    qrig_wait_stat(r.qts, "nic.device.rx-dropped.not-registered", 1);
    log = trace_log_read(&t);
    assert_in_order(log, "spapr_vlan_receive [l-lan@71000000] rx_bufs=0",
                    "spapr_vlan_rx_drop [l-lan@71000000] dropped "
                    "not-registered len=60", NULL);
    qrig_stop(&r);
    trace_log_free(&t);
}

/* Pools off: the buffer-list page's slots as they are added and looked
 * at. */
static void test_llan_rx_page(void)
{
    g_autofree char *log = NULL, *first_add = NULL, *recv = NULL;
    g_autofree char *slot = NULL, *found = NULL;
    uint64_t bd;
    unsigned bufs;
    QRig r;
    TraceLog t;

    rig_traced(&r, &t, RX_EVENTS, ",use-rx-buffer-pools=off");
    qrig_open_guest(&r, NULL);
    bufs = posted(&r);
    rx_frame(&r, qrig_mac, 60, 1);
    log = trace_log_read(&t);
    first_add = line_starting(log, "spapr_vlan_add_rxbuf_to_page ");
    g_assert_cmpint(sscanf(first_add, "spapr_vlan_add_rxbuf_to_page added "
                           "buf ptr=16  rx_bufs=0 bd=0x%" SCNx64, &bd), ==, 1);
    g_assert_cmpuint(lines_starting(log, "spapr_vlan_add_rxbuf_to_page "),
                     ==, bufs);
    /* First fit from the slot after the last one used: the first. */
    recv = g_strdup_printf("spapr_vlan_receive [lan0] rx_bufs=%u", bufs);
    slot = g_strdup_printf("spapr_vlan_get_rx_bd_from_page use_buf_ptr=16 "
                           "bd=0x%016" PRIx64, bd);
    found = g_strdup_printf("spapr_vlan_get_rx_bd_from_page_found ptr=16 "
                            "rxbufs=%u", bufs);
    assert_in_order(log, recv, slot, found,
        "spapr_vlan_receive_dma_completed DMA write completed", NULL);
    qrig_stop(&r);
    trace_log_free(&t);
}

/* Offloads. */

/* The receive checksum verdicts, a large send segmented, and a large
 * send the device could not do. */
static void test_offload_verdicts(void)
{
    static uint8_t f[4096], got[65536];
    g_autofree char *log = NULL, *attrs_line = NULL;
    uint64_t attrs;
    size_t len;
    QRig r;
    TraceLog t;

    rig_traced(&r, &t, "spapr_vlan_rx_csum,spapr_vlan_tx_*,"
               "spapr_vlan_h_illan_attributes", "");
    qrig_open_guest(&r, NULL);
    g_assert_cmpint(qtest_hcall(r.qts, H_ILLAN_ATTRIBUTES, 3,
                                (uint64_t[]){ QRIG_UNIT, 0, ATTR_IPV4_CSUM },
                                &attrs, 1), ==, H_SUCCESS);
    len = 54 + 100;
    eth_frame_tcp(f, len, qrig_mac, peer_mac, 1);
    qrig_send(&r, f, len);
    qibmveth_wait_rx(r.guest, got, sizeof(got));
    f[len - 1] ^= 0x40;
    qrig_send(&r, f, len);
    qibmveth_wait_rx(r.guest, got, sizeof(got));
    len = 54 + 2500;
    eth_frame_tcp(f, len, qrig_mac, peer_mac, 2);
    g_assert_cmpint(qrig_send_flagged(&r, f, len, BD_LRG_SND | BD_NO_CSUM,
                                      1000), ==, H_SUCCESS);
    g_assert_cmpint(qrig_send_flagged(&r, f, len, BD_LRG_SND | BD_NO_CSUM,
                                      0), ==, H_SUCCESS);
    log = trace_log_read(&t);
    attrs_line = g_strdup_printf("spapr_vlan_h_illan_attributes "
                                 "H_ILLAN_ATTRIBUTES(0x71000000, reset 0x0, "
                                 "set 0x2) attrs=0x%" PRIx64 " ret=0", attrs);
    assert_in_order(log, attrs_line,
        "spapr_vlan_rx_csum proto=6 good",
        "spapr_vlan_rx_csum proto=6 bad",
        "spapr_vlan_tx_tso len=2554 mss=1000 segments=3",
        "spapr_vlan_tx_offload_error mss-zero", NULL);
    qrig_stop(&r);
    trace_log_free(&t);
}

/* The TCE hcalls, with QEMU's arguments. */
static void test_iommu(void)
{
    g_autofree char *log = NULL;
    uint64_t list = 0x100000;
    QRig r;
    TraceLog t;

    rig_traced(&r, &t, "spapr_iommu_put,spapr_iommu_stuff,"
               "spapr_iommu_indirect", "");
    g_assert_cmpint(qtest_hcallv(r.qts, H_PUT_TCE, LIOBN, 0x5abc, 0x200003),
                    ==, H_SUCCESS);
    g_assert_cmpint(qtest_hcallv(r.qts, H_STUFF_TCE, LIOBN, 0x10123, 0x9003,
                                 4), ==, H_SUCCESS);
    qtest_writeq(r.qts, list, 0x30003);
    qtest_writeq(r.qts, list + 8, 0x31003);
    g_assert_cmpint(qtest_hcallv(r.qts, H_PUT_TCE_INDIRECT, LIOBN, 0x20000,
                                 list, 2), ==, H_SUCCESS);
    /* npages 0 puts nothing: H_PARAMETER (-4), traced all the same. */
    g_assert_cmpint(qtest_hcallv(r.qts, H_STUFF_TCE, LIOBN, 0x10000, 0x9003,
                                 0), ==, H_PARAMETER);
    g_assert_cmpint(qtest_hcallv(r.qts, H_PUT_TCE_INDIRECT, LIOBN, 0x20000,
                                 list, 0), ==, H_PARAMETER);
    log = trace_log_read(&t);
    g_assert_cmpstr(log, ==,
        "spapr_iommu_put liobn=0x71000000 ioba=0x5000 tce=0x200003 ret=0\n"
        "spapr_iommu_stuff liobn=0x71000000 ioba=0x14000 tcevalue=0x9003 "
        "npages=4 ret=0\n"
        "spapr_iommu_indirect liobn=0x71000000 ioba=0x20000 "
        "tcelist=0x100000 iobaN=0x1 tceN=0x31003 ret=0\n"
        "spapr_iommu_stuff liobn=0x71000000 ioba=0x10000 tcevalue=0x9003 "
        "npages=0 ret=-4\n"
        "spapr_iommu_indirect liobn=0x71000000 ioba=0x20000 "
        "tcelist=0x100000 iobaN=0x0 tceN=0x0 ret=-4\n");
    qrig_stop(&r);
    trace_log_free(&t);
}

/* Migration: the source's passes and sections, the destination's. */
static void test_migration(void)
{
    g_autofree char *src_args = NULL, *dst_args = NULL, *sock = NULL;
    g_autofree char *uri = NULL, *src_log = NULL, *dst_log = NULL;
    g_autofree char *dst_trace = NULL;
    TraceLog ts, td;
    Rig r;

    trace_log_init(&ts);
    trace_log_init(&td);
    rig_init(&r);
    sock = rig_path(&r, "mig.sock");
    uri = g_strdup_printf("unix:%s", sock);
    src_args = trace_log_args(&ts, "savevm_*,migration_*,pause_park_*");
    dst_trace = trace_log_args(&td, "qemu_loadvm_state_section*,"
                                    "vmstate_load");
    dst_args = g_strdup_printf("-incoming %s %s", uri, dst_trace);
    r.src = rig_start(&r, r.src_dev, "pseries", NULL, src_args);
    r.dst = rig_start(&r, r.dst_dev, "pseries", NULL, dst_args);
    migrate(r.src, uri);
    assert_completed(r.dst);
    src_log = trace_log_read(&ts);
    dst_log = trace_log_read(&td);
    /* 64 MiB: 16384 pages dirty at the start, none after. */
    /* The dirty log turned on under a pause, before the stream starts. */
    assert_in_order(src_log,
        "pause_park_requested migration: depth 1, 0 threads",
        "savevm_state_setup ", NULL);
    assert_in_order(src_log,
        "savevm_state_setup ",
        "migration_bitmap_sync_end dirty_pages 16384",
        "savevm_state_iterate ",
        "savevm_section_start ram, section_id 0",
        "savevm_section_end ram, section_id 0 -> 0",
        "migration_bitmap_sync_end dirty_pages 0", NULL);
    assert_in_order(src_log,
        "savevm_state_complete_precopy ",
        "migration_bitmap_sync_end dirty_pages 0",
        "savevm_section_start ram, section_id 0",
        "savevm_section_end ram, section_id 0 -> 0",
        "savevm_section_start spapr_iommu, section_id 1",
        "savevm_section_end spapr_iommu, section_id 1 -> 0",
        "savevm_section_start l-lan@71000000/spapr_llan, section_id 2",
        "savevm_section_end l-lan@71000000/spapr_llan, section_id 2 -> 0",
        NULL);
    assert_line_starts(src_log, "migration_precopy_pass ",
                       "migration_precopy_pass pass 2 dirty_pages 0 bytes ");
    /* Section types: 1 start, 2 part, 3 end, 4 full, 0 EOF. */
    assert_in_order(dst_log,
        "qemu_loadvm_state_section 1",
        "qemu_loadvm_state_section_startfull 0(ram) 0 4",
        "qemu_loadvm_state_section 2",
        "qemu_loadvm_state_section_partend 0",
        "qemu_loadvm_state_section 3",
        "qemu_loadvm_state_section_partend 0",
        "qemu_loadvm_state_section 4",
        "qemu_loadvm_state_section_startfull 1(spapr_iommu) 1895825408 3",
        "vmstate_load spapr_iommu, spapr_iommu",
        "qemu_loadvm_state_section 4",
        "qemu_loadvm_state_section_startfull "
        "2(l-lan@71000000/spapr_llan) 0 1",
        "vmstate_load l-lan@71000000/spapr_llan, spapr_llan",
        "qemu_loadvm_state_section 0", NULL);
    qtest_quit(r.src);
    qtest_quit(r.dst);
    rig_free(&r);
    trace_log_free(&ts);
    trace_log_free(&td);
}

/* QMP stop, cont and system_reset: the run state and the threads parked,
 * with why. */
static void test_runstate(void)
{
    g_autofree char *log = NULL;
    QRig r;
    TraceLog t;

    rig_traced_extra(&r, &t, "runstate_set,vm_state_notify,pause_*", "",
                     "-guest ibmveth,id=g0,dev=lan0,fwd=rxonly");
    json_object_unref(qmp_ok(r.qts, "{'execute': 'stop'}"));
    json_object_unref(qmp_ok(r.qts, "{'execute': 'cont'}"));
    json_object_unref(qmp_ok(r.qts, "{'execute': 'system_reset'}"));
    log = trace_log_read(&t);
    /* The built-in guest's vCPU is the one thread to park. */
    assert_in_order(log,
        "runstate_set current_run_state 0 (prelaunch) new_state 1 (running)",
        "vm_state_notify running 1 reason 1 (running)",
        "runstate_set current_run_state 1 (running) new_state 2 (paused)",
        "pause_park_requested paused: depth 1, 1 threads",
        "pause_park_done paused: 1 threads parked",
        "vm_state_notify running 0 reason 2 (paused)",
        "runstate_set current_run_state 2 (paused) new_state 1 (running)",
        "vm_state_notify running 1 reason 1 (running)",
        "pause_resume depth 0",
        "pause_park_requested reset: depth 1, 1 threads", NULL);
    qrig_stop(&r);
    trace_log_free(&t);
}

/* af-xdp. */

#define ETHERTYPE_TEST  0x88b5

/* The sum of the unsigned numbers after @key in the lines of @event. */
static unsigned sum_after(const char *log, const char *event,
                          const char *key)
{
    g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
    unsigned sum = 0;

    for (char **l = lines; *l; l++) {
        const char *at = strstr(*l, key);

        if (g_str_has_prefix(*l, event) && at) {
            sum += strtoul(at + strlen(key), NULL, 10);
        }
    }
    return sum;
}

static void veth_send(int fd, uint16_t first, unsigned n)
{
    uint8_t f[60];

    for (unsigned i = 0; i < n; i++) {
        eth_frame_tagged(f, sizeof(f), qrig_mac, peer_mac, ETHERTYPE_TEST,
                         first + i, ETH_FRAME_TAG_FIRST);
        g_assert_true(packet_send(fd, f, sizeof(f)));
    }
}

/*
 * A real veth pair: frames through the rx ring in batches (their XDP
 * metadata read), frames held while the guest posts no buffer and let
 * go when it does, the fill ring refilled, a send, and the peer's link
 * going down.  Needs root (a network namespace of the test's own).
 */
static void test_af_xdp(void)
{
    enum { POSTED = 8, HELD = 4 };
    static uint8_t got[2048];
    g_autofree char *netdev = NULL, *trace = NULL, *log = NULL;
    g_autofree char *meta = NULL;
    unsigned flags;
    uint8_t f[60];
    IbmvethConf conf;
    VethPair v;
    TraceLog t;
    QRig r;

    if (!netns_enter_private_or_skip()) {
        return;
    }
    veth_pair_create(&v, 1);
    trace_log_init(&t);
    trace = trace_log_args(&t, "af_xdp_*,spapr_vlan_rx_hold,"
                           "spapr_vlan_rx_release");
    netdev = g_strdup_printf("af-xdp,id=n0,ifname=%s,mode=native,"
                             "rx-metadata=on", v.dut);
    qrig_init(&r);
    qrig_start(&r, &(QRigOpts){ .mem = "512M", .netdev = netdev,
                                .nic = ",id=lan0", .extra = trace });
    r.peer = packet_socket_open(v.peer);
    ibmveth_conf_linux_defaults(&conf, QRIG_UNIT);
    conf.mac = QRIG_MAC;
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        conf.pool_active[i] = i == 1;
    }
    conf.pool_count[1] = POSTED;
    qrig_open_guest(&r, &conf);
    veth_send(r.peer, 0, POSTED);
    qrig_wait_stat(r.qts, "netdev.rx.frames", POSTED);
    veth_send(r.peer, POSTED, HELD);
    qrig_wait_stat_min(r.qts, "nic.device.rx-held", 1);
    for (unsigned i = 0; i < POSTED; i++) {
        qibmveth_wait_rx(r.guest, got, sizeof(got));
    }
    g_assert_cmpuint(qibmveth_replenish(r.guest), ==, POSTED);
    qrig_wait_stat(r.qts, "netdev.rx.frames", POSTED + HELD);
    eth_frame_tagged(f, sizeof(f), peer_mac, qrig_mac, ETHERTYPE_TEST, 99,
                     ETH_FRAME_TAG_FIRST);
    g_assert_cmpint(qibmveth_send(r.guest, f, sizeof(f)), ==, H_SUCCESS);
    netns_run("ip link set %s down", v.peer);
    qrig_wait_stat(r.qts, "netdev.backend.link-changes", 1);
    log = trace_log_read(&t);
    g_assert_cmpuint(sum_after(log, "af_xdp_rx_batch ", " taken="), ==,
                     POSTED + HELD);
    g_assert_cmpuint(sum_after(log, "af_xdp_rx_meta ", " frames="), ==,
                     POSTED + HELD);
    /* ILLAN_XDP_META_TS_KTIME: bpf_ktime_get_ns()'s stamp, veth having
     * no hardware one. */
    meta = line_starting(log, "af_xdp_rx_meta ");
    g_assert_nonnull(strstr(meta, "af_xdp_rx_meta queue=0 "));
    g_assert_cmpint(sscanf(strstr(meta, " flags="), " flags=0x%x", &flags),
                    ==, 1);
    g_assert_cmphex(flags & 0x2, ==, 0x2);
    assert_line_starts(log, "af_xdp_rx_hold ", "af_xdp_rx_hold queue=0 held=");
    assert_line_starts(log, "spapr_vlan_rx_hold ",
                       "spapr_vlan_rx_hold [lan0] held ");
    assert_in_order(log, "spapr_vlan_rx_release [lan0] held frames released",
                    "af_xdp_rx_resume queue=0", NULL);
    assert_line_starts(log, "af_xdp_fill_refill ",
                       "af_xdp_fill_refill queue=0 frames=");
    assert_in_order(log, "af_xdp_tx_frame queue=0 len=60 descs=1 sent=1",
                    "af_xdp_link netdev=n0 down", NULL);
    qrig_stop(&r);
    veth_pair_destroy(&v);
    trace_log_free(&t);
}

/* With every event off, the same hcalls, a frame received into a pool
 * buffer with its checksum verified, a drop, stop and cont write nothing
 * to the log file, which exists. */
static void test_off_writes_nothing(void)
{
    static uint8_t f[4096], got[65536];
    g_autofree char *log = NULL;
    size_t len;
    QRig r;
    TraceLog t;

    rig_traced(&r, &t, NULL, "");
    llan_hcall_traffic(&r);
    g_assert_cmpint(qtest_hcall(r.qts, H_ILLAN_ATTRIBUTES, 3,
                                (uint64_t[]){ QRIG_UNIT, 0, ATTR_IPV4_CSUM },
                                NULL, 0), ==, H_SUCCESS);
    len = 54 + 100;
    /* To the MAC llan_hcall_traffic() gave the guest. */
    eth_frame_tcp(f, len, (const uint8_t[6]){ 0x52, 0x54, 0x00, 0xab, 0xcd,
                                               0xef }, peer_mac, 1);
    qrig_send(&r, f, len);
    g_assert_cmpuint(qibmveth_wait_rx(r.guest, got, sizeof(got)).len, ==,
                     len);
    qrig_wait_stat(r.qts, "nic.device.rx-csum-good", 1);
    qrig_send(&r, (uint8_t[60]){ 0 }, 60);
    qrig_wait_stat(r.qts, "nic.device.rx-dropped.filtered", 1);
    json_object_unref(qmp_ok(r.qts, "{'execute': 'stop'}"));
    json_object_unref(qmp_ok(r.qts, "{'execute': 'cont'}"));
    qrig_stop(&r);
    g_assert_true(g_file_test(t.path, G_FILE_TEST_IS_REGULAR));
    log = trace_log_read(&t);
    g_assert_cmpstr(log, ==, "");
    trace_log_free(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/trace-events/llan-hcalls", test_llan_hcalls);
    g_test_add_func("/trace-events/llan-bulk-add-reset",
                    test_llan_bulk_add_reset);
    g_test_add_func("/trace-events/llan-unknown-unit",
                    test_llan_unknown_unit);
    g_test_add_func("/trace-events/llan-rx-pools", test_llan_rx_pools);
    g_test_add_func("/trace-events/llan-no-id", test_llan_no_id);
    g_test_add_func("/trace-events/llan-rx-page", test_llan_rx_page);
    g_test_add_func("/trace-events/offload-verdicts", test_offload_verdicts);
    g_test_add_func("/trace-events/iommu", test_iommu);
    g_test_add_func("/trace-events/migration", test_migration);
    g_test_add_func("/trace-events/runstate", test_runstate);
    g_test_add_func("/trace-events/off-writes-nothing",
                   test_off_writes_nothing);
    /* Last: it moves the test into a network namespace of its own. */
    g_test_add_func("/trace-events/af-xdp", test_af_xdp);
    return g_test_run();
}
