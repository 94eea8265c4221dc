/*
 * Built-in guests (-guest TYPE,...): models of what a guest OS does with
 * a device, each on a vCPU thread of its own.  Only the ibmveth model
 * exists (guest/ibmveth-guest.h).
 */
#ifndef GUEST_GUEST_H
#define GUEST_GUEST_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "guest/ibmveth-guest.h"
#include "hw/ppc/spapr.h"

/* -guest help and -guest TYPE,help: prints and returns true when @arg
 * asks for help; false with errp set for an unknown type. */
bool guest_print_help(const char *arg, bool *printed, GError **errp);

/* Parses one -guest argument and creates the guest (driver opened,
 * thread not yet started), with its migration section.  With @incoming
 * the driver's state comes with the stream instead.  errp says which
 * option is wrong and how to fix it. */
bool guest_add(SpaprMachineState *spapr, const char *arg, bool incoming,
               GError **errp);
/* Starts every guest's vCPU thread. */
bool guest_start_all(GError **errp);
/* Stops every vCPU thread; after this no guest makes an hcall. */
void guest_stop_all(void);
/* Closes and frees every guest; call after the backends are gone. */
void guest_cleanup(void);

/* After a machine reset (every vCPU parked): each guest reopens its
 * device.  Main thread. */
void guest_machine_reset(void);
void guest_foreach(void (*fn)(IbmvethGuest *g, void *opaque), void *opaque);

#endif
