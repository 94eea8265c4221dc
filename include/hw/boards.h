/* Machine types: versioned names, aliases and the compat globals they pin. */
#ifndef HW_BOARDS_H
#define HW_BOARDS_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct MachineClass {
    const char *name;               /* "pseries-10.1": what streams carry */
    const char *alias;              /* another name for it, e.g. "pseries" */
    const char *desc;
    bool is_default;
    /* "driver.prop=value" defaults this version pins, NULL-terminated */
    const char *const *compat_props;
    uint64_t default_ram_size;      /* without -m; 0: no RAM */
    const char *default_ram_id;     /* QEMU's name of the RAM block */
    /* QEMU's legacy interrupt numbering (pseries-3.0 and older): how many
     * event sources it claims before anything else; 0 for the numbering
     * by unit address. */
    unsigned legacy_irq_events;
    /* No buses and no devices: QMP, qtest and netdevs only (-M none). */
    bool empty;
} MachineClass;

/* What the command line gives a machine. */
typedef struct MachineOptions {
    uint64_t ram_size;
    const char *dumpdtb;            /* write the device tree and exit */
} MachineOptions;

void machine_class_register(const MachineClass *mc);
/* By name or alias; NULL for the default machine. */
const MachineClass *machine_class_find(const char *name);
/* Whether @a and @b name one machine type (each a name or an alias). */
bool machine_class_same(const char *a, const char *b);
/* QEMU's -M help: families newest first, then the standalone types. */
void machine_class_print_list(void);
/* Every machine type, in the order -M help lists them.  Each one has
 * what QEMU's query-machines reports: name, alias, is_default, and
 * default_ram_id; illan has no vCPU (cpu-max 0, no hotplug), no NUMA,
 * no ACPI, and deprecates nothing. */
void machine_class_foreach(void (*fn)(const MachineClass *mc, void *opaque),
                           void *opaque);

#endif
