/* Hcall dispatch: H_FUNCTION for what is not there, and H_VIO_SIGNAL. */
#include "hw/ppc/hcall.h"
#include "libqtest.h"


static void test_unknown_opcodes(void)
{
    static const uint64_t unknown[] = {
        0x0, 0x8, 0x1D4, 0x300, 0x24C, 0x400, 0xF000, 0x10000,
        0xFFFFFFFFFFFFFFFCULL,
    };
    static const uint64_t misaligned[] = {
        0x1D, 0x21, 0x1E, 0x106, 0x13F, 0xFFFFFFFFFFFFFFFFULL,
    };
    QTestState *s = qtest_init("-nodefaults -device spapr-vlan");

    for (size_t i = 0; i < G_N_ELEMENTS(unknown); i++) {
        g_autofree char *rsp = qtest_cmd(s, "hcall 0x%" G_GINT64_MODIFIER "x"
                                         " 0x71000000 0 0", unknown[i]);
        g_assert_cmpstr(rsp, ==, "OK -2");
    }
    for (size_t i = 0; i < G_N_ELEMENTS(misaligned); i++) {
        g_assert_cmpint(qtest_hcallv(s, misaligned[i], 0x71000000, 0, 3), ==,
                        H_FUNCTION);
    }
    /* The aligned neighbour of a misaligned opcode is served. */
    g_assert_cmpint(qtest_hcallv(s, 0x20, 0x71000000, 0, 3), ==, H_SUCCESS);
    qtest_quit(s);
}

static void test_vio_signal(void)
{
    QTestState *s = qtest_init("-nodefaults -device spapr-vlan");
    g_autofree char *rsp = NULL;

    g_assert_cmpint(qtest_hcallv(s, H_VIO_SIGNAL, 0x71000000, 1), ==,
                    H_SUCCESS);
    g_assert_cmpint(qtest_hcallv(s, H_VIO_SIGNAL, 0x71000000, 0), ==,
                    H_SUCCESS);
    g_assert_cmpint(qtest_hcallv(s, H_VIO_SIGNAL, 0x71000000, 2), ==,
                    H_PARAMETER);
    g_assert_cmpint(qtest_hcallv(s, H_VIO_SIGNAL, 0x71000000, 3), ==,
                    H_PARAMETER);
    g_assert_cmpint(qtest_hcallv(s, H_VIO_SIGNAL, 0x71000001, 1), ==,
                    H_PARAMETER);
    g_assert_cmpint(qtest_hcallv(s, H_VIO_SIGNAL, 0x171000000ULL, 1), ==,
                    H_PARAMETER);
    /* Registers may be given negative; -1 is all ones. */
    rsp = qtest_cmd(s, "hcall 0x104 0x71000000 -1");
    g_assert_cmpstr(rsp, ==, "OK -4");
    qtest_quit(s);
}

static void test_no_device(void)
{
    QTestState *s = qtest_init("-nodefaults");

    g_assert_cmpint(qtest_hcallv(s, H_VIO_SIGNAL, 0x71000000, 0), ==,
                    H_PARAMETER);
    g_assert_cmpint(qtest_hcallv(s, 0x20, 0x71000000, 0, 3), ==, H_PARAMETER);
    qtest_quit(s);
}

/*
 * The modes the docs call QEMU-exact answer H_FUNCTION for the hcalls
 * QEMU does not implement, as an unregistered opcode, whatever the unit
 * address; offloads=on serves them.
 */
static void assert_qemu_hcalls(const char *args, bool exact)
{
    QTestState *s = qtest_init(args);
    uint64_t bds[9] = { 0x71000000 };
    uint64_t bad_bds[9] = { 0x71000001 };
    int64_t attrs = qtest_hcallv(s, H_ILLAN_ATTRIBUTES, 0x71000000, 0, 0);
    int64_t bulk = qtest_hcall(s, H_ADD_LOGICAL_LAN_BUFFERS, 9, bds, NULL, 0);
    int64_t bad_attrs = qtest_hcallv(s, H_ILLAN_ATTRIBUTES, 0x71000001, 0, 0);
    int64_t bad_bulk = qtest_hcall(s, H_ADD_LOGICAL_LAN_BUFFERS, 9, bad_bds,
                                   NULL, 0);

    if (exact) {
        g_assert_cmpint(attrs, ==, H_FUNCTION);
        g_assert_cmpint(bulk, ==, H_FUNCTION);
        g_assert_cmpint(bad_attrs, ==, H_FUNCTION);
        g_assert_cmpint(bad_bulk, ==, H_FUNCTION);
    } else {
        g_assert_cmpint(attrs, ==, H_SUCCESS);
        g_assert_cmpint(bulk, ==, H_RESOURCE);     /* not registered */
        g_assert_cmpint(bad_attrs, ==, H_PARAMETER);
        g_assert_cmpint(bad_bulk, ==, H_PARAMETER);
    }
    qtest_quit(s);
}

static void test_qemu_exact_modes(void)
{
    assert_qemu_hcalls("-nodefaults -M pseries-2.5 -device spapr-vlan", true);
    assert_qemu_hcalls("-nodefaults -device spapr-vlan,offloads=off", true);
    assert_qemu_hcalls("-nodefaults -M pseries-2.5", true);
    assert_qemu_hcalls("-nodefaults -device spapr-vlan", false);
}

/*
 * One device with offloads=on gives the machine the hcalls; a device
 * with offloads=off still answers H_FUNCTION for itself.
 */
static void test_mixed_offloads(void)
{
    QTestState *s = qtest_init("-nodefaults"
                               " -device spapr-vlan,offloads=off,mac=52:54:00:00:00:01"
                               " -device spapr-vlan,mac=52:54:00:00:00:02");

    g_assert_cmpint(qtest_hcallv(s, H_ILLAN_ATTRIBUTES, 0x71000000, 0, 0),
                    ==, H_FUNCTION);
    g_assert_cmpint(qtest_hcallv(s, H_ILLAN_ATTRIBUTES, 0x71000001, 0, 0),
                    ==, H_SUCCESS);
    g_assert_cmpint(qtest_hcallv(s, H_ILLAN_ATTRIBUTES, 0x71000005, 0, 0),
                    ==, H_PARAMETER);
    qtest_quit(s);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qtest/hcall/unknown-opcodes", test_unknown_opcodes);
    g_test_add_func("/qtest/hcall/vio-signal", test_vio_signal);
    g_test_add_func("/qtest/hcall/no-device", test_no_device);
    g_test_add_func("/qtest/hcall/qemu-exact-modes", test_qemu_exact_modes);
    g_test_add_func("/qtest/hcall/mixed-offloads", test_mixed_offloads);
    return g_test_run();
}
