/*
 * The command line: help output, one-line errors with exit status 1, and
 * clean exits on SIGTERM and SIGINT.
 */
#include "libqtest.h"

#include <signal.h>
#include <string.h>

static void assert_contains(const char *haystack, const char *needle)
{
    if (!strstr(haystack, needle)) {
        g_error("expected '%s' in:\n%s", needle, haystack);
    }
}

static char *run_ok(const char *args)
{
    char *out = NULL;
    g_autofree char *err = NULL;
    int status = illan_run(args, &out, &err);

    if (status != 0) {
        g_error("illan %s: status %d, stderr: %s", args, status, err);
    }
    g_assert_cmpstr(err, ==, "");
    return out;
}

static void test_device_help(void)
{
    g_autofree char *list = run_ok("-device help");
    g_autofree char *props = run_ok("-device spapr-vlan,help");
    g_autofree char *old = run_ok("-M pseries-1.0 -device spapr-vlan,help");
    g_auto(GStrv) lines = g_strsplit(props, "\n", -1);

    assert_contains(list, "name \"spapr-vlan\"");
    assert_contains(props, "mac=<macaddr>");
    assert_contains(props, "netdev=<netdev>");
    assert_contains(props, "reg=<uint32>");
    assert_contains(props, "(default: 0xffffffff)");
    assert_contains(props, "use-rx-buffer-pools=<bool>");
    assert_contains(props, "pinned by pseries-1.0) (default: on)");
    assert_contains(old, "pinned by pseries-1.0) (default: off)");
    /* Four properties, one line each, after the heading. */
    g_assert_cmpuint(g_strv_length(lines), ==, 6);
}

static void test_machine_help(void)
{
    g_autofree char *out = run_ok("-M help");
    g_autofree char *out2 = run_ok("-machine help");

    assert_contains(out, "pseries-1.0 ");
    assert_contains(out, "pseries-2.0 ");
    assert_contains(out, "(alias of pseries-2.0)");
    assert_contains(out, "(default)");
    g_assert_cmpstr(out, ==, out2);
}

static void test_machine_options_help(void)
{
    g_autofree char *out = run_ok("-M pseries-1.0,help");

    assert_contains(out, "pseries-1.0 options:");
    assert_contains(out, "dumpdtb=<str>");
    assert_contains(out, "pins spapr-vlan.use-rx-buffer-pools=off");
}

static void test_misc_ok(void)
{
    g_autofree char *version = run_ok("-version");
    g_autofree char *help = run_ok("-h");
    g_autofree char *netdevs = run_ok("-netdev help");
    g_autofree char *afxdp = run_ok("-netdev af-xdp,help");
    g_autofree char *dgram = run_ok("-netdev dgram,help");

    assert_contains(version, "illan version ");
    assert_contains(help, "-qtest unix:PATH|stdio");
    assert_contains(help, "-device DRIVER");
    assert_contains(netdevs, "Available netdev backend types:");
    assert_contains(netdevs, "dgram ");
    assert_contains(netdevs, "stream ");
    assert_contains(netdevs, "af-xdp ");
    assert_contains(afxdp, "af-xdp options (id=ID is required):");
    assert_contains(afxdp, "ifname=NAME");
    assert_contains(afxdp, "sock-fds=A[:B...]");
    assert_contains(dgram, "remote.type=inet|unix");
    g_free(run_ok("-M pseries,dumpdtb=/dev/null -nodefaults -m 1G "
                  "-name guest=a,,b,process=illan-t -display none "
                  "-audio none -accel kvm -accel qtest -S"));
}

/* Each error is one line naming the option, and exit status 1. */
static void test_errors(void)
{
    static const struct {
        const char *args;
        const char *expect;
    } cases[] = {
        { "-bogus", "illan: -bogus: invalid option" },
        { "disk.img", "illan: disk.img: unexpected argument" },
        { "-m", "illan: -m: requires an argument" },
        { "-device spapr-vlan,foo=1",
          "illan: -device spapr-vlan,foo=1: Property 'spapr-vlan.foo' not "
          "found" },
        { "-device spapr-vlan,use-rx-buffer-pools=maybe",
          "'spapr-vlan.use-rx-buffer-pools' doesn't take value 'maybe'" },
        { "-device spapr-vlan,mac=52:54:00:12:34",
          "'spapr-vlan.mac' doesn't take value '52:54:00:12:34'" },
        { "-device spapr-vlan,reg=0x100000000",
          "'spapr-vlan.reg' doesn't take value" },
        { "-device spapr-vlan,netdev=n0",
          "Property 'spapr-vlan.netdev' can't find value 'n0'" },
        { "-device nosuch", "'nosuch' is not a valid device model name" },
        { "-device nosuch,help", "'nosuch' is not a valid device model name" },
        { "-device spapr-vlan,reg=0x71000000 -device spapr-vlan,reg=0x71000000",
          "reg=0x71000000 is already used by l-lan@71000000" },
        { "-device spapr-vlan,reg=0x71000000 -device spapr-vlan,reg=0x71000100",
          "maps to interrupt 0x1100, already used by l-lan@71000000" },
        { "-device spapr-vlan,id=a -device spapr-vlan,id=a",
          "Duplicate device ID 'a'" },
        { "-device spapr-vlan,id=1x", "Parameter 'id' expects an identifier" },
        { "-M nosuch", "illan: -machine nosuch: unsupported machine type" },
        { "-M pseries,foo=1", "Invalid parameter 'foo'" },
        { "-M pseries,accel=kvm", "accelerator 'kvm' is not available" },
        { "-m 3k", "illan: -m 3k: RAM size 3072 is not supported" },
        { "-m lots", "illan: -m lots: Parameter 'size' expects a size" },
        { "-m 2T", "is not supported" },
        { "-display gtk", "illan: -display gtk: only 'none' is supported" },
        { "-audio pa", "illan: -audio pa: only 'none' is supported" },
        { "-accel kvm", "illan: -accel kvm: no accelerator in the list" },
        { "-netdev foo,id=x", "Parameter 'type' does not accept value 'foo'" },
        { "-netdev id=x", "Parameter 'type' is missing" },
        { "-netdev tap,help", "no such netdev type (-netdev help lists them)" },
        { "-netdev dgram,id=n0", "Parameter 'local.type' is missing" },
        { "-netdev dgram,id=n0,local.type=unix,local.path=/tmp/illan-c1.sock,"
          "remote.type=unix,remote.path=/tmp/illan-c2.sock "
          "-device spapr-vlan,netdev=n0 -device spapr-vlan,netdev=n0",
          "netdev 'n0' is already in use by NIC 'l-lan@71000000'" },
        { "-netdev stream,id=s0,addr.type=unix,"
          "addr.path=/nonexistent/illan.sock",
          "Failed to connect to /nonexistent/illan.sock" },
        { "-chardev file,id=c,path=/tmp/x", "backend 'file' is not supported" },
        { "-chardev socket,id=c", "socket needs id=ID and path=PATH" },
        { "-mon chardev=nope,mode=control", "chardev 'nope' is not defined" },
        { "-chardev socket,id=c,path=/tmp/x -mon chardev=c",
          "mode 'readline' is not supported" },
        { "-qtest unix:/nonexistent/illan.sock",
          "illan: -qtest unix:/nonexistent/illan.sock: Failed to connect" },
        { "-qtest tcp:localhost:4444", "is not a qtest channel" },
        { "-qtest stdio -qtest-log /nonexistent/log",
          "illan: -qtest-log /nonexistent/log: No such file or directory" },
        { "-device mac=1,help", "-device mac=1,help: Parameter 'driver' is "
          "missing" },
        { "-device reg=5", "-device reg=5: Parameter 'driver' is missing" },
        { "-device spapr-vlan,mac=01:00:5e:00:00:01",
          "is a multicast address" },
        { "-accel qtest -accel bogus,x=1", "-accel bogus,x=1: Invalid "
          "parameter 'x'" },
        { "-name guest=x,color=red", "Invalid parameter 'color'" },
        { "-qmp tcp:localhost:4444", "is not a QMP channel: use unix:PATH" },
        { "-qmp unix:/tmp/illan-q.sock,path=b,server=on,wait=off",
          "Invalid parameter" },
        { "-chardev socket,id=c,path=/tmp/illan-m.sock "
          "-mon chardev=c,mode=control -mon chardev=c,mode=control",
          "chardev 'c' already has a monitor" },
        { "-qmp unix:/nonexistent/q.sock",
          "illan: -qmp unix:/nonexistent/q.sock: Failed to connect to "
          "'/nonexistent/q.sock'" },
        { "-qmp unix:/nonexistent/q.sock,server=on,wait=off",
          "-qmp unix:/nonexistent/q.sock,server=on,wait=off: Failed to "
          "listen on '/nonexistent/q.sock'" },
        { "-qmp unix:/tmp/illan-q.sock,server=maybe",
          "Parameter 'server' expects 'on' or 'off'" },
        { "-M pseries,dumpdtb=/nonexistent/x.dtb",
          "cannot write /nonexistent/x.dtb: No such file or directory" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *out = NULL, *err = NULL;
        g_autofree char *args = g_strdup_printf("-nodefaults %s",
                                                cases[i].args);
        int status = illan_run(args, &out, &err);
        const char *nl = strchr(err, '\n');

        if (status != 1 || !g_str_has_prefix(err, "illan: ") ||
            !strstr(err, cases[i].expect) || !nl || nl[1]) {
            g_error("illan %s: status %d, stderr '%s', expected one line "
                    "with '%s'", args, status, err, cases[i].expect);
        }
    }
}

static void test_signals_exit_cleanly(void)
{
    QTestState *s = qtest_init("-nodefaults -device spapr-vlan");
    qtest_quit_signal(s, SIGINT);
    s = qtest_init("-nodefaults -S");
    qtest_quit_signal(s, SIGTERM);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cmdline/device-help", test_device_help);
    g_test_add_func("/cmdline/machine-help", test_machine_help);
    g_test_add_func("/cmdline/machine-options-help",
                    test_machine_options_help);
    g_test_add_func("/cmdline/misc-ok", test_misc_ok);
    g_test_add_func("/cmdline/errors", test_errors);
    g_test_add_func("/cmdline/signals", test_signals_exit_cleanly);
    return g_test_run();
}
