/*
 * The pseries machine's QMP commands: qom-list and qom-get over a small
 * QOM-like tree of its devices (/machine/peripheral/ID and their
 * properties), and pmemsave of its RAM.
 */
#include "hw/ppc/spapr.h"
#include "hw/ppc/spapr_vio.h"
#include "qemu/module.h"
#include "qemu/qmp-registry.h"

#include <string.h>

#define PERIPHERAL "/machine/peripheral"

static SpaprVioBus *vio_bus(void)
{
    return spapr_vio_bus(spapr_machine_current());
}

static JsonObject *qom_entry(const char *name, const char *type)
{
    JsonObject *o = json_object_new();

    json_object_set_string_member(o, "name", name);
    json_object_set_string_member(o, "type", type);
    return o;
}

static void add_child(SpaprVioDevice *dev, void *opaque)
{
    g_autofree char *type = g_strdup_printf("child<%s>",
                                            dev->qdev.klass->name);

    json_array_add_object_element(opaque, qom_entry(dev->qdev.id, type));
}

static SpaprVioDevice *device_at(const char *path, QmpError *err)
{
    SpaprVioDevice *dev = spapr_vio_find_by_path(vio_bus(), path);

    if (!dev) {
        qmp_error_set(err, QMP_ERROR_DEVICE_NOT_FOUND,
                      "Device '%s' not found", path);
    }
    return dev;
}

static JsonNode *qom_list(JsonObject *args, QmpError *err)
{
    const char *path = json_object_get_string_member(args, "path");
    JsonArray *list = json_array_new();
    SpaprVioDevice *dev;

    if (!strcmp(path, "/machine")) {
        json_array_add_object_element(list, qom_entry("peripheral",
                                                      "child<container>"));
        return qmp_return_array(list);
    }
    if (!strcmp(path, PERIPHERAL)) {
        spapr_vio_bus_foreach(vio_bus(), add_child, list);
        return qmp_return_array(list);
    }
    dev = device_at(path, err);
    if (!dev) {
        json_array_unref(list);
        return NULL;
    }
    json_array_add_object_element(list, qom_entry("type", "string"));
    for (const Property *p = dev->qdev.klass->props; p && p->name; p++) {
        json_array_add_object_element(list,
                                      qom_entry(p->name,
                                                prop_type_name(p->type)));
    }
    return qmp_return_array(list);
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
        json_node_set_int(node, g_ascii_strtoll(text, NULL, 10));
        break;
    default:
        json_node_set_string(node, text);
    }
    return node;
}

static JsonNode *qom_get(JsonObject *args, QmpError *err)
{
    const char *path = json_object_get_string_member(args, "path");
    const char *prop = json_object_get_string_member(args, "property");
    SpaprVioDevice *dev = device_at(path, err);
    const Property *p;
    JsonNode *node;

    if (!dev) {
        return NULL;
    }
    if (!strcmp(prop, "type")) {
        node = json_node_new(JSON_NODE_VALUE);
        json_node_set_string(node, dev->qdev.klass->name);
        return node;
    }
    p = device_class_find_prop(dev->qdev.klass, prop);
    if (!p) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Property '%s' not found",
                      prop);
        return NULL;
    }
    return prop_value(&dev->qdev, p);
}

/* QEMU's pmemsave: guest-physical memory to a file, as it is now. */
static JsonNode *pmemsave(JsonObject *args, QmpError *err)
{
    gint64 addr = json_object_get_int_member(args, "val");
    gint64 size = json_object_get_int_member(args, "size");
    const char *path = json_object_get_string_member(args, "filename");
    GuestRam *ram = spapr_ram(spapr_machine_current());
    void *data;
    g_autoptr(GError) gerr = NULL;

    data = addr >= 0 && size >= 0 ? guest_ram_ptr(ram, addr, size) : NULL;
    if (!data) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Invalid parameter 'val': "
                      "0x%" G_GINT64_MODIFIER "x+%" G_GINT64_FORMAT
                      " is not guest RAM", addr, size);
        return NULL;
    }
    if (!g_file_set_contents(path, data, size, &gerr)) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "Could not open '%s': %s",
                      path, gerr->message);
        return NULL;
    }
    return qmp_return_empty();
}

static const QmpArg qom_list_args[] = {
    { "path", QMP_ARG_STR, false }, { NULL, 0, false }
};
static const QmpArg qom_get_args[] = {
    { "path", QMP_ARG_STR, false }, { "property", QMP_ARG_STR, false },
    { NULL, 0, false }
};
static const QmpArg pmemsave_args[] = {
    { "val", QMP_ARG_INT, false }, { "size", QMP_ARG_INT, false },
    { "filename", QMP_ARG_STR, false }, { NULL, 0, false }
};

static const QmpCommand spapr_commands[] = {
    { "qom-list", qom_list_args, false, qom_list, true },
    { "qom-get", qom_get_args, false, qom_get, true },
    { "pmemsave", pmemsave_args, false, pmemsave, false },
};

static void spapr_commands_register(void)
{
    qmp_register_commands(spapr_commands, G_N_ELEMENTS(spapr_commands));
}
illan_init(spapr_commands_register)
