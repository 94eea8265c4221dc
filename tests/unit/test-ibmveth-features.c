/*
 * The ibmveth driver model's "ethtool -K" setters when the device says
 * no: ibmveth_set_csum_offload and ibmveth_set_tso fail, saying what the
 * device answered, wherever Linux's return EIO, and leave the adapter
 * as Linux leaves it (a refused change undone, the feature as it was).
 * spapr-vlan never refuses a change it offers, so the device here is a
 * stand-in that answers H_ILLAN_ATTRIBUTES as spapr-vlan does
 * (H_CONSTRAINED for a bit it will not change) for the bits a test
 * makes it decline.
 */
#include "guest/ibmveth.h"
#include "hw/ppc/hcall.h"

#include <string.h>

#define UNIT        0x71000000u
#define CHANGEABLE  (IBMVETH_ILLAN_IPV4_TCP_CSUM | \
                     IBMVETH_ILLAN_IPV6_TCP_CSUM | \
                     IBMVETH_ILLAN_LRG_SR_ENABLED)

typedef struct AttrDevice {
    uint64_t fixed;     /* always reported */
    uint64_t attrs;     /* turned on by the guest */
    uint64_t declined;  /* changeable bits it will not change now */
    unsigned hcalls;
} AttrDevice;

static int64_t attr_hcall(void *opaque, uint64_t opcode, unsigned nargs,
                          uint64_t *args, unsigned nout)
{
    AttrDevice *d = opaque;
    uint64_t cur = d->fixed | d->attrs;
    uint64_t wanted = (cur & ~args[1]) | args[2];
    int64_t rc = H_SUCCESS;

    g_assert_cmphex(opcode, ==, H_ILLAN_ATTRIBUTES);
    g_assert_cmpuint(nargs, ==, 3);
    g_assert_cmphex(args[0], ==, UNIT);
    d->hcalls++;
    if ((wanted ^ cur) & (~CHANGEABLE | d->declined)) {
        rc = H_CONSTRAINED;
    } else {
        d->attrs = wanted & CHANGEABLE;
    }
    if (nout) {
        args[0] = d->fixed | d->attrs;
    }
    return rc;
}

static IbmvethBus attr_bus(AttrDevice *d)
{
    return (IbmvethBus){ .hcall = attr_hcall, .opaque = d };
}

static AttrDevice offering_device(void)
{
    return (AttrDevice){ .fixed = IBMVETH_ILLAN_PADDED_PKT_CSUM |
                                  IBMVETH_ILLAN_LRG_SND_SUPPORT };
}

static void expect_error(GError *err, const char *msg)
{
    g_assert_nonnull(err);
    g_test_message("%s", err->message);
    g_assert_cmpstr(err->message, ==, msg);
}

/* Both checksum bits refused: EIO, each undone, rx_csum still off. */
static void test_csum_refused(void)
{
    AttrDevice d = offering_device();
    IbmvethBus bus = attr_bus(&d);
    g_autoptr(GError) err = NULL;
    IbmvethConf conf = { .unit = UNIT };

    d.declined = IBMVETH_ILLAN_IPV4_TCP_CSUM | IBMVETH_ILLAN_IPV6_TCP_CSUM;
    g_assert_false(ibmveth_set_csum_offload(&bus, &conf, true, &err));
    expect_error(err, "the device refused rx-checksumming "
                 "(H_ILLAN_ATTRIBUTES rc 4 for IPv4, 4 for IPv6); Linux's "
                 "ibmveth returns EIO");
    g_assert_false(conf.rx_csum);
    g_assert_cmphex(d.attrs, ==, 0);
    /* read; IPv4 and its undo; IPv6 and its undo */
    g_assert_cmpuint(d.hcalls, ==, 5);
}

/* One checksum bit taken is enough for Linux: no error, rx_csum on. */
static void test_csum_half_taken(void)
{
    AttrDevice d = offering_device();
    IbmvethBus bus = attr_bus(&d);
    g_autoptr(GError) err = NULL;
    IbmvethConf conf = { .unit = UNIT };

    d.declined = IBMVETH_ILLAN_IPV6_TCP_CSUM;
    g_assert_true(ibmveth_set_csum_offload(&bus, &conf, true, &err));
    g_assert_no_error(err);
    g_assert_true(conf.rx_csum);
    g_assert_cmphex(d.attrs, ==, IBMVETH_ILLAN_IPV4_TCP_CSUM);
    g_assert_cmpuint(d.hcalls, ==, 4);
}

/* Without PADDED_PKT_CSUM the read alone, and EIO. */
static void test_csum_not_padded(void)
{
    AttrDevice d = { .fixed = IBMVETH_ILLAN_LRG_SND_SUPPORT };
    IbmvethBus bus = attr_bus(&d);
    g_autoptr(GError) err = NULL;
    IbmvethConf conf = { .unit = UNIT, .rx_csum = true };

    g_assert_false(ibmveth_set_csum_offload(&bus, &conf, false, &err));
    expect_error(err, "the device reports no PADDED_PKT_CSUM, so "
                 "rx-checksumming cannot change; Linux's ibmveth returns "
                 "EIO");
    g_assert_true(conf.rx_csum);
    g_assert_cmpuint(d.hcalls, ==, 1);
}

/* LRG_SR_ENABLED refused: EIO, undone, large send as it was. */
static void test_tso_refused(void)
{
    AttrDevice d = offering_device();
    IbmvethBus bus = attr_bus(&d);
    g_autoptr(GError) err = NULL;
    IbmvethConf conf = { .unit = UNIT };

    d.declined = IBMVETH_ILLAN_LRG_SR_ENABLED;
    g_assert_false(ibmveth_set_tso(&bus, &conf, true, &err));
    expect_error(err, "the device refused tcp-segmentation-offload "
                 "(H_ILLAN_ATTRIBUTES rc 4); Linux's ibmveth returns EIO");
    g_assert_false(conf.large_send);
    g_assert_cmphex(d.attrs, ==, 0);
    g_assert_cmpuint(d.hcalls, ==, 3);
}

/* Without LRG_SND_SUPPORT large send can be turned off, not on. */
static void test_tso_unsupported(void)
{
    AttrDevice d = { .fixed = IBMVETH_ILLAN_PADDED_PKT_CSUM };
    IbmvethBus bus = attr_bus(&d);
    g_autoptr(GError) err = NULL;
    IbmvethConf conf = { .unit = UNIT, .large_send = true };

    g_assert_true(ibmveth_set_tso(&bus, &conf, false, &err));
    g_assert_no_error(err);
    g_assert_false(conf.large_send);
    g_assert_false(ibmveth_set_tso(&bus, &conf, true, &err));
    expect_error(err, "the device reports no LRG_SND_SUPPORT "
                 "(H_ILLAN_ATTRIBUTES rc 0), and the old firmware's large "
                 "send Linux's ibmveth falls back to is not modelled");
    g_assert_false(conf.large_send);
    g_assert_cmpuint(d.hcalls, ==, 2);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ibmveth-features/csum-refused", test_csum_refused);
    g_test_add_func("/ibmveth-features/csum-half-taken",
                    test_csum_half_taken);
    g_test_add_func("/ibmveth-features/csum-not-padded",
                    test_csum_not_padded);
    g_test_add_func("/ibmveth-features/tso-refused", test_tso_refused);
    g_test_add_func("/ibmveth-features/tso-unsupported",
                    test_tso_unsupported);
    return g_test_run();
}
