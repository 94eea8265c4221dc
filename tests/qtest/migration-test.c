/*
 * Two-process migration: a source illan with frames flowing in from a
 * unix dgram socket and a guest (the libqos ibmveth model) consuming
 * them, migrated over each URI to a second illan; the guest carries on
 * there.  Also the streams a destination must refuse, each with its
 * message, and a destination that still accepts a good stream after.
 */
#include "migration-helpers.h"

#include <fcntl.h>
#include <signal.h>
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
    msg = refused(r.dst, bad_id);
    assert_contains(msg, "unknown section 'l-lan@71000000/spapr_llao'");
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
 * Stalled peers.  The stream moves on a thread of its own, so a peer
 * that stops reading or sending holds up nothing else: QMP keeps
 * answering (its round trips are measured against an idle process), a
 * cancel ends the migration, SIGTERM ends the process.
 */

#define LATENCY_SAMPLES 200
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

/* cont while the stream is written would let the guest change what is
 * being saved. */
static void assert_cont_refused(QTestState *qts)
{
    g_autoptr(JsonObject) rsp = qtest_qmp(qts, "{'execute': 'cont'}");
    JsonObject *error = json_object_get_object_member(rsp, "error");

    g_assert_nonnull(error);
    g_assert_cmpstr(json_object_get_string_member(error, "desc"), ==,
                    "Migration is not finalized yet");
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

/* A source whose destination never reads: active, answering, then
 * cancelled and running again; the retry to a real destination takes
 * the guest across. */
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

    lfd = stall_listen(stall);
    migrate_start(r.src, stall_uri);
    peer = accept(lfd, NULL, NULL);
    g_assert_cmpint(peer, >=, 0);
    wait_migration_moved(r.src, 1);
    busy = qmp_latency(r.src, LATENCY_SAMPLES);
    report_latency("source", idle, busy);
    /* Still going nowhere: the stream is larger than what the socket
     * holds. */
    wait_migration_moved(r.src, 1);
    state = run_state(r.src);
    g_assert_cmpstr(state, ==, "finish-migrate");
    assert_cont_refused(r.src);

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

/* SIGTERM to a source whose destination never reads: exit status 0. */
static void test_stalled_destination_sigterm(void)
{
    Rig r;
    g_autofree char *stall = NULL, *stall_uri = NULL;
    int lfd, peer;

    rig_init(&r);
    stall = rig_path(&r, "stall.sock");
    stall_uri = g_strdup_printf("unix:%s", stall);
    r.src = rig_start(&r, r.src_dev, "pseries", NULL, NULL);
    lfd = stall_listen(stall);
    migrate_start(r.src, stall_uri);
    peer = accept(lfd, NULL, NULL);
    g_assert_cmpint(peer, >=, 0);
    wait_migration_moved(r.src, 1);
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
    g_test_add_func("/migration/cmdline-refusal", test_cmdline_refusal);
    g_test_add_func("/migration/stall/destination", test_stalled_destination);
    g_test_add_func("/migration/stall/destination-sigterm",
                    test_stalled_destination_sigterm);
    g_test_add_func("/migration/stall/source", test_stalled_source);
    return g_test_run();
}
