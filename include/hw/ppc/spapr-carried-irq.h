/*
 * Interrupts illan raised while it held a QEMU guest, recorded in the
 * interrupt controller the machine carries for that guest (XIVE or
 * XICS), where QEMU 7.2 would have recorded an interrupt the guest could
 * not take at once.  Without this the guest, back on QEMU, never hears of
 * the frames illan put into its buffers.
 */
#ifndef HW_PPC_SPAPR_CARRIED_IRQ_H
#define HW_PPC_SPAPR_CARRIED_IRQ_H

#include "hw/ppc/spapr.h"
#include "migration/carry.h"
#include "qemu/guest-ram.h"

#include <stdint.h>

/* What recording one raised source did; the names are query-migrate's
 * (x-carried-irqs). */
typedef enum SpaprCarriedIrqOutcome {
    CARRIED_IRQ_XIVE_QUEUED,        /* event queue entry, thread notified */
    CARRIED_IRQ_XIVE_COALESCED,     /* PQ already pending: Q set */
    CARRIED_IRQ_XIVE_ESB_OFF,       /* the guest turned the source off */
    CARRIED_IRQ_XIVE_MASKED,        /* EAS masked: PQ set, nothing more */
    CARRIED_IRQ_XIVE_END_INVALID,
    CARRIED_IRQ_XIVE_END_MASKED,    /* priority 0xff */
    CARRIED_IRQ_XIVE_END_COALESCED, /* the END's ESn was already pending */
    CARRIED_IRQ_XIVE_END_UNSUPPORTED, /* escalation or user-level format */
    CARRIED_IRQ_XIVE_QUEUE_OUTSIDE_RAM,
    CARRIED_IRQ_XIVE_NO_THREAD,     /* queued; no thread context is its NVT */
    CARRIED_IRQ_XICS_REJECTED,
    CARRIED_IRQ_XICS_MASKED_PENDING,
    CARRIED_IRQ_XICS_NOT_MSI,
    CARRIED_IRQ_NO_CONTROLLER,      /* no carried controller has the source */
    CARRIED_IRQ__MAX,
} SpaprCarriedIrqOutcome;

const char *spapr_carried_irq_outcome_name(SpaprCarriedIrqOutcome o);

/* Records one raise of source @irq in the carried sections of @copy,
 * writing an event queue entry into @ram when XIVE routes it to one. */
SpaprCarriedIrqOutcome spapr_carried_irq_record(StreamLayout *copy,
                                                GuestRam *ram, uint32_t irq);

/* The machine's hooks into migration: the sources raised since the last
 * accepted stream are recorded when a stream is written. */
void spapr_carried_irq_attach(SpaprMachineState *spapr);
void spapr_carried_irq_detach(void);

#endif
