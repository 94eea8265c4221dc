/*
 * --preconfig and x-exit-preconfig (include/system/preconfig.h).  The
 * QMP registry holds the gate, so the monitor needs nothing from here.
 */
#include "system/preconfig.h"
#include "qemu/module.h"
#include "qemu/qmp-registry.h"

static bool (*pending_finish)(void *opaque, GError **errp);
static void *pending_opaque;

void preconfig_enter(bool (*finish)(void *opaque, GError **errp),
                     void *opaque)
{
    pending_finish = finish;
    pending_opaque = opaque;
    qmp_set_machine_ready(false);
}

static JsonNode *x_exit_preconfig(JsonObject *args, QmpError *err)
{
    bool (*finish)(void *opaque, GError **errp) = pending_finish;
    g_autoptr(GError) local = NULL;

    (void)args;
    if (!finish) {
        /* QEMU's words. */
        qmp_error_set(err, QMP_ERROR_GENERIC, "The command is permitted "
                      "only before machine initialization");
        return NULL;
    }
    pending_finish = NULL;
    qmp_set_machine_ready(true);
    if (!finish(pending_opaque, &local)) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "%s", local->message);
        return NULL;
    }
    return qmp_return_empty();
}

static const QmpCommand preconfig_commands[] = {
    { "x-exit-preconfig", NULL, false, x_exit_preconfig, true },
};

static void preconfig_commands_register(void)
{
    qmp_register_commands(preconfig_commands,
                          G_N_ELEMENTS(preconfig_commands));
}
illan_init(preconfig_commands_register)
