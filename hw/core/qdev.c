/*
 * Device types and typed properties.  Devices describe their settable state
 * in a Property table; the core parses, formats and defaults it, so that
 * -device, -device X,help, machine compat globals and (later) QMP share one
 * implementation.
 */
#include "hw/qdev.h"
#include "qemu/option.h"
#include "net/net.h"

#include <stdio.h>
#include <string.h>

static GPtrArray *device_classes;
static const char *const *qdev_globals;      /* the machine type's */
static GPtrArray *qdev_user_globals;            /* -global, after them */

void device_class_register(const DeviceClass *dc)
{
    if (!device_classes) {
        device_classes = g_ptr_array_new();
    }
    g_ptr_array_add(device_classes, (gpointer)dc);
}

const DeviceClass *device_class_find(const char *name)
{
    for (guint i = 0; device_classes && i < device_classes->len; i++) {
        const DeviceClass *dc = g_ptr_array_index(device_classes, i);
        if (!strcmp(dc->name, name)) {
            return dc;
        }
    }
    return NULL;
}

void device_class_foreach(void (*fn)(const DeviceClass *dc, void *opaque),
                          void *opaque)
{
    for (guint i = 0; device_classes && i < device_classes->len; i++) {
        fn(g_ptr_array_index(device_classes, i), opaque);
    }
}

static gint compare_class_names(gconstpointer a, gconstpointer b)
{
    const DeviceClass *x = *(const DeviceClass *const *)a;
    const DeviceClass *y = *(const DeviceClass *const *)b;
    int c = g_strcmp0(x->category, y->category);
    return c ? c : strcmp(x->name, y->name);
}

void device_class_print_list(void)
{
    const char *category = NULL;

    if (!device_classes) {
        return;
    }
    g_ptr_array_sort(device_classes, compare_class_names);
    for (guint i = 0; i < device_classes->len; i++) {
        const DeviceClass *dc = g_ptr_array_index(device_classes, i);

        if (g_strcmp0(category, dc->category)) {
            category = dc->category;
            printf("%s%s:\n", i ? "\n" : "", category ? category : "Other");
        }
        printf("name \"%s\"", dc->name);
        if (dc->bus_type) {
            printf(", bus %s", dc->bus_type);
        }
        if (dc->desc) {
            printf(", desc \"%s\"", dc->desc);
        }
        printf("\n");
    }
}

const char *prop_type_name(PropertyType type)
{
    switch (type) {
    case PROP_BOOL: return "bool";
    case PROP_INT32: return "int32";
    case PROP_UINT32: return "uint32";
    case PROP_STRING: return "str";
    case PROP_MACADDR: return "macaddr";
    case PROP_NETDEV: return "netdev";
    }
    g_assert_not_reached();
}

const Property *device_class_find_prop(const DeviceClass *dc,
                                       const char *name)
{
    for (const Property *p = dc->props; p && p->name; p++) {
        if (!strcmp(p->name, name)) {
            return p;
        }
    }
    return NULL;
}

/* The default a new device gets: the class default unless a global pins it. */
static const char *prop_effective_default(const DeviceClass *dc,
                                          const Property *prop)
{
    size_t dlen = strlen(dc->name), plen = strlen(prop->name);
    const char *value = prop->defval;

    const char *const *lists[] = {
        qdev_globals,
        qdev_user_globals ? (const char *const *)qdev_user_globals->pdata
                          : NULL,
    };

    /* Applied in order, so a later global overrides an earlier one. */
    for (size_t i = 0; i < G_N_ELEMENTS(lists); i++) {
        for (const char *const *g = lists[i]; g && *g; g++) {
            const char *s = *g;
            if (!strncmp(s, dc->name, dlen) && s[dlen] == '.' &&
                !strncmp(s + dlen + 1, prop->name, plen) &&
                s[dlen + 1 + plen] == '=') {
                value = s + dlen + 1 + plen + 1;
            }
        }
    }
    return value;
}

void device_class_print_props(const DeviceClass *dc)
{
    printf("%s options:\n", dc->name);
    for (const Property *p = dc->props; p && p->name; p++) {
        g_autofree char *lhs = g_strdup_printf("%s=<%s>", p->name,
                                               prop_type_name(p->type));
        const char *def = prop_effective_default(dc, p);

        printf("  %-28s - %s (default: %s)\n", lhs, p->description,
               def ? def : "unset");
    }
}

void qdev_set_globals(const char *const *globals)
{
    qdev_globals = globals;
    g_clear_pointer(&qdev_user_globals, g_ptr_array_unref);
}

static bool prop_set(DeviceState *dev, const Property *prop, const char *value,
                     GError **errp);

/* Whether @value parses as @prop, without a device to put it in. */
static bool prop_check_value(const DeviceClass *dc, const Property *prop,
                             const char *value, GError **errp)
{
    DeviceState *scratch = g_malloc0(dc->instance_size);
    bool ok;

    scratch->klass = dc;
    ok = prop_set(scratch, prop, value, errp);
    if (prop->type == PROP_STRING || prop->type == PROP_NETDEV) {
        g_free(*(char **)((char *)scratch + prop->offset));
    }
    g_free(scratch);
    return ok;
}

bool qdev_add_global(const char *driver, const char *property,
                     const char *value, GError **errp)
{
    const DeviceClass *dc = device_class_find(driver);
    const Property *prop = dc ? device_class_find_prop(dc, property) : NULL;

    if (!dc) {
        g_set_error(errp, ILLAN_ERROR, 0, "'%s' is not a valid device model "
                    "name (-device help lists them)", driver);
        return false;
    }
    if (!prop) {
        g_set_error(errp, ILLAN_ERROR, 0, "Property '%s.%s' not found (see "
                    "-device %s,help)", driver, property, driver);
        return false;
    }
    /* A netdev is looked up when a device takes the default. */
    if (prop->type != PROP_NETDEV &&
        !prop_check_value(dc, prop, value, errp)) {
        return false;
    }
    if (!qdev_user_globals) {
        qdev_user_globals = g_ptr_array_new_with_free_func(g_free);
        g_ptr_array_add(qdev_user_globals, NULL);
    }
    /* Kept NULL-terminated, like the machine's list. */
    g_ptr_array_insert(qdev_user_globals, qdev_user_globals->len - 1,
                       g_strdup_printf("%s.%s=%s", driver, property, value));
    return true;
}

bool mac_parse(const char *str, MACAddr *mac)
{
    unsigned int b[6];
    int n = -1;

    if (strlen(str) != 17 ||
        sscanf(str, "%2x:%2x:%2x:%2x:%2x:%2x%n", &b[0], &b[1], &b[2], &b[3],
               &b[4], &b[5], &n) != 6 || n != 17) {
        return false;
    }
    for (int i = 0; i < 6; i++) {
        if (!g_ascii_isxdigit(str[i * 3]) || !g_ascii_isxdigit(str[i * 3 + 1])) {
            return false;
        }
        mac->a[i] = b[i];
    }
    return true;
}

char *mac_format(const MACAddr *mac)
{
    return g_strdup_printf("%02x:%02x:%02x:%02x:%02x:%02x", mac->a[0],
                           mac->a[1], mac->a[2], mac->a[3], mac->a[4],
                           mac->a[5]);
}

static bool prop_set(DeviceState *dev, const Property *prop, const char *value,
                     GError **errp)
{
    void *field = (char *)dev + prop->offset;
    const char *dname = dev->klass->name;
    g_autoptr(GError) err = NULL;
    int64_t i64;
    uint64_t u64;
    MACAddr mac;

    switch (prop->type) {
    case PROP_BOOL:
        if (!qemu_parse_bool(prop->name, value, field, &err)) {
            goto bad_value;
        }
        return true;
    case PROP_INT32:
        if (!qemu_parse_int64(prop->name, value, &i64, &err) ||
            i64 < INT32_MIN || i64 > INT32_MAX) {
            goto bad_value;
        }
        *(int32_t *)field = i64;
        return true;
    case PROP_UINT32:
        if (!qemu_parse_uint64(prop->name, value, &u64, &err) ||
            u64 > UINT32_MAX) {
            goto bad_value;
        }
        *(uint32_t *)field = u64;
        return true;
    case PROP_STRING:
        g_free(*(char **)field);
        *(char **)field = g_strdup(value);
        return true;
    case PROP_MACADDR:
        if (!mac_parse(value, &mac)) {
            goto bad_value;
        }
        *(MACAddr *)field = mac;
        return true;
    case PROP_NETDEV:
        if (!net_netdev_exists(value)) {
            g_set_error(errp, ILLAN_ERROR, 0,
                        "Property '%s.%s' can't find value '%s' "
                        "(define it first with -netdev TYPE,id=%s)",
                        dname, prop->name, value, value);
            return false;
        }
        g_free(*(char **)field);
        *(char **)field = g_strdup(value);
        return true;
    }
    g_assert_not_reached();

bad_value:
    g_set_error(errp, ILLAN_ERROR, 0,
                "Property '%s.%s' doesn't take value '%s' (expects %s)",
                dname, prop->name, value,
                prop->type == PROP_BOOL ? "on or off" :
                prop->type == PROP_MACADDR ? "a MAC like 52:54:00:12:34:56" :
                prop->type == PROP_INT32 ? "a 32-bit signed integer" :
                "a 32-bit unsigned integer");
    return false;
}

static bool id_wellformed(const char *id)
{
    if (!g_ascii_isalpha(id[0])) {
        return false;
    }
    for (const char *p = id + 1; *p; p++) {
        if (!g_ascii_isalnum(*p) && !strchr("-._", *p)) {
            return false;
        }
    }
    return true;
}

bool device_set_prop(DeviceState *dev, const char *name, const char *value,
                     GError **errp)
{
    const Property *prop;

    if (!strcmp(name, "id")) {
        if (!id_wellformed(value)) {
            g_set_error(errp, ILLAN_ERROR, 0,
                        "Parameter 'id' expects an identifier (a letter, "
                        "then letters, digits, '-', '.', '_'), not '%s'",
                        value);
            return false;
        }
        g_free(dev->id);
        dev->id = g_strdup(value);
        return true;
    }
    prop = device_class_find_prop(dev->klass, name);
    if (!prop) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Property '%s.%s' not found (see -device %s,help)",
                    dev->klass->name, name, dev->klass->name);
        return false;
    }
    if (dev->realized) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Property '%s.%s' can't be set after realize",
                    dev->klass->name, name);
        return false;
    }
    return prop_set(dev, prop, value, errp);
}

char *device_get_prop(DeviceState *dev, const char *name, GError **errp)
{
    const Property *prop = device_class_find_prop(dev->klass, name);
    void *field;

    if (!strcmp(name, "id")) {
        return g_strdup(dev->id ? dev->id : "");
    }
    if (!prop) {
        g_set_error(errp, ILLAN_ERROR, 0, "Property '%s.%s' not found",
                    dev->klass->name, name);
        return NULL;
    }
    /* Before realize no other thread has the device, and its lock may
     * not be initialised yet. */
    if (prop->get_live && dev->realized) {
        return prop->get_live(dev);
    }
    field = (char *)dev + prop->offset;
    switch (prop->type) {
    case PROP_BOOL:
        return g_strdup(*(bool *)field ? "on" : "off");
    case PROP_INT32:
        return g_strdup_printf("%" G_GINT32_FORMAT, *(int32_t *)field);
    case PROP_UINT32:
        return g_strdup_printf("%" G_GUINT32_FORMAT, *(uint32_t *)field);
    case PROP_STRING:
    case PROP_NETDEV:
        return g_strdup(*(char **)field ? *(char **)field : "");
    case PROP_MACADDR:
        return mac_format(field);
    }
    g_assert_not_reached();
}

DeviceState *device_new(const DeviceClass *dc, GError **errp)
{
    DeviceState *dev = g_malloc0(dc->instance_size);

    g_assert(dc->instance_size >= sizeof(DeviceState));
    dev->klass = dc;
    for (const Property *p = dc->props; p && p->name; p++) {
        const char *def = prop_effective_default(dc, p);

        if (def && !prop_set(dev, p, def, errp)) {
            g_prefix_error(errp, "global %s.%s: ", dc->name, p->name);
            device_free(dev);
            return NULL;
        }
    }
    return dev;
}

bool device_realize(DeviceState *dev, GError **errp)
{
    if (dev->klass->realize && !dev->klass->realize(dev, errp)) {
        return false;
    }
    dev->realized = true;
    return true;
}

void device_reset(DeviceState *dev)
{
    if (dev->klass->reset) {
        dev->klass->reset(dev);
    }
}

void device_free(DeviceState *dev)
{
    if (!dev) {
        return;
    }
    if (dev->klass->finalize) {
        dev->klass->finalize(dev);
    }
    for (const Property *p = dev->klass->props; p && p->name; p++) {
        if (p->type == PROP_STRING || p->type == PROP_NETDEV) {
            g_free(*(char **)((char *)dev + p->offset));
        }
    }
    g_free(dev->id);
    g_free(dev);
}
