/*
 * The pseries machine: guest RAM, the VIO bus, the hcall table, interrupt
 * sources and the device tree.  Hcall numbers and return codes are PAPR's.
 */
#ifndef HW_PPC_SPAPR_H
#define HW_PPC_SPAPR_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "hw/boards.h"
#include "hw/ppc/hcall.h"
#include "hw/irq.h"
#include "qemu/guest-ram.h"
#include "qemu/log.h"
#include "qemu/option.h"

typedef struct SpaprMachineState SpaprMachineState;
typedef struct SpaprVioBus SpaprVioBus;
typedef struct SpaprTceRegistry SpaprTceRegistry;

#define MAX_HCALL_OPCODE           H_ADD_LOGICAL_LAN_BUFFERS

/* r4..r12: the arguments in, and the outputs (r4 onward) back out. */
#define HCALL_NARGS 9

typedef int64_t (*SpaprHcallFn)(SpaprMachineState *spapr, uint64_t opcode,
                                uint64_t *args);

/* @nout: how many output registers (r4..) the hcall defines. */
void spapr_register_hypercall(uint64_t opcode, SpaprHcallFn fn,
                              unsigned nout);
/* The single entry point for every guest (qtest, built-in models).
 * Unknown or misaligned opcodes return H_FUNCTION.  *nout is how many
 * output registers are valid: none when the call failed (r3 < 0). */
int64_t spapr_hypercall(SpaprMachineState *spapr, uint64_t opcode,
                        uint64_t args[HCALL_NARGS], unsigned *nout);

/* An hcall refused for the guest's mistake: one line under -d
 * guest_errors, "HCALL: what was wrong", HCALL in QEMU's lower case
 * (h_register_logical_lan), as QEMU's hcall_dprintf() prefixes it. */
#define hcall_guest_error(hcall, fmt, ...) \
    qemu_log_mask(LOG_GUEST_ERROR, "%s: " fmt "\n", hcall, ## __VA_ARGS__)

/* XICS numbering: interrupt sources start at this base. */
#define SPAPR_IRQ_BASE      0x1000
#define SPAPR_IRQ_VIO       0x1100
#define SPAPR_IRQ_NR        0x200

/* The VIO interrupt numbers of a machine type with QEMU's legacy
 * numbering, where they do not follow the unit address. */
typedef struct SpaprLegacyIrqs {
    uint32_t first;     /* where illan starts numbering its VIO devices */
    uint32_t min, max;  /* what a migration stream may give one */
} SpaprLegacyIrqs;

/* False on machine types that number by unit address. */
bool spapr_legacy_irqs(const SpaprMachineState *spapr, SpaprLegacyIrqs *out);

/* Builds the machine: RAM, interrupt sources, TCE registry, VIO bus. */
SpaprMachineState *spapr_machine_new(const MachineClass *mc,
                                     const MachineOptions *opts,
                                     GError **errp);
void spapr_machine_free(SpaprMachineState *spapr);
/* Plugs and realizes a device created by -device. */
bool spapr_machine_plug(SpaprMachineState *spapr, void *dev, GError **errp);
/* Finishes machine init once every device is plugged: writes the tree
 * when dumpdtb was asked for, and then sets *exit_now. */
bool spapr_machine_done(SpaprMachineState *spapr, bool *exit_now,
                        GError **errp);
void spapr_machine_reset(SpaprMachineState *spapr);
/* The machine QMP shows (QEMU's current_machine): set by main() once it
 * is built, and back to NULL before it is freed. */
void spapr_machine_set_current(SpaprMachineState *spapr);
SpaprMachineState *spapr_machine_current(void);
/* For qemu_loadvm_set_carried_check(): what a guest taken over from QEMU
 * knows of this machine (its LAN's MAC, from the device tree QEMU gave
 * it) must be what this machine has. */
typedef struct StreamLayout StreamLayout;
bool spapr_check_carried(const StreamLayout *l, void *opaque, GError **errp);

GuestRam *spapr_ram(SpaprMachineState *spapr);
/* The machine type's name (never an alias), as migration streams carry. */
const char *spapr_machine_type(SpaprMachineState *spapr);
const MachineClass *spapr_machine_class(SpaprMachineState *spapr);
SpaprVioBus *spapr_vio_bus(SpaprMachineState *spapr);
SpaprTceRegistry *spapr_tce_registry(SpaprMachineState *spapr);
/* The interrupt controller's input for source @irq, or NULL. */
IrqLine *spapr_irq_input(SpaprMachineState *spapr, uint32_t irq);
/* A built-in guest takes source @irq as Linux's request_irq() does:
 * @handler gets its level changes (unless qtest intercepts them).  False
 * when @irq is no source or another handler has it; a NULL @handler
 * gives it back.  Claim before traffic starts and give back only once
 * nothing can raise it. */
bool spapr_irq_claim(SpaprMachineState *spapr, uint32_t irq,
                     IrqHandler handler, void *opaque);
/* Whether source @irq was raised since the last accepted stream or
 * the last take; the take clears it.  Any thread. */
bool spapr_irq_take_raised(SpaprMachineState *spapr, uint32_t irq);
void spapr_irq_forget_raised(SpaprMachineState *spapr);
/* Reroute every interrupt source to @handler (qtest's irq_intercept_in). */
void spapr_irq_intercept(SpaprMachineState *spapr, IrqHandler handler,
                         void *opaque);

/* For device-tree builders: on a libfdt error, set *errp naming the call
 * and return false from the enclosing function. */
#define FDT_TRY(expr)                                                    \
    do {                                                                 \
        int fdt_ret_ = (expr);                                           \
        if (fdt_ret_ < 0) {                                              \
            g_set_error(errp, ILLAN_ERROR, 0, "device tree: %s: %s",     \
                        #expr, fdt_strerror(fdt_ret_));                  \
            return false;                                                \
        }                                                                \
    } while (0)

/* The device tree as a blob (caller frees), built from the current state. */
void *spapr_build_fdt(SpaprMachineState *spapr, GError **errp);

#endif
