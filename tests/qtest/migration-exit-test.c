/*
 * Ending a migration or the run in the middle of one: SIGTERM or quit in
 * the window between the source's last pass and its switchover request
 * (held open by the test-only ILLAN_TEST_SWITCHOVER_DELAY_MS); a cancel
 * or SIGTERM while an exec: command neither reads nor exits.  Each ends
 * in time, with a clean status and nothing left behind.  And SIGTERM to
 * a destination whose source stopped anywhere in the stream, the VM
 * description after EOF included: the stream is refused, status 1.
 */
#include "migration-helpers.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define RAM_SIZE        (64ULL << 20)

/* Far longer than the test waits, so that only a hang reaches it. */
#define SWITCHOVER_DELAY_MS "60000"
/* How long an exit may take, whatever the migration was doing. */
#define EXIT_MAX_S          2.0
/* An exec: command that reads nothing, ignores SIGTERM and never exits
 * by itself. */
#define STUBBORN_EXEC       "exec:trap \"\" TERM; exec sleep 60"
/* Nonzero RAM, far more than a pipe holds. */
#define FILL_LEN            (16u << 20)
/* A cancel or an exit with such a command: its SIGTERM's grace, then
 * SIGKILL, and some room. */
#define EXEC_END_MAX_S      3.0

/* The source has synced after its first pass and found nothing left:
 * from here its thread goes straight to the switchover request. */
static bool past_last_sync(void *opaque)
{
    g_autoptr(JsonObject) info = query_migrate(opaque);
    JsonObject *ram = json_object_get_object_member(info, "ram");

    g_assert_cmpstr(json_object_get_string_member(info, "status"), !=,
                    "completed");
    return json_object_get_int_member(ram, "dirty-sync-count") >= 2 &&
           json_object_get_int_member(ram, "remaining") == 0;
}

static double seconds_since(gint64 start)
{
    return (g_get_monotonic_time() - start) / 1e6;
}

/* Sends @sig (0: none, the exit is already under way) and returns the
 * exit status; asserts it came within @max_s. */
static int exit_within(QTestState *qts, int sig, double max_s)
{
    gint64 start = g_get_monotonic_time();
    int status = qtest_quit_status(qts, sig);
    double took = seconds_since(start);

    g_test_message("exited with status %d after %.3f s", status, took);
    g_assert_cmpfloat(took, <, max_s);
    return status;
}

/* A source held before its switchover request, ended by @sig or, with
 * @sig 0, by QMP quit: exit status 0 within EXIT_MAX_S. */
static void switchover_window(int sig)
{
    Rig r;
    g_autofree char *file = NULL, *uri = NULL;

    rig_init(&r);
    file = rig_path(&r, "stream");
    uri = g_strdup_printf("file:%s", file);
    g_setenv("ILLAN_TEST_SWITCHOVER_DELAY_MS", SWITCHOVER_DELAY_MS, TRUE);
    r.src = rig_start(&r, r.src_dev, "pseries", NULL, NULL);
    g_unsetenv("ILLAN_TEST_SWITCHOVER_DELAY_MS");
    migrate_start(r.src, uri);
    qtest_wait_until(past_last_sync, r.src, QTEST_WAIT_S,
                     "the source to sync with nothing left to send");
    if (!sig) {
        json_object_unref(qmp_ok(r.src, "{'execute': 'quit'}"));
    }
    g_assert_cmpint(exit_within(r.src, sig, EXIT_MAX_S), ==, 0);
    rig_free(&r);
}

static void test_switchover_window_sigterm(void)
{
    switchover_window(SIGTERM);
}

static void test_switchover_window_quit(void)
{
    switchover_window(0);
}

/* The processes illan started and has not reaped, as /proc lists them. */
static char *children_of(QTestState *qts)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/task/%d/children",
                                            (int)qtest_pid(qts),
                                            (int)qtest_pid(qts));
    char *list = NULL;

    g_assert_true(g_file_get_contents(path, &list, NULL, NULL));
    return g_strstrip(list);
}

/* A source writing to STUBBORN_EXEC, stalled once the pipe is full. */
static void start_stubborn_exec(Rig *r)
{
    g_autofree char *children = NULL;

    rig_init(r);
    r->src = rig_start(r, r->src_dev, "pseries", NULL, NULL);
    qtest_memset(r->src, RAM_SIZE - FILL_LEN, 0x5a, FILL_LEN);
    migrate_start(r->src, STUBBORN_EXEC);
    wait_migration_moved(r->src, 1);
    children = children_of(r->src);
    g_assert_cmpstr(children, !=, "");
}

/* migrate_cancel: cancelled in time, the command gone, the machine
 * running again. */
static void test_exec_cancel(void)
{
    Rig r;
    g_autofree char *children = NULL, *state = NULL;
    gint64 start;

    start_stubborn_exec(&r);
    start = g_get_monotonic_time();
    json_object_unref(qmp_ok(r.src, "{'execute': 'migrate_cancel'}"));
    wait_migration_status(r.src, "cancelled");
    g_test_message("cancelled after %.3f s", seconds_since(start));
    g_assert_cmpfloat(seconds_since(start), <, EXEC_END_MAX_S);
    children = children_of(r.src);
    g_assert_cmpstr(children, ==, "");
    state = run_state(r.src);
    g_assert_cmpstr(state, ==, "running");
    qtest_quit(r.src);
    rig_free(&r);
}

/* A command that keeps running after it read the whole stream: the
 * source waits for it, still active, until migrate_cancel ends it. */
static void test_exec_lingering(void)
{
    Rig r;
    g_autofree char *file = NULL, *uri = NULL, *children = NULL;
    g_autofree char *state = NULL;
    g_autoptr(JsonObject) info = NULL;
    gint64 start;

    rig_init(&r);
    file = rig_path(&r, "stream");
    uri = g_strdup_printf("exec:cat > %s; trap \"\" TERM; exec sleep 60",
                          file);
    r.src = rig_start(&r, r.src_dev, "pseries", NULL, NULL);
    migrate_start(r.src, uri);
    wait_whole_stream(r.src, file);
    state = run_state(r.src);
    g_assert_cmpstr(state, ==, "finish-migrate");
    info = query_migrate(r.src);
    g_assert_cmpstr(json_object_get_string_member(info, "status"), ==,
                    "active");
    start = g_get_monotonic_time();
    json_object_unref(qmp_ok(r.src, "{'execute': 'migrate_cancel'}"));
    wait_migration_status(r.src, "cancelled");
    g_test_message("cancelled after %.3f s", seconds_since(start));
    g_assert_cmpfloat(seconds_since(start), <, EXEC_END_MAX_S);
    children = children_of(r.src);
    g_assert_cmpstr(children, ==, "");
    g_free(state);
    state = run_state(r.src);
    g_assert_cmpstr(state, ==, "running");
    qtest_quit(r.src);
    rig_free(&r);
}

static void test_exec_sigterm(void)
{
    Rig r;

    start_stubborn_exec(&r);
    g_assert_cmpint(exit_within(r.src, SIGTERM, EXEC_END_MAX_S), ==, 0);
    rig_free(&r);
}

/* Where the VM description starts (its 0x06 byte, right after EOF):
 * the last such byte whose length runs exactly to the stream's end. */
static gsize vmdesc_offset(const guint8 *data, gsize len)
{
    for (gsize at = len - 5; at > 0; at--) {
        guint32 desc_len = (guint32)data[at + 1] << 24 |
                           data[at + 2] << 16 | data[at + 3] << 8 |
                           data[at + 4];

        if (data[at] == 0x06 && data[at - 1] == 0x00 &&
            at + 5 + desc_len == len) {
            return at;
        }
    }
    g_error("the stream has no VM description");
}

/* A destination on the command line's -incoming, fed the first @cut
 * bytes of @data, then SIGTERM: status 1 and the one line. */
static void interrupt_destination_at(Rig *r, const guint8 *data, gsize cut)
{
    g_autofree char *sock = rig_path(r, "mig.sock");
    g_autofree char *errfile = rig_path(r, "dst.err");
    g_autofree char *incoming = g_strdup_printf("-incoming unix:%s 2>%s",
                                                sock, errfile);
    g_autofree char *err = NULL, *byte = NULL;
    QTestState *dst = rig_start(r, r->dst_dev, "pseries", NULL, incoming);
    int fd = stall_connect(sock);

    g_assert_cmpint(write(fd, data, cut), ==, (gssize)cut);
    g_assert_cmpint(wait_migration_moved(dst, cut), ==, cut);
    g_assert_cmpint(qtest_quit_status(dst, SIGTERM), ==, 1);
    close(fd);
    g_assert_true(g_file_get_contents(errfile, &err, NULL, NULL));
    g_test_message("cut at %" G_GSIZE_FORMAT ": %s", cut, err);
    byte = g_strdup_printf("interrupted by shutdown at byte %" G_GSIZE_FORMAT
                           "\n", cut);
    g_assert_true(g_str_has_prefix(err, "illan: -incoming unix:"));
    g_assert_true(g_str_has_suffix(err, byte));
}

/* Before the EOF marker, right after it, and inside the description's
 * JSON: the same refusal each time. */
static void test_destination_in_vmdesc(void)
{
    Rig r;
    g_autofree char *file = NULL, *uri = NULL;
    g_autofree guint8 *data = NULL;
    gsize len, desc;

    rig_init(&r);
    file = rig_path(&r, "stream");
    uri = g_strdup_printf("file:%s", file);
    r.src = rig_start(&r, r.src_dev, "pseries", NULL, NULL);
    migrate(r.src, uri);
    qtest_quit(r.src);
    g_assert_true(g_file_get_contents(file, (char **)&data, &len, NULL));
    desc = vmdesc_offset(data, len);
    interrupt_destination_at(&r, data, desc - 1);
    interrupt_destination_at(&r, data, desc);
    interrupt_destination_at(&r, data, desc + 5 + 10);
    rig_free(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/migration/exit/switchover-window/sigterm",
                    test_switchover_window_sigterm);
    g_test_add_func("/migration/exit/switchover-window/quit",
                    test_switchover_window_quit);
    g_test_add_func("/migration/exit/exec/cancel", test_exec_cancel);
    g_test_add_func("/migration/exit/exec/sigterm", test_exec_sigterm);
    g_test_add_func("/migration/exit/exec/lingering", test_exec_lingering);
    g_test_add_func("/migration/exit/destination-in-vmdesc",
                    test_destination_in_vmdesc);
    return g_test_run();
}
