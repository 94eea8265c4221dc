/*
 * Unit tests for typed device properties, defaults and compat globals
 * (hw/core/qdev.c), using the "spapr-vlan" device type.
 */
#include "hw/qdev.h"
#include "hw/net/spapr_llan.h"
#include "net/net.h"
#include "qemu/option.h"

#include <glib.h>
#include <string.h>

static DeviceState *new_vlan(void)
{
    const DeviceClass *dc = device_class_find(TYPE_SPAPR_VLAN);
    GError *err = NULL;
    DeviceState *dev;

    g_assert_nonnull(dc);
    dev = device_new(dc, &err);
    g_assert_no_error(err);
    g_assert_nonnull(dev);
    return dev;
}

static void assert_prop(DeviceState *dev, const char *name,
                        const char *expected)
{
    GError *err = NULL;
    g_autofree char *value = device_get_prop(dev, name, &err);

    g_assert_no_error(err);
    g_assert_cmpstr(value, ==, expected);
}

static void set_ok(DeviceState *dev, const char *name, const char *value)
{
    GError *err = NULL;

    g_assert_true(device_set_prop(dev, name, value, &err));
    g_assert_no_error(err);
}

/* Expect @value to be refused with a message containing @msg. */
static void set_fails(DeviceState *dev, const char *name, const char *value,
                      const char *msg)
{
    GError *err = NULL;

    g_assert_false(device_set_prop(dev, name, value, &err));
    g_assert_error(err, ILLAN_ERROR, 0);
    g_assert_nonnull(strstr(err->message, msg));
    g_error_free(err);
}

static bool dummy_send(void *opaque, const uint8_t *data, size_t len)
{
    (void)opaque, (void)data, (void)len;
    return false;
}

static const NetBackendOps dummy_backend_ops = { .send = dummy_send };

/* A backend that carries nothing: enough for a netdev id to exist. */
static bool dummy_netdev_create(const char *id, const QemuOpts *opts,
                                GError **errp)
{
    (void)opts;
    (void)errp;
    net_backend_new(id, &dummy_backend_ops, NULL);
    return true;
}

static const NetdevType dummy_netdev = {
    .name = "unit-test-dummy",
    .desc = "netdev type of the qdev unit test",
    .create = dummy_netdev_create,
};

static void test_class_find(void)
{
    const DeviceClass *dc = device_class_find(TYPE_SPAPR_VLAN);

    g_assert_nonnull(dc);
    g_assert_cmpstr(dc->name, ==, "spapr-vlan");
    g_assert_null(device_class_find("spapr-vlan-nosuch"));
    g_assert_null(device_class_find_prop(dc, "nosuch"));
    g_assert_cmpstr(prop_type_name(device_class_find_prop(dc, "reg")->type),
                    ==, "uint32");
    g_assert_cmpstr(prop_type_name(device_class_find_prop(dc, "mac")->type),
                    ==, "macaddr");
    g_assert_cmpstr(prop_type_name(
                        device_class_find_prop(dc, "netdev")->type),
                    ==, "netdev");
    g_assert_cmpstr(prop_type_name(
                        device_class_find_prop(dc, "use-rx-buffer-pools")->type),
                    ==, "bool");
}

static void test_defaults(void)
{
    DeviceState *dev = new_vlan();

    g_assert_null(dev->id);
    g_assert_false(dev->realized);
    assert_prop(dev, "reg", "4294967295");
    g_assert_cmphex(((SpaprVioDevice *)dev)->reg, ==, 0xffffffff);
    assert_prop(dev, "use-rx-buffer-pools", "on");
    /* mac has no default: it stays all-zero until the device fills it in */
    g_assert_null(device_class_find_prop(dev->klass, "mac")->defval);
    assert_prop(dev, "mac", "00:00:00:00:00:00");
    assert_prop(dev, "netdev", "");
    device_free(dev);
}

static void test_set_bool(void)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        { "off", "off" }, { "on", "on" }, { "no", "off" },
        { "yes", "on" }, { "false", "off" }, { "true", "on" },
    };
    DeviceState *dev = new_vlan();

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        set_ok(dev, "use-rx-buffer-pools", cases[i].in);
        assert_prop(dev, "use-rx-buffer-pools", cases[i].out);
    }
    device_free(dev);
}

static void test_set_bool_rejects(void)
{
    DeviceState *dev = new_vlan();

    set_ok(dev, "use-rx-buffer-pools", "off");
    set_fails(dev, "use-rx-buffer-pools", "maybe",
              "Property 'spapr-vlan.use-rx-buffer-pools' doesn't take "
              "value 'maybe'");
    set_fails(dev, "use-rx-buffer-pools", "", "doesn't take value ''");
    assert_prop(dev, "use-rx-buffer-pools", "off");
    device_free(dev);
}

static void test_set_uint32(void)
{
    DeviceState *dev = new_vlan();

    set_ok(dev, "reg", "1234");
    assert_prop(dev, "reg", "1234");
    set_ok(dev, "reg", "0x71000001");
    assert_prop(dev, "reg", "1895825409");
    set_ok(dev, "reg", "010");
    assert_prop(dev, "reg", "8");
    set_ok(dev, "reg", "0");
    assert_prop(dev, "reg", "0");
    set_ok(dev, "reg", "4294967295");
    assert_prop(dev, "reg", "4294967295");
    device_free(dev);
}

static void test_set_uint32_rejects(void)
{
    DeviceState *dev = new_vlan();

    set_ok(dev, "reg", "0x71000002");
    set_fails(dev, "reg", "4294967296",
              "Property 'spapr-vlan.reg' doesn't take value '4294967296'");
    set_fails(dev, "reg", "0x100000000", "'spapr-vlan.reg'");
    set_fails(dev, "reg", "-1", "doesn't take value '-1'");
    set_fails(dev, "reg", "", "doesn't take value ''");
    set_fails(dev, "reg", "12abc", "doesn't take value '12abc'");
    assert_prop(dev, "reg", "1895825410");
    device_free(dev);
}

static void test_set_macaddr(void)
{
    DeviceState *dev = new_vlan();

    set_ok(dev, "mac", "52:54:00:AB:cd:Ef");
    assert_prop(dev, "mac", "52:54:00:ab:cd:ef");
    device_free(dev);
}

static void test_set_macaddr_rejects(void)
{
    static const char *const bad[] = {
        "52:54:00:12:34", "52:54:00:12:34:5g", "52-54-00-12-34-56",
        "52:54:00:12:34:56:", "52:54:00:12:34:567", "", "5:54:00:12:34:56",
        "52:54:00:12:34: 6", "52:54:00:12:34:+6", "0x:54:00:12:34:56",
    };
    DeviceState *dev = new_vlan();

    set_ok(dev, "mac", "52:54:00:12:34:56");
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *msg = g_strdup_printf(
            "Property 'spapr-vlan.mac' doesn't take value '%s'", bad[i]);

        set_fails(dev, "mac", bad[i], msg);
    }
    assert_prop(dev, "mac", "52:54:00:12:34:56");
    device_free(dev);
}

static void test_set_netdev_undefined(void)
{
    DeviceState *dev = new_vlan();

    set_fails(dev, "netdev", "nosuch",
              "Property 'spapr-vlan.netdev' can't find value 'nosuch'");
    assert_prop(dev, "netdev", "");
    device_free(dev);
}

static void test_set_netdev_defined(void)
{
    g_autoptr(QemuOpts) opts = NULL;
    DeviceState *dev = new_vlan();
    GError *err = NULL;

    opts = qemu_opts_parse("unit-test-dummy,id=net0", "type", &err);
    g_assert_no_error(err);
    g_assert_true(net_netdev_add(opts, &err));
    g_assert_no_error(err);

    set_ok(dev, "netdev", "net0");
    assert_prop(dev, "netdev", "net0");
    set_fails(dev, "netdev", "net1", "can't find value 'net1'");
    assert_prop(dev, "netdev", "net0");
    device_free(dev);
    net_cleanup();
}

static void test_unknown_property(void)
{
    DeviceState *dev = new_vlan();
    GError *err = NULL;

    g_assert_false(device_set_prop(dev, "foo", "1", &err));
    g_assert_error(err, ILLAN_ERROR, 0);
    g_assert_true(g_str_has_prefix(err->message,
                                   "Property 'spapr-vlan.foo' not found"));
    g_clear_error(&err);

    g_assert_null(device_get_prop(dev, "foo", &err));
    g_assert_error(err, ILLAN_ERROR, 0);
    g_assert_true(g_str_has_prefix(err->message,
                                   "Property 'spapr-vlan.foo' not found"));
    g_clear_error(&err);
    device_free(dev);
}

static void test_set_id(void)
{
    DeviceState *dev = new_vlan();

    set_ok(dev, "id", "lan0");
    g_assert_cmpstr(dev->id, ==, "lan0");
    set_ok(dev, "id", "lan1");
    g_assert_cmpstr(dev->id, ==, "lan1");
    set_fails(dev, "id", "", "Parameter 'id'");
    set_fails(dev, "id", "0lan", "not '0lan'");
    set_fails(dev, "id", "-lan", "not '-lan'");
    set_fails(dev, "id", "a b!", "not 'a b!'");
    g_assert_cmpstr(dev->id, ==, "lan1");
    set_ok(dev, "id", "net-0.a_b");
    assert_prop(dev, "id", "net-0.a_b");
    device_free(dev);
}

static void test_set_after_realize_fails(void)
{
    DeviceState *dev = new_vlan();

    dev->realized = true;
    set_fails(dev, "reg", "5",
              "Property 'spapr-vlan.reg' can't be set after realize");
    assert_prop(dev, "reg", "4294967295");
    device_free(dev);
}

static void test_globals_set_default(void)
{
    static const char *const globals[] = {
        "spapr-vlan.use-rx-buffer-pools=off",
        NULL,
    };
    DeviceState *dev, *after;

    qdev_set_globals(globals);
    dev = new_vlan();
    assert_prop(dev, "use-rx-buffer-pools", "off");
    /* Other properties keep their class defaults. */
    assert_prop(dev, "reg", "4294967295");
    /* A global is only a default: an explicit setting overrides it. */
    set_ok(dev, "use-rx-buffer-pools", "on");
    assert_prop(dev, "use-rx-buffer-pools", "on");

    qdev_set_globals(NULL);
    after = new_vlan();
    assert_prop(after, "use-rx-buffer-pools", "on");
    device_free(dev);
    device_free(after);
}

static void test_globals_match_exact_names(void)
{
    static const char *const globals[] = {
        "spapr-vlanx.reg=5",
        "spapr-vla.reg=6",
        "spapr-vlan.re=7",
        "spapr-vlan.reg8",
        "spapr-vlan.use-rx-buffer-pools-x=off",
        NULL,
    };
    DeviceState *dev;

    qdev_set_globals(globals);
    dev = new_vlan();
    assert_prop(dev, "reg", "4294967295");
    assert_prop(dev, "use-rx-buffer-pools", "on");
    device_free(dev);
    qdev_set_globals(NULL);
}

static void test_globals_later_wins(void)
{
    static const char *const globals[] = {
        "spapr-vlan.reg=1",
        "spapr-vlan.reg=2",
        NULL,
    };
    DeviceState *dev;

    qdev_set_globals(globals);
    dev = new_vlan();
    assert_prop(dev, "reg", "2");
    device_free(dev);
    qdev_set_globals(NULL);
}

static void test_globals_bad_value_fails_device_new(void)
{
    static const char *const globals[] = {
        "spapr-vlan.reg=bogus",
        NULL,
    };
    GError *err = NULL;

    qdev_set_globals(globals);
    g_assert_null(device_new(device_class_find(TYPE_SPAPR_VLAN), &err));
    qdev_set_globals(NULL);
    g_assert_error(err, ILLAN_ERROR, 0);
    g_assert_true(g_str_has_prefix(err->message, "global spapr-vlan.reg: "));
    g_assert_nonnull(strstr(err->message, "'bogus'"));
    g_error_free(err);
}

static void test_mac_round_trip(void)
{
    static const char *const macs[] = {
        "52:54:00:12:34:56", "00:00:00:00:00:01", "ff:ff:ff:ff:ff:ff",
        "0a:1b:2c:3d:4e:5f",
    };

    for (size_t i = 0; i < G_N_ELEMENTS(macs); i++) {
        MACAddr mac;
        g_autofree char *s = NULL;

        memset(&mac, 0xaa, sizeof(mac));
        g_assert_true(mac_parse(macs[i], &mac));
        s = mac_format(&mac);
        g_assert_cmpstr(s, ==, macs[i]);
    }
}

static void test_mac_parse_bytes(void)
{
    static const MACAddr expect = { { 0xde, 0xad, 0xbe, 0xef, 0x00, 0x7f } };
    MACAddr mac;
    g_autofree char *s = NULL;

    g_assert_true(mac_parse("DE:aD:bE:Ef:00:7F", &mac));
    g_assert_cmpmem(&mac, sizeof(mac), &expect, sizeof(expect));
    s = mac_format(&mac);
    g_assert_cmpstr(s, ==, "de:ad:be:ef:00:7f");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    netdev_type_register(&dummy_netdev);

    g_test_add_func("/qdev/class-find", test_class_find);
    g_test_add_func("/qdev/defaults", test_defaults);
    g_test_add_func("/qdev/bool/set", test_set_bool);
    g_test_add_func("/qdev/bool/rejects", test_set_bool_rejects);
    g_test_add_func("/qdev/uint32/set", test_set_uint32);
    g_test_add_func("/qdev/uint32/rejects", test_set_uint32_rejects);
    g_test_add_func("/qdev/macaddr/set", test_set_macaddr);
    g_test_add_func("/qdev/macaddr/rejects", test_set_macaddr_rejects);
    g_test_add_func("/qdev/netdev/undefined", test_set_netdev_undefined);
    g_test_add_func("/qdev/netdev/defined", test_set_netdev_defined);
    g_test_add_func("/qdev/unknown-property", test_unknown_property);
    g_test_add_func("/qdev/id", test_set_id);
    g_test_add_func("/qdev/set-after-realize-fails",
                    test_set_after_realize_fails);
    g_test_add_func("/qdev/globals/set-default", test_globals_set_default);
    g_test_add_func("/qdev/globals/later-wins", test_globals_later_wins);
    g_test_add_func("/qdev/globals/match-exact-names",
                    test_globals_match_exact_names);
    g_test_add_func("/qdev/globals/bad-value-fails-device-new",
                    test_globals_bad_value_fails_device_new);
    g_test_add_func("/qdev/mac/round-trip", test_mac_round_trip);
    g_test_add_func("/qdev/mac/parse-bytes", test_mac_parse_bytes);

    return g_test_run();
}
