/*
 * Ending a run in the middle of a migration: SIGTERM or quit in the
 * window between the source's last pass and its switchover request
 * (held open by the test-only ILLAN_TEST_SWITCHOVER_DELAY_MS), the exit
 * ends in time and with a clean status.
 */
#include "migration-helpers.h"

#include <signal.h>
#include <string.h>

/* Far longer than the test waits, so that only a hang reaches it. */
#define SWITCHOVER_DELAY_MS "60000"
/* How long an exit may take, whatever the migration was doing. */
#define EXIT_MAX_S          2.0

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

/* Sends @sig (0: none, the exit is already under way) and returns the
 * exit status; asserts it came within EXIT_MAX_S. */
static int exit_within_limit(QTestState *qts, int sig)
{
    gint64 start = g_get_monotonic_time();
    int status = qtest_quit_status(qts, sig);
    double took = (g_get_monotonic_time() - start) / 1e6;

    g_test_message("exited with status %d after %.3f s", status, took);
    g_assert_cmpfloat(took, <, EXIT_MAX_S);
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
    g_assert_cmpint(exit_within_limit(r.src, sig), ==, 0);
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

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/migration/exit/switchover-window/sigterm",
                    test_switchover_window_sigterm);
    g_test_add_func("/migration/exit/switchover-window/quit",
                    test_switchover_window_quit);
    return g_test_run();
}
