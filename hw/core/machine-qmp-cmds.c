/*
 * The machine types' QMP commands: query-machines lists the types of
 * -M help as QEMU's MachineInfo; query-cpus-fast lists the CPUs, and a
 * machine with no CPU has none.
 */
#include "hw/boards.h"
#include "qemu/module.h"
#include "qemu/qmp-registry.h"

#include <string.h>

/* "driver.prop=value" as QEMU's CompatProperty. */
static JsonArray *compat_props(const MachineClass *mc)
{
    JsonArray *list = json_array_new();

    for (const char *const *g = mc->compat_props; g && *g; g++) {
        const char *dot = strchr(*g, '.'), *eq = dot ? strchr(dot, '=') : NULL;
        JsonObject *o = json_object_new();
        g_autofree char *driver = NULL, *prop = NULL;

        g_assert(eq);
        driver = g_strndup(*g, dot - *g);
        prop = g_strndup(dot + 1, eq - dot - 1);
        json_object_set_string_member(o, "qom-type", driver);
        json_object_set_string_member(o, "property", prop);
        json_object_set_string_member(o, "value", eq + 1);
        json_array_add_object_element(list, o);
    }
    return list;
}

typedef struct MachineList {
    JsonArray *list;
    bool with_compat;
} MachineList;

static void add_machine(const MachineClass *mc, void *opaque)
{
    MachineList *ml = opaque;
    JsonObject *o = json_object_new();

    json_object_set_string_member(o, "name", mc->name);
    if (mc->alias) {
        json_object_set_string_member(o, "alias", mc->alias);
    }
    if (mc->is_default) {
        json_object_set_boolean_member(o, "is-default", true);
    }
    if (mc->default_ram_id) {
        json_object_set_string_member(o, "default-ram-id", mc->default_ram_id);
    }
    json_object_set_int_member(o, "cpu-max", 0);
    json_object_set_boolean_member(o, "hotpluggable-cpus", false);
    json_object_set_boolean_member(o, "numa-mem-supported", false);
    json_object_set_boolean_member(o, "deprecated", false);
    json_object_set_boolean_member(o, "acpi", false);
    if (ml->with_compat) {
        json_object_set_array_member(o, "compat-props", compat_props(mc));
    }
    json_array_add_object_element(ml->list, o);
}

static JsonNode *query_machines(JsonObject *args, QmpError *err)
{
    MachineList ml = {
        .list = json_array_new(),
        .with_compat = json_object_has_member(args, "compat-props") &&
                       json_object_get_boolean_member(args, "compat-props"),
    };

    (void)err;
    machine_class_foreach(add_machine, &ml);
    return qmp_return_array(ml.list);
}

static JsonNode *query_cpus_fast(JsonObject *args, QmpError *err)
{
    (void)args, (void)err;
    return qmp_return_array(json_array_new());
}

static const QmpArg query_machines_args[] = {
    { "compat-props", QMP_ARG_BOOL, true }, { NULL, 0, false }
};

static const QmpCommand machine_commands[] = {
    { "query-machines", query_machines_args, false, query_machines, false },
    { "query-cpus-fast", NULL, false, query_cpus_fast, false },
};

static void machine_commands_register(void)
{
    qmp_register_commands(machine_commands, G_N_ELEMENTS(machine_commands));
}
illan_init(machine_commands_register)
