/*
 * Device types with typed property tables, realize and reset hooks, ids,
 * and the machine-type globals ("compat properties") that pin defaults.
 */
#ifndef HW_QDEV_H
#define HW_QDEV_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct DeviceState DeviceState;
typedef struct DeviceClass DeviceClass;

typedef enum PropertyType {
    PROP_BOOL,
    PROP_INT32,
    PROP_UINT32,
    PROP_STRING,
    PROP_MACADDR,
    PROP_NETDEV,
} PropertyType;

typedef struct MACAddr {
    uint8_t a[6];
} MACAddr;

typedef struct Property {
    const char *name;
    PropertyType type;
    size_t offset;          /* of the field in the instance struct */
    const char *defval;     /* in option syntax; NULL leaves it unset */
    const char *description;
    /* For a field another thread may change once realized: its value in
     * option syntax (caller frees), read under the owner's lock.  NULL
     * reads the field at @offset. */
    char *(*get_live)(DeviceState *dev);
} Property;

#define PROP_END { .name = NULL }

struct DeviceClass {
    const char *name;
    const char *desc;
    const char *category;   /* for -device help, e.g. "Network devices" */
    const char *bus_type;   /* the bus it plugs into, NULL for none */
    size_t instance_size;
    const Property *props;  /* terminated by PROP_END */
    bool (*realize)(DeviceState *dev, GError **errp);
    void (*reset)(DeviceState *dev);
    void (*finalize)(DeviceState *dev);
};

struct DeviceState {
    const DeviceClass *klass;
    char *id;
    bool realized;
};

void device_class_register(const DeviceClass *dc);
const DeviceClass *device_class_find(const char *name);
/* Every device type, in registration order. */
void device_class_foreach(void (*fn)(const DeviceClass *dc, void *opaque),
                          void *opaque);
void device_class_print_list(void);
/* Lists every property with its type and the default @dev would get. */
void device_class_print_props(const DeviceClass *dc);

/* Compat properties "driver.prop=value" applied to every new device;
 * setting them drops the -global ones. */
void qdev_set_globals(const char *const *globals);
/* -global DRIVER.PROP=VALUE: applied after the machine's, the last one
 * winning; fails for an unknown driver or property, or a value the
 * property does not take. */
bool qdev_add_global(const char *driver, const char *property,
                     const char *value, GError **errp);

/* A new device with defaults and globals applied, not yet realized. */
DeviceState *device_new(const DeviceClass *dc, GError **errp);
bool device_set_prop(DeviceState *dev, const char *name, const char *value,
                     GError **errp);
/* The property's value in option syntax (caller frees). */
char *device_get_prop(DeviceState *dev, const char *name, GError **errp);
const Property *device_class_find_prop(const DeviceClass *dc,
                                       const char *name);
bool device_realize(DeviceState *dev, GError **errp);
void device_reset(DeviceState *dev);
void device_free(DeviceState *dev);

const char *prop_type_name(PropertyType type);
bool mac_parse(const char *str, MACAddr *mac);
char *mac_format(const MACAddr *mac);

#endif
