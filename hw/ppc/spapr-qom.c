/*
 * QOM for QMP's clients (hw/ppc/spapr-qom.h): the composition tree and
 * its properties, the type hierarchy QEMU would show for what illan has,
 * and the commands over them.  Nothing is kept: each request walks the
 * machine as it is.  No property can be written once a device is
 * realized, as with QEMU's qdev properties, so qom-set only ever answers
 * QEMU's errors.
 */
#include "hw/ppc/spapr-qom.h"
#include "hw/ppc/spapr.h"
#include "hw/ppc/spapr_vio.h"
#include "hw/user-object.h"
#include "qemu/hmp-registry.h"
#include "qemu/module.h"
#include "qemu/qmp-registry.h"

#include <string.h>

/* Types: QEMU's names for the parents of what illan has. */

typedef struct QomType {
    const char *name;
    const char *parent;
    bool abstract;
    const DeviceClass *dc;      /* for device types */
} QomType;

static const QomType fixed_types[] = {
    { "object", NULL, true, NULL },
    { "container", "object", false, NULL },
    { "device", "object", true, NULL },
    { "vio-spapr-device", "device", true, NULL },
    { "bus", "object", true, NULL },
    { TYPE_SPAPR_VIO_BUS, "bus", false, NULL },
    { "machine", "object", true, NULL },
    { "spapr-machine", "machine", true, NULL },
    { "memory-backend", "object", true, NULL },
    { "memory-backend-ram", "memory-backend", false, NULL },
};

static void add_device_type(const DeviceClass *dc, void *opaque)
{
    QomType t = {
        .name = dc->name,
        .parent = spapr_vio_is_vio_class(dc) ? "vio-spapr-device" : "device",
        .dc = dc,
    };

    g_array_append_val(opaque, t);
}

/* "NAME-machine", kept for the life of the program. */
static const char *machine_qom_type(const char *name)
{
    g_autofree char *type = g_strdup_printf("%s-machine", name);

    return g_intern_string(type);
}

static void add_machine_type(const MachineClass *mc, void *opaque)
{
    QomType t = {
        .name = machine_qom_type(mc->name),
        .parent = strcmp(mc->name, "none") ? "spapr-machine" : "machine",
    };

    g_array_append_val(opaque, t);
}

/* Every type (caller frees the array, not the names). */
static GArray *all_types(void)
{
    GArray *types = g_array_new(false, false, sizeof(QomType));

    g_array_append_vals(types, fixed_types, G_N_ELEMENTS(fixed_types));
    device_class_foreach(add_device_type, types);
    machine_class_foreach(add_machine_type, types);
    return types;
}

static const QomType *type_in(GArray *types, const char *name)
{
    for (guint i = 0; name && i < types->len; i++) {
        const QomType *t = &g_array_index(types, QomType, i);

        if (!strcmp(t->name, name)) {
            return t;
        }
    }
    return NULL;
}

/* Whether @t is @ancestor or derives from it. */
static bool type_is_a(GArray *types, const QomType *t, const char *ancestor)
{
    for (; t; t = type_in(types, t->parent)) {
        if (!strcmp(t->name, ancestor)) {
            return true;
        }
    }
    return false;
}

/* QEMU's names for property types: a MAC or netdev id is a "str". */
static const char *qom_prop_type(PropertyType type)
{
    switch (type) {
    case PROP_BOOL: return "bool";
    case PROP_INT32: return "int32";
    case PROP_UINT32: return "uint32";
    default: return "str";
    }
}

/* The tree. */

typedef enum QomKind {
    QOM_ROOT,
    QOM_MACHINE,
    QOM_CONTAINER,
    QOM_DEVICE,
    QOM_OBJECT,
} QomKind;

typedef struct QomNode {
    QomKind kind;
    const char *container;      /* QOM_CONTAINER: its name */
    SpaprVioDevice *dev;        /* QOM_DEVICE */
    UserObject *obj;            /* QOM_OBJECT */
} QomNode;

/* The machine type's QOM name, "pseries-2.0-machine" or "none-machine". */
static const char *spapr_qom_machine_type(void)
{
    SpaprMachineState *spapr = spapr_machine_current();

    return machine_qom_type(spapr ? spapr_machine_type(spapr) : "none");
}

static const char *node_type(const QomNode *n)
{
    switch (n->kind) {
    case QOM_MACHINE:
        return spapr_qom_machine_type();
    case QOM_DEVICE:
        return n->dev->qdev.klass->name;
    case QOM_OBJECT:
        return n->obj->type;
    default:
        return "container";
    }
}

typedef void (*ChildFn)(const char *name, const QomNode *child,
                        void *opaque);

typedef struct ChildWalk {
    ChildFn fn;
    void *opaque;
} ChildWalk;

static void device_child(SpaprVioDevice *dev, void *opaque)
{
    ChildWalk *w = opaque;
    QomNode child = { .kind = QOM_DEVICE, .dev = dev };

    w->fn(dev->qdev.id, &child, w->opaque);
}

static void object_child(UserObject *obj, void *opaque)
{
    ChildWalk *w = opaque;
    QomNode child = { .kind = QOM_OBJECT, .obj = obj };

    w->fn(obj->id, &child, w->opaque);
}

static void foreach_child(const QomNode *n, ChildFn fn, void *opaque)
{
    static const char *const machine_children[] = {
        "peripheral", "peripheral-anon", "unattached",
    };
    SpaprMachineState *spapr = spapr_machine_current();
    ChildWalk walk = { fn, opaque };
    QomNode child = { .kind = QOM_CONTAINER };

    switch (n->kind) {
    case QOM_ROOT:
        fn("machine", &(QomNode){ .kind = QOM_MACHINE }, opaque);
        child.container = "objects";
        fn("objects", &child, opaque);
        break;
    case QOM_MACHINE:
        for (size_t i = 0; i < G_N_ELEMENTS(machine_children); i++) {
            child.container = machine_children[i];
            fn(machine_children[i], &child, opaque);
        }
        break;
    case QOM_CONTAINER:
        if (spapr && !strcmp(n->container, "peripheral")) {
            spapr_vio_bus_foreach(spapr_vio_bus(spapr), device_child, &walk);
        } else if (!strcmp(n->container, "objects")) {
            user_object_foreach(object_child, &walk);
        }
        break;
    case QOM_DEVICE:
    case QOM_OBJECT:
        break;
    }
}

typedef struct ChildLookup {
    const char *name;
    QomNode found;
    bool ok;
} ChildLookup;

static void match_child(const char *name, const QomNode *child, void *opaque)
{
    ChildLookup *l = opaque;

    if (!l->ok && !strcmp(name, l->name)) {
        l->found = *child;
        l->ok = true;
    }
}

/* An absolute path; empty components are skipped, as QEMU does. */
static bool resolve_abs(const char *path, QomNode *node, GString *canon)
{
    g_auto(GStrv) parts = g_strsplit(path, "/", -1);

    *node = (QomNode){ .kind = QOM_ROOT };
    for (char **p = parts; *p; p++) {
        ChildLookup l = { .name = *p };

        if (!**p) {
            continue;
        }
        foreach_child(node, match_child, &l);
        if (!l.ok) {
            return false;
        }
        *node = l.found;
        g_string_append_printf(canon, "/%s", *p);
    }
    return true;
}

/* A partial path ("nic0", "peripheral/nic0") names the one object whose
 * path ends with it, as in QEMU. */
typedef struct PartialSearch {
    const char *suffix;         /* "/nic0" */
    GString *path;
    QomNode found;
    char *found_path;
    unsigned matches;
} PartialSearch;

static void search_node(const char *name, const QomNode *n, void *opaque)
{
    PartialSearch *ps = opaque;
    size_t len = ps->path->len;

    g_string_append_printf(ps->path, "/%s", name);
    if (g_str_has_suffix(ps->path->str, ps->suffix)) {
        ps->found = *n;
        g_free(ps->found_path);
        ps->found_path = g_strdup(ps->path->str);
        ps->matches++;
    }
    foreach_child(n, search_node, ps);
    g_string_truncate(ps->path, len);
}

typedef enum Resolved {
    RESOLVED,
    NOT_FOUND,
    AMBIGUOUS,
} Resolved;

/* Resolves @path to *@node and, when @canon is not NULL, its canonical
 * path (caller frees). */
static Resolved resolve_path(const char *path, QomNode *node, char **canon)
{
    g_autofree char *suffix = NULL;
    PartialSearch ps;
    GString *abs;

    if (path[0] == '/') {
        abs = g_string_new(NULL);
        if (!resolve_abs(path, node, abs)) {
            g_string_free(abs, true);
            return NOT_FOUND;
        }
        if (!abs->len) {
            g_string_append_c(abs, '/');
        }
        if (canon) {
            *canon = g_strdup(abs->str);
        }
        g_string_free(abs, true);
        return RESOLVED;
    }
    suffix = g_strdup_printf("/%s", path);
    ps = (PartialSearch){ .suffix = suffix, .path = g_string_new(NULL) };
    foreach_child(&(QomNode){ .kind = QOM_ROOT }, search_node, &ps);
    g_string_free(ps.path, true);
    *node = ps.found;
    if (ps.matches != 1) {
        g_free(ps.found_path);
        return ps.matches ? AMBIGUOUS : NOT_FOUND;
    }
    if (canon) {
        *canon = ps.found_path;
    } else {
        g_free(ps.found_path);
    }
    return RESOLVED;
}

static bool resolve_or_error(const char *path, QomNode *node, char **canon,
                             QmpError *err)
{
    switch (resolve_path(path, node, canon)) {
    case RESOLVED:
        return true;
    case AMBIGUOUS:
        qmp_error_set(err, QMP_ERROR_GENERIC, "Path '%s' is ambiguous", path);
        return false;
    default:
        qmp_error_set(err, QMP_ERROR_DEVICE_NOT_FOUND,
                      "Device '%s' not found", path);
        return false;
    }
}

/* Properties: "type", then a device's "realized" and its table, then
 * the children.  @value is NULL when only names and types are wanted. */

typedef void (*PropFn)(const char *name, const char *type, JsonNode *value,
                       void *opaque);

static JsonNode *string_node(const char *s)
{
    JsonNode *node = json_node_new(JSON_NODE_VALUE);

    json_node_set_string(node, s);
    return node;
}

static JsonNode *bool_node(bool b)
{
    JsonNode *node = json_node_new(JSON_NODE_VALUE);

    json_node_set_boolean(node, b);
    return node;
}

/* A property's value as JSON: booleans and integers keep their type. */
static JsonNode *prop_value(DeviceState *dev, const Property *p)
{
    g_autofree char *text = device_get_prop(dev, p->name, NULL);
    JsonNode *node = json_node_new(JSON_NODE_VALUE);

    switch (p->type) {
    case PROP_BOOL:
        json_node_set_boolean(node, !strcmp(text, "on"));
        break;
    case PROP_INT32:
    case PROP_UINT32:
        json_node_set_int(node, g_ascii_strtoll(text, NULL, 0));
        break;
    default:
        json_node_set_string(node, text);
    }
    return node;
}

typedef struct PropWalk {
    const char *path;
    bool values;
    PropFn fn;
    void *opaque;
} PropWalk;

static void child_prop(const char *name, const QomNode *child, void *opaque)
{
    PropWalk *w = opaque;
    g_autofree char *type = g_strdup_printf("child<%s>", node_type(child));
    g_autofree char *path = NULL;

    if (w->values) {
        path = g_strdup_printf("%s/%s", strcmp(w->path, "/") ? w->path : "",
                               name);
    }
    w->fn(name, type, path ? string_node(path) : NULL, w->opaque);
}

/* @path is @n's canonical path, for the values of child properties. */
static void foreach_prop(const QomNode *n, const char *path, bool values,
                         PropFn fn, void *opaque)
{
    PropWalk walk = { path, values, fn, opaque };

    fn("type", "string", values ? string_node(node_type(n)) : NULL, opaque);
    if (n->kind == QOM_DEVICE) {
        DeviceState *dev = &n->dev->qdev;

        fn("realized", "bool", values ? bool_node(dev->realized) : NULL,
           opaque);
        for (const Property *p = dev->klass->props; p && p->name; p++) {
            fn(p->name, qom_prop_type(p->type),
               values ? prop_value(dev, p) : NULL, opaque);
        }
    }
    if (n->kind == QOM_OBJECT) {
        JsonNode *size = NULL;

        if (values) {
            size = json_node_new(JSON_NODE_VALUE);
            json_node_set_int(size, n->obj->size);
        }
        fn("size", "uint64", size, opaque);
    }
    foreach_child(n, child_prop, &walk);
}

/* qom-list and qom-list-get. */

static void add_info(const char *name, const char *type, JsonNode *value,
                     void *opaque)
{
    JsonObject *o = json_object_new();

    json_object_set_string_member(o, "name", name);
    json_object_set_string_member(o, "type", type);
    if (value) {
        json_object_set_member(o, "value", value);
    }
    json_array_add_object_element(opaque, o);
}

static JsonNode *qom_list(JsonObject *args, QmpError *err)
{
    const char *path = json_object_get_string_member(args, "path");
    JsonArray *list;
    QomNode n;

    if (!resolve_or_error(path, &n, NULL, err)) {
        return NULL;
    }
    list = json_array_new();
    foreach_prop(&n, path, false, add_info, list);
    return qmp_return_array(list);
}

static JsonNode *qom_list_get(JsonObject *args, QmpError *err)
{
    JsonArray *paths = json_object_get_array_member(args, "paths");
    JsonArray *list = json_array_new();

    for (guint i = 0; i < json_array_get_length(paths); i++) {
        JsonNode *p = json_array_get_element(paths, i);
        const char *path = JSON_NODE_HOLDS_VALUE(p) &&
            json_node_get_value_type(p) == G_TYPE_STRING ?
            json_node_get_string(p) : NULL;
        g_autofree char *canon = NULL;
        JsonObject *o;
        QomNode n;

        if (!path) {
            qmp_error_set(err, QMP_ERROR_GENERIC, "Invalid parameter type "
                          "for 'paths[%u]', expected: string", i);
            json_array_unref(list);
            return NULL;
        }
        if (!resolve_or_error(path, &n, &canon, err)) {
            json_array_unref(list);
            return NULL;
        }
        o = json_object_new();
        json_object_set_array_member(o, "properties", json_array_new());
        foreach_prop(&n, canon, true, add_info,
                     json_object_get_array_member(o, "properties"));
        json_array_add_object_element(list, o);
    }
    return qmp_return_array(list);
}

/* qom-get and qom-set. */

typedef struct PropLookup {
    const char *name;
    const char *type;
    JsonNode *value;
} PropLookup;

static void match_prop(const char *name, const char *type, JsonNode *value,
                       void *opaque)
{
    PropLookup *l = opaque;

    if (!l->value && !strcmp(name, l->name)) {
        l->type = type;
        l->value = value;
    } else if (value) {
        json_node_unref(value);
    }
}

static JsonNode *qom_get(JsonObject *args, QmpError *err)
{
    const char *path = json_object_get_string_member(args, "path");
    PropLookup l = {
        .name = json_object_get_string_member(args, "property"),
    };
    g_autofree char *canon = NULL;
    QomNode n;

    if (!resolve_or_error(path, &n, &canon, err)) {
        return NULL;
    }
    foreach_prop(&n, canon, true, match_prop, &l);
    if (!l.value) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Property '%s.%s' not found",
                      node_type(&n), l.name);
    }
    return l.value;
}

static JsonNode *qom_set(JsonObject *args, QmpError *err)
{
    const char *path = json_object_get_string_member(args, "path");
    const char *prop = json_object_get_string_member(args, "property");
    PropLookup l = { .name = prop };
    QomNode n;

    g_autoptr(GList) names = json_object_get_members(args);

    for (GList *a = names; a; a = a->next) {
        if (strcmp(a->data, "path") && strcmp(a->data, "property") &&
            strcmp(a->data, "value")) {
            qmp_error_set(err, QMP_ERROR_GENERIC,
                          "Parameter '%s' is unexpected", (char *)a->data);
            return NULL;
        }
    }
    if (!json_object_has_member(args, "value")) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Parameter 'value' is missing");
        return NULL;
    }
    if (!resolve_or_error(path, &n, NULL, err)) {
        return NULL;
    }
    foreach_prop(&n, "/", true, match_prop, &l);
    if (!l.value) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Property '%s.%s' not found",
                      node_type(&n), prop);
        return NULL;
    }
    json_node_unref(l.value);
    if (n.kind == QOM_OBJECT && !strcmp(prop, "size")) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "cannot change property "
                      "'size' of %s.", node_type(&n));
    } else if (n.kind == QOM_DEVICE && strcmp(prop, "type") &&
        strcmp(prop, "realized") && !g_str_has_prefix(l.type, "child<")) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Attempt to set property '%s' "
                      "on device '%s' (type '%s') after it was realized",
                      prop, n.dev->qdev.id, node_type(&n));
    } else {
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      "Property '%s.%s' is not writable", node_type(&n), prop);
    }
    return NULL;
}

/* qom-list-types, qom-list-properties and device-list-properties. */

static JsonNode *qom_list_types(JsonObject *args, QmpError *err)
{
    const char *implements = json_object_has_member(args, "implements") ?
        json_object_get_string_member(args, "implements") : NULL;
    bool abstract = json_object_has_member(args, "abstract") &&
                    json_object_get_boolean_member(args, "abstract");
    g_autoptr(GArray) types = all_types();
    JsonArray *list = json_array_new();

    (void)err;
    for (guint i = 0; i < types->len; i++) {
        const QomType *t = &g_array_index(types, QomType, i);
        JsonObject *o;

        if ((t->abstract && !abstract) ||
            (implements && !type_is_a(types, t, implements))) {
            continue;
        }
        o = json_object_new();
        json_object_set_string_member(o, "name", t->name);
        if (t->abstract) {
            json_object_set_boolean_member(o, "abstract", true);
        }
        if (t->parent) {
            json_object_set_string_member(o, "parent", t->parent);
        }
        json_array_add_object_element(list, o);
    }
    return qmp_return_array(list);
}

static JsonObject *prop_info(const char *name, const char *type,
                             const char *description)
{
    JsonObject *o = json_object_new();

    json_object_set_string_member(o, "name", name);
    json_object_set_string_member(o, "type", type);
    if (description) {
        json_object_set_string_member(o, "description", description);
    }
    return o;
}

/* A device type's table, with the defaults a new device would get. */
static JsonArray *device_props(const DeviceClass *dc)
{
    DeviceState *probe = device_new(dc, NULL);
    JsonArray *list = json_array_new();

    for (const Property *p = dc->props; p && p->name; p++) {
        JsonObject *o = prop_info(p->name, qom_prop_type(p->type),
                                  p->description);

        if (probe && p->defval) {
            json_object_set_member(o, "default-value", prop_value(probe, p));
        }
        json_array_add_object_element(list, o);
    }
    device_free(probe);
    return list;
}

static JsonNode *device_list_properties(JsonObject *args, QmpError *err)
{
    const char *name = json_object_get_string_member(args, "typename");
    g_autoptr(GArray) types = all_types();
    const QomType *t = type_in(types, name);

    if (!t) {
        qmp_error_set(err, QMP_ERROR_DEVICE_NOT_FOUND,
                      "Device '%s' not found", name);
        return NULL;
    }
    if (!t->dc) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Parameter 'typename' expects "
                      "a non-abstract device type");
        return NULL;
    }
    return qmp_return_array(device_props(t->dc));
}

static JsonNode *qom_list_properties(JsonObject *args, QmpError *err)
{
    const char *name = json_object_get_string_member(args, "typename");
    g_autoptr(GArray) types = all_types();
    const QomType *t = type_in(types, name);
    JsonArray *list;

    if (!t) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Class '%s' not found", name);
        return NULL;
    }
    list = t->dc ? device_props(t->dc) : json_array_new();
    json_array_add_object_element(list, prop_info("type", "string", NULL));
    if (type_is_a(types, t, "device")) {
        json_array_add_object_element(list, prop_info("realized", "bool",
                                                      NULL));
    }
    if (type_is_a(types, t, "memory-backend")) {
        json_array_add_object_element(list, prop_info("size", "uint64",
                                                      NULL));
    }
    return qmp_return_array(list);
}

/* HMP: info qom-tree. */

typedef struct TreePrint {
    GString *out;
    int depth;
} TreePrint;

static void print_node(const char *name, const QomNode *n, void *opaque)
{
    TreePrint *tp = opaque;
    TreePrint below = { tp->out, tp->depth + 1 };

    g_string_append_printf(tp->out, "%*s/%s (%s)\n", tp->depth * 2, "", name,
                           node_type(n));
    foreach_child(n, print_node, &below);
}

/* HMP info qom-tree: the tree under @path (NULL: /machine), one
 * "/name (type)" line per object, children indented by two spaces. */
static void spapr_qom_print_tree(const char *path, GString *out)
{
    TreePrint tp = { out, 0 };
    g_autofree char *canon = NULL;
    const char *base;
    QomNode n;

    if (!path || !*path) {
        path = "/machine";
    }
    if (resolve_path(path, &n, &canon) != RESOLVED) {
        g_string_append_printf(out, "Path '%s' could not be resolved.\n",
                               path);
        return;
    }
    base = strrchr(canon, '/') + 1;
    print_node(*base ? base : "", &n, &tp);
}

static void hmp_info_qom_tree(const char *args, GString *out)
{
    spapr_qom_print_tree(args, out);
}

static const QmpArg path_args[] = {
    { "path", QMP_ARG_STR, false }, { NULL, 0, false }
};
static const QmpArg path_prop_args[] = {
    { "path", QMP_ARG_STR, false }, { "property", QMP_ARG_STR, false },
    { NULL, 0, false }
};
static const QmpArg paths_args[] = {
    { "paths", QMP_ARG_ARRAY, false }, { NULL, 0, false }
};
static const QmpArg list_types_args[] = {
    { "implements", QMP_ARG_STR, true }, { "abstract", QMP_ARG_BOOL, true },
    { NULL, 0, false }
};
static const QmpArg typename_args[] = {
    { "typename", QMP_ARG_STR, false }, { NULL, 0, false }
};

static const QmpCommand qom_commands[] = {
    { "qom-list", path_args, false, qom_list, true },
    { "qom-get", path_prop_args, false, qom_get, true },
    /* "value" is of any type, which the registry cannot declare. */
    { "qom-set", path_prop_args, true, qom_set, true },
    { "qom-list-get", paths_args, false, qom_list_get, true },
    { "qom-list-types", list_types_args, false, qom_list_types, true },
    { "qom-list-properties", typename_args, false, qom_list_properties,
      true },
    { "device-list-properties", typename_args, false, device_list_properties,
      false },
};

static const HmpCommand qom_hmp_commands[] = {
    { "info qom-tree", "[path]", "show QOM composition tree",
      hmp_info_qom_tree },
};

static void qom_commands_register(void)
{
    qmp_register_commands(qom_commands, G_N_ELEMENTS(qom_commands));
    hmp_register_commands(qom_hmp_commands, G_N_ELEMENTS(qom_hmp_commands));
}
illan_init(qom_commands_register)
