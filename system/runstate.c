/*
 * The run state.  The data path asks runstate_is_running() before it
 * writes guest memory, so a stopped machine receives nothing.
 */
#include "system/runstate.h"
#include "monitor/qmp.h"

#include <glib.h>

static RunState current_state = RUN_STATE_PRELAUNCH;
static RunstateHandlers handlers;

RunState runstate_get(void)
{
    return __atomic_load_n(&current_state, __ATOMIC_ACQUIRE);
}

void runstate_set(RunState state)
{
    __atomic_store_n(&current_state, state, __ATOMIC_RELEASE);
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
    }
    g_assert_not_reached();
}

void runstate_set_handlers(const RunstateHandlers *h)
{
    handlers = *h;
}

void vm_stop(void)
{
    if (runstate_is_running()) {
        runstate_set(RUN_STATE_PAUSED);
        qmp_event_emit("STOP", NULL);
    }
}

void vm_start(void)
{
    RunState s = runstate_get();

    if (s == RUN_STATE_PRELAUNCH || s == RUN_STATE_PAUSED ||
        s == RUN_STATE_POSTMIGRATE) {
        runstate_set(RUN_STATE_RUNNING);
        qmp_event_emit("RESUME", NULL);
    }
}

static JsonObject *cause(const char *reason)
{
    JsonObject *data = json_object_new();

    json_object_set_boolean_member(data, "guest", FALSE);
    json_object_set_string_member(data, "reason", reason);
    return data;
}

void qemu_system_reset(const char *reason)
{
    if (handlers.reset) {
        handlers.reset(handlers.opaque);
    }
    qmp_event_emit("RESET", cause(reason));
}

void qemu_system_shutdown(const char *reason)
{
    if (runstate_get() == RUN_STATE_SHUTDOWN) {
        return;
    }
    runstate_set(RUN_STATE_SHUTDOWN);
    qmp_event_emit("SHUTDOWN", cause(reason));
    if (handlers.quit) {
        handlers.quit(handlers.opaque);
    }
}
