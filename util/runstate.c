/*
 * The run state.  Its writes are the main thread's; the data path reads
 * it with runstate_is_running() from any thread, but only the main-loop
 * backends can see a change, since the threads that run beside the main
 * loop are parked whenever it is not running.
 */
#include "qemu/runstate.h"
#include "qemu/pause.h"
#include "trace/trace-util.h"

#include <glib.h>

typedef struct Notifier {
    RunstateNotifier fn;
    void *opaque;
} Notifier;

static RunState current_state = RUN_STATE_PRELAUNCH;
static RunstateHandlers handlers;
static GArray *notifiers;

static void notify(RunstateEvent event, const char *reason);

RunState runstate_get(void)
{
    return __atomic_load_n(&current_state, __ATOMIC_ACQUIRE);
}

bool runstate_is_running(void)
{
    return runstate_get() == RUN_STATE_RUNNING;
}

const char *runstate_name(RunState state)
{
    switch (state) {
    case RUN_STATE_PRELAUNCH: return "prelaunch";
    case RUN_STATE_RUNNING: return "running";
    case RUN_STATE_PAUSED: return "paused";
    case RUN_STATE_SHUTDOWN: return "shutdown";
    case RUN_STATE_INMIGRATE: return "inmigrate";
    case RUN_STATE_POSTMIGRATE: return "postmigrate";
    case RUN_STATE_FINISH_MIGRATE: return "finish-migrate";
    }
    g_assert_not_reached();
}

void runstate_set(RunState state)
{
    RunState old = runstate_get();

    trace_runstate_set(old, runstate_name(old), state, runstate_name(state));
    if (old == RUN_STATE_RUNNING && state != RUN_STATE_RUNNING) {
        pause_all_from(runstate_name(state));
    }
    __atomic_store_n(&current_state, state, __ATOMIC_RELEASE);
    if ((old == RUN_STATE_RUNNING) != (state == RUN_STATE_RUNNING)) {
        trace_vm_state_notify(state == RUN_STATE_RUNNING, state,
                              runstate_name(state));
    }
    if (old != state) {
        notify(RUNSTATE_EVENT_CHANGED, NULL);
    }
    if (old != RUN_STATE_RUNNING && state == RUN_STATE_RUNNING) {
        resume_all();
    }
}

void runstate_set_handlers(const RunstateHandlers *h)
{
    handlers = *h;
}

void runstate_add_notifier(RunstateNotifier fn, void *opaque)
{
    if (!notifiers) {
        notifiers = g_array_new(FALSE, FALSE, sizeof(Notifier));
    }
    g_array_append_val(notifiers, ((Notifier){ fn, opaque }));
}

void runstate_remove_notifier(RunstateNotifier fn, void *opaque)
{
    for (guint i = 0; notifiers && i < notifiers->len; i++) {
        Notifier *n = &g_array_index(notifiers, Notifier, i);

        if (n->fn == fn && n->opaque == opaque) {
            g_array_remove_index(notifiers, i);
            return;
        }
    }
}

static void notify(RunstateEvent event, const char *reason)
{
    for (guint i = 0; notifiers && i < notifiers->len; i++) {
        Notifier *n = &g_array_index(notifiers, Notifier, i);

        n->fn(event, reason, n->opaque);
    }
}

void vm_stop(void)
{
    if (runstate_is_running()) {
        runstate_set(RUN_STATE_PAUSED);
        notify(RUNSTATE_EVENT_STOP, NULL);
    }
}

void vm_stop_force_state(RunState state)
{
    bool was_running = runstate_is_running();

    runstate_set(state);
    if (was_running) {
        notify(RUNSTATE_EVENT_STOP, NULL);
    }
}

void vm_start(void)
{
    RunState s = runstate_get();

    if (s == RUN_STATE_PRELAUNCH || s == RUN_STATE_PAUSED ||
        s == RUN_STATE_POSTMIGRATE) {
        runstate_set(RUN_STATE_RUNNING);
        notify(RUNSTATE_EVENT_RESUME, NULL);
    }
}

void qemu_system_reset(const char *reason)
{
    pause_all_from("reset");
    if (handlers.reset) {
        handlers.reset(handlers.opaque);
    }
    resume_all();
    notify(RUNSTATE_EVENT_RESET, reason);
}

void qemu_system_shutdown(const char *reason)
{
    if (runstate_get() == RUN_STATE_SHUTDOWN) {
        return;
    }
    runstate_set(RUN_STATE_SHUTDOWN);
    notify(RUNSTATE_EVENT_SHUTDOWN, reason);
    if (handlers.quit) {
        handlers.quit(handlers.opaque);
    }
}
