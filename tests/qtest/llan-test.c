/*
 * spapr-vlan hcalls driven as a guest would, over qtest: each call's
 * success and every error path, including guests that pass unmapped or
 * read-only memory and descriptors of odd sizes and alignments.
 */
#include "hw/ppc/hcall.h"
#include "libqtest.h"
#include "libqos/rig.h"



#define UNIT        0x71000000ULL
#define BD_VALID    0x8000000000000000ULL
#define BD_TOGGLE   0x4000000000000000ULL
#define BD(len, addr) (BD_VALID | (uint64_t)(len) << 32 | (addr))

/* Guest layout: I/O addresses equal guest-physical ones. */
#define BUF_LIST    0x100000ULL
#define FILTER      0x101000ULL
#define RXQ         0x102000ULL
#define RXQ_LEN     0x1000
#define BUFS        0x200000ULL     /* 2 MiB of buffers */
#define BUFS_LEN    0x200000ULL
#define UNMAPPED    0x800000ULL
#define READ_ONLY   0x900000ULL

typedef struct Guest {
    QTestState *qts;
} Guest;

static Guest start(const char *extra)
{
    Guest g = { qtest_initf("-nodefaults -device spapr-vlan%s", extra) };

    qtest_tce_map(g.qts, UNIT, BUF_LIST, BUF_LIST, 0x3000, 3);
    qtest_tce_map(g.qts, UNIT, BUFS, BUFS, BUFS_LEN, 3);
    qtest_tce_map(g.qts, UNIT, READ_ONLY, READ_ONLY, 0x2000, 1);
    return g;
}

static int64_t hcall(Guest *g, uint64_t op, uint64_t a1, uint64_t a2,
                     uint64_t a3, uint64_t a4)
{
    return qtest_hcallv(g->qts, op, UNIT, a1, a2, a3, a4);
}

static int64_t do_register(Guest *g)
{
    return qtest_hcallv(g->qts, H_REGISTER_LOGICAL_LAN, UNIT, BUF_LIST,
                        BD(RXQ_LEN, RXQ), FILTER, 0x525400123456ULL);
}

static int64_t add_buf(Guest *g, uint64_t bd)
{
    return qtest_hcallv(g->qts, H_ADD_LOGICAL_LAN_BUFFER, UNIT, bd);
}

static void test_register(void)
{
    Guest g = start("");

    qtest_memset(g.qts, BUF_LIST, 0xff, 0x1000);
    qtest_memset(g.qts, RXQ, 0xee, RXQ_LEN);
    g_assert_cmpint(do_register(&g), ==, H_SUCCESS);
    /* The queue BD with TOGGLE clear, the filter BD, zeros after. */
    g_assert_cmphex(qtest_readq(g.qts, BUF_LIST), ==, BD(RXQ_LEN, RXQ));
    g_assert_cmphex(qtest_readq(g.qts, BUF_LIST + 8), ==, BD(4096, FILTER));
    g_assert_cmphex(qtest_readq(g.qts, BUF_LIST + 16), ==, 0);
    g_assert_cmphex(qtest_readq(g.qts, BUF_LIST + 4088), ==, 0);
    g_assert_cmphex(qtest_readq(g.qts, RXQ), ==, 0);
    g_assert_cmphex(qtest_readq(g.qts, RXQ + RXQ_LEN - 8), ==, 0);
    g_assert_cmpint(do_register(&g), ==, H_RESOURCE);
    qtest_quit(g.qts);
}

static void test_register_toggle_cleared(void)
{
    Guest g = start("");

    g_assert_cmpint(qtest_hcallv(g.qts, H_REGISTER_LOGICAL_LAN, UNIT,
                                 BUF_LIST, BD(RXQ_LEN, RXQ) | BD_TOGGLE,
                                 FILTER, 0), ==, H_SUCCESS);
    g_assert_cmphex(qtest_readq(g.qts, BUF_LIST), ==, BD(RXQ_LEN, RXQ));
    qtest_quit(g.qts);
}

static void test_register_errors(void)
{
    static const struct {
        uint64_t buf_list, rxq, filter;
    } bad[] = {
        { BUF_LIST + 8, BD(RXQ_LEN, RXQ), FILTER },         /* misaligned */
        { UNMAPPED, BD(RXQ_LEN, RXQ), FILTER },             /* not mapped */
        { READ_ONLY, BD(RXQ_LEN, RXQ), FILTER },            /* read-only */
        { BUF_LIST | 1ULL << 32, BD(RXQ_LEN, RXQ), FILTER },
        { BUF_LIST, BD(RXQ_LEN, RXQ), FILTER + 0x800 },
        { BUF_LIST, BD(RXQ_LEN, RXQ), UNMAPPED },
        { BUF_LIST, BD(RXQ_LEN, RXQ), READ_ONLY },
        { BUF_LIST, BD(RXQ_LEN, RXQ) & ~BD_VALID, FILTER }, /* no VALID */
        { BUF_LIST, BD(RXQ_LEN, RXQ + 8), FILTER },         /* addr % 16 */
        { BUF_LIST, BD(RXQ_LEN - 8, RXQ), FILTER },         /* len % 16 */
        { BUF_LIST, BD(0, RXQ), FILTER },                   /* empty */
        { BUF_LIST, BD(RXQ_LEN, UNMAPPED), FILTER },
        { BUF_LIST, BD(0x2000, RXQ + 0x1000), FILTER },     /* runs off */
        { BUF_LIST, BD(RXQ_LEN, READ_ONLY), FILTER },
    };
    Guest g = start("");

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        int64_t ret = qtest_hcallv(g.qts, H_REGISTER_LOGICAL_LAN, UNIT,
                                   bad[i].buf_list, bad[i].rxq,
                                   bad[i].filter, 0);
        if (ret != H_PARAMETER) {
            g_error("case %zu: register returned %" G_GINT64_FORMAT, i, ret);
        }
    }
    g_assert_cmpint(qtest_hcallv(g.qts, H_REGISTER_LOGICAL_LAN, UNIT + 1,
                                 BUF_LIST, BD(RXQ_LEN, RXQ), FILTER, 0), ==,
                    H_PARAMETER);
    /* Nothing was registered by the failures. */
    g_assert_cmpint(do_register(&g), ==, H_SUCCESS);
    qtest_quit(g.qts);
}

static void test_free(void)
{
    Guest g = start("");

    g_assert_cmpint(hcall(&g, H_FREE_LOGICAL_LAN, 0, 0, 0, 0), ==,
                    H_RESOURCE);
    g_assert_cmpint(qtest_hcallv(g.qts, H_FREE_LOGICAL_LAN, UNIT + 1), ==,
                    H_PARAMETER);
    g_assert_cmpint(do_register(&g), ==, H_SUCCESS);
    g_assert_cmpint(add_buf(&g, BD(2048, BUFS)), ==, H_SUCCESS);
    g_assert_cmpint(hcall(&g, H_FREE_LOGICAL_LAN, 0, 0, 0, 0), ==, H_SUCCESS);
    g_assert_cmpint(add_buf(&g, BD(2048, BUFS)), ==, H_RESOURCE);
    g_assert_cmpint(hcall(&g, H_FREE_LOGICAL_LAN, 0, 0, 0, 0), ==,
                    H_RESOURCE);
    g_assert_cmpint(do_register(&g), ==, H_SUCCESS);
    qtest_quit(g.qts);
}

static void test_add_errors(void)
{
    static const uint64_t bad[] = {
        BD(2048, BUFS + 2),             /* address not a multiple of 4 */
        BD(2046, BUFS),                 /* length not a multiple of 4 */
        BD(12, BUFS),                   /* shorter than 16 */
        BD(2048, UNMAPPED),
        BD(2048, READ_ONLY),
        BD(0x2000, BUFS + BUFS_LEN - 0x1000),   /* runs off the mapping */
    };
    Guest g = start("");

    g_assert_cmpint(add_buf(&g, BD(2048, BUFS)), ==, H_RESOURCE);
    g_assert_cmpint(qtest_hcallv(g.qts, H_ADD_LOGICAL_LAN_BUFFER, UNIT + 1,
                                 BD(2048, BUFS)), ==, H_PARAMETER);
    /* Descriptors are checked before registration is. */
    g_assert_cmpint(add_buf(&g, BD(12, BUFS)), ==, H_PARAMETER);
    g_assert_cmpint(do_register(&g), ==, H_SUCCESS);
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_assert_cmpint(add_buf(&g, bad[i]), ==, H_PARAMETER);
    }
    /* Odd but legal: 4-byte alignment (SLOF), odd sizes, no VALID bit. */
    g_assert_cmpint(add_buf(&g, BD(1028, BUFS + 4)), ==, H_SUCCESS);
    g_assert_cmpint(add_buf(&g, BD(16, BUFS + 0xffc)), ==, H_SUCCESS);
    g_assert_cmpint(add_buf(&g, BD(2048, BUFS + 0x2000) & ~BD_VALID), ==,
                    H_SUCCESS);
    qtest_quit(g.qts);
}

/* Page mode keeps the descriptors in slots 16.. of the buffer list. */
static void test_page_mode_slots_and_limit(void)
{
    Guest g = start(",use-rx-buffer-pools=off");

    g_assert_cmpint(do_register(&g), ==, H_SUCCESS);
    g_assert_cmpint(add_buf(&g, BD(2048, BUFS)), ==, H_SUCCESS);
    g_assert_cmpint(add_buf(&g, BD(512, BUFS + 0x1000)), ==, H_SUCCESS);
    g_assert_cmphex(qtest_readq(g.qts, BUF_LIST + 16), ==, BD(2048, BUFS));
    g_assert_cmphex(qtest_readq(g.qts, BUF_LIST + 24), ==,
                    BD(512, BUFS + 0x1000));
    for (int i = 2; i < 509; i++) {
        g_assert_cmpint(add_buf(&g, BD(512, BUFS + i * 512)), ==, H_SUCCESS);
    }
    g_assert_cmphex(qtest_readq(g.qts, BUF_LIST + 4080), ==,
                    BD(512, BUFS + 508 * 512));
    g_assert_cmpint(add_buf(&g, BD(512, BUFS)), ==, H_RESOURCE);
    /* The drop counter after the last slot is untouched. */
    g_assert_cmphex(qtest_readq(g.qts, BUF_LIST + 4088), ==, 0);
    qtest_quit(g.qts);
}

/* A guest that sets VALID in every slot itself: the add gives up after
 * one pass instead of spinning. */
static void test_page_mode_hostile_page(void)
{
    Guest g = start(",use-rx-buffer-pools=off");

    g_assert_cmpint(do_register(&g), ==, H_SUCCESS);
    qtest_memset(g.qts, BUF_LIST + 16, 0xff, 4088 - 16);
    g_assert_cmpint(add_buf(&g, BD(512, BUFS)), ==, H_RESOURCE);
    /* Unmapping the buffer list makes adds fail, not crash. */
    qtest_tce_map(g.qts, UNIT, BUF_LIST, BUF_LIST, 0x1000, 0);
    g_assert_cmpint(add_buf(&g, BD(512, BUFS)), ==, H_PARAMETER);
    /* Neither counts as a buffer the device holds. */
    g_assert_cmpint(qrig_stat(g.qts, "nic.device.rx-bufs-posted"), ==, 0);
    qtest_quit(g.qts);
}

static void test_pool_mode_limits(void)
{
    Guest g = start(",use-rx-buffer-pools=on");

    g_assert_cmpint(do_register(&g), ==, H_SUCCESS);
    /* 4096 buffers of one size, 16 bytes each, then H_RESOURCE. */
    for (int i = 0; i < 4096; i++) {
        g_assert_cmpint(add_buf(&g, BD(16, BUFS + i * 16)), ==, H_SUCCESS);
    }
    g_assert_cmpint(add_buf(&g, BD(16, BUFS)), ==, H_RESOURCE);
    /* Four more sizes fit, a sixth does not. */
    for (int i = 1; i <= 4; i++) {
        g_assert_cmpint(add_buf(&g, BD(16 + 16 * i, BUFS + 0x100000)), ==,
                        H_SUCCESS);
    }
    g_assert_cmpint(add_buf(&g, BD(128, BUFS + 0x100000)), ==, H_RESOURCE);
    /* Page mode's 509 limit does not apply: nothing is in the page. */
    g_assert_cmphex(qtest_readq(g.qts, BUF_LIST + 16), ==, 0);
    qtest_quit(g.qts);
}

static int64_t add_bufs(Guest *g, const uint64_t bds[8])
{
    return qtest_hcall(g->qts, H_ADD_LOGICAL_LAN_BUFFERS, 9,
                       (uint64_t[]){ UNIT, bds[0], bds[1], bds[2], bds[3],
                                     bds[4], bds[5], bds[6], bds[7] },
                       NULL, 0);
}

static void test_bulk_add(void)
{
    Guest g = start(",use-rx-buffer-pools=off");
    const uint64_t ok[8] = { BD(512, BUFS), 0, BD(512, BUFS + 512), 0, 0, 0,
                             0, 0 };
    const uint64_t bad[8] = { BD(512, BUFS + 0x1000), BD(510, BUFS), 0 };

    g_assert_cmpint(add_bufs(&g, ok), ==, H_RESOURCE);
    g_assert_cmpint(do_register(&g), ==, H_SUCCESS);
    /* Zeros are unused slots. */
    g_assert_cmpint(add_bufs(&g, ok), ==, H_SUCCESS);
    g_assert_cmphex(qtest_readq(g.qts, BUF_LIST + 16), ==, BD(512, BUFS));
    g_assert_cmphex(qtest_readq(g.qts, BUF_LIST + 24), ==,
                    BD(512, BUFS + 512));
    /* One bad descriptor: none of the eight is added. */
    g_assert_cmpint(add_bufs(&g, bad), ==, H_PARAMETER);
    g_assert_cmphex(qtest_readq(g.qts, BUF_LIST + 32), ==, 0);
    qtest_quit(g.qts);
}

/* Running out of room part-way undoes what the call had added. */
static void test_bulk_add_all_or_nothing(void)
{
    Guest g = start(",use-rx-buffer-pools=off");
    uint64_t eight[8];

    g_assert_cmpint(do_register(&g), ==, H_SUCCESS);
    for (int i = 0; i < 505; i++) {
        g_assert_cmpint(add_buf(&g, BD(512, BUFS + i * 512)), ==, H_SUCCESS);
    }
    for (int i = 0; i < 8; i++) {
        eight[i] = BD(512, BUFS + 0x100000 + i * 512);
    }
    g_assert_cmpint(add_bufs(&g, eight), ==, H_RESOURCE);
    for (uint64_t off = 16 + 505 * 8; off < 4088; off += 8) {
        g_assert_cmphex(qtest_readq(g.qts, BUF_LIST + off), ==, 0);
    }
    /* Exactly four slots are still free. */
    eight[4] = eight[5] = eight[6] = eight[7] = 0;
    g_assert_cmpint(add_bufs(&g, eight), ==, H_SUCCESS);
    g_assert_cmpint(add_buf(&g, BD(512, BUFS)), ==, H_RESOURCE);
    qtest_quit(g.qts);
}

static void test_bulk_add_pools_all_or_nothing(void)
{
    Guest g = start(",use-rx-buffer-pools=on");
    const uint64_t six_sizes[8] = {
        BD(16, BUFS), BD(32, BUFS), BD(48, BUFS), BD(64, BUFS),
        BD(80, BUFS), BD(96, BUFS), 0, 0,
    };

    g_assert_cmpint(do_register(&g), ==, H_SUCCESS);
    g_assert_cmpint(add_bufs(&g, six_sizes), ==, H_RESOURCE);
    /* Nothing stayed: five new sizes still fit, one by one. */
    for (int i = 0; i < 5; i++) {
        g_assert_cmpint(add_buf(&g, six_sizes[i + 1]), ==, H_SUCCESS);
    }
    qtest_quit(g.qts);
}

static int64_t send_bds(Guest *g, uint64_t b1, uint64_t b2, uint64_t token)
{
    return qtest_hcall(g->qts, H_SEND_LOGICAL_LAN, 8,
                       (uint64_t[]){ UNIT, b1, b2, 0, 0, 0, 0, token },
                       NULL, 0);
}

static void test_send_errors(void)
{
    Guest g = start("");

    g_assert_cmpint(send_bds(&g, BD(60, BUFS), 0, 0), ==, H_DROPPED);
    g_assert_cmpint(qtest_hcallv(g.qts, H_SEND_LOGICAL_LAN, UNIT + 1,
                                 BD(60, BUFS)), ==, H_PARAMETER);
    g_assert_cmpint(do_register(&g), ==, H_SUCCESS);
    g_assert_cmpint(send_bds(&g, BD(60, BUFS), 0, 1), ==, H_HARDWARE);
    g_assert_cmpint(send_bds(&g, 0, 0, 0), ==, H_SUCCESS);
    g_assert_cmpint(send_bds(&g, BD(0x10000, BUFS), BD(1, BUFS), 0), ==,
                    H_RESOURCE);
    g_assert_cmpint(send_bds(&g, BD(60, BUFS), BD(60, UNMAPPED), 0), ==,
                    H_DEST_PARM);
    /* Read-only mappings are what a send needs. */
    g_assert_cmpint(send_bds(&g, BD(60, READ_ONLY), 0, 0), ==, H_SUCCESS);
    /* Exactly 64 KiB is allowed, with no backend the frame is counted. */
    g_assert_cmpint(send_bds(&g, BD(0x8000, BUFS), BD(0x8000, BUFS), 0), ==,
                    H_SUCCESS);
    /* The device counts the four refusals it made (a wrong unit address
     * never reaches it) and the two frames it sent; the empty send is
     * neither. */
    g_assert_cmpint(qrig_stat(g.qts, "nic.device.tx-errors"), ==, 4);
    g_assert_cmpint(qrig_stat(g.qts, "nic.device.tx-frames"), ==, 2);
    qtest_quit(g.qts);
}

static void test_multicast_ctrl(void)
{
    Guest g = start("");

    g_assert_cmpint(qtest_hcallv(g.qts, H_MULTICAST_CTRL, UNIT + 1, 0, 0), ==,
                    H_PARAMETER);
    g_assert_cmpint(hcall(&g, H_MULTICAST_CTRL, 0x100000, 0, 0, 0), ==,
                    H_PARAMETER);
    /* Only multicast addresses go into the table. */
    g_assert_cmpint(hcall(&g, H_MULTICAST_CTRL, 1, 0x525400123456ULL, 0, 0),
                    ==, H_PARAMETER);
    g_assert_cmpint(hcall(&g, H_MULTICAST_CTRL, 1, 1ULL << 48, 0, 0), ==,
                    H_PARAMETER);
    for (uint64_t i = 0; i < 16; i++) {
        g_assert_cmpint(hcall(&g, H_MULTICAST_CTRL, 1, 0x01005e000000ULL + i,
                              0, 0), ==, H_SUCCESS);
    }
    /* A duplicate is not a new entry; a seventeenth does not fit. */
    g_assert_cmpint(hcall(&g, H_MULTICAST_CTRL, 1, 0x01005e000000ULL, 0, 0),
                    ==, H_SUCCESS);
    g_assert_cmpint(hcall(&g, H_MULTICAST_CTRL, 1, 0x01005e0000ffULL, 0, 0),
                    ==, H_CONSTRAINED);
    g_assert_cmpint(hcall(&g, H_MULTICAST_CTRL, 2, 0x01005e000003ULL, 0, 0),
                    ==, H_SUCCESS);
    g_assert_cmpint(hcall(&g, H_MULTICAST_CTRL, 2, 0x01005e000003ULL, 0, 0),
                    ==, H_NOT_FOUND);
    g_assert_cmpint(hcall(&g, H_MULTICAST_CTRL, 1, 0x01005e0000ffULL, 0, 0),
                    ==, H_SUCCESS);
    /* Clear, with the mode bits Linux sends along. */
    g_assert_cmpint(hcall(&g, H_MULTICAST_CTRL, 0xa0000 | 0x40000 | 3, 0, 0,
                          0), ==, H_SUCCESS);
    g_assert_cmpint(hcall(&g, H_MULTICAST_CTRL, 2, 0x01005e000000ULL, 0, 0),
                    ==, H_NOT_FOUND);
    g_assert_cmpint(hcall(&g, H_MULTICAST_CTRL, 0x50000, 0, 0, 0), ==,
                    H_SUCCESS);
    qtest_quit(g.qts);
}

static void test_change_mac(void)
{
    Guest g = start("");

    g_assert_cmpint(hcall(&g, H_CHANGE_LOGICAL_LAN_MAC, 0x525400abcdefULL, 0,
                          0, 0), ==, H_SUCCESS);
    g_assert_cmpint(qtest_hcallv(g.qts, H_CHANGE_LOGICAL_LAN_MAC, UNIT + 1,
                                 0x525400abcdefULL), ==, H_PARAMETER);
    g_assert_cmpint(hcall(&g, H_CHANGE_LOGICAL_LAN_MAC, 0x010203040506ULL, 0,
                          0, 0), ==, H_PARAMETER);
    g_assert_cmpint(hcall(&g, H_CHANGE_LOGICAL_LAN_MAC, 1ULL << 48, 0, 0, 0),
                    ==, H_PARAMETER);
    g_assert_cmpint(hcall(&g, H_CHANGE_LOGICAL_LAN_MAC, 0, 0, 0, 0), ==,
                    H_PARAMETER);
    qtest_quit(g.qts);
}

/* The fixed capabilities cannot change; checksum offload and large send
 * can (tests/qtest/llan-offload-test.c has the rest). */
static void test_illan_attributes(void)
{
    Guest g = start("");
    g_autofree char *rsp = NULL;

    rsp = qtest_cmd(g.qts, "hcall 0x244 0x71000000 0 0");
    g_assert_cmpstr(rsp, ==, "OK 0 0x4a000");
    g_free(rsp);
    rsp = qtest_cmd(g.qts, "hcall 0x244 0x71000000 0 0x40000");
    g_assert_cmpstr(rsp, ==, "OK 0 0x4a000");
    g_free(rsp);
    rsp = qtest_cmd(g.qts, "hcall 0x244 0x71000000 0 0x2");
    g_assert_cmpstr(rsp, ==, "OK 0 0x4a002");
    g_free(rsp);
    rsp = qtest_cmd(g.qts, "hcall 0x244 0x71000000 0x40000 0");
    g_assert_cmpstr(rsp, ==, "OK 4 0x4a002");
    g_assert_cmpint(qtest_hcallv(g.qts, H_ILLAN_ATTRIBUTES, UNIT + 1, 0, 0),
                    ==, H_PARAMETER);
    qtest_quit(g.qts);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/llan/register", test_register);
    g_test_add_func("/llan/register-toggle-cleared",
                    test_register_toggle_cleared);
    g_test_add_func("/llan/register-errors", test_register_errors);
    g_test_add_func("/llan/free", test_free);
    g_test_add_func("/llan/add-errors", test_add_errors);
    g_test_add_func("/llan/page-mode/slots-and-limit",
                    test_page_mode_slots_and_limit);
    g_test_add_func("/llan/page-mode/hostile-page",
                    test_page_mode_hostile_page);
    g_test_add_func("/llan/pool-mode/limits", test_pool_mode_limits);
    g_test_add_func("/llan/bulk-add", test_bulk_add);
    g_test_add_func("/llan/bulk-add/all-or-nothing",
                    test_bulk_add_all_or_nothing);
    g_test_add_func("/llan/bulk-add/pools-all-or-nothing",
                    test_bulk_add_pools_all_or_nothing);
    g_test_add_func("/llan/send-errors", test_send_errors);
    g_test_add_func("/llan/multicast-ctrl", test_multicast_ctrl);
    g_test_add_func("/llan/change-mac", test_change_mac);
    g_test_add_func("/llan/illan-attributes", test_illan_attributes);
    return g_test_run();
}
