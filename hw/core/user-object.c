/*
 * User-created objects (hw/user-object.h) and their QMP commands,
 * object-add and object-del, with QEMU's errors.
 */
#include "hw/user-object.h"
#include "qemu/module.h"
#include "qemu/option.h"
#include "qemu/qmp-registry.h"

#include <string.h>

#define TYPE_MEMORY_BACKEND_RAM "memory-backend-ram"

static GPtrArray *objects;      /* UserObject *, owned */

static void object_free(gpointer p)
{
    UserObject *obj = p;

    g_free(obj->id);
    g_free(obj);
}

static UserObject *find(const char *id)
{
    for (guint i = 0; objects && i < objects->len; i++) {
        UserObject *obj = g_ptr_array_index(objects, i);

        if (!strcmp(obj->id, id)) {
            return obj;
        }
    }
    return NULL;
}

static bool user_object_add(const char *type, const char *id, uint64_t size,
                            GError **errp)
{
    UserObject *obj;

    if (strcmp(type, TYPE_MEMORY_BACKEND_RAM)) {
        g_set_error(errp, ILLAN_ERROR, 0, "invalid object type: %s", type);
        return false;
    }
    if (find(id)) {
        g_set_error(errp, ILLAN_ERROR, 0, "attempt to add duplicate property "
                    "'%s' to object (type 'container')", id);
        return false;
    }
    if (!size) {
        g_set_error(errp, ILLAN_ERROR, 0, "can't create backend with size 0");
        return false;
    }
    if (!objects) {
        objects = g_ptr_array_new_with_free_func(object_free);
    }
    obj = g_new0(UserObject, 1);
    obj->id = g_strdup(id);
    obj->type = TYPE_MEMORY_BACKEND_RAM;
    obj->size = size;
    g_ptr_array_add(objects, obj);
    return true;
}

bool user_object_add_opts(const char *optarg, GError **errp)
{
    static const char *const known[] = { "qom-type", "id", "size", NULL };
    g_autoptr(QemuOpts) opts = qemu_opts_parse(optarg, "qom-type", errp);
    const char *id, *size;
    uint64_t bytes = 0;

    if (!opts || !qemu_opts_check_keys(opts, known, errp)) {
        return false;
    }
    id = qemu_opt_get(opts, "id");
    size = qemu_opt_get(opts, "size");
    if (!id) {
        g_set_error(errp, ILLAN_ERROR, 0, "Parameter 'id' is missing");
        return false;
    }
    if (size && !qemu_parse_size("size", size, 0, &bytes, errp)) {
        return false;
    }
    return user_object_add(qemu_opt_get(opts, "qom-type"), id, bytes, errp);
}

static bool user_object_del(const char *id, GError **errp)
{
    UserObject *obj = find(id);

    if (!obj) {
        g_set_error(errp, ILLAN_ERROR, 0, "object '%s' not found", id);
        return false;
    }
    g_ptr_array_remove(objects, obj);
    return true;
}

void user_object_foreach(void (*fn)(UserObject *obj, void *opaque),
                         void *opaque)
{
    for (guint i = 0; objects && i < objects->len; i++) {
        fn(g_ptr_array_index(objects, i), opaque);
    }
}

static JsonNode *gerror_reply(GError *gerr, QmpError *err)
{
    qmp_error_set(err, QMP_ERROR_GENERIC, "%s", gerr->message);
    g_error_free(gerr);
    return NULL;
}

/* The type's own properties follow qom-type and id, at the same level. */
static JsonNode *object_add(JsonObject *args, QmpError *err)
{
    const char *type = json_object_get_string_member(args, "qom-type");
    g_autoptr(GList) names = json_object_get_members(args);
    GError *gerr = NULL;
    uint64_t size = 0;

    for (GList *l = names; l; l = l->next) {
        JsonNode *v = json_object_get_member(args, l->data);

        if (!strcmp(l->data, "qom-type") || !strcmp(l->data, "id")) {
            continue;
        }
        if (strcmp(l->data, "size")) {
            qmp_error_set(err, QMP_ERROR_GENERIC, "Property '%s.%s' not "
                          "found", type, (char *)l->data);
            return NULL;
        }
        if (!JSON_NODE_HOLDS_VALUE(v) ||
            json_node_get_value_type(v) != G_TYPE_INT64 ||
            json_node_get_int(v) < 0) {
            qmp_error_set(err, QMP_ERROR_GENERIC, "Invalid parameter type "
                          "for 'size', expected: integer");
            return NULL;
        }
        size = json_node_get_int(v);
    }
    if (!user_object_add(type, json_object_get_string_member(args, "id"),
                         size, &gerr)) {
        return gerror_reply(gerr, err);
    }
    return qmp_return_empty();
}

static JsonNode *object_del(JsonObject *args, QmpError *err)
{
    GError *gerr = NULL;

    if (!user_object_del(json_object_get_string_member(args, "id"), &gerr)) {
        return gerror_reply(gerr, err);
    }
    return qmp_return_empty();
}

static const QmpArg object_add_args[] = {
    { "qom-type", QMP_ARG_STR, false }, { "id", QMP_ARG_STR, false },
    { NULL, 0, false }
};
static const QmpArg object_del_args[] = {
    { "id", QMP_ARG_STR, false }, { NULL, 0, false }
};

static const QmpCommand object_commands[] = {
    { "object-add", object_add_args, true, object_add, true },
    { "object-del", object_del_args, false, object_del, true },
};

static void object_commands_register(void)
{
    qmp_register_commands(object_commands, G_N_ELEMENTS(object_commands));
}
illan_init(object_commands_register)
