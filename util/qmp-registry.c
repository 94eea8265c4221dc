/*
 * The QMP command registry (include/qemu/qmp-registry.h): a list filled
 * by constructors before main() runs, and read only after.
 */
#include "qemu/qmp-registry.h"

#include <stdarg.h>
#include <string.h>

static GPtrArray *commands;     /* const QmpCommand *, not owned */
static bool machine_ready = true;

void qmp_error_set(QmpError *err, const char *cls, const char *fmt, ...)
{
    g_autofree char *text = NULL;
    va_list ap;

    va_start(ap, fmt);
    text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_free(err->desc);
    err->cls = cls;
    err->desc = g_utf8_make_valid(text, -1);
}

void qmp_register_commands(const QmpCommand *cmds, size_t n)
{
    if (!commands) {
        commands = g_ptr_array_new();
    }
    for (size_t i = 0; i < n; i++) {
        g_assert(!qmp_find_command(cmds[i].name));
        g_ptr_array_add(commands, (gpointer)&cmds[i]);
    }
}

void qmp_unregister_command(const char *name)
{
    const QmpCommand *cmd = qmp_find_command(name);

    if (cmd) {
        g_ptr_array_remove(commands, (gpointer)cmd);
    }
}

const QmpCommand *qmp_find_command(const char *name)
{
    for (guint i = 0; commands && i < commands->len; i++) {
        const QmpCommand *cmd = g_ptr_array_index(commands, i);

        if (!strcmp(cmd->name, name)) {
            return cmd;
        }
    }
    return NULL;
}

void qmp_foreach_command(void (*fn)(const QmpCommand *cmd, void *opaque),
                         void *opaque)
{
    for (guint i = 0; commands && i < commands->len; i++) {
        fn(g_ptr_array_index(commands, i), opaque);
    }
}

void qmp_set_machine_ready(bool ready)
{
    machine_ready = ready;
}

bool qmp_command_allowed(const QmpCommand *cmd, QmpError *err)
{
    if (!machine_ready && !cmd->allow_preconfig) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "The command '%s' is "
                      "permitted only after machine initialization has "
                      "completed", cmd->name);
        return false;
    }
    return true;
}

JsonNode *qmp_return_empty(void)
{
    return qmp_return_object(json_object_new());
}

JsonNode *qmp_return_object(JsonObject *obj)
{
    JsonNode *node = json_node_new(JSON_NODE_OBJECT);

    json_node_take_object(node, obj);
    return node;
}

JsonNode *qmp_return_array(JsonArray *arr)
{
    JsonNode *node = json_node_new(JSON_NODE_ARRAY);

    json_node_take_array(node, arr);
    return node;
}
