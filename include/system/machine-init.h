/*
 * Building the machine the command line describes: the machine type and
 * its compat globals, help requests, netdevs, RAM, devices, the device
 * tree dump, and, after the machine's first reset, the built-in guests.
 * Errors name the option, "-device spapr-vlan,foo=1: ...".
 */
#ifndef SYSTEM_MACHINE_INIT_H
#define SYSTEM_MACHINE_INIT_H

#include <glib.h>
#include <stdbool.h>

#include "hw/ppc/spapr.h"

typedef struct MachineInitConfig {
    const char *machine;        /* -machine TYPE[,dumpdtb=FILE] */
    const char *mem;            /* -m */
    const char *incoming;       /* -incoming, which -guest cannot join */
    const char *dump_vmstate;
    GPtrArray *devices;         /* each -device argument, in order */
    GPtrArray *netdevs;
    GPtrArray *guests;
    GPtrArray *globals;         /* each -global, applied in order */
    /* The command line's other options, checked once every help request
     * is answered and before anything is built. */
    bool (*check_other_options)(void *opaque, GError **errp);
    void *opaque;
} MachineInitConfig;

/*
 * In this order: -M and its compat globals, then -global, -M help,
 * -dump-vmstate, the -device, -netdev and -guest help requests, -m, the
 * other options, then the netdevs and the machine with its RAM and empty
 * buses.  *spapr is set as soon as the machine exists, for the caller to
 * free even when a later step fails; *exit_now when a help request or
 * -dump-vmstate has done all there was to do.
 */
bool machine_init(const MachineInitConfig *cfg, SpaprMachineState **spapr,
                  bool *exit_now, GError **errp);
/* Then the devices and dumpdtb (*exit_now set when it wrote the tree):
 * at once, or at x-exit-preconfig with --preconfig. */
bool machine_init_devices(const MachineInitConfig *cfg,
                          SpaprMachineState *spapr, bool *exit_now,
                          GError **errp);
/* -guest: the built-in guests, which open their devices here as a
 * guest's drivers do at boot; after the devices, which they name, and
 * the machine's first reset. */
bool machine_init_guests(const MachineInitConfig *cfg,
                         SpaprMachineState *spapr, GError **errp);

#endif
