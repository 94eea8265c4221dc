/* The TCE hcalls: each one's success and each of its error paths. */
#include "hw/ppc/hcall.h"
#include "libqtest.h"


#define LIOBN       0x71000000ULL
#define WINDOW      0x10000000ULL
#define LAST_PAGE   (WINDOW - 4096)

static QTestState *start(void)
{
    return qtest_init("-nodefaults -device spapr-vlan -m 256M");
}

static uint64_t get_tce(QTestState *s, uint64_t liobn, uint64_t ioba)
{
    uint64_t tce = ~0ULL;
    uint64_t args[] = { liobn, ioba };

    g_assert_cmpint(qtest_hcall(s, H_GET_TCE, 2, args, &tce, 1), ==,
                    H_SUCCESS);
    return tce;
}

static void test_put_get(void)
{
    QTestState *s = start();
    g_autofree char *rsp = NULL;

    g_assert_cmphex(get_tce(s, LIOBN, 0), ==, 0);
    for (uint64_t perm = 0; perm < 4; perm++) {
        uint64_t tce = 0x200000 | perm;
        g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE, LIOBN, 0x5000, tce), ==,
                        H_SUCCESS);
        g_assert_cmphex(get_tce(s, LIOBN, 0x5000), ==, tce);
    }
    /* The in-page offset of ioba is ignored. */
    g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE, LIOBN, 0x6abc, 0x7003), ==,
                    H_SUCCESS);
    g_assert_cmphex(get_tce(s, LIOBN, 0x6000), ==, 0x7003);
    g_assert_cmphex(get_tce(s, LIOBN, 0x6fff), ==, 0x7003);
    g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE, LIOBN, LAST_PAGE, 0x3), ==,
                    H_SUCCESS);
    g_assert_cmphex(get_tce(s, LIOBN, LAST_PAGE), ==, 0x3);
    /* The reply carries r4 as hex. */
    rsp = qtest_cmd(s, "hcall 0x1c 0x71000000 0x6000");
    g_assert_cmpstr(rsp, ==, "OK 0 0x7003");
    qtest_quit(s);
}

static void test_put_get_errors(void)
{
    QTestState *s = start();
    const uint64_t bad[][2] = {
        { 0x12345678, 0 },              /* no such liobn */
        { LIOBN | (1ULL << 32), 0 },    /* bits above 32 */
        { LIOBN, WINDOW },              /* first page past the window */
        { LIOBN, ~0ULL },
    };
    g_autofree char *rsp = NULL;

    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        uint64_t args[] = { bad[i][0], bad[i][1] };
        g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE, bad[i][0], bad[i][1], 3),
                        ==, H_PARAMETER);
        g_assert_cmpint(qtest_hcall(s, H_GET_TCE, 2, args, NULL, 0), ==,
                        H_PARAMETER);
    }
    /* A failed H_GET_TCE returns no output register. */
    rsp = qtest_cmd(s, "hcall 0x1c 0x12345678 0");
    g_assert_cmpstr(rsp, ==, "OK -4");
    qtest_quit(s);
}

static void test_stuff(void)
{
    QTestState *s = start();

    g_assert_cmpint(qtest_hcallv(s, H_STUFF_TCE, LIOBN, 0x10123, 0x9003, 4),
                    ==, H_SUCCESS);
    g_assert_cmphex(get_tce(s, LIOBN, 0xf000), ==, 0);
    for (uint64_t i = 0; i < 4; i++) {
        g_assert_cmphex(get_tce(s, LIOBN, 0x10000 + i * 4096), ==, 0x9003);
    }
    g_assert_cmphex(get_tce(s, LIOBN, 0x14000), ==, 0);
    /* npages 0 changes nothing and is refused, as in QEMU. */
    g_assert_cmpint(qtest_hcallv(s, H_STUFF_TCE, LIOBN, 0x14000, 1, 0), ==,
                    H_PARAMETER);
    g_assert_cmphex(get_tce(s, LIOBN, 0x14000), ==, 0);
    /* The whole table at once, then clear it the same way. */
    g_assert_cmpint(qtest_hcallv(s, H_STUFF_TCE, LIOBN, 0, 1, 65536), ==,
                    H_SUCCESS);
    g_assert_cmphex(get_tce(s, LIOBN, LAST_PAGE), ==, 1);
    g_assert_cmpint(qtest_hcallv(s, H_STUFF_TCE, LIOBN, 0, 0, 65536), ==,
                    H_SUCCESS);
    g_assert_cmphex(get_tce(s, LIOBN, 0x10000), ==, 0);
    qtest_quit(s);
}

static void test_stuff_errors(void)
{
    QTestState *s = start();

    g_assert_cmpint(qtest_hcallv(s, H_STUFF_TCE, LIOBN, 0, 1, 65537), ==,
                    H_PARAMETER);
    g_assert_cmphex(get_tce(s, LIOBN, 0), ==, 0);
    g_assert_cmpint(qtest_hcallv(s, H_STUFF_TCE, 0x1234, 0, 1, 1), ==,
                    H_PARAMETER);
    g_assert_cmpint(qtest_hcallv(s, H_STUFF_TCE, LIOBN | (1ULL << 40), 0, 1,
                                 1), ==, H_PARAMETER);
    g_assert_cmpint(qtest_hcallv(s, H_STUFF_TCE, LIOBN, WINDOW, 1, 1), ==,
                    H_PARAMETER);
    /* Running off the end stops at the first entry outside the window. */
    g_assert_cmpint(qtest_hcallv(s, H_STUFF_TCE, LIOBN, LAST_PAGE, 0x5003, 2),
                    ==, H_PARAMETER);
    g_assert_cmphex(get_tce(s, LIOBN, LAST_PAGE), ==, 0x5003);
    qtest_quit(s);
}

static void write_tce_list(QTestState *s, uint64_t list, unsigned n,
                           uint64_t first)
{
    for (unsigned i = 0; i < n; i++) {
        qtest_writeq(s, list + i * 8, first + i * 0x1000);
    }
}

static void test_indirect(void)
{
    QTestState *s = start();
    const uint64_t list = 0x100000;

    write_tce_list(s, list, 512, 0x400003);
    g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE_INDIRECT, LIOBN, 0x20000, list,
                                 3), ==, H_SUCCESS);
    for (uint64_t i = 0; i < 3; i++) {
        g_assert_cmphex(get_tce(s, LIOBN, 0x20000 + i * 4096), ==,
                        0x400003 + i * 0x1000);
    }
    g_assert_cmphex(get_tce(s, LIOBN, 0x23000), ==, 0);
    g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE_INDIRECT, LIOBN, 0, list, 512),
                    ==, H_SUCCESS);
    g_assert_cmphex(get_tce(s, LIOBN, 511 * 4096), ==, 0x400003 + 511 * 0x1000);
    qtest_quit(s);
}

static void test_indirect_errors(void)
{
    QTestState *s = start();
    const uint64_t list = 0x100000, ram_end = 256ULL << 20;

    write_tce_list(s, list, 4, 0x800001);
    g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE_INDIRECT, LIOBN, 0, list, 513),
                    ==, H_PARAMETER);
    g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE_INDIRECT, LIOBN, 0, list, 0),
                    ==, H_PARAMETER);
    g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE_INDIRECT, LIOBN, 0, list + 8,
                                 1), ==, H_PARAMETER);
    g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE_INDIRECT, 0x1234, 0, list, 1),
                    ==, H_PARAMETER);
    g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE_INDIRECT, LIOBN | (1ULL << 33),
                                 0, list, 1), ==, H_PARAMETER);
    g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE_INDIRECT, LIOBN, 0, ram_end, 1),
                    ==, H_PARAMETER);
    g_assert_cmphex(get_tce(s, LIOBN, 0), ==, 0);
    g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE_INDIRECT, LIOBN, 0, ~0xfffULL,
                                 1), ==, H_PARAMETER);
    /* The last page of RAM is a valid list. */
    write_tce_list(s, ram_end - 8, 1, 0x900003);
    g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE_INDIRECT, LIOBN, 0,
                                 ram_end - 4096, 512), ==, H_SUCCESS);
    g_assert_cmphex(get_tce(s, LIOBN, 510 * 4096), ==, 0);
    g_assert_cmphex(get_tce(s, LIOBN, 511 * 4096), ==, 0x900003);
    /* The window ends before the list does. */
    g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE_INDIRECT, LIOBN, LAST_PAGE, list,
                                 2), ==, H_PARAMETER);
    g_assert_cmphex(get_tce(s, LIOBN, LAST_PAGE), ==, 0x800001);
    qtest_quit(s);
}

static void test_tables_per_device(void)
{
    QTestState *s = qtest_init("-nodefaults -device spapr-vlan "
                               "-device spapr-vlan,reg=0x71000005");

    g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE, 0x71000005, 0, 0x3003), ==,
                    H_SUCCESS);
    g_assert_cmphex(get_tce(s, 0x71000005, 0), ==, 0x3003);
    g_assert_cmphex(get_tce(s, LIOBN, 0), ==, 0);
    g_assert_cmpint(qtest_hcallv(s, H_PUT_TCE, 0x71000001, 0, 3), ==,
                    H_PARAMETER);
    qtest_quit(s);
}

/* libqtest's allocator and mapping helper, checked through H_GET_TCE. */
static void test_map_helper(void)
{
    QTestState *s = start();
    QGuestAllocator alloc;
    uint64_t buf;

    guest_alloc_init(&alloc, 0x100000, 0x200000);
    g_assert_cmphex(guest_alloc(&alloc, 100, 8), ==, 0x100000);
    buf = guest_alloc(&alloc, 3 * 4096, 4096);
    g_assert_cmphex(buf, ==, 0x101000);
    qtest_tce_map(s, LIOBN, 0x40000, buf, 3 * 4096, 3);
    for (uint64_t i = 0; i < 3; i++) {
        g_assert_cmphex(get_tce(s, LIOBN, 0x40000 + i * 4096), ==,
                        (buf + i * 4096) | 3);
    }
    g_assert_cmphex(get_tce(s, LIOBN, 0x43000), ==, 0);
    qtest_quit(s);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qtest/tce/put-get", test_put_get);
    g_test_add_func("/qtest/tce/put-get-errors", test_put_get_errors);
    g_test_add_func("/qtest/tce/stuff", test_stuff);
    g_test_add_func("/qtest/tce/stuff-errors", test_stuff_errors);
    g_test_add_func("/qtest/tce/indirect", test_indirect);
    g_test_add_func("/qtest/tce/indirect-errors", test_indirect_errors);
    g_test_add_func("/qtest/tce/tables-per-device", test_tables_per_device);
    g_test_add_func("/qtest/tce/map-helper", test_map_helper);
    return g_test_run();
}
