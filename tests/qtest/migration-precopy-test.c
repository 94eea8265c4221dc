/*
 * Pre-copy, seen from outside: RAM goes while the guest runs, every
 * write made meanwhile (qtest's, the device's DMA, the guest's own)
 * reaches the destination, passes repeat until what is left fits the
 * downtime limit, and a migration that cannot converge stays active and
 * says why.  Two illan processes and the ibmveth guest model over a
 * unix dgram socket (tests/qtest/migration-helpers.h).
 */
#include "migration-helpers.h"

#include <string.h>

#define RAM_SIZE        (64ULL << 20)
/* Filled before the migration, above what the guest's allocator hands
 * out, so that the first pass has real pages to send. */
#define FILL_BASE       (32ULL << 20)
/* What the test writes at a time while the migration runs, somewhere
 * above the guest's rings and buffers (which sit above 1 MiB). */
#define WRITE_LEN       0x1000
#define WRITE_BASE      (8ULL << 20)
/* Where the guest's allocator starts. */
#define GUEST_MEM_BASE  (1ULL << 20)

static void set_parameters(QTestState *qts, const char *json)
{
    g_autofree char *cmd = g_strdup_printf(
        "{'execute': 'migrate-set-parameters', 'arguments': %s}", json);

    json_object_unref(qmp_ok(qts, cmd));
}

static const char *error_of(JsonObject *rsp)
{
    JsonObject *error = json_object_get_object_member(rsp, "error");

    g_assert_nonnull(error);
    return json_object_get_string_member(error, "desc");
}

static gint64 ram_stat(JsonObject *info, const char *name)
{
    return json_object_get_int_member(json_object_get_object_member(info,
                                                                    "ram"),
                                      name);
}

static char *status_of(JsonObject *info)
{
    return g_strdup(json_object_get_string_member(info, "status"));
}

/* A source with the guest open and a few frames through it, and a
 * destination waiting on a unix socket. */
static char *start_pair(Rig *r)
{
    g_autofree char *sock = NULL, *incoming = NULL;

    rig_init(r);
    r->src = rig_start(r, r->src_dev, "pseries", NULL, NULL);
    rig_open_guest(r, RAM_SIZE);
    for (int i = 0; i < 3; i++) {
        rig_inject(r, r->src_dev);
        rig_expect_next(r);
    }
    sock = rig_path(r, "mig.sock");
    incoming = g_strdup_printf("-incoming unix:%s", sock);
    r->dst = rig_start(r, r->dst_dev, "pseries", NULL, incoming);
    return g_strdup_printf("unix:%s", sock);
}

/* Both processes' RAM, saved with pmemsave, byte for byte, but for the
 * write made at @skip (UINT64_MAX: none) after the source stopped, and,
 * with @guest_late, the guest's own memory (see test_dirty_writes). */
static void assert_same_ram(Rig *r, uint64_t skip, bool guest_late)
{
    g_autofree char *a = rig_path(r, "src.ram"), *b = rig_path(r, "dst.ram");
    g_autofree char *cmd_a = g_strdup_printf(
        "{'execute': 'pmemsave', 'arguments': {'val': 0, 'size': %llu, "
        "'filename': '%s'}}", RAM_SIZE, a);
    g_autofree char *cmd_b = g_strdup_printf(
        "{'execute': 'pmemsave', 'arguments': {'val': 0, 'size': %llu, "
        "'filename': '%s'}}", RAM_SIZE, b);
    g_autofree char *da = NULL, *db = NULL;
    gsize la, lb;

    json_object_unref(qmp_ok(r->src, cmd_a));
    json_object_unref(qmp_ok(r->dst, cmd_b));
    g_assert_true(g_file_get_contents(a, &da, &la, NULL));
    g_assert_true(g_file_get_contents(b, &db, &lb, NULL));
    g_assert_cmpuint(la, ==, RAM_SIZE);
    g_assert_cmpuint(lb, ==, RAM_SIZE);
    for (gsize i = 0; i < la; i += 4096) {
        if ((i + 4096 > skip && i < skip + WRITE_LEN) ||
            (guest_late && i + 4096 > GUEST_MEM_BASE && i < r->alloc.next)) {
            continue;
        }
        if (memcmp(da + i, db + i, 4096)) {
            g_error("page at 0x%zx differs between source and destination",
                    (size_t)i);
        }
    }
}

/* The guest goes on on the destination: what was pending, then more. */
static void guest_continues(Rig *r)
{
    qibmveth_migrate(r->veth, r->dst);
    while (r->seen < r->sent) {
        rig_expect_next(r);
    }
    for (int i = 0; i < 10; i++) {
        rig_inject(r, r->dst_dev);
        rig_expect_next(r);
    }
    g_assert_cmpint(qibmveth_close(r->veth), ==, H_SUCCESS);
}

typedef struct Fate {
    QTestState *qts;
    gint64 delivered, stopped;  /* the counts to exceed */
} Fate;

static bool frame_settled(void *opaque)
{
    Fate *f = opaque;

    return qrig_stat(f->qts, "nic.device.rx-frames") > f->delivered ||
           qrig_stat(f->qts, "nic.rx.dropped.vm-stopped") > f->stopped;
}

/* One frame to the source, which may be stopping for the switchover: the
 * guest reads it if it was delivered; if it came too late it was
 * counted as vm-stopped, and the guest never sees it. */
static bool frame_to_source(Rig *r)
{
    Fate f = { r->src, qrig_stat(r->src, "nic.device.rx-frames"),
               qrig_stat(r->src, "nic.rx.dropped.vm-stopped") };

    rig_inject(r, r->src_dev);
    qtest_wait_until(frame_settled, &f, QTEST_WAIT_S, "the frame to be "
                     "delivered or dropped as vm-stopped");
    if (qrig_stat(r->src, "nic.device.rx-frames") > f.delivered) {
        rig_expect_next(r);
        return true;
    }
    r->seen++;
    return false;
}

static unsigned count_passes(QTestState *qts)
{
    unsigned passes = 0;

    while (qtest_qmp_event_pending(qts, "MIGRATION_PASS")) {
        g_autoptr(JsonObject) ev = qtest_qmp_eventwait(qts, "MIGRATION_PASS");

        passes++;
        g_assert_cmpint(json_object_get_int_member(
                            json_object_get_object_member(ev, "data"),
                            "pass"), ==, passes);
    }
    return passes;
}

/*
 * While the first pass crawls at 16 MiB/s, the test writes pages all
 * over RAM (some already sent, some not) and frames go through the
 * device into the guest, which replenishes its pools.  The destination
 * must end with every byte the source has, and the times and counts
 * query-migrate shows must hold together.
 */
static void test_dirty_writes(void)
{
    Rig r;
    g_autofree char *uri = start_pair(&r);
    g_autoptr(JsonObject) done = NULL;
    unsigned rounds_active = 0, round = 0, lost = 0;
    uint64_t stopped_at = UINT64_MAX;
    bool saw_expected = false, guest_late = false, delivered;

    migration_events_on(r.src);
    qtest_memset(r.src, FILL_BASE, 0x11, 4 << 20);
    set_parameters(r.src, "{'max-bandwidth': 16777216}");
    migrate_start(r.src, uri);
    for (;;) {
        g_autoptr(JsonObject) info = query_migrate(r.src);
        g_autofree char *st = status_of(info);
        g_autofree char *run = NULL;
        uint64_t at = WRITE_BASE + (round * 0x1b000) % (RAM_SIZE -
                                                        WRITE_BASE -
                                                        WRITE_LEN);

        if (!strcmp(st, "completed")) {
            break;
        }
        g_assert_cmpstr(st, !=, "failed");
        if (!strcmp(st, "active")) {
            rounds_active++;
            saw_expected |= json_object_has_member(info, "expected-downtime");
            g_assert_true(json_object_has_member(info, "setup-time"));
            g_assert_cmpint(ram_stat(info, "remaining"), <=, RAM_SIZE);
        }
        if (stopped_at != UINT64_MAX) {
            continue;
        }
        /* qtest and the switchover take turns on the main thread: a
         * write followed by "running" came before the stop, and must
         * reach the destination.  One after it stays on the source, as
         * it would in QEMU. */
        qtest_memset(r.src, at, 0x40 + round % 64, WRITE_LEN);
        run = run_state(r.src);
        if (strcmp(run, "running")) {
            stopped_at = at;
            continue;
        }
        delivered = frame_to_source(&r);
        lost += !delivered;
        /* The guest's refill after a frame (a qtest guest, which a stop
         * does not park as it parks a vCPU) came before the switchover
         * if the source still runs after it; otherwise its writes (the
         * buffer's handle, the TCE list of a buffer of several pages)
         * may stay on the source. */
        g_free(run);
        run = run_state(r.src);
        guest_late |= delivered && strcmp(run, "running") != 0;
        round++;
    }
    g_test_message("%u rounds of writes, %u while active, %u frames came "
                   "after the switchover%s", round, rounds_active, lost,
                   guest_late ? ", a refill maybe after it" : "");
    g_assert_cmpuint(lost, <=, 1);
    g_assert_cmpuint(rounds_active, >=, 5);
    g_assert_true(saw_expected);
    assert_completed(r.dst);
    done = query_migrate(r.src);
    g_test_message("total-time %" G_GINT64_FORMAT " ms, setup-time %"
                   G_GINT64_FORMAT " ms, downtime %" G_GINT64_FORMAT
                   " ms, %" G_GINT64_FORMAT " syncs, precopy %"
                   G_GINT64_FORMAT " bytes, downtime %" G_GINT64_FORMAT
                   " bytes",
                   json_object_get_int_member(done, "total-time"),
                   json_object_get_int_member(done, "setup-time"),
                   json_object_get_int_member(done, "downtime"),
                   ram_stat(done, "dirty-sync-count"),
                   ram_stat(done, "precopy-bytes"),
                   ram_stat(done, "downtime-bytes"));
    g_assert_cmpint(json_object_get_int_member(done, "downtime"), <=,
                    json_object_get_int_member(done, "total-time"));
    g_assert_cmpint(ram_stat(done, "dirty-sync-count"), >=, 3);
    g_assert_cmpint(ram_stat(done, "precopy-bytes"), >, 4 << 20);
    g_assert_cmpint(ram_stat(done, "downtime-bytes"), >, 0);
    g_assert_cmpint(ram_stat(done, "total"), ==, RAM_SIZE);
    g_assert_false(json_object_has_member(done, "expected-downtime"));
    g_assert_cmpuint(count_passes(r.src), ==,
                     ram_stat(done, "dirty-sync-count"));
    assert_same_ram(&r, stopped_at, guest_late);
    guest_continues(&r);
    qtest_quit(r.src);
    qtest_quit(r.dst);
    rig_free(&r);
}

typedef struct Churn {
    QTestState *qts;
    unsigned round;
    gint64 passes;
    gint64 expected_ms;
} Churn;

/* Dirties the same 1 MiB again, then looks at the migration. */
static bool churned_passes(void *opaque)
{
    Churn *c = opaque;
    g_autoptr(JsonObject) info = NULL;
    g_autofree char *st = NULL;

    qtest_memset(c->qts, FILL_BASE, 0x80 + c->round++ % 64, 1 << 20);
    info = query_migrate(c->qts);
    st = status_of(info);
    if (!strcmp(st, "setup")) {
        return false;
    }
    g_assert_cmpstr(st, ==, "active");
    c->passes = ram_stat(info, "dirty-sync-count");
    c->expected_ms = json_object_get_int_member(info, "expected-downtime");
    return c->passes >= 4;
}

/*
 * 1 MiB rewritten faster than 2 MiB/s can send it, against a 10 ms
 * limit: passes go on, the migration stays active, expected-downtime
 * says why, and the capabilities cannot change meanwhile.  Saying the
 * link has 1 GB/s for the switchover (avail-switchover-bandwidth) lets
 * it converge, with max-bandwidth unchanged.
 */
static void test_no_convergence(void)
{
    Rig r;
    g_autofree char *uri = start_pair(&r);
    g_autoptr(JsonObject) rsp = NULL;
    Churn c = { .qts = r.src };

    migration_events_on(r.src);
    set_parameters(r.src, "{'max-bandwidth': 2097152, 'downtime-limit': 10}");
    migrate_start(r.src, uri);
    qtest_wait_until(churned_passes, &c, QTEST_WAIT_S,
                     "four passes of a migration that cannot converge");
    g_test_message("after %" G_GINT64_FORMAT " passes: expected-downtime %"
                   G_GINT64_FORMAT " ms against a limit of 10 ms",
                   c.passes, c.expected_ms);
    g_assert_cmpint(c.expected_ms, >, 10);
    rsp = qtest_qmp(r.src, "{'execute': 'migrate-set-capabilities', "
                    "'arguments': {'capabilities': [{'capability': 'events', "
                    "'state': false}]}}");
    g_assert_cmpstr(error_of(rsp), ==, "There's a migration process in "
                    "progress");
    set_parameters(r.src, "{'avail-switchover-bandwidth': 1000000000}");
    assert_completed(r.dst);
    wait_migration_status(r.src, "completed");
    assert_same_ram(&r, UINT64_MAX, false);
    guest_continues(&r);
    qtest_quit(r.src);
    qtest_quit(r.dst);
    rig_free(&r);
}

static void assert_refused(QTestState *qts, const char *cmd, const char *desc)
{
    g_autoptr(JsonObject) rsp = qtest_qmp(qts, "%s", cmd);

    g_assert_cmpstr(error_of(rsp), ==, desc);
}

static gint64 parameter(QTestState *qts, const char *name)
{
    g_autoptr(JsonObject) rsp = qmp_ok(qts, "{'execute': "
                                       "'query-migrate-parameters'}");

    return json_object_get_int_member(json_object_get_object_member(rsp,
                                                                    "return"),
                                      name);
}

/* Capabilities and parameters: QEMU's names and defaults; what illan
 * lacks is refused by name, not accepted and ignored. */
static void test_options(void)
{
    Rig r;
    g_autoptr(JsonObject) caps = NULL;
    JsonArray *list;
    bool events = false;

    rig_init(&r);
    r.src = rig_start(&r, r.src_dev, "pseries", NULL, NULL);
    g_assert_cmpint(parameter(r.src, "downtime-limit"), ==, 300);
    g_assert_cmpint(parameter(r.src, "max-bandwidth"), ==, 134217728);
    g_assert_cmpint(parameter(r.src, "avail-switchover-bandwidth"), ==, 0);
    set_parameters(r.src, "{'downtime-limit': 50, "
                   "'avail-switchover-bandwidth': 1000000}");
    g_assert_cmpint(parameter(r.src, "downtime-limit"), ==, 50);
    g_assert_cmpint(parameter(r.src, "avail-switchover-bandwidth"), ==,
                    1000000);
    assert_refused(r.src, "{'execute': 'migrate-set-parameters', "
                   "'arguments': {'downtime-limit': 2000001}}",
                   "Parameter 'downtime-limit' expects an integer in the "
                   "range of 0 to 2000000 ms");
    assert_refused(r.src, "{'execute': 'migrate-set-parameters', "
                   "'arguments': {'downtime-limit': 7, "
                   "'cpu-throttle-initial': 20}}",
                   "Parameter 'cpu-throttle-initial' is not supported by "
                   "illan (it has downtime-limit, max-bandwidth and "
                   "avail-switchover-bandwidth)");
    assert_refused(r.src, "{'execute': 'migrate-set-parameters', "
                   "'arguments': {'nonsense': 1}}",
                   "Parameter 'nonsense' is unexpected");
    /* All or nothing: the refused commands changed nothing. */
    g_assert_cmpint(parameter(r.src, "downtime-limit"), ==, 50);

    assert_refused(r.src, "{'execute': 'migrate-set-capabilities', "
                   "'arguments': {'capabilities': [{'capability': 'events', "
                   "'state': true}, {'capability': 'xbzrle', "
                   "'state': true}]}}",
                   "Capability 'xbzrle' is not supported by illan (its only "
                   "capability is 'events')");
    assert_refused(r.src, "{'execute': 'migrate-set-capabilities', "
                   "'arguments': {'capabilities': [{'capability': 'bogus', "
                   "'state': false}]}}",
                   "Parameter 'capabilities[0].capability' does not accept "
                   "value 'bogus'");
    json_object_unref(qmp_ok(r.src, "{'execute': 'migrate-set-capabilities',"
                             " 'arguments': {'capabilities': [{'capability':"
                             " 'events', 'state': true}, {'capability': "
                             "'postcopy-ram', 'state': false}]}}"));
    caps = qmp_ok(r.src, "{'execute': 'query-migrate-capabilities'}");
    list = json_object_get_array_member(caps, "return");
    g_assert_cmpuint(json_array_get_length(list), ==, 21);
    for (guint i = 0; i < json_array_get_length(list); i++) {
        JsonObject *c = json_array_get_object_element(list, i);
        const char *name = json_object_get_string_member(c, "capability");
        bool on = json_object_get_boolean_member(c, "state");

        g_assert_true(!on || !strcmp(name, "events"));
        events |= on;
    }
    g_assert_true(events);
    qtest_quit(r.src);
    rig_free(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/migration/precopy/dirty-writes", test_dirty_writes);
    g_test_add_func("/migration/precopy/no-convergence", test_no_convergence);
    g_test_add_func("/migration/precopy/options", test_options);
    return g_test_run();
}
