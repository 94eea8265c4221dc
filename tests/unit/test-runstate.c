/*
 * Unit tests for the run state (util/runstate.c): what its notifiers see
 * when the machine stops.
 */
#include "qemu/runstate.h"

#include <glib.h>

typedef struct Seen {
    RunstateEvent event;
    RunState state;             /* runstate_get() when it was announced */
} Seen;

static void record(RunstateEvent event, const char *reason, void *opaque)
{
    Seen s = { event, runstate_get() };

    (void)reason;
    g_array_append_val((GArray *)opaque, s);
}

static Seen seen_at(GArray *seen, guint i)
{
    g_assert_cmpuint(i, <, seen->len);
    return g_array_index(seen, Seen, i);
}

/*
 * A migration's switchover stops straight into finish-migrate, as QEMU's
 * does: the one change the notifiers see says why the machine stops (the
 * af-xdp queues then bind their own sockets in the background), and STOP
 * follows it.  From a state that does not run, the state changes alone.
 */
static void test_stop_force_state(void)
{
    g_autoptr(GArray) seen = g_array_new(FALSE, FALSE, sizeof(Seen));

    runstate_set(RUN_STATE_RUNNING);
    runstate_add_notifier(record, seen);
    vm_stop_force_state(RUN_STATE_FINISH_MIGRATE);
    g_assert_cmpuint(seen->len, ==, 2);
    g_assert_cmpint(seen_at(seen, 0).event, ==, RUNSTATE_EVENT_CHANGED);
    g_assert_cmpint(seen_at(seen, 0).state, ==, RUN_STATE_FINISH_MIGRATE);
    g_assert_cmpint(seen_at(seen, 1).event, ==, RUNSTATE_EVENT_STOP);

    g_array_set_size(seen, 0);
    runstate_set(RUN_STATE_PAUSED);
    g_array_set_size(seen, 0);
    vm_stop_force_state(RUN_STATE_FINISH_MIGRATE);
    g_assert_cmpuint(seen->len, ==, 1);
    g_assert_cmpint(seen_at(seen, 0).event, ==, RUNSTATE_EVENT_CHANGED);
    g_assert_cmpint(runstate_get(), ==, RUN_STATE_FINISH_MIGRATE);
    runstate_remove_notifier(record, seen);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/runstate/stop-force-state", test_stop_force_state);
    return g_test_run();
}
