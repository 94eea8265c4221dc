/* Machine types: versioned names, aliases and the compat globals they pin. */
#ifndef HW_BOARDS_H
#define HW_BOARDS_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct MachineClass {
    const char *name;
    const char *alias;              /* e.g. "pseries" for the newest */
    const char *desc;
    bool is_default;
    /* "driver.prop=value" defaults this version pins, NULL-terminated */
    const char *const *compat_props;
} MachineClass;

/* What the command line gives a machine. */
typedef struct MachineOptions {
    uint64_t ram_size;
    const char *dumpdtb;            /* write the device tree and exit */
} MachineOptions;

void machine_class_register(const MachineClass *mc);
/* By name or alias; NULL for the default machine. */
const MachineClass *machine_class_find(const char *name);
void machine_class_print_list(void);
/* Every machine type, in registration order. */
void machine_class_foreach(void (*fn)(const MachineClass *mc, void *opaque),
                           void *opaque);

#endif
