/*
 * The command line: help output, one-line errors with exit status 1,
 * clean exits on SIGTERM and SIGINT, the machine types, and the options
 * QEMU's libqtest and management tools pass (-M none, -global,
 * --preconfig, -run-with, -daemonize, -pidfile, -chardev fd=N).
 */
#include "libqtest.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

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
    assert_contains(props, "alias pseries-1.0) (default: on)");
    assert_contains(old, "alias pseries-1.0) (default: off)");
    assert_contains(props, "offloads=<bool>");
    assert_contains(props, "lro=<bool>");
    assert_contains(props, "coalesce received TCP segments");
    /* Routing guests, not bridging ones: unicast to other MACs never
     * reaches a bridge on this device. */
    assert_contains(props, "forward, as routers or NAT hosts");
    assert_contains(props, "x-illan-subsections=<bool>");
    assert_contains(props, "pseries-7.2 and older) (default: on)");
    assert_contains(old, "pseries-7.2 and older) (default: off)");
    assert_contains(props, "bootindex=<int32>");
    assert_contains(props, "no firmware (default: -1)");
    /* Eight properties, one line each, after the heading. */
    g_assert_cmpuint(g_strv_length(lines), ==, 10);
}

static void test_machine_help(void)
{
    g_autofree char *out = run_ok("-M help");
    g_autofree char *out2 = run_ok("-machine help");

    /* QEMU's layout: alias lines before their type, newest first. */
    assert_contains(out, "Supported machines are:\n"
                    "pseries              pSeries Logical Partition (PAPR "
                    "compliant) (alias of pseries-10.1)\n"
                    "pseries-10.1         pSeries Logical Partition (PAPR "
                    "compliant) (default)\n"
                    "pseries-10.0 ");
    assert_contains(out, "\npseries-9.2 ");
    assert_contains(out, "\npseries-2.0          pSeries Logical Partition "
                    "(PAPR compliant) (alias of pseries-2.6)\npseries-2.6 ");
    assert_contains(out, "\npseries-1.0          pSeries Logical Partition "
                    "(PAPR compliant) (alias of pseries-2.5)\npseries-2.5 ");
    assert_contains(out, "\nnone                 empty machine\n");
    g_assert_cmpstr(out, ==, out2);
}

/* The default of @prop that -device spapr-vlan,help shows under
 * -M @machine. */
static char *prop_default(const char *machine, const char *prop)
{
    g_autofree char *args = g_strdup_printf("-M %s -device spapr-vlan,help",
                                            machine);
    g_autofree char *out = run_ok(args);
    g_autofree char *key = g_strdup_printf("\n  %s=", prop);
    const char *line = strstr(out, key);
    const char *def = line ? strstr(line, "(default: ") : NULL;

    g_assert_nonnull(def);
    def += strlen("(default: ");
    return g_strndup(def, strcspn(def, ")"));
}

/* Whether @name (a pseries type or alias) is one QEMU 7.2 has. */
static bool in_qemu_7_2(const char *name)
{
    unsigned major, minor;

    return sscanf(name, "pseries-%u.%u", &major, &minor) == 2 && major < 8;
}

/* Every pseries type, by name and by alias: only pseries-2.5 (and its
 * alias pseries-1.0) keeps the legacy receive path, as in QEMU; the
 * types QEMU 7.2 has write only the subsections it knows. */
static void test_machine_pools(void)
{
    g_autofree char *out = run_ok("-M help");
    g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
    unsigned checked = 0;

    for (char **l = lines; *l; l++) {
        g_autofree char *name = g_strndup(*l, strcspn(*l, " "));
        g_autofree char *def = NULL, *subs = NULL;
        bool legacy = !strcmp(name, "pseries-2.5") ||
                      !strcmp(name, "pseries-1.0");

        if (!g_str_has_prefix(name, "pseries")) {
            continue;
        }
        def = prop_default(name, "use-rx-buffer-pools");
        if (strcmp(def, legacy ? "off" : "on")) {
            g_error("-M %s: use-rx-buffer-pools defaults to %s", name, def);
        }
        subs = prop_default(name, "x-illan-subsections");
        if (strcmp(subs, in_qemu_7_2(name) ? "off" : "on")) {
            g_error("-M %s: x-illan-subsections defaults to %s", name, subs);
        }
        checked++;
    }
    /* 2.5 to 2.12, 3.0 to 10.1, and the three aliases. */
    g_assert_cmpuint(checked, ==, 33);
}

static void test_machine_options_help(void)
{
    g_autofree char *out = run_ok("-M pseries-1.0,help");

    assert_contains(out, "pseries-2.5 options:");
    assert_contains(out, "dumpdtb=<str>");
    assert_contains(out, "pins spapr-vlan.use-rx-buffer-pools=off");
    assert_contains(out, "pins spapr-vlan.x-illan-subsections=off");
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
    g_free(run_ok("-M pseries-2.5,dumpdtb=/dev/null -no-user-config "
                  "-nographic -vga none --nodefaults -run-with "
                  "exit-with-parent=off"));
    assert_contains(help, "-nographic");
    assert_contains(help, "accepted; does nothing: illan has no display");
    assert_contains(help, "-d ITEM[,...]");
    assert_contains(help, "-D FILE");
    assert_contains(help, "-msg timestamp=on|off");
    g_free(run_ok("-M pseries,dumpdtb=/dev/null -d guest_errors -D /dev/null "
                  "-msg timestamp=on"));
    /* As QEMU, which accepts it; illan has no guest name to print. */
    g_free(run_ok("-M pseries,dumpdtb=/dev/null -msg guest-name=on"));
}

/* -d help lists the items on stdout and exits 0, whatever follows. */
static void test_log_help(void)
{
    g_autofree char *out = run_ok("-d help -M nosuch");

    g_assert_true(g_str_has_prefix(out, "Log items (comma separated):\n"));
    assert_contains(out, "\nguest_errors ");
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
        { "-chardev socket,id=c", "socket needs id=ID and one of path=PATH" },
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
        { "-M none -m 5001k", "use a multiple of 4K up to 1T" },
        { "-M none -device spapr-vlan",
          "illan: -device spapr-vlan: No 'spapr-vio-bus' bus found for "
          "device 'spapr-vlan'" },
        { "-M none,dumpdtb=/tmp/x.dtb", "machine 'none' has no device tree" },
        { "-M none -guest ibmveth,dev=x",
          "illan: -guest ibmveth,dev=x: a built-in guest needs a device" },
        { "-global nosuch.x=1", "illan: -global nosuch.x=1: 'nosuch' is not "
          "a valid device model name" },
        { "-global spapr-vlan.foo=1", "illan: -global spapr-vlan.foo=1: "
          "Property 'spapr-vlan.foo' not found" },
        { "-global spapr-vlan.bootindex=x",
          "Property 'spapr-vlan.bootindex' doesn't take value 'x'" },
        { "-global driver=spapr-vlan,property=reg",
          "expected DRIVER.PROPERTY=VALUE or driver=DRIVER" },
        { "-global spapr-vlan.bootindex", "illan: -global "
          "spapr-vlan.bootindex: expected DRIVER.PROPERTY=VALUE" },
        { "-global driver=spapr-vlan,prop=reg,value=1",
          "Invalid parameter 'prop'" },
        { "-vga std", "illan: -vga std: only 'none' is supported" },
        { "-run-with chroot=/tmp", "illan: -run-with chroot=/tmp: 'chroot' is "
          "not supported" },
        { "-run-with exit-with-parent=maybe", "expects 'on' or 'off'" },
        { "-daemonize -run-with exit-with-parent=on",
          "cannot be combined with -run-with exit-with-parent=on" },
        { "-pidfile /nonexistent/x.pid", "illan: -pidfile /nonexistent/x.pid: "
          "cannot open the pid file" },
        { "-M none -chardev socket,id=m,fd=0 -mon chardev=m,mode=control",
          "descriptor 0 is not a socket" },
        { "-chardev socket,id=m,fd=999", "descriptor is not open" },
        { "-chardev socket,id=m,fd=x", "fd= expects a descriptor number" },
        { "-chardev socket,id=m,fd=3,path=/tmp/x", "one of path=PATH and fd=N" },
        { "-d bogus", "illan: -d bogus: unknown log item 'bogus' (-d help "
          "lists them)" },
        { "-d guest_errors,", "illan: -d guest_errors,: unknown log item ''" },
        { "-d guest_errors -D /nonexistent/x.log",
          "illan: -D /nonexistent/x.log: Error opening logfile "
          "/nonexistent/x.log: No such file or directory" },
        { "-msg timestamp=maybe", "illan: -msg timestamp=maybe: Parameter "
          "'timestamp' expects 'on' or 'off', not 'maybe'" },
        { "-msg guest-name=on,foo=1", "illan: -msg guest-name=on,foo=1: "
          "Invalid parameter 'foo'" },
        { "-d ''", "illan: -d : unknown log item '' (-d help lists them)" },
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

/* A QMP client of our own, for illan processes libqtest did not start. */

static char *read_line(int fd)
{
    GString *line = g_string_new(NULL);
    char c;

    while (read(fd, &c, 1) == 1 && c != '\n') {
        g_string_append_c(line, c);
    }
    return g_string_free(line, FALSE);
}

/* The reply to @cmd, skipping events. */
static char *qmp_raw(int fd, const char *cmd)
{
    g_assert_cmpint(write(fd, cmd, strlen(cmd)), ==, (ssize_t)strlen(cmd));
    for (;;) {
        char *line = read_line(fd);

        g_assert_cmpstr(line, !=, "");
        if (!strstr(line, "\"event\"")) {
            return line;
        }
        g_free(line);
    }
}

/* Reads the greeting on @fd and negotiates. */
static void qmp_handshake_raw(int fd)
{
    g_autofree char *greeting = read_line(fd);
    g_autofree char *ok = NULL;

    assert_contains(greeting, "{\"QMP\":");
    ok = qmp_raw(fd, "{\"execute\": \"qmp_capabilities\"}\n");
    assert_contains(ok, "\"return\"");
}

typedef struct Dial {
    const char *path;
    int fd;
} Dial;

static bool dial_once(void *opaque)
{
    Dial *d = opaque;
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    g_strlcpy(addr.sun_path, d->path, sizeof(addr.sun_path));
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0) {
        d->fd = fd;
        return true;
    }
    close(fd);
    return false;
}

/* Connects to a -qmp unix:PATH,server=on monitor once it listens. */
static int qmp_dial(const char *path)
{
    Dial d = { path, -1 };

    qtest_wait_until(dial_once, &d, QTEST_WAIT_S, "QMP at %s", path);
    qmp_handshake_raw(d.fd);
    return d.fd;
}

static pid_t spawn_illan(const char *args)
{
    g_autofree char *cmd = g_strdup_printf("%s %s", illan_binary(), args);
    g_auto(GStrv) argv = NULL;
    GPid pid;

    g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, NULL));
    g_assert_true(g_spawn_async(NULL, argv, NULL,
                                G_SPAWN_DO_NOT_REAP_CHILD |
                                G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
                                &pid, NULL));
    return pid;
}

static int wait_status(pid_t pid)
{
    int status;

    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    g_assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static char *tmp_path(const char *what)
{
    static int counter;

    return g_strdup_printf("%s/illan-cmdline-%d-%d.%s", g_get_tmp_dir(),
                           getpid(), counter++, what);
}

/* -global, in both forms, after the machine type's globals. */
static void test_global(void)
{
    g_autofree char *off = run_ok("-global spapr-vlan.use-rx-buffer-pools=off "
                                  "-device spapr-vlan,help");
    g_autofree char *on = run_ok("-M pseries-2.5 -global driver=spapr-vlan,"
                                 "property=use-rx-buffer-pools,value=on "
                                 "-device spapr-vlan,help");
    QTestState *s;
    JsonObject *rsp;

    assert_contains(off, "alias pseries-1.0) (default: off)");
    assert_contains(on, "alias pseries-1.0) (default: on)");
    /* The last one wins; the device takes it, and QMP shows it. */
    s = qtest_init("-global spapr-vlan.bootindex=2 "
                   "-global spapr-vlan.bootindex=3 "
                   "-device spapr-vlan,id=nic0 "
                   "-device spapr-vlan,id=nic1,bootindex=7");
    rsp = qtest_qmp(s, "{'execute': 'qom-get', 'arguments': {'path': "
                       "'/machine/peripheral/nic0', 'property': "
                       "'bootindex'}}");
    g_assert_cmpint(json_object_get_int_member(rsp, "return"), ==, 3);
    json_object_unref(rsp);
    rsp = qtest_qmp(s, "{'execute': 'qom-get', 'arguments': {'path': "
                       "'/machine/peripheral/nic1', 'property': "
                       "'bootindex'}}");
    g_assert_cmpint(json_object_get_int_member(rsp, "return"), ==, 7);
    json_object_unref(rsp);
    qtest_quit(s);
}

static JsonObject *qmp_ok(QTestState *s, const char *cmd)
{
    JsonObject *rsp = qtest_qmp(s, "%s", cmd);

    if (!json_object_has_member(rsp, "return")) {
        g_error("%s: no return", cmd);
    }
    return rsp;
}

static void assert_qmp_error(QTestState *s, const char *cmd,
                             const char *desc)
{
    g_autoptr(JsonObject) rsp = qtest_qmp(s, "%s", cmd);
    JsonObject *err = json_object_get_object_member(rsp, "error");

    g_assert_nonnull(err);
    assert_contains(json_object_get_string_member(err, "desc"), desc);
}

/* -M none, as QEMU's QMP tests use it: netdevs, QMP and qtest, no RAM
 * unless -m asks, no devices. */
static void test_machine_none(void)
{
    g_autofree char *sock = g_strdup_printf("%s/illan-none-%d.sock",
                                            g_get_tmp_dir(), getpid());
    QTestState *s = qtest_initf("-nodefaults -machine none -netdev stream,"
                                "id=n0,server=on,addr.type=unix,"
                                "addr.path=%s", sock);
    JsonObject *rsp = qmp_ok(s, "{'execute': 'query-status'}");

    g_assert_cmpstr(json_object_get_string_member(
                        json_object_get_object_member(rsp, "return"),
                        "status"), ==, "running");
    json_object_unref(rsp);
    json_object_unref(qmp_ok(s, "{'execute': 'x-query-net-stats'}"));
    g_free(qtest_cmd(s, "clock_step 10"));
    /* No RAM: nothing to write or read, and nothing breaks. */
    qtest_send_raw(s, "writeb 0x0 0x1\n", strlen("writeb 0x0 0x1\n"));
    g_free(qtest_recv_line(s));
    qtest_quit(s);
    unlink(sock);
    /* Any page multiple, as QEMU's test-hmp asks for 2 MiB. */
    s = qtest_init("-M none -m 2");
    qtest_writel(s, 0x100, 0x12345678);
    g_assert_cmphex(qtest_readl(s, 0x100), ==, 0x12345678);
    g_assert_cmphex(qtest_readl(s, 2 << 20), ==, 0);
    qtest_quit(s);
}

/* --preconfig: only commands that allow it, until x-exit-preconfig. */
static void test_preconfig(void)
{
    QTestState *s = qtest_init("--preconfig -device spapr-vlan,id=nic0");
    JsonObject *rsp = qmp_ok(s, "{'execute': 'query-status'}");

    g_assert_cmpstr(json_object_get_string_member(
                        json_object_get_object_member(rsp, "return"),
                        "status"), ==, "prelaunch");
    json_object_unref(rsp);
    assert_qmp_error(s, "{'execute': 'x-query-net-stats'}",
                     "permitted only after machine initialization");
    json_object_unref(qmp_ok(s, "{'execute': 'x-exit-preconfig'}"));
    json_object_unref(qtest_qmp_eventwait(s, "RESUME"));
    json_object_unref(qmp_ok(s, "{'execute': 'x-query-net-stats'}"));
    rsp = qmp_ok(s, "{'execute': 'qom-get', 'arguments': {'path': "
                    "'/machine/peripheral/nic0', 'property': 'reg'}}");
    g_assert_cmpint(json_object_get_int_member(rsp, "return"), ==,
                    0x71000000);
    json_object_unref(rsp);
    assert_qmp_error(s, "{'execute': 'x-exit-preconfig'}",
                     "only before machine initialization");
    qtest_quit(s);
}

/* An error in x-exit-preconfig ends the run, as on the command line. */
static void test_preconfig_error(void)
{
    g_autofree char *qmp = tmp_path("qmp");
    g_autofree char *args = g_strdup_printf("-preconfig -M none -device "
                                            "spapr-vlan -qmp unix:%s,"
                                            "server=on,wait=off", qmp);
    pid_t pid = spawn_illan(args);
    int fd = qmp_dial(qmp);
    g_autofree char *rsp = qmp_raw(fd, "{\"execute\": \"x-exit-preconfig\"}\n");

    assert_contains(rsp, "No 'spapr-vio-bus' bus found for device "
                    "'spapr-vlan'");
    g_assert_cmpint(wait_status(pid), ==, 1);
    close(fd);
}

/* -run-with exit-with-parent=on: a parent killed takes illan with it.  We
 * are a subreaper (main()), so illan, orphaned, becomes our child. */
static void test_exit_with_parent(void)
{
    g_autofree char *qmp = tmp_path("qmp");
    g_autofree char *args = g_strdup_printf("-run-with exit-with-parent=on "
                                            "-M none -qmp unix:%s,server=on,"
                                            "wait=off", qmp);
    int pids[2];
    pid_t parent, illan;
    int fd;

    g_assert_cmpint(pipe(pids), ==, 0);
    parent = fork();
    g_assert_cmpint(parent, >=, 0);
    if (parent == 0) {
        pid_t child = spawn_illan(args);

        if (write(pids[1], &child, sizeof(child)) != sizeof(child)) {
            _exit(1);
        }
        for (;;) {
            pause();
        }
    }
    close(pids[1]);
    g_assert_cmpint(read(pids[0], &illan, sizeof(illan)), ==, sizeof(illan));
    close(pids[0]);
    /* Serving QMP: the death signal was armed before the monitors. */
    fd = qmp_dial(qmp);
    kill(parent, SIGKILL);
    g_assert_cmpint(waitpid(parent, NULL, 0), ==, parent);
    g_assert_cmpint(wait_status(illan), ==, 0);
    close(fd);
}

/* -daemonize -pidfile: the parent returns once the daemon serves; the
 * file names it; it is gone when the daemon ends. */
static void test_daemonize(void)
{
    g_autofree char *qmp = tmp_path("qmp");
    g_autofree char *pidfile = tmp_path("pid");
    g_autofree char *args = g_strdup_printf("-daemonize -pidfile %s -M none "
                                            "-qmp unix:%s,server=on,wait=off",
                                            pidfile, qmp);
    g_autofree char *out = NULL;
    g_autofree char *text = NULL;
    g_autofree char *second = NULL, *err = NULL, *out2 = NULL;
    g_autofree char *out3 = NULL, *err3 = NULL;
    g_autofree char *rsp = NULL;
    pid_t pid;
    int fd;

    /* The parent exits when the daemon is ready, having said nothing. */
    out = run_ok(args);
    g_assert_cmpstr(out, ==, "");
    /* Ready means ready: no retry needed for either. */
    g_assert_true(g_file_get_contents(pidfile, &text, NULL, NULL));
    pid = atoi(text);
    g_assert_cmpint(pid, >, 0);
    g_assert_cmpint(kill(pid, 0), ==, 0);
    /* The file stays locked while the daemon lives. */
    second = g_strdup_printf("-M none -pidfile %s", pidfile);
    g_assert_cmpint(illan_run(second, &out2, &err), ==, 1);
    assert_contains(err, "cannot lock the pid file");
    fd = qmp_dial(qmp);
    g_assert_true(fd >= 0);
    rsp = qmp_raw(fd, "{\"execute\": \"quit\"}\n");
    assert_contains(rsp, "\"return\"");
    /* Orphaned by its parent, the daemon is our child now (subreaper). */
    g_assert_cmpint(wait_status(pid), ==, 0);
    g_assert_false(g_file_test(pidfile, G_FILE_TEST_EXISTS));
    close(fd);
    /* An error in the daemon is the parent's exit status. */
    g_assert_cmpint(illan_run("-daemonize -M none -device spapr-vlan", &out3,
                              &err3), ==, 1);
    assert_contains(err3, "illan: -device spapr-vlan: No 'spapr-vio-bus' "
                    "bus found");
}

/* -chardev socket,fd=N: one end of a socketpair (QEMU's Python
 * QEMUMachine), or a listening socket. */
static void test_chardev_fd(void)
{
    g_autofree char *path = tmp_path("sock");
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    int sv[2], lfd, cfd;
    g_autofree char *rsp = NULL;
    QTestState *s;

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
                    ==, 0);
    lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    g_strlcpy(addr.sun_path, path, sizeof(addr.sun_path));
    g_assert_cmpint(bind(lfd, (struct sockaddr *)&addr, sizeof(addr)), ==, 0);
    g_assert_cmpint(listen(lfd, 1), ==, 0);
    /* Only illan's end is inherited. */
    fcntl(sv[1], F_SETFD, 0);
    s = qtest_initf("-M none -chardev socket,id=mon,fd=%d "
                    "-mon chardev=mon,mode=control "
                    "-chardev socket,id=lis,fd=%d "
                    "-mon chardev=lis,mode=control", sv[1], lfd);
    close(sv[1]);
    close(lfd);
    qmp_handshake_raw(sv[0]);
    rsp = qmp_raw(sv[0], "{\"execute\": \"query-status\"}\n");
    assert_contains(rsp, "\"status\": \"running\"");
    cfd = qmp_dial(path);
    qtest_quit(s);
    close(cfd);
    close(sv[0]);
    unlink(path);
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
    /* Orphaned illan processes (a daemon, one whose parent we killed)
     * become our children, for waitpid(). */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    g_test_add_func("/cmdline/device-help", test_device_help);
    g_test_add_func("/cmdline/machine-help", test_machine_help);
    g_test_add_func("/cmdline/machine-options-help",
                    test_machine_options_help);
    g_test_add_func("/cmdline/misc-ok", test_misc_ok);
    g_test_add_func("/cmdline/errors", test_errors);
    g_test_add_func("/cmdline/log-help", test_log_help);
    g_test_add_func("/cmdline/signals", test_signals_exit_cleanly);
    g_test_add_func("/cmdline/machine-pools", test_machine_pools);
    g_test_add_func("/cmdline/global", test_global);
    g_test_add_func("/cmdline/machine-none", test_machine_none);
    g_test_add_func("/cmdline/preconfig", test_preconfig);
    g_test_add_func("/cmdline/preconfig-error", test_preconfig_error);
    g_test_add_func("/cmdline/exit-with-parent", test_exit_with_parent);
    g_test_add_func("/cmdline/daemonize", test_daemonize);
    g_test_add_func("/cmdline/chardev-fd", test_chardev_fd);
    return g_test_run();
}
