/*
 * The run state's QMP commands: query-status, stop, cont, system_reset
 * and quit, and query-name for the guest's name.  The events they cause
 * come from the run state's notifiers.
 */
#include "qemu/module.h"
#include "qemu/qmp-registry.h"
#include "qemu/runstate.h"
#include "qemu/vm-name.h"

static JsonNode *query_status(JsonObject *args, QmpError *err)
{
    JsonObject *st = json_object_new();

    (void)args, (void)err;
    json_object_set_boolean_member(st, "running", runstate_is_running());
    json_object_set_string_member(st, "status", runstate_name(runstate_get()));
    return qmp_return_object(st);
}

/* NameInfo: "name" only when -name gave one. */
static JsonNode *query_name(JsonObject *args, QmpError *err)
{
    JsonObject *info = json_object_new();

    (void)args, (void)err;
    if (qemu_get_vm_name()) {
        json_object_set_string_member(info, "name", qemu_get_vm_name());
    }
    return qmp_return_object(info);
}

static JsonNode *qmp_stop(JsonObject *args, QmpError *err)
{
    (void)args, (void)err;
    vm_stop();
    return qmp_return_empty();
}

static JsonNode *qmp_cont(JsonObject *args, QmpError *err)
{
    (void)args;
    if (runstate_get() == RUN_STATE_SHUTDOWN) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "The machine is shutting down");
        return NULL;
    }
    if (runstate_get() == RUN_STATE_FINISH_MIGRATE) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Migration is not finalized "
                      "yet");
        return NULL;
    }
    vm_start();
    return qmp_return_empty();
}

/* Not in finish-migrate: the device state has been captured and the
 * last pages are still going out, so the destination would get the
 * devices from before the reset with RAM from after it.  Paused,
 * inmigrate and postmigrate allow it, as QEMU does: no images are
 * taken yet, the loaded ones replace what it reset, or the stream is
 * whole. */
static JsonNode *system_reset(JsonObject *args, QmpError *err)
{
    (void)args;
    if (runstate_get() == RUN_STATE_FINISH_MIGRATE) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Migration is not finalized "
                      "yet: retry system_reset once query-migrate says "
                      "completed, failed or cancelled");
        return NULL;
    }
    qemu_system_reset("host-qmp-system-reset");
    return qmp_return_empty();
}

/* After the reply has gone out, so that SHUTDOWN follows it. */
static gboolean quit_after_reply(gpointer opaque)
{
    (void)opaque;
    qemu_system_shutdown("host-qmp-quit");
    return G_SOURCE_REMOVE;
}

static JsonNode *qmp_quit(JsonObject *args, QmpError *err)
{
    (void)args, (void)err;
    g_idle_add(quit_after_reply, NULL);
    return qmp_return_empty();
}

static const QmpCommand runstate_commands[] = {
    { "query-status", NULL, false, query_status, true },
    { "query-name", NULL, false, query_name, true },
    { "stop", NULL, false, qmp_stop, false },
    { "cont", NULL, false, qmp_cont, false },
    { "system_reset", NULL, false, system_reset, false },
    { "quit", NULL, false, qmp_quit, true },
};

static void runstate_commands_register(void)
{
    qmp_register_commands(runstate_commands, G_N_ELEMENTS(runstate_commands));
}
illan_init(runstate_commands_register)
