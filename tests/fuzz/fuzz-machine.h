/*
 * The machine every fuzz target that needs one builds afresh per input:
 * pseries (or @type) with RAM, a backend "n0" of the target's own (no
 * socket: frames go in by call and out to @ops->send) and spapr-vlan on
 * it, reset and running.  fuzz_machine_free() undoes all of it, the net
 * registry and the run state included, so the next input starts clean.
 */
#ifndef FUZZ_MACHINE_H
#define FUZZ_MACHINE_H

#include "hw/net/spapr_llan.h"
#include "hw/ppc/spapr.h"
#include "net/net.h"

typedef struct FuzzMachine {
    SpaprMachineState *spapr;
    SpaprVlanState *lan;
    uint32_t unit;
    NetClientState *backend;
} FuzzMachine;

/* A backend's ops that send everything and hold nothing. */
extern const NetBackendOps fuzz_sink_ops;

/* @ops NULL: fuzz_sink_ops. */
void fuzz_machine_init(FuzzMachine *m, const char *type, uint64_t ram_size,
                       bool pools, const NetBackendOps *ops, void *opaque);
void fuzz_machine_free(FuzzMachine *m);
/* abort()s with @what when @ok is false: a finding. */
void fuzz_check(bool ok, const char *what);

#endif
