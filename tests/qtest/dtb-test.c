/*
 * The device tree written by -M pseries,dumpdtb=FILE, read back with the
 * real dtc and fdtget.
 */
#include "libqtest.h"

#include <string.h>
#include <unistd.h>

typedef struct Dtb {
    char *dir;
    char *path;
} Dtb;

static Dtb dump_machine(const char *machine, const char *args)
{
    Dtb d;
    g_autofree char *cmd = NULL, *out = NULL, *err = NULL;

    d.dir = g_dir_make_tmp("illan-dtb-XXXXXX", NULL);
    g_assert_nonnull(d.dir);
    d.path = g_build_filename(d.dir, "x.dtb", NULL);
    cmd = g_strdup_printf("-M %s,dumpdtb=%s %s", machine, d.path, args);
    g_assert_cmpint(illan_run(cmd, &out, &err), ==, 0);
    g_assert_cmpstr(err, ==, "");
    g_assert_true(g_file_test(d.path, G_FILE_TEST_EXISTS));
    return d;
}

static Dtb dump(const char *args)
{
    return dump_machine("pseries", args);
}

static void dtb_free(Dtb *d)
{
    unlink(d->path);
    rmdir(d->dir);
    g_free(d->path);
    g_free(d->dir);
}

static char *tool(const char *env, const char *args)
{
    g_autofree char *cmd = g_strdup_printf("%s %s", g_getenv(env), args);
    g_auto(GStrv) argv = NULL;
    char *out = NULL;
    g_autofree char *err = NULL;
    int status;

    g_assert_nonnull(g_getenv(env));
    g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, NULL));
    g_assert_true(g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                               &out, &err, &status, NULL));
    if (!g_spawn_check_wait_status(status, NULL)) {
        g_error("%s failed: %s", cmd, err);
    }
    g_strchomp(out);
    return out;
}

/* Asserts fdtget's view of one property. */
static void check_prop(const Dtb *d, const char *type, const char *node,
                       const char *prop, const char *expect)
{
    g_autofree char *quoted = g_shell_quote(prop);
    g_autofree char *args = g_strdup_printf("-t %s %s %s %s", type, d->path,
                                            node, quoted);
    g_autofree char *got = tool("FDTGET", args);

    if (strcmp(got, expect)) {
        g_error("%s %s: got '%s', expected '%s'", node, prop, got, expect);
    }
}

static void test_lan_node(void)
{
    Dtb d = dump("-nodefaults -device spapr-vlan,mac=52:54:00:12:34:56");
    const char *lan = "/vdevice/l-lan@71000000";
    g_autofree char *dts = NULL, *args = NULL;

    args = g_strdup_printf("-I dtb -O dts %s", d.path);
    dts = tool("DTC", args);
    g_assert_nonnull(strstr(dts, "l-lan@71000000 {"));
    check_prop(&d, "x", lan, "reg", "71000000");
    check_prop(&d, "s", lan, "device_type", "network");
    check_prop(&d, "s", lan, "compatible", "IBM,l-lan");
    check_prop(&d, "x", lan, "interrupts", "1100 0");
    check_prop(&d, "u", lan, "ibm,#dma-address-cells", "2");
    check_prop(&d, "u", lan, "ibm,#dma-size-cells", "2");
    check_prop(&d, "x", lan, "ibm,my-dma-window", "71000000 0 0 0 10000000");
    /* 52: locally administered unicast, so 6 bytes. */
    check_prop(&d, "bx", lan, "local-mac-address", "52 54 0 12 34 56");
    check_prop(&d, "u", lan, "ibm,mac-address-filters", "16");
    /* Linux offers checksum offload only when it is there. */
    check_prop(&d, "u", lan, "ibm,illan-options", "0");
    dtb_free(&d);
}

static void test_tree_skeleton(void)
{
    Dtb d = dump("-nodefaults -m 512M -device spapr-vlan");

    check_prop(&d, "s", "/vdevice", "device_type", "vdevice");
    check_prop(&d, "s", "/vdevice", "compatible", "IBM,vdevice");
    check_prop(&d, "u", "/vdevice", "#address-cells", "1");
    check_prop(&d, "u", "/vdevice", "#size-cells", "0");
    check_prop(&d, "u", "/vdevice", "#interrupt-cells", "2");
    check_prop(&d, "bx", "/vdevice", "interrupt-controller", "");
    check_prop(&d, "s", "/memory@0", "device_type", "memory");
    check_prop(&d, "x", "/memory@0", "reg", "0 0 0 20000000");
    check_prop(&d, "u", "/", "#address-cells", "2");
    check_prop(&d, "u", "/", "#size-cells", "2");
    g_autofree char *args = g_strdup_printf("-l %s /chosen", d.path);
    g_autofree char *children = tool("FDTGET", args);

    g_assert_cmpstr(children, ==, "");
    dtb_free(&d);
}

static void test_mac_rule_and_regs(void)
{
    Dtb d = dump("-nodefaults -device spapr-vlan,mac=00:11:22:33:44:55 "
                 "-device spapr-vlan -device spapr-vlan,reg=0x71000010,id=x");
    g_autofree char *args = g_strdup_printf("-l %s /vdevice", d.path);
    g_autofree char *nodes = tool("FDTGET", args);

    /* Not locally administered: 8 bytes, two leading zeros. */
    check_prop(&d, "bx", "/vdevice/l-lan@71000000", "local-mac-address",
               "0 0 0 11 22 33 44 55");
    check_prop(&d, "x", "/vdevice/l-lan@71000001", "interrupts", "1101 0");
    /* An unset MAC gets QEMU's first default. */
    check_prop(&d, "bx", "/vdevice/l-lan@71000001", "local-mac-address",
               "52 54 0 12 34 56");
    check_prop(&d, "x", "/vdevice/l-lan@71000010", "ibm,my-dma-window",
               "71000010 0 0 0 10000000");
    check_prop(&d, "x", "/vdevice/l-lan@71000010", "interrupts", "1110 0");
    g_assert_cmpstr(nodes, ==,
                    "l-lan@71000000\nl-lan@71000001\nl-lan@71000010");
    dtb_free(&d);
}

/* Defaults skip MACs in use; auto unit addresses skip used interrupts. */
static void test_defaults_avoid_collisions(void)
{
    Dtb d = dump("-nodefaults -device spapr-vlan,mac=52:54:00:12:34:56 "
                 "-device spapr-vlan,reg=0x1000 -device spapr-vlan");

    check_prop(&d, "x", "/vdevice/l-lan@1000", "interrupts", "1101 0");
    check_prop(&d, "bx", "/vdevice/l-lan@1000", "local-mac-address",
               "52 54 0 12 34 57");
    check_prop(&d, "x", "/vdevice/l-lan@71000002", "interrupts", "1102 0");
    check_prop(&d, "bx", "/vdevice/l-lan@71000002", "local-mac-address",
               "52 54 0 12 34 58");
    dtb_free(&d);
}

static void test_legacy_machine(void)
{
    Dtb d = dump_machine("pseries-1.0", "-nodefaults -device spapr-vlan");
    g_autofree char *args = NULL, *props = NULL;

    check_prop(&d, "s", "/vdevice/l-lan@71000000", "compatible", "IBM,l-lan");
    /* QEMU's tree: offloads=off, so no ibm,illan-options. */
    args = g_strdup_printf("-l -p %s /vdevice/l-lan@71000000", d.path);
    props = tool("FDTGET", args);
    g_assert_null(strstr(props, "ibm,illan-options"));
    /* QEMU advertises no multicast filters. */
    check_prop(&d, "u", "/vdevice/l-lan@71000000", "ibm,mac-address-filters",
               "0");
    dtb_free(&d);
}

/*
 * QEMU's own numbers for "-nodefaults" with two LANs (its nvram holds
 * 0x71000000), read from qemu-system-ppc64 7.2's dumpdtb: pseries-3.0 and older hand sources
 * out first free from 0x1000, after the EPOW source (and from pseries-2.8
 * the hot-plug one), the nvram and the default PHB's four LSIs; from
 * pseries-3.1 on the number follows the unit address.
 */
static void test_legacy_interrupts(void)
{
    static const struct {
        const char *machine, *first, *second;
    } cases[] = {
        { "pseries-1.0", "1006 0", "1007 0" },
        { "pseries-2.5", "1006 0", "1007 0" },
        { "pseries-2.7", "1006 0", "1007 0" },
        { "pseries-2.8", "1007 0", "1008 0" },
        { "pseries-3.0", "1007 0", "1008 0" },
        { "pseries-3.1", "1120 0", "1110 0" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        Dtb d = dump_machine(cases[i].machine, "-nodefaults "
                             "-device spapr-vlan,reg=0x71000020 "
                             "-device spapr-vlan,reg=0x71000010");

        /* In command-line order, whatever the unit addresses. */
        g_test_message("%s", cases[i].machine);
        check_prop(&d, "x", "/vdevice/l-lan@71000020", "interrupts",
                   cases[i].first);
        check_prop(&d, "x", "/vdevice/l-lan@71000010", "interrupts",
                   cases[i].second);
        dtb_free(&d);
    }
}

static void test_offloads_off_filters(void)
{
    Dtb d = dump("-nodefaults -device spapr-vlan,offloads=off");

    check_prop(&d, "u", "/vdevice/l-lan@71000000", "ibm,mac-address-filters",
               "0");
    dtb_free(&d);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/dtb/lan-node", test_lan_node);
    g_test_add_func("/dtb/skeleton", test_tree_skeleton);
    g_test_add_func("/dtb/mac-rule-and-regs", test_mac_rule_and_regs);
    g_test_add_func("/dtb/defaults-avoid-collisions",
                    test_defaults_avoid_collisions);
    g_test_add_func("/dtb/legacy-machine", test_legacy_machine);
    g_test_add_func("/dtb/offloads-off-filters", test_offloads_off_filters);
    g_test_add_func("/dtb/legacy-interrupts", test_legacy_interrupts);
    return g_test_run();
}
