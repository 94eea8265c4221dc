/*
 * Two-process migration: a source illan with frames flowing in from a
 * unix dgram socket and a guest (the libqos ibmveth model) consuming
 * them, migrated over each URI to a second illan; the guest carries on
 * there.  Also the streams a destination must refuse, each with its
 * message, and a destination that still accepts a good stream after.
 * And the state a guest changed (its MAC and filters) and the announce
 * after an incoming migration and from QMP announce-self.
 */
#include "migration-helpers.h"
#include "libqos/eth-frames.h"

#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define RAM_SIZE    (64ULL << 20)

/*
 * The guest runs on the source past the queue's first wrap, with
 * @pending frames delivered but not yet read; after @migrate_fn moves
 * it, the destination shows the same pools, the pending frames come out
 * next, and new frames follow them with no gap and no repeat.
 */
typedef void (*MigrateFn)(Rig *r, const char *machine, const char *pools);

static void source_run(Rig *r, const char *machine, const char *pools,
                       const char *extra, unsigned pending)
{
    r->src = rig_start(r, r->src_dev, machine, pools, extra);
    rig_open_guest(r, RAM_SIZE);
    /* Batches of 5: page mode takes buffers first fit, so small frames
     * use big buffers too, and 8 big ones must last a batch. */
    for (int round = 0; round < 12; round++) {
        for (int i = 0; i < 5; i++) {
            rig_inject(r, r->src_dev);
        }
        for (int i = 0; i < 5; i++) {
            rig_expect_next(r);
        }
    }
    for (unsigned i = 0; i < pending; i++) {
        rig_inject(r, r->src_dev);
    }
    wait_delivered(r->src, r->sent);
}

static void guest_continues(Rig *r, const char *src_pools)
{
    g_autofree char *dst_pools = pool_table(r->dst);
    g_autofree char *state = run_state(r->dst);

    g_assert_cmpstr(state, ==, "running");
    g_assert_cmpstr(dst_pools, ==, src_pools);
    g_test_message("pools before and after: %s", dst_pools);
    qibmveth_migrate(r->veth, r->dst);
    while (r->seen < r->sent) {
        rig_expect_next(r);
    }
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 5; i++) {
            rig_inject(r, r->dst_dev);
        }
        for (int i = 0; i < 5; i++) {
            rig_expect_next(r);
        }
    }
    g_assert_cmpint(qibmveth_close(r->veth), ==, H_SUCCESS);
}

static void two_process(const char *machine, const char *pools,
                        MigrateFn migrate_fn, bool stream_fd)
{
    Rig r;
    g_autofree char *src_pools = NULL, *extra = NULL;

    rig_init(&r);
    if (stream_fd) {
        extra = g_strdup_printf("5>%s/stream", r.dir);
    }
    source_run(&r, machine, pools, extra, 7);
    src_pools = pool_table(r.src);
    migrate_fn(&r, machine, pools);
    /* Stopped for good: what reaches the source now is not the guest's. */
    rig_inject(&r, r.src_dev);
    r.sent--;
    guest_continues(&r, src_pools);
    qtest_quit(r.src);
    qtest_quit(r.dst);
    rig_free(&r);
}

static void via_file(Rig *r, const char *machine, const char *pools)
{
    g_autofree char *file = rig_path(r, "stream");
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    g_autofree char *incoming = g_strdup_printf("-incoming %s", uri);

    migrate(r->src, uri);
    r->dst = rig_start(r, r->dst_dev, machine, pools, incoming);
    assert_completed(r->dst);
}

static void via_unix(Rig *r, const char *machine, const char *pools)
{
    g_autofree char *sock = rig_path(r, "mig.sock");
    g_autofree char *uri = g_strdup_printf("unix:%s", sock);
    g_autofree char *incoming = g_strdup_printf("-incoming %s", uri);

    r->dst = rig_start(r, r->dst_dev, machine, pools, incoming);
    migrate(r->src, uri);
    assert_completed(r->dst);
}

/* exec: out through a shell pipeline, in with -incoming defer. */
static void via_exec(Rig *r, const char *machine, const char *pools)
{
    g_autofree char *file = rig_path(r, "stream");
    g_autofree char *out = g_strdup_printf("exec:cat > %s", file);
    g_autofree char *cmd = g_strdup_printf(
        "{'execute': 'migrate-incoming', 'arguments': "
        "{'uri': 'exec:cat %s'}}", file);

    g_autofree char *state = NULL;

    migrate(r->src, out);
    r->dst = rig_start(r, r->dst_dev, machine, pools, "-incoming defer");
    state = run_state(r->dst);
    g_assert_cmpstr(state, ==, "inmigrate");
    json_object_unref(qmp_ok(r->dst, cmd));
    assert_completed(r->dst);
}

/* fd: descriptors the shell opened for each process: the source has
 * the stream file as descriptor 5 for writing, the destination for
 * reading. */
static void via_fd(Rig *r, const char *machine, const char *pools)
{
    g_autofree char *file = rig_path(r, "stream");
    g_autofree char *incoming = g_strdup_printf("-incoming fd:5 5<%s", file);

    migrate(r->src, "fd:5");
    r->dst = rig_start(r, r->dst_dev, machine, pools, incoming);
    assert_completed(r->dst);
}

static void test_file_pools_on(void)
{
    two_process("pseries-2.0", NULL, via_file, false);
}

static void test_unix_pools_on(void)
{
    two_process("pseries", NULL, via_unix, false);
}

static void test_file_pools_off(void)
{
    two_process("pseries-1.0", NULL, via_file, false);
}

static void test_unix_pools_off(void)
{
    two_process("pseries-1.0", NULL, via_unix, false);
}

static void test_exec_defer(void)
{
    two_process("pseries-2.0", NULL, via_exec, false);
}

static void test_fd(void)
{
    two_process("pseries-2.0", NULL, via_fd, true);
}

/* A stream file from a source whose guest has received a few frames;
 * with @follow, the guest model stays with @r to follow the stream. */
static void make_stream(Rig *r, const char *machine, const char *pools,
                        const char *file, bool follow)
{
    g_autofree char *uri = g_strdup_printf("file:%s", file);

    r->src = rig_start(r, r->src_dev, machine, pools, NULL);
    rig_open_guest(r, RAM_SIZE);
    for (int i = 0; i < 3; i++) {
        rig_inject(r, r->src_dev);
        rig_expect_next(r);
    }
    migrate(r->src, uri);
    if (!follow) {
        qibmveth_close(r->veth);
    }
    qtest_quit(r->src);
}

/* Loads @file into a waiting destination, which must refuse it in one
 * line and keep waiting. */
static char *refused(QTestState *dst, const char *file)
{
    g_autofree char *cmd = g_strdup_printf(
        "{'execute': 'migrate-incoming', 'arguments': "
        "{'uri': 'file:%s'}}", file);
    g_autoptr(JsonObject) info = NULL;
    g_autofree char *state = NULL;
    char *desc;

    json_object_unref(qmp_ok(dst, cmd));
    info = wait_migration(dst);
    g_assert_cmpstr(json_object_get_string_member(info, "status"), ==,
                    "failed");
    desc = g_strdup(json_object_get_string_member(info, "error-desc"));
    g_test_message("refused: %s", desc);
    g_assert_null(strchr(desc, '\n'));
    state = run_state(dst);
    g_assert_cmpstr(state, ==, "inmigrate");
    /* Nothing was committed: the LAN is still closed. */
    g_assert_cmpint(qtest_hcallv(dst, H_FREE_LOGICAL_LAN, UNIT), ==,
                    H_RESOURCE);
    return desc;
}

static void assert_contains(const char *text, const char *part)
{
    if (!strstr(text, part)) {
        g_error("'%s' does not say '%s'", text, part);
    }
}

static char *variant(Rig *r, const char *name, const char *data, size_t len)
{
    char *path = rig_path(r, name);

    g_assert_true(g_file_set_contents(path, data, len, NULL));
    return path;
}

static void test_refusals(void)
{
    static const char idstr[] = "l-lan@71000000/spapr_llan";
    Rig r, r10;
    g_autofree char *good = NULL, *data = NULL, *msg = NULL;
    g_autofree char *truncated = NULL, *bad_id = NULL, *bad_version = NULL;
    g_autofree char *pools_on_10 = NULL;
    QTestState *dst10;
    gsize len;
    size_t at;

    rig_init(&r);
    good = rig_path(&r, "good");
    make_stream(&r, "pseries-2.0", NULL, good, true);
    g_assert_true(g_file_get_contents(good, &data, &len, NULL));
    at = (char *)memmem(data, len, idstr, strlen(idstr)) - data;
    g_assert_cmpuint(at, <, len);
    truncated = variant(&r, "truncated", data, at + 2000);
    data[at + strlen(idstr) - 1] ^= 1;
    bad_id = variant(&r, "bad-id", data, len);
    data[at + strlen(idstr) - 1] ^= 1;
    data[at + strlen(idstr) + 7] ^= 2;          /* version 1 -> 3 */
    bad_version = variant(&r, "bad-version", data, len);

    r.dst = rig_start(&r, r.dst_dev, "pseries-2.0", NULL,
                      "-incoming defer");
    msg = refused(r.dst, truncated);
    assert_contains(msg, "section 'l-lan@71000000/spapr_llan' instance 0");
    assert_contains(msg, "truncated");
    g_free(msg);
    /* Not a section of a device type illan has, so it would be carried,
     * but the stream's description names another. */
    msg = refused(r.dst, bad_id);
    assert_contains(msg, "section 'l-lan@71000000/spapr_llao' instance 0: "
                    "the VM description does not cover it");
    g_free(msg);
    msg = refused(r.dst, bad_version);
    assert_contains(msg, "section 'l-lan@71000000/spapr_llan' instance 0");
    assert_contains(msg, "version 3 is newer than this build reads (1)");
    g_free(msg);

    /* Wrong machine type, and pools-on state into pseries-1.0's LAN. */
    rig_init(&r10);
    pools_on_10 = rig_path(&r10, "pools-on-1.0");
    make_stream(&r10, "pseries-1.0", "on", pools_on_10, false);
    dst10 = rig_start(&r10, r10.dst_dev, "pseries-1.0", NULL,
                      "-incoming defer");
    msg = refused(dst10, good);
    /* The stream names the type, never the alias it was started as. */
    assert_contains(msg, "machine type mismatch: the stream is from "
                    "'pseries-2.6' and this machine is 'pseries-2.5'");
    g_free(msg);
    msg = refused(dst10, pools_on_10);
    assert_contains(msg, "section 'l-lan@71000000/spapr_llan' instance 0: "
                    "subsection 'spapr_llan/rx_pools'");
    assert_contains(msg, "use-rx-buffer-pools=off");
    qtest_quit(dst10);

    /* The destination that refused four streams takes the good one. */
    {
        g_autofree char *cmd = g_strdup_printf(
            "{'execute': 'migrate-incoming', 'arguments': "
            "{'uri': 'file:%s'}}", good);
        json_object_unref(qmp_ok(r.dst, cmd));
    }
    assert_completed(r.dst);
    qibmveth_migrate(r.veth, r.dst);
    rig_inject(&r, r.dst_dev);
    rig_expect_next(&r);
    g_assert_cmpint(qibmveth_close(r.veth), ==, H_SUCCESS);
    qtest_quit(r.dst);
    rig_free(&r);
    rig_free(&r10);
}

/*
 * QEMU's legacy interrupt numbering (pseries-3.0 and older) hands out
 * sources first free, so a QEMU stream's LAN has the number its command
 * line gave it: 0x1007 on pseries-2.5 with one -serial, where illan
 * numbers it 0x1006 as QEMU does without one.  A destination on such a
 * type adopts a legal number no other device has: the device raises it
 * and writes it back.  Anything else is refused naming both numbers.
 */
#define LAN0_IDSTR      "l-lan@71000000/spapr_llan"
#define LAN1_IDSTR      "l-lan@71000010/spapr_llan"
#define SECOND_LAN      "-device spapr-vlan,reg=0x71000010"

/* Where @idstr's sdev.irq is in @data: after the idstr come the
 * instance and version ids, then sdev.reg. */
static char *irq_field(char *data, gsize len, const char *idstr)
{
    char *at = memmem(data, len, idstr, strlen(idstr));

    g_assert_nonnull(at);
    return at + strlen(idstr) + 4 + 4 + 4;
}

static uint32_t be32_at(const char *p)
{
    const uint8_t *b = (const uint8_t *)p;

    return (uint32_t)b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3];
}

static void set_be32_at(char *p, uint32_t v)
{
    p[0] = v >> 24;
    p[1] = v >> 16;
    p[2] = v >> 8;
    p[3] = v;
}

/* The interrupt @idstr's section of a stream written to @file says. */
static uint32_t migrated_irq(QTestState *qts, const char *file,
                             const char *idstr)
{
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    g_autofree char *data = NULL;
    gsize len;

    migrate(qts, uri);
    g_assert_true(g_file_get_contents(file, &data, &len, NULL));
    return be32_at(irq_field(data, len, idstr));
}

static void test_legacy_irq_adopted(void)
{
    g_autofree char *good = NULL, *data = NULL, *qemu_irq = NULL;
    g_autofree char *incoming = NULL, *again = NULL;
    char *irq;
    gsize len;
    Rig r;

    rig_init(&r);
    good = rig_path(&r, "good");
    make_stream(&r, "pseries-2.5", NULL, good, true);
    g_assert_true(g_file_get_contents(good, &data, &len, NULL));
    irq = irq_field(data, len, LAN0_IDSTR);
    set_be32_at(irq, 0x1007);
    qemu_irq = variant(&r, "qemu-irq", data, len);
    incoming = g_strdup_printf("-incoming file:%s", qemu_irq);
    r.dst = rig_start(&r, r.dst_dev, "pseries-2.5", NULL, incoming);
    assert_completed(r.dst);

    /* qtest numbers a legacy source 0x1000 + N as N, as QEMU's XICS. */
    qtest_irq_intercept_out(r.dst, "l-lan@71000000");
    qibmveth_migrate(r.veth, r.dst);
    qibmveth_set_irq(r.veth, true);
    rig_inject(&r, r.dst_dev);
    rig_expect_next(&r);
    g_assert_cmpuint(qtest_irq_raise_count(r.dst, 7), ==, 1);
    g_assert_cmpuint(qtest_irq_raise_count(r.dst, 6), ==, 0);
    g_assert_cmpint(qibmveth_close(r.veth), ==, H_SUCCESS);
    again = rig_path(&r, "again");
    g_assert_cmphex(migrated_irq(r.dst, again, LAN0_IDSTR), ==, 0x1007);
    qtest_quit(r.dst);
    rig_free(&r);
}

/* A stream of @machine's two LANs, idle. */
static char *two_lan_stream(Rig *r, const char *machine, gsize *len)
{
    g_autofree char *file = rig_path(r, "two-lans");
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    char *data;

    r->src = rig_start(r, r->src_dev, machine, NULL, SECOND_LAN);
    migrate(r->src, uri);
    qtest_quit(r->src);
    g_assert_true(g_file_get_contents(file, &data, len, NULL));
    return data;
}

static void test_legacy_irq_refusals(void)
{
    g_autofree char *data = NULL, *taken = NULL, *event = NULL;
    g_autofree char *swapped = NULL, *other = NULL, *msg = NULL;
    g_autofree char *cmd = NULL, *again = NULL;
    char *lan0, *lan1;
    gsize len;
    Rig r;

    rig_init(&r);
    data = two_lan_stream(&r, "pseries-2.5", &len);
    lan0 = irq_field(data, len, LAN0_IDSTR);
    lan1 = irq_field(data, len, LAN1_IDSTR);
    g_assert_cmphex(be32_at(lan0), ==, 0x1006);
    g_assert_cmphex(be32_at(lan1), ==, 0x1007);
    set_be32_at(lan0, 0x1007);
    taken = variant(&r, "taken", data, len);
    set_be32_at(lan0, 0x1000);
    event = variant(&r, "event", data, len);
    set_be32_at(lan0, 0x1007);
    set_be32_at(lan1, 0x1006);
    swapped = variant(&r, "swapped", data, len);

    r.dst = rig_start(&r, r.dst_dev, "pseries-2.5", NULL,
                      SECOND_LAN " -incoming defer");
    msg = refused(r.dst, taken);
    assert_contains(msg, "section 'l-lan@71000000/spapr_llan' instance 0");
    assert_contains(msg, "interrupt 0x1007 (0x1006 here)");
    assert_contains(msg, "l-lan@71000010");
    g_clear_pointer(&msg, g_free);
    msg = refused(r.dst, event);
    assert_contains(msg, "interrupt 0x1000 (0x1006 here)");
    assert_contains(msg, "0x1001 to 0x11ff");
    g_clear_pointer(&msg, g_free);
    cmd = g_strdup_printf("{'execute': 'migrate-incoming', 'arguments': "
                          "{'uri': 'file:%s'}}", swapped);
    json_object_unref(qmp_ok(r.dst, cmd));
    assert_completed(r.dst);
    again = rig_path(&r, "again");
    g_assert_cmphex(migrated_irq(r.dst, again, LAN1_IDSTR), ==, 0x1006);
    g_assert_true(g_file_get_contents(again, &other, &len, NULL));
    g_assert_cmphex(be32_at(irq_field(other, len, LAN0_IDSTR)), ==, 0x1007);
    qtest_quit(r.dst);
    rig_free(&r);

    /* Elsewhere the number follows the unit address, and must match. */
    rig_init(&r);
    g_clear_pointer(&data, g_free);
    data = two_lan_stream(&r, "pseries", &len);
    lan0 = irq_field(data, len, LAN0_IDSTR);
    g_assert_cmphex(be32_at(lan0), ==, 0x1100);
    set_be32_at(lan0, 0x1101);
    g_clear_pointer(&other, g_free);
    other = variant(&r, "other", data, len);
    r.dst = rig_start(&r, r.dst_dev, "pseries", NULL,
                      SECOND_LAN " -incoming defer");
    msg = refused(r.dst, other);
    assert_contains(msg, "section 'l-lan@71000000/spapr_llan' instance 0");
    assert_contains(msg, "interrupt 0x1101 (0x1100 here)");
    qtest_quit(r.dst);
    rig_free(&r);
}

/* A bare QMP client, for an illan started without -qtest. */
typedef struct BareQmp {
    GSocketConnection *conn;
    GDataInputStream *in;
    GOutputStream *out;
} BareQmp;

static char *bare_line(BareQmp *q)
{
    char *line;

    /* Events may come between replies; a reply is what has "return". */
    while ((line = g_data_input_stream_read_line(q->in, NULL, NULL, NULL))) {
        if (!strstr(line, "\"event\"")) {
            return line;
        }
        g_free(line);
    }
    g_error("illan closed QMP");
}

static char *bare_cmd(BareQmp *q, const char *json)
{
    g_assert_true(g_output_stream_write_all(q->out, json, strlen(json), NULL,
                                            NULL, NULL));
    return bare_line(q);
}

static void bare_connect(BareQmp *q, const char *path)
{
    g_autoptr(GSocketClient) client = g_socket_client_new();
    g_autoptr(GSocketAddress) addr = g_unix_socket_address_new(path);
    gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;

    while (!(q->conn = g_socket_client_connect(client,
                                               G_SOCKET_CONNECTABLE(addr),
                                               NULL, NULL))) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(10000);
    }
    q->in = g_data_input_stream_new(g_io_stream_get_input_stream(
                                        G_IO_STREAM(q->conn)));
    q->out = g_io_stream_get_output_stream(G_IO_STREAM(q->conn));
    g_free(bare_line(q));
    g_free(bare_cmd(q, "{\"execute\": \"qmp_capabilities\"}\n"));
}

static void bare_wait_completed(BareQmp *q)
{
    gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;

    for (;;) {
        g_autofree char *r = bare_cmd(q, "{\"execute\": \"query-migrate\"}\n");

        g_assert_null(strstr(r, "\"failed\""));
        if (strstr(r, "\"completed\"")) {
            return;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(10000);
    }
}

/*
 * -incoming URI without -M and -m (and without -qtest, whose client
 * speaks first): illan takes the machine type and the RAM size from the
 * stream's beginning, and a stream it writes then says the same.
 */
static void test_derived_machine(void)
{
    static const uint8_t config[] = "\x07\0\0\0\x0bpseries-7.2";
    static const uint8_t block[] = "\x0dppc_spapr.ram\0\0\0\0\x04\0\0\0";
    Rig r;
    g_autofree char *in = NULL, *out = NULL, *qmp = NULL, *data = NULL;
    g_autofree char *cmd = NULL, *reply = NULL, *in_arg = NULL;
    const char *argv[] = { g_getenv("ILLAN_BINARY"), "-nodefaults",
                           "-device", "spapr-vlan,use-rx-buffer-pools=on",
                           "-incoming", NULL, "-qmp", NULL, NULL };
    g_autofree char *qmp_arg = NULL;
    BareQmp q;
    GPid pid;
    gsize len;
    int status;

    rig_init(&r);
    in = rig_path(&r, "in");
    out = rig_path(&r, "out");
    qmp = rig_path(&r, "qmp.sock");
    make_stream(&r, "pseries-7.2", "on", in, false);
    in_arg = g_strdup_printf("file:%s", in);
    qmp_arg = g_strdup_printf("unix:%s,server=on,wait=off", qmp);
    argv[5] = in_arg;
    argv[7] = qmp_arg;
    g_assert_true(g_spawn_async(NULL, (char **)argv, NULL,
                                G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid,
                                NULL));
    bare_connect(&q, qmp);
    bare_wait_completed(&q);
    cmd = g_strdup_printf("{\"execute\": \"migrate\", \"arguments\": "
                          "{\"uri\": \"file:%s\"}}\n", out);
    g_free(bare_cmd(&q, cmd));
    bare_wait_completed(&q);
    reply = bare_cmd(&q, "{\"execute\": \"quit\"}\n");
    g_object_unref(q.in);
    g_object_unref(q.conn);
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    g_assert_true(g_file_get_contents(out, &data, &len, NULL));
    g_assert_nonnull(memmem(data, MIN(len, 64), config, sizeof(config) - 1));
    g_assert_nonnull(memmem(data, MIN(len, 128), block, sizeof(block) - 1));
    rig_free(&r);
}

/* A stream given with -incoming on the command line and refused ends the
 * run with its one line and status 1, as QEMU does. */
static void test_cmdline_refusal(void)
{
    g_autofree char *path = g_strdup_printf("%s/illan-mig-%d.trunc",
                                            g_get_tmp_dir(), getpid());
    g_autofree char *args = g_strdup_printf("-nodefaults -display none "
                                            "-device spapr-vlan "
                                            "-incoming file:%s", path);
    g_autofree char *out = NULL, *err = NULL;

    g_assert_true(g_file_set_contents(path, "QEVM\0\0", 6, NULL));
    g_assert_cmpint(illan_run(args, &out, &err), ==, 1);
    unlink(path);
    g_test_message("%s", err);
    g_assert_true(g_str_has_prefix(err, "illan: -incoming file:"));
    assert_contains(err, "truncated");
    g_assert_cmpint(strchr(err, '\n') - err, ==, (long)strlen(err) - 1);
}

/*
 * Transports: tcp: (IPv4 and IPv6, -incoming and migrate-incoming, port
 * 0 with the port read back from query-migrate), fd:NAME with getfd over
 * SCM_RIGHTS, and fd:N refused for every descriptor illan has that was
 * not handed in for it.
 */

/* A second QMP monitor on an inherited socket (-chardev socket,fd=N), so
 * that the test can send descriptors with its commands. */
typedef struct SideMon {
    int fd;                     /* the test's end */
    int child_fd;               /* illan's end, until illan has it */
    char *args;                 /* what gives illan its end */
} SideMon;

static void side_mon_init(SideMon *m, const char *id)
{
    int sv[2];

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    g_assert_cmpint(fcntl(sv[0], F_SETFD, FD_CLOEXEC), ==, 0);
    m->fd = sv[0];
    m->child_fd = sv[1];
    m->args = g_strdup_printf("-chardev socket,id=%s,fd=%d "
                              "-mon chardev=%s,mode=control", id, sv[1], id);
}

static char *side_mon_line(SideMon *m)
{
    GString *line = g_string_new(NULL);
    char c;

    while (recv(m->fd, &c, 1, 0) == 1 && c != '\n') {
        g_string_append_c(line, c);
    }
    return g_string_free(line, FALSE);
}

/* The reply to @cmd, events skipped; @pass_fd >= 0 goes with it. */
static JsonObject *side_mon_cmd(SideMon *m, const char *cmd, int pass_fd)
{
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct iovec iov = { .iov_base = (void *)cmd, .iov_len = strlen(cmd) };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

    if (pass_fd >= 0) {
        struct cmsghdr *cm;

        msg.msg_control = control.buf;
        msg.msg_controllen = sizeof(control.buf);
        cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
    }
    g_assert_cmpint(sendmsg(m->fd, &msg, 0), ==, (ssize_t)strlen(cmd));
    for (;;) {
        g_autofree char *line = side_mon_line(m);
        g_autoptr(JsonParser) parser = json_parser_new();
        JsonObject *obj;

        g_assert_true(json_parser_load_from_data(parser, line, -1, NULL));
        obj = json_node_get_object(json_parser_get_root(parser));
        if (!json_object_has_member(obj, "event")) {
            return json_object_ref(obj);
        }
    }
}

/* Once illan runs with its end: the greeting and negotiation. */
static void side_mon_start(SideMon *m)
{
    g_autofree char *greeting = NULL;
    g_autoptr(JsonObject) rsp = NULL;

    close(m->child_fd);
    m->child_fd = -1;
    greeting = side_mon_line(m);
    g_assert_nonnull(strstr(greeting, "\"QMP\""));
    rsp = side_mon_cmd(m, "{\"execute\": \"qmp_capabilities\"}", -1);
    g_assert_true(json_object_has_member(rsp, "return"));
}

static void side_mon_free(SideMon *m)
{
    close(m->fd);
    g_free(m->args);
}

/* The "error" desc of @rsp, which must be an error. */
static const char *error_desc(JsonObject *rsp)
{
    g_assert_true(json_object_has_member(rsp, "error"));
    return json_object_get_string_member(
        json_object_get_object_member(rsp, "error"), "desc");
}

static JsonObject *getfd(SideMon *m, const char *name, int fd)
{
    g_autofree char *cmd = g_strdup_printf(
        "{\"execute\": \"getfd\", \"arguments\": {\"fdname\": \"%s\"}}",
        name);

    return side_mon_cmd(m, cmd, fd);
}

static JsonObject *closefd(SideMon *m, const char *name)
{
    g_autofree char *cmd = g_strdup_printf(
        "{\"execute\": \"closefd\", \"arguments\": {\"fdname\": \"%s\"}}",
        name);

    return side_mon_cmd(m, cmd, -1);
}

/* The destination's listening port, from query-migrate's
 * socket-address, which must be @host's family. */
static char *listening_port(QTestState *dst, const char *host)
{
    g_autoptr(JsonObject) rsp = qmp_ok(dst, "{'execute': 'query-migrate'}");
    JsonObject *info = json_object_get_object_member(rsp, "return");
    JsonArray *addrs = json_object_get_array_member(info, "socket-address");
    JsonObject *addr = json_array_get_object_element(addrs, 0);
    const char *family = strchr(host, ':') ? "ipv6" : "ipv4";

    g_assert_cmpuint(json_array_get_length(addrs), ==, 1);
    g_assert_cmpstr(json_object_get_string_member(info, "status"), ==,
                    "setup");
    g_assert_cmpstr(json_object_get_string_member(addr, "type"), ==, "inet");
    g_assert_cmpstr(json_object_get_string_member(addr, "host"), ==, host);
    g_assert_true(json_object_get_boolean_member(addr, family));
    g_assert_cmpstr(json_object_get_string_member(addr, "port"), !=, "0");
    return g_strdup(json_object_get_string_member(addr, "port"));
}

static void via_tcp_at(Rig *r, const char *machine, const char *pools,
                       const char *host, bool defer)
{
    bool v6 = strchr(host, ':') != NULL;
    g_autofree char *listen = g_strdup_printf(v6 ? "tcp:[%s]:0" : "tcp:%s:0",
                                              host);
    g_autofree char *incoming = g_strdup_printf("-incoming %s",
                                                defer ? "defer" : listen);
    g_autofree char *port = NULL, *uri = NULL;

    r->dst = rig_start(r, r->dst_dev, machine, pools, incoming);
    if (defer) {
        g_autofree char *cmd = g_strdup_printf(
            "{'execute': 'migrate-incoming', 'arguments': {'uri': '%s'}}",
            listen);

        json_object_unref(qmp_ok(r->dst, cmd));
    }
    port = listening_port(r->dst, host);
    uri = g_strdup_printf(v6 ? "tcp:[%s]:%s" : "tcp:%s:%s", host, port);
    g_test_message("destination listens at %s", uri);
    migrate(r->src, uri);
    assert_completed(r->dst);
}

static void via_tcp_ipv4(Rig *r, const char *machine, const char *pools)
{
    via_tcp_at(r, machine, pools, "127.0.0.1", false);
}

static bool ipv6_loopback(void)
{
    struct sockaddr_in6 sa = { .sin6_family = AF_INET6,
                               .sin6_addr = IN6ADDR_LOOPBACK_INIT };
    int fd = socket(AF_INET6, SOCK_STREAM, 0);
    bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;

    if (fd >= 0) {
        close(fd);
    }
    return ok;
}

static void via_tcp_ipv6_defer(Rig *r, const char *machine,
                               const char *pools)
{
    via_tcp_at(r, machine, pools, ipv6_loopback() ? "::1" : "127.0.0.1",
               true);
}

static void test_tcp_ipv4(void)
{
    two_process("pseries", NULL, via_tcp_ipv4, false);
}

static void test_tcp_ipv6_defer(void)
{
    if (!ipv6_loopback()) {
        g_test_message("no IPv6 loopback here: IPv4 with defer instead");
    }
    two_process("pseries-1.0", NULL, via_tcp_ipv6_defer, false);
}

/* fd:NAME on both ends: one socketpair, each end handed over with getfd
 * on a monitor of its process; the migration consumes both names. */
static SideMon named_src_mon;

static void via_fd_named(Rig *r, const char *machine, const char *pools)
{
    SideMon dst_mon;
    g_autofree char *extra = NULL;
    g_autoptr(JsonObject) in = NULL, out = NULL, gone = NULL;
    g_autoptr(JsonObject) gone_dst = NULL;
    int sv[2];

    side_mon_init(&dst_mon, "side");
    extra = g_strdup_printf("-incoming defer %s", dst_mon.args);
    r->dst = rig_start(r, r->dst_dev, machine, pools, extra);
    side_mon_start(&dst_mon);
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
                    ==, 0);
    in = getfd(&dst_mon, "mig-in", sv[1]);
    out = getfd(&named_src_mon, "mig-out", sv[0]);
    g_assert_true(json_object_has_member(in, "return"));
    g_assert_true(json_object_has_member(out, "return"));
    close(sv[0]);
    close(sv[1]);
    json_object_unref(qmp_ok(r->dst, "{'execute': 'migrate-incoming', "
                             "'arguments': {'uri': 'fd:mig-in'}}"));
    migrate(r->src, "fd:mig-out");
    assert_completed(r->dst);
    gone = closefd(&named_src_mon, "mig-out");
    gone_dst = closefd(&dst_mon, "mig-in");
    g_assert_cmpstr(error_desc(gone), ==,
                    "File descriptor named 'mig-out' not found");
    g_assert_cmpstr(error_desc(gone_dst), ==,
                    "File descriptor named 'mig-in' not found");
    side_mon_free(&dst_mon);
}

static void test_fd_named(void)
{
    Rig r;
    g_autofree char *src_pools = NULL;

    side_mon_init(&named_src_mon, "side");
    rig_init(&r);
    source_run(&r, "pseries", NULL, named_src_mon.args, 7);
    side_mon_start(&named_src_mon);
    src_pools = pool_table(r.src);
    via_fd_named(&r, "pseries", NULL);
    guest_continues(&r, src_pools);
    side_mon_free(&named_src_mon);
    qtest_quit(r.src);
    qtest_quit(r.dst);
    rig_free(&r);
}

/* Whether this process leaves @fd open across exec (the harness that
 * runs the test may: illan rightly takes those for handed in). */
static bool passed_on(int fd)
{
    int flags = fcntl(fd, F_GETFD);

    return fd > 2 && flags >= 0 && !(flags & FD_CLOEXEC);
}

/* Every descriptor illan holds, by number. */
static GArray *open_fds(pid_t pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/fd", (int)pid);
    GDir *dir = g_dir_open(path, 0, NULL);
    GArray *fds = g_array_new(FALSE, FALSE, sizeof(int));
    const char *name;

    g_assert_nonnull(dir);
    while ((name = g_dir_read_name(dir))) {
        int fd = atoi(name);

        g_array_append_val(fds, fd);
    }
    g_dir_close(dir);
    return fds;
}

static void assert_running(QTestState *qts, SideMon *m)
{
    g_autofree char *state = run_state(qts);
    g_autoptr(JsonObject) rsp = side_mon_cmd(
        m, "{\"execute\": \"query-status\"}", -1);

    g_assert_cmpstr(state, ==, "running");
    g_assert_true(json_object_has_member(rsp, "return"));
}

/*
 * fd:N names nothing of illan's: the QMP sockets (the one libqtest
 * connected and the one -chardev fd= took), the netdevs' (one opened by
 * illan, one inherited and taken by local.type=fd), an inherited AF_XDP
 * socket (af-xdp's sock-fds leave close-on-exec alone, so it is refused
 * for what it is), the standard streams, anything else it opened; each
 * is refused and still works after.  A descriptor inherited for the
 * purpose is accepted.
 */
static void test_fd_numbers(void)
{
    Rig r;
    SideMon mon;
    g_autofree char *stream = NULL, *uri = NULL, *extra = NULL;
    g_autoptr(GArray) fds = NULL;
    unsigned refused = 0;
    int out, dgram[2], xsk;

    rig_init(&r);
    side_mon_init(&mon, "side");
    stream = rig_path(&r, "stream");
    out = open(stream, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    g_assert_cmpint(out, >=, 0);
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_DGRAM, 0, dgram), ==, 0);
    g_assert_cmpint(fcntl(dgram[0], F_SETFD, FD_CLOEXEC), ==, 0);
    extra = g_strdup_printf("%s -netdev dgram,id=n1,local.type=fd,"
                            "local.str=%d", mon.args, dgram[1]);
    xsk = socket(44 /* AF_XDP */, SOCK_RAW, 0);
    if (xsk < 0) {
        g_test_message("no AF_XDP socket here: %s", g_strerror(errno));
    }
    r.src = rig_start(&r, r.src_dev, "pseries", NULL, extra);
    close(dgram[1]);
    if (xsk >= 0) {
        close(xsk);
    }
    side_mon_start(&mon);
    fds = open_fds(qtest_pid(r.src));
    for (guint i = 0; i < fds->len; i++) {
        int fd = g_array_index(fds, int, i);
        g_autoptr(JsonObject) rsp = NULL;

        if (fd == out || passed_on(fd)) {
            continue;
        }
        rsp = qtest_qmp(r.src, "{'execute': 'migrate', "
                        "'arguments': {'uri': 'fd:%d'}}", fd);
        g_test_message("%s", error_desc(rsp));
        refused++;
        g_assert_nonnull(strstr(error_desc(rsp), "was not handed to illan"));
    }
    g_test_message("%u refused", refused);
    g_assert_cmpuint(refused, >=, xsk >= 0 ? 10 : 9);
    assert_running(r.src, &mon);
    /* The netdev still carries frames to the guest. */
    rig_open_guest(&r, RAM_SIZE);
    rig_inject(&r, r.src_dev);
    rig_expect_next(&r);
    g_assert_cmpint(qibmveth_close(r.veth), ==, H_SUCCESS);
    close(out);
    close(dgram[0]);
    uri = g_strdup_printf("fd:%d", out);
    migrate(r.src, uri);
    side_mon_free(&mon);
    qtest_quit(r.src);
    rig_free(&r);
}

/* getfd and closefd as QEMU answers them; a name given again closes the
 * descriptor it had. */
static void test_getfd_closefd(void)
{
    Rig r;
    SideMon mon;
    g_autoptr(JsonObject) none = NULL, digit = NULL, first = NULL;
    g_autoptr(JsonObject) second = NULL, closed = NULL, unknown = NULL;
    g_autoptr(JsonObject) refused = NULL;
    int p1[2], p2[2];
    char c;

    rig_init(&r);
    side_mon_init(&mon, "side");
    r.src = rig_start(&r, r.src_dev, "pseries", NULL, mon.args);
    side_mon_start(&mon);
    g_assert_cmpint(pipe2(p1, O_CLOEXEC), ==, 0);
    g_assert_cmpint(pipe2(p2, O_CLOEXEC), ==, 0);

    none = getfd(&mon, "x", -1);
    g_assert_cmpstr(error_desc(none), ==,
                    "No file descriptor supplied via SCM_RIGHTS");
    digit = getfd(&mon, "1x", p1[1]);
    g_assert_cmpstr(error_desc(digit), ==, "Parameter 'fdname' expects a "
                    "name not starting with a digit");
    first = getfd(&mon, "x", p1[1]);
    g_assert_true(json_object_has_member(first, "return"));
    second = getfd(&mon, "x", p2[1]);
    g_assert_true(json_object_has_member(second, "return"));
    close(p1[1]);
    close(p2[1]);
    /* The first pipe's last writer was illan's copy, closed by the
     * second getfd; the second is still held. */
    g_assert_cmpint(read(p1[0], &c, 1), ==, 0);
    g_assert_cmpint(fcntl(p2[0], F_SETFL, O_NONBLOCK), ==, 0);
    g_assert_cmpint(read(p2[0], &c, 1), ==, -1);
    closed = closefd(&mon, "x");
    g_assert_true(json_object_has_member(closed, "return"));
    g_assert_cmpint(fcntl(p2[0], F_SETFL, 0), ==, 0);
    g_assert_cmpint(read(p2[0], &c, 1), ==, 0);
    unknown = closefd(&mon, "x");
    g_assert_cmpstr(error_desc(unknown), ==,
                    "File descriptor named 'x' not found");
    refused = qtest_qmp(r.src, "{'execute': 'migrate', "
                        "'arguments': {'uri': 'fd:x'}}");
    g_assert_cmpstr(error_desc(refused), ==,
                    "File descriptor named 'x' has not been found");
    close(p1[0]);
    close(p2[0]);
    assert_running(r.src, &mon);
    side_mon_free(&mon);
    qtest_quit(r.src);
    rig_free(&r);
}

/* A connect nobody answers with a refusal: the error names the address
 * and the machine carries on. */
static void test_tcp_refused(void)
{
    g_autoptr(JsonObject) rsp = NULL;
    g_autofree char *state = NULL;
    Rig r;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);

    /* A port that was just free and has no listener. */
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&sa, &len), ==, 0);
    rig_init(&r);
    r.src = rig_start(&r, r.src_dev, "pseries", NULL, NULL);
    rsp = qtest_qmp(r.src, "{'execute': 'migrate', 'arguments': "
                    "{'uri': 'tcp:127.0.0.1:%d'}}", ntohs(sa.sin_port));
    close(fd);
    g_test_message("%s", error_desc(rsp));
    g_assert_true(g_str_has_prefix(error_desc(rsp),
                                   "Failed to connect to '127.0.0.1:"));
    g_assert_nonnull(strstr(error_desc(rsp), "Connection refused"));
    state = run_state(r.src);
    g_assert_cmpstr(state, ==, "running");
    qtest_quit(r.src);
    rig_free(&r);
}

/*
 * A host that does not answer a connect within the second the source
 * waits on its main loop: the connect is handed over in progress, and
 * the stream follows once the host answers.  The test's listener has a
 * full accept queue, so the kernel drops the source's SYNs until the
 * queue is freed, which the test does only once the source has handed
 * its connect over (migrate has replied, the socket still in SYN-SENT).
 */
typedef struct SlowPeer {
    int listener, filler;
    unsigned port;
    pid_t src;
    int replied;                /* migrate has replied; atomic */
    char *path;                 /* where the stream is drained to */
    guint64 bytes;
} SlowPeer;

/* The inode of the source's socket connecting to the peer, or 0. */
static unsigned long syn_sent_inode(SlowPeer *p)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/net/tcp", (int)p->src);
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    for (guint i = 1; lines[i]; i++) {
        unsigned rport = 0, st = 0;
        unsigned long inode = 0;

        if (sscanf(lines[i], " %*u: %*x:%*x %*x:%x %x %*x:%*x %*x:%*x %*x "
                   "%*u %*u %lu", &rport, &st, &inode) == 3 &&
            rport == p->port && st == 2) {
            return inode;
        }
    }
    return 0;
}

/* migrate has replied (it does once the connect is handed over) and the
 * connect is still in SYN-SENT. */
static bool handed_over(void *opaque)
{
    SlowPeer *p = opaque;

    return g_atomic_int_get(&p->replied) && syn_sent_inode(p) != 0;
}

static gpointer slow_peer_run(gpointer opaque)
{
    SlowPeer *p = opaque;
    char buf[65536];
    int conn, out;
    ssize_t n;

    qtest_wait_until(handed_over, p, QTEST_WAIT_S,
                     "the source to hand its connect over");
    /* Room in the queue: the next SYN gets through. */
    close(accept(p->listener, NULL, NULL));
    conn = accept(p->listener, NULL, NULL);
    g_assert_cmpint(conn, >=, 0);
    out = open(p->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    g_assert_cmpint(out, >=, 0);
    while ((n = read(conn, buf, sizeof(buf))) > 0) {
        g_assert_cmpint(write(out, buf, n), ==, n);
        p->bytes += n;
    }
    close(out);
    close(conn);
    return NULL;
}

static void test_tcp_slow_connect(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);
    SlowPeer p = { 0 };
    g_autofree char *uri = NULL, *incoming = NULL;
    g_autoptr(JsonObject) rsp = NULL;
    GThread *thread;
    gint64 start;
    Rig r;

    rig_init(&r);
    p.path = rig_path(&r, "stream");
    p.listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(bind(p.listener, (struct sockaddr *)&sa, sizeof(sa)), ==,
                    0);
    g_assert_cmpint(listen(p.listener, 0), ==, 0);
    g_assert_cmpint(getsockname(p.listener, (struct sockaddr *)&sa, &len),
                    ==, 0);
    p.port = ntohs(sa.sin_port);
    /* Fills the queue a backlog of 0 allows. */
    p.filler = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(connect(p.filler, (struct sockaddr *)&sa, sizeof(sa)),
                    ==, 0);

    r.src = rig_start(&r, r.src_dev, "pseries", NULL, NULL);
    p.src = qtest_pid(r.src);
    thread = g_thread_new("slow-peer", slow_peer_run, &p);
    uri = g_strdup_printf("tcp:127.0.0.1:%u", p.port);
    start = g_get_monotonic_time();
    migrate_start(r.src, uri);
    g_atomic_int_set(&p.replied, 1);
    g_test_message("migrate took %.1f s", (g_get_monotonic_time() - start) /
                   1e6);
    g_thread_join(thread);
    rsp = wait_migration(r.src);
    g_assert_cmpint(json_object_get_int_member(
        json_object_get_object_member(rsp, "ram"), "transferred"), ==,
        p.bytes);
    json_object_unref(g_steal_pointer(&rsp));
    qtest_quit(r.src);
    /* The stream is whole: a destination loads it. */
    incoming = g_strdup_printf("-incoming file:%s", p.path);
    r.dst = rig_start(&r, r.dst_dev, "pseries", NULL, incoming);
    assert_completed(r.dst);
    qtest_quit(r.dst);
    close(p.filler);
    close(p.listener);
    g_free(p.path);
    rig_free(&r);
}

/* An exec: command that takes the whole stream and exits 3: unlike
 * QEMU, which never looks, illan fails the migration and names the
 * status, and the source runs on. */
static void test_exec_exit_status(void)
{
    g_autoptr(JsonObject) info = NULL;
    g_autofree char *state = NULL;
    const char *desc;
    Rig r;

    rig_init(&r);
    r.src = rig_start(&r, r.src_dev, "pseries", NULL, NULL);
    migrate_start(r.src, "exec:cat > /dev/null; exit 3");
    info = wait_migration(r.src);
    g_assert_cmpstr(json_object_get_string_member(info, "status"), ==,
                    "failed");
    desc = json_object_get_string_member(info, "error-desc");
    g_test_message("%s", desc);
    assert_contains(desc, "exec: the command exited with status 3");
    state = run_state(r.src);
    g_assert_cmpstr(state, ==, "running");
    qtest_quit(r.src);
    rig_free(&r);
}

static void add_transport_tests(void)
{
    g_test_add_func("/migration/tcp/ipv4", test_tcp_ipv4);
    g_test_add_func("/migration/tcp/ipv6-defer", test_tcp_ipv6_defer);
    g_test_add_func("/migration/tcp/refused", test_tcp_refused);
    g_test_add_func("/migration/exec/exit-status", test_exec_exit_status);
    g_test_add_func("/migration/tcp/slow-connect", test_tcp_slow_connect);
    g_test_add_func("/migration/fd/named", test_fd_named);
    g_test_add_func("/migration/fd/numbers", test_fd_numbers);
    g_test_add_func("/migration/fd/getfd-closefd", test_getfd_closefd);
}

/*
 * What a guest changed travels, and the destination announces it.  The
 * guest sets a MAC of its own and a multicast filter on a source; the
 * destination, started with another mac=, must deliver unicast to the
 * guest's MAC and filter the rest, and every NIC announces the guest's
 * MAC on the wire: QEMU's 5 RARP frames, 50, 150, 250 and 350 ms apart.
 */

#define GUEST_MAC       0x525400abcdefULL
#define MCAST_IN        0x01005e000001ULL
#define DST_MAC_OPT     ",mac=52:54:00:99:00:01"
#define NIC_NAME        "l-lan@71000000"
#define MAC_SUB         "spapr_llan/guest_mac_filters"

static const uint8_t guest_mac[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef };
static const uint8_t dst_mac[6] = { 0x52, 0x54, 0x00, 0x99, 0x00, 0x01 };
static const uint8_t mcast_in[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
static const uint8_t mcast_out[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x02 };

/* A numbered frame to @dst; only one that will be delivered takes a
 * number for good. */
static void inject_to(Rig *r, const char *dev_path, const uint8_t *dst,
                      bool delivered)
{
    uint8_t frame[60];

    eth_frame_tagged(frame, sizeof(frame), dst, qrig_mac, 0, r->sent,
                     ETH_FRAME_TAG_LAST);
    qtest_dgram_send(r->base.peer, dev_path, frame, sizeof(frame));
    r->sent += delivered;
}

static void expect_to(Rig *r, const uint8_t *dst)
{
    uint8_t data[2048];
    IbmvethRxEntry e = qibmveth_wait_rx(r->veth, data, sizeof(data));

    g_assert_cmpuint(eth_frame_assert_tagged(data, e.len, dst, qrig_mac, 0,
                                             ETH_FRAME_TAG_LAST), ==,
                     r->seen);
    r->seen++;
    qibmveth_replenish(r->veth);
}

/* The next datagram on the peer socket, which must come from @from;
 * -1 after QTEST_WAIT_S. */
/* The kernel stamps each datagram the peer gets from now on with the
 * time it queued it. */
static void stamp_peer(Rig *r)
{
    int on = 1;

    g_assert_cmpint(setsockopt(r->base.peer, SOL_SOCKET, SO_TIMESTAMPNS, &on,
                               sizeof(on)), ==, 0);
}

/* The next datagram from @from; *@when is when the kernel queued it (in
 * us, stamp_peer() first), not when the test got round to reading it.
 * None within QTEST_WAIT_S ends the test here, so that *@when is always
 * set when this returns. */
static ssize_t peer_recv(Rig *r, const char *from, uint8_t *buf, size_t max,
                         gint64 *when)
{
    struct pollfd pfd = { .fd = r->base.peer, .events = POLLIN };
    struct sockaddr_un addr;
    union {
        char buf[CMSG_SPACE(sizeof(struct timespec))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = { buf, max };
    struct msghdr msg = { .msg_name = &addr, .msg_namelen = sizeof(addr),
                          .msg_iov = &iov, .msg_iovlen = 1,
                          .msg_control = ctl.buf,
                          .msg_controllen = sizeof(ctl.buf) };
    struct cmsghdr *c;
    struct timespec ts;
    ssize_t n;

    if (poll(&pfd, 1, QTEST_WAIT_S * 1000) != 1) {
        g_error("no datagram from %s within %.0f s", from, QTEST_WAIT_S);
    }
    n = recvmsg(r->base.peer, &msg, 0);
    g_assert_cmpstr(addr.sun_path, ==, from);
    c = CMSG_FIRSTHDR(&msg);
    g_assert_nonnull(c);
    g_assert_cmpint(c->cmsg_type, ==, SCM_TIMESTAMPNS);
    memcpy(&ts, CMSG_DATA(c), sizeof(ts));
    *when = ts.tv_sec * G_GINT64_CONSTANT(1000000) + ts.tv_nsec / 1000;
    return n;
}

static void assert_rarp(const uint8_t *f, ssize_t len, const uint8_t *mac)
{
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    static const uint8_t head[10] = { 0x80, 0x35, 0x00, 0x01, 0x08, 0x00,
                                      6, 4, 0x00, 0x03 };
    static const uint8_t zeros[18];

    g_assert_cmpint(len, ==, 60);
    g_assert_cmpmem(f, 6, bcast, 6);
    g_assert_cmpmem(f + 6, 6, mac, 6);
    g_assert_cmpmem(f + 12, 10, head, 10);
    g_assert_cmpmem(f + 22, 6, mac, 6);
    g_assert_cmpmem(f + 28, 4, zeros, 4);
    g_assert_cmpmem(f + 32, 6, mac, 6);
    g_assert_cmpmem(f + 38, 4, zeros, 4);
    g_assert_cmpmem(f + 42, 18, zeros, 18);
}

/* @n RARP frames for @mac from @from; each gap at least @min_gap_ms[i]
 * (GLib's timeouts have millisecond grain: 2 ms of slack). */
static void expect_rarps(Rig *r, const char *from, const uint8_t *mac,
                         unsigned n, const int *min_gap_ms)
{
    g_autoptr(GString) gaps = g_string_new(NULL);
    uint8_t frame[128];
    gint64 when, last = 0;

    for (unsigned i = 0; i < n; i++) {
        assert_rarp(frame, peer_recv(r, from, frame, sizeof(frame), &when),
                    mac);
        /* The kernel's arrival times: the gaps are the sender's however
         * late the test reads them. */
        if (i) {
            g_assert_cmpint(when - last, >=, (min_gap_ms[i - 1] - 2) * 1000);
            g_string_append_printf(gaps, " %.1f", (when - last) / 1000.0);
        }
        last = when;
    }
    g_test_message("%u RARP frames, gaps (ms):%s", n, gaps->str);
}

static const int default_gaps[] = { 50, 150, 250, 350 };

static void test_guest_mac_filters(void)
{
    g_autofree char *sock = NULL, *uri = NULL, *incoming = NULL;
    g_autoptr(JsonObject) filter = NULL, bad = NULL;
    const int gaps[] = { 10, 20 };
    JsonObject *f0;
    Rig r;

    rig_init(&r);
    stamp_peer(&r);
    sock = rig_path(&r, "mig.sock");
    uri = g_strdup_printf("unix:%s", sock);
    incoming = g_strdup_printf("-incoming %s", uri);
    r.src = rig_start(&r, r.src_dev, "pseries", NULL, NULL);
    rig_open_guest(&r, RAM_SIZE);
    g_assert_cmpint(qtest_hcallv(r.src, H_CHANGE_LOGICAL_LAN_MAC, UNIT,
                                 GUEST_MAC), ==, H_SUCCESS);
    g_assert_cmpint(qtest_hcallv(r.src, H_MULTICAST_CTRL, UNIT, 0x50001,
                                 MCAST_IN), ==, H_SUCCESS);
    inject_to(&r, r.src_dev, guest_mac, true);
    expect_to(&r, guest_mac);

    r.dst = qrig_spawn(&r.base, &(QRigOpts){
        .machine = "pseries", .mem = "64M", .dev_path = r.dst_dev,
        .nic = DST_MAC_OPT, .extra = incoming });
    migrate(r.src, uri);
    assert_completed(r.dst);
    expect_rarps(&r, r.dst_dev, guest_mac, 5, default_gaps);
    g_assert_cmpint(qrig_stat(r.dst, "nic.tx.frames"), ==, 5);
    g_assert_cmpint(qrig_stat(r.dst, "netdev.tx.frames"), ==, 5);

    filter = qmp_ok(r.dst, "{'execute': 'query-rx-filter'}");
    f0 = json_array_get_object_element(
        json_object_get_array_member(filter, "return"), 0);
    g_assert_cmpstr(json_object_get_string_member(f0, "main-mac"), ==,
                    "52:54:00:ab:cd:ef");
    g_assert_cmpstr(json_object_get_string_member(f0, "unicast"), ==,
                    "normal");
    qibmveth_migrate(r.veth, r.dst);
    inject_to(&r, r.dst_dev, guest_mac, true);
    inject_to(&r, r.dst_dev, dst_mac, false);
    inject_to(&r, r.dst_dev, mcast_in, true);
    inject_to(&r, r.dst_dev, mcast_out, false);
    inject_to(&r, r.dst_dev, guest_mac, true);
    qrig_wait_stat(r.dst, "nic.device.rx-dropped.filtered", 2);
    expect_to(&r, guest_mac);
    expect_to(&r, mcast_in);
    expect_to(&r, guest_mac);

    /* By hand: named NICs only, QEMU's spacing with these parameters. */
    json_object_unref(qmp_ok(r.dst, "{'execute': 'announce-self', "
        "'arguments': {'initial': 10, 'max': 100, 'rounds': 3, 'step': 10, "
        "'interfaces': ['" NIC_NAME "'], 'id': 't'}}"));
    expect_rarps(&r, r.dst_dev, guest_mac, 3, gaps);
    json_object_unref(qmp_ok(r.dst, "{'execute': 'announce-self', "
        "'arguments': {'initial': 10, 'max': 100, 'rounds': 1, 'step': 10, "
        "'interfaces': ['nope']}}"));
    g_assert_cmpint(qrig_stat(r.dst, "nic.tx.frames"), ==, 8);
    bad = qtest_qmp(r.dst, "{'execute': 'announce-self', 'arguments': "
                    "{'initial': 10, 'max': 100, 'rounds': 1, 'step': -1}}");
    g_assert_cmpstr(json_object_get_string_member(
        json_object_get_object_member(bad, "error"), "desc"), ==,
        "Parameter 'step' expects a value between 0 and 10000");
    g_assert_cmpint(qibmveth_close(r.veth), ==, H_SUCCESS);
    qtest_quit(r.src);
    qtest_quit(r.dst);
    rig_free(&r);
}

/* The VM description's subsections of the spapr_llan section. */
static char *llan_subsections(const char *data, gsize len)
{
    static const char start[] = "{\"configuration\"";
    const char *json = memmem(data, len, start, strlen(start));
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GString) names = g_string_new(NULL);
    JsonArray *devices;

    g_assert_nonnull(json);
    g_assert_true(json_parser_load_from_data(parser, json,
                                             data + len - json, NULL));
    devices = json_object_get_array_member(
        json_node_get_object(json_parser_get_root(parser)), "devices");
    for (guint i = 0; i < json_array_get_length(devices); i++) {
        JsonObject *d = json_array_get_object_element(devices, i);
        JsonArray *subs;

        if (!g_str_has_suffix(json_object_get_string_member(d, "name"),
                              "/spapr_llan")) {
            continue;
        }
        subs = json_object_get_array_member(d, "subsections");
        for (guint j = 0; subs && j < json_array_get_length(subs); j++) {
            g_string_append_printf(names, "%s ", json_object_get_string_member(
                json_array_get_object_element(subs, j), "vmsd_name"));
        }
    }
    return g_strdup(g_strstrip(names->str));
}

/* A guest that changed nothing gives QEMU's layout: no MAC subsection
 * in the bytes or in the description; the announce carries the MAC the
 * destination was given. */
static void test_unchanged_guest(void)
{
    g_autofree char *file = NULL, *uri = NULL, *incoming = NULL;
    g_autofree char *data = NULL, *subs = NULL;
    gsize len;
    Rig r;

    rig_init(&r);
    stamp_peer(&r);
    file = rig_path(&r, "stream");
    uri = g_strdup_printf("file:%s", file);
    incoming = g_strdup_printf("-incoming %s", uri);
    r.src = rig_start(&r, r.src_dev, "pseries", NULL, NULL);
    rig_open_guest(&r, RAM_SIZE);
    migrate(r.src, uri);
    g_assert_true(g_file_get_contents(file, &data, &len, NULL));
    g_assert_null(memmem(data, len, MAC_SUB, strlen(MAC_SUB)));
    subs = llan_subsections(data, len);
    g_assert_cmpstr(subs, ==, "spapr_llan/rx_pools");
    r.dst = rig_start(&r, r.dst_dev, "pseries", NULL, incoming);
    assert_completed(r.dst);
    expect_rarps(&r, r.dst_dev, qrig_mac, 5, default_gaps);
    qibmveth_migrate(r.veth, r.dst);
    inject_to(&r, r.dst_dev, qrig_mac, true);
    expect_to(&r, qrig_mac);
    g_assert_cmpint(qibmveth_close(r.veth), ==, H_SUCCESS);
    qtest_quit(r.src);
    qtest_quit(r.dst);
    rig_free(&r);
}

#define ATTR_SUB        "spapr_llan/illan_attributes"
#define ATTR_IPV4_CSUM  0x2ULL
#define ALL_SUBS        "spapr_llan/rx_pools " MAC_SUB " " ATTR_SUB

/* A source on @machine whose guest set its own MAC, a multicast filter
 * and IPv4 checksum offload, migrated into a file; the stream. */
static char *changed_guest_stream(Rig *r, const char *machine,
                                  const char *extra, const char *file,
                                  gsize *len)
{
    g_autofree char *uri = g_strdup_printf("file:%s", file);
    uint64_t attrs;
    char *data;

    r->src = rig_start(r, r->src_dev, machine, NULL, extra);
    rig_open_guest(r, RAM_SIZE);
    g_assert_cmpint(qtest_hcallv(r->src, H_CHANGE_LOGICAL_LAN_MAC, UNIT,
                                 GUEST_MAC), ==, H_SUCCESS);
    g_assert_cmpint(qtest_hcallv(r->src, H_MULTICAST_CTRL, UNIT, 0x50001,
                                 MCAST_IN), ==, H_SUCCESS);
    g_assert_cmpint(qtest_hcall(r->src, H_ILLAN_ATTRIBUTES, 3,
                                (uint64_t[]){ UNIT, 0, ATTR_IPV4_CSUM },
                                &attrs, 1), ==, H_SUCCESS);
    g_assert_cmphex(attrs & ATTR_IPV4_CSUM, ==, ATTR_IPV4_CSUM);
    migrate(r->src, uri);
    g_assert_true(g_file_get_contents(file, &data, len, NULL));
    return data;
}

static char *main_mac(QTestState *qts)
{
    g_autoptr(JsonObject) filter = qmp_ok(qts,
                                          "{'execute': 'query-rx-filter'}");
    JsonObject *f0 = json_array_get_object_element(
        json_object_get_array_member(filter, "return"), 0);

    return g_strdup(json_object_get_string_member(f0, "main-mac"));
}

/* A pseries-7.2 destination, given another mac=, loads @file. */
static void start_dst_7_2(Rig *r, const char *file)
{
    g_autofree char *incoming = g_strdup_printf("-incoming file:%s", file);

    r->dst = qrig_spawn(&r->base, &(QRigOpts){
        .machine = "pseries-7.2", .mem = "64M", .dev_path = r->dst_dev,
        .nic = DST_MAC_OPT, .extra = incoming });
    assert_completed(r->dst);
    qibmveth_migrate(r->veth, r->dst);
}

/*
 * QEMU 7.2 refuses a spapr_llan section with a subsection it does not
 * know, so pseries-7.2 leaves the guest's MAC, filters and attributes
 * behind, as QEMU's own device does (it migrates none of them): the
 * destination goes on with its own mac= and no filter.  pseries writes
 * them all; x-illan-subsections=on writes them on pseries-7.2 too, and a
 * pseries-7.2 destination loads them.
 */
static void test_subsections_by_machine(void)
{
    g_autofree char *data = NULL, *subs = NULL, *mac = NULL;
    g_autofree char *file = NULL;
    gsize len;
    Rig r;

    rig_init(&r);
    file = rig_path(&r, "stream");
    data = changed_guest_stream(&r, "pseries-7.2", NULL, file, &len);
    subs = llan_subsections(data, len);
    g_assert_cmpstr(subs, ==, "spapr_llan/rx_pools");
    g_assert_null(memmem(data, len, MAC_SUB, strlen(MAC_SUB)));
    g_assert_null(memmem(data, len, ATTR_SUB, strlen(ATTR_SUB)));
    start_dst_7_2(&r, file);
    mac = main_mac(r.dst);
    g_assert_cmpstr(mac, ==, "52:54:00:99:00:01");
    inject_to(&r, r.dst_dev, guest_mac, false);
    inject_to(&r, r.dst_dev, mcast_out, true);
    inject_to(&r, r.dst_dev, dst_mac, true);
    qrig_wait_stat(r.dst, "nic.device.rx-dropped.filtered", 1);
    expect_to(&r, mcast_out);
    expect_to(&r, dst_mac);
    g_assert_cmpint(qibmveth_close(r.veth), ==, H_SUCCESS);
    qtest_quit(r.src);
    qtest_quit(r.dst);
    rig_free(&r);
    g_clear_pointer(&data, g_free);
    g_clear_pointer(&subs, g_free);
    g_clear_pointer(&file, g_free);
    g_clear_pointer(&mac, g_free);

    rig_init(&r);
    file = rig_path(&r, "stream");
    data = changed_guest_stream(&r, "pseries", NULL, file, &len);
    subs = llan_subsections(data, len);
    g_assert_cmpstr(subs, ==, ALL_SUBS);
    qibmveth_close(r.veth);
    qtest_quit(r.src);
    rig_free(&r);
    g_clear_pointer(&data, g_free);
    g_clear_pointer(&subs, g_free);
    g_clear_pointer(&file, g_free);

    rig_init(&r);
    file = rig_path(&r, "stream");
    data = changed_guest_stream(&r, "pseries-7.2",
                                "-global spapr-vlan.x-illan-subsections=on",
                                file, &len);
    subs = llan_subsections(data, len);
    g_assert_cmpstr(subs, ==, ALL_SUBS);
    start_dst_7_2(&r, file);
    mac = main_mac(r.dst);
    g_assert_cmpstr(mac, ==, "52:54:00:ab:cd:ef");
    inject_to(&r, r.dst_dev, mcast_out, false);
    inject_to(&r, r.dst_dev, guest_mac, true);
    qrig_wait_stat(r.dst, "nic.device.rx-dropped.filtered", 1);
    expect_to(&r, guest_mac);
    g_assert_cmpint(qibmveth_close(r.veth), ==, H_SUCCESS);
    qtest_quit(r.src);
    qtest_quit(r.dst);
    rig_free(&r);
}

/* The names of a VM description section's fields, in order,
 * space-separated. */
static char *desc_field_names(JsonObject *section)
{
    JsonArray *fields = json_object_get_array_member(section, "fields");
    g_autoptr(GString) names = g_string_new(NULL);

    for (guint i = 0; i < json_array_get_length(fields); i++) {
        g_string_append_printf(names, "%s ", json_object_get_string_member(
            json_array_get_object_element(fields, i), "name"));
    }
    return g_strdup(g_strstrip(names->str));
}

static JsonObject *desc_device(JsonObject *desc, const char *vmsd_name)
{
    JsonArray *devices = json_object_get_array_member(desc, "devices");

    for (guint i = 0; i < json_array_get_length(devices); i++) {
        JsonObject *d = json_array_get_object_element(devices, i);

        if (!strcmp(json_object_get_string_member(d, "vmsd_name"),
                    vmsd_name)) {
            return d;
        }
    }
    g_assert_not_reached();
}

/* The names of @vmsd_name's fields in this build's -dump-vmstate. */
static char *dump_field_names(const char *vmsd_name)
{
    g_autofree char *dir = g_dir_make_tmp("illan-dump-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "dump.json", NULL);
    g_autofree char *args = g_strdup_printf("-M pseries -dump-vmstate %s",
                                            path);
    g_autofree char *out = NULL, *err = NULL, *text = NULL;
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GString) names = g_string_new(NULL);
    JsonArray *fields;

    g_assert_cmpint(illan_run(args, &out, &err), ==, 0);
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    unlink(path);
    rmdir(dir);
    g_assert_true(json_parser_load_from_data(parser, text, -1, NULL));
    fields = json_object_get_array_member(json_object_get_object_member(
        json_object_get_object_member(json_node_get_object(
            json_parser_get_root(parser)), vmsd_name), "Description"),
        "Fields");
    for (guint i = 0; i < json_array_get_length(fields); i++) {
        g_string_append_printf(names, "%s ", json_object_get_string_member(
            json_array_get_object_element(fields, i), "field"));
    }
    return g_strdup(g_strstrip(names->str));
}

/* A validation checks a field but is no field of the stream: the field
 * it checks keeps its own name in the VM description and the dump, as
 * in QEMU, not "len[0]". */
static void test_description_names(void)
{
    g_autofree char *file = NULL, *uri = NULL, *data = NULL;
    g_autofree char *config = NULL, *iommu = NULL, *dumped = NULL;
    g_autoptr(JsonParser) parser = json_parser_new();
    static const char start[] = "{\"configuration\"";
    const char *json;
    JsonObject *desc;
    gsize len;
    Rig r;

    rig_init(&r);
    file = rig_path(&r, "stream");
    uri = g_strdup_printf("file:%s", file);
    r.src = rig_start(&r, r.src_dev, "pseries", NULL, NULL);
    migrate(r.src, uri);
    g_assert_true(g_file_get_contents(file, &data, &len, NULL));
    json = memmem(data, len, start, strlen(start));
    g_assert_nonnull(json);
    g_assert_true(json_parser_load_from_data(parser, json,
                                             data + len - json, NULL));
    desc = json_node_get_object(json_parser_get_root(parser));
    config = desc_field_names(json_object_get_object_member(desc,
                                                            "configuration"));
    g_assert_cmpstr(config, ==, "len name");
    iommu = desc_field_names(desc_device(desc, "spapr_iommu"));
    g_assert_cmpstr(iommu, ==, "liobn mig_nb_table bypass mig_table def_win");
    dumped = dump_field_names("spapr-tce-table");
    g_assert_cmpstr(dumped, ==, "liobn mig_nb_table bypass mig_table def_win");
    qtest_quit(r.src);
    rig_free(&r);
}

/*
 * Stalled peers.  The stream moves on a thread of its own, so a peer
 * that stops reading or sending holds up nothing else: QMP keeps
 * answering (its round trips are measured against an idle process), a
 * cancel ends the migration, SIGTERM ends the process.
 */

#define LATENCY_SAMPLES 200
#define STALL_FILL      (16u << 20)
/* Far above what a stall costs and far below a frozen main loop. */
#define LATENCY_P99_MAX_MS  250.0

static void report_latency(const char *what, QmpLatency idle,
                           QmpLatency busy)
{
    g_test_message("query-status round trips, %s: idle p50 %.3f ms p99 "
                   "%.3f ms; stalled p50 %.3f ms p99 %.3f ms", what,
                   idle.p50_ms, idle.p99_ms, busy.p50_ms, busy.p99_ms);
    g_assert_cmpfloat(busy.p99_ms, <, LATENCY_P99_MAX_MS);
}

/* The MIGRATION events so far, in order, are @statuses. */
static void assert_migration_events(QTestState *qts, const char **statuses)
{
    for (const char **s = statuses; *s; s++) {
        g_autoptr(JsonObject) ev = qtest_qmp_eventwait(qts, "MIGRATION");

        g_assert_cmpstr(json_object_get_string_member(
                            json_object_get_object_member(ev, "data"),
                            "status"), ==, *s);
    }
}

/* A source whose destination never reads: active, answering, its guest
 * running and receiving (pre-copy sends RAM while it runs), then
 * cancelled; the retry to a real destination takes the guest across. */
static void test_stalled_destination(void)
{
    Rig r;
    g_autofree char *stall = NULL, *sock = NULL, *uri = NULL;
    g_autofree char *incoming = NULL, *src_pools = NULL, *state = NULL;
    g_autofree char *stall_uri = NULL;
    QmpLatency idle, busy;
    uint8_t head[4], buf[65536];
    int lfd, peer;
    gint64 moved, got = sizeof(head);
    ssize_t n;

    rig_init(&r);
    stall = rig_path(&r, "stall.sock");
    stall_uri = g_strdup_printf("unix:%s", stall);
    source_run(&r, "pseries", NULL, NULL, 7);
    idle = qmp_latency(r.src, LATENCY_SAMPLES);
    migration_events_on(r.src);
    /* 16 MiB the guest's allocator never reaches, none of it zero: the
     * first pass alone is more than any socket holds. */
    qtest_memset(r.src, RAM_SIZE - STALL_FILL, 0x5a, STALL_FILL);

    lfd = stall_listen(stall);
    migrate_start(r.src, stall_uri);
    peer = accept(lfd, NULL, NULL);
    g_assert_cmpint(peer, >=, 0);
    wait_migration_moved(r.src, 1);
    busy = qmp_latency(r.src, LATENCY_SAMPLES);
    report_latency("source", idle, busy);
    /* Still going nowhere, in the first pass, with the guest running. */
    wait_migration_moved(r.src, 1);
    state = run_state(r.src);
    g_assert_cmpstr(state, ==, "running");
    for (int i = 0; i < 3; i++) {
        rig_inject(&r, r.src_dev);
    }
    wait_delivered(r.src, r.sent);

    json_object_unref(qmp_ok(r.src, "{'execute': 'migrate_cancel'}"));
    wait_migration_status(r.src, "cancelled");
    assert_migration_events(r.src, (const char *[]){
        "setup", "active", "cancelling", "cancelled", NULL });
    g_free(state);
    state = run_state(r.src);
    g_assert_cmpstr(state, ==, "running");
    /* The peer holds the start of a stream, exactly the bytes the
     * source counted, then the end of the socket. */
    moved = migration_transferred(r.src);
    g_test_message("cancelled after %" G_GINT64_FORMAT " bytes", moved);
    g_assert_cmpint(read(peer, head, sizeof(head)), ==, sizeof(head));
    g_assert_cmpmem(head, sizeof(head), "QEVM", 4);
    while ((n = read(peer, buf, sizeof(buf))) > 0) {
        got += n;
    }
    g_assert_cmpint(got, ==, moved);
    close(peer);
    close(lfd);

    /* The guest runs on the source again: what was pending comes out,
     * and frames keep coming. */
    rig_inject(&r, r.src_dev);
    while (r.seen < r.sent) {
        rig_expect_next(&r);
    }
    for (int i = 0; i < 3; i++) {
        rig_inject(&r, r.src_dev);
    }
    wait_delivered(r.src, r.sent);
    src_pools = pool_table(r.src);

    sock = rig_path(&r, "mig.sock");
    uri = g_strdup_printf("unix:%s", sock);
    incoming = g_strdup_printf("-incoming %s", uri);
    r.dst = rig_start(&r, r.dst_dev, "pseries", NULL, incoming);
    migrate(r.src, uri);
    assert_completed(r.dst);
    guest_continues(&r, src_pools);
    qtest_quit(r.src);
    qtest_quit(r.dst);
    rig_free(&r);
}

/* SIGTERM to a source whose destination never reads, in its first
 * pass: exit status 0. */
static void test_stalled_destination_sigterm(void)
{
    g_autoptr(JsonObject) info = NULL;
    Rig r;
    g_autofree char *stall = NULL, *stall_uri = NULL;
    int lfd, peer;

    rig_init(&r);
    stall = rig_path(&r, "stall.sock");
    stall_uri = g_strdup_printf("unix:%s", stall);
    r.src = rig_start(&r, r.src_dev, "pseries", NULL, NULL);
    qtest_memset(r.src, RAM_SIZE - STALL_FILL, 0x5a, STALL_FILL);
    lfd = stall_listen(stall);
    migrate_start(r.src, stall_uri);
    peer = accept(lfd, NULL, NULL);
    g_assert_cmpint(peer, >=, 0);
    wait_migration_moved(r.src, 1);
    info = query_migrate(r.src);
    g_assert_cmpstr(json_object_get_string_member(info, "status"), ==,
                    "active");
    g_assert_cmpint(qtest_quit_status(r.src, SIGTERM), ==, 0);
    close(peer);
    close(lfd);
    rig_free(&r);
}

/* A destination whose source sent the magic and half the version, then
 * nothing: active with those bytes, answering; SIGTERM refuses the
 * stream as the command line's -incoming refuses a bad one: status 1
 * and one line. */
static void test_stalled_source(void)
{
    static const char partial[] = "QEVM\0\0";
    Rig r;
    g_autofree char *sock = NULL, *incoming = NULL, *errfile = NULL;
    g_autofree char *err = NULL, *state = NULL;
    g_autoptr(JsonObject) info = NULL;
    QmpLatency idle, busy;
    int fd;

    rig_init(&r);
    sock = rig_path(&r, "mig.sock");
    errfile = rig_path(&r, "dst.err");
    incoming = g_strdup_printf("-incoming unix:%s 2>%s", sock, errfile);
    r.dst = rig_start(&r, r.dst_dev, "pseries", NULL, incoming);
    idle = qmp_latency(r.dst, LATENCY_SAMPLES);
    fd = stall_connect(sock);
    g_assert_cmpint(write(fd, partial, sizeof(partial) - 1), ==,
                    sizeof(partial) - 1);
    g_assert_cmpint(wait_migration_moved(r.dst, sizeof(partial) - 1), ==,
                    sizeof(partial) - 1);
    busy = qmp_latency(r.dst, LATENCY_SAMPLES);
    report_latency("destination", idle, busy);
    info = query_migrate(r.dst);
    g_assert_cmpstr(json_object_get_string_member(info, "status"), ==,
                    "active");
    g_assert_cmpint(json_object_get_int_member(
                        json_object_get_object_member(info, "ram"),
                        "transferred"), ==, sizeof(partial) - 1);
    state = run_state(r.dst);
    g_assert_cmpstr(state, ==, "inmigrate");

    g_assert_cmpint(qtest_quit_status(r.dst, SIGTERM), ==, 1);
    close(fd);
    g_assert_true(g_file_get_contents(errfile, &err, NULL, NULL));
    g_test_message("%s", err);
    g_assert_true(g_str_has_prefix(err, "illan: -incoming unix:"));
    assert_contains(err, "interrupted by shutdown at byte 6");
    rig_free(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/migration/file/pools-on", test_file_pools_on);
    g_test_add_func("/migration/unix/pools-on", test_unix_pools_on);
    g_test_add_func("/migration/file/pools-off", test_file_pools_off);
    g_test_add_func("/migration/unix/pools-off", test_unix_pools_off);
    g_test_add_func("/migration/exec/defer", test_exec_defer);
    g_test_add_func("/migration/fd", test_fd);
    g_test_add_func("/migration/refusals", test_refusals);
    g_test_add_func("/migration/derived-machine", test_derived_machine);
    g_test_add_func("/migration/cmdline-refusal", test_cmdline_refusal);
    g_test_add_func("/migration/legacy-irq/adopted",
                    test_legacy_irq_adopted);
    g_test_add_func("/migration/legacy-irq/refusals",
                    test_legacy_irq_refusals);
    g_test_add_func("/migration/state/guest-mac-filters",
                    test_guest_mac_filters);
    g_test_add_func("/migration/state/subsections-by-machine",
                    test_subsections_by_machine);
    g_test_add_func("/migration/state/unchanged-guest",
                    test_unchanged_guest);
    add_transport_tests();
    g_test_add_func("/migration/state/description-names",
                    test_description_names);
    g_test_add_func("/migration/stall/destination", test_stalled_destination);
    g_test_add_func("/migration/stall/destination-sigterm",
                    test_stalled_destination_sigterm);
    g_test_add_func("/migration/stall/source", test_stalled_source);
    return g_test_run();
}
