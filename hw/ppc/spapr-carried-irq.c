/*
 * The interrupts illan raised, recorded in a QEMU guest's carried
 * interrupt controller by the rules of QEMU 7.2's XIVE router
 * (xive_router_notify and what it calls) and XICS source layer
 * (ics_set_irq_msi), bit layouts from its xive_regs.h and xics.h.
 */
#include "hw/ppc/spapr-carried-irq.h"
#include "migration/savevm.h"
#include "qemu/bswap.h"

#include <string.h>

/* XIVE source: the PQ bits of an ESB, in the low bits of its status. */
#define ESB_P               0x2
#define ESB_Q               0x1
#define ESB_PQ              (ESB_P | ESB_Q)

/* Event assignment (EAS) word. */
#define EAS_VALID           (1ull << 63)
#define EAS_MASKED          (1ull << 31)
#define EAS_END_INDEX(w)    ((uint32_t)((w) >> 32) & 0xffffff)
#define EAS_END_DATA(w)     ((uint32_t)(w) & 0x7fffffff)

/* Event notification descriptor (END) words. */
#define END_W0_VALID        (1u << 31)
#define END_W0_ENQUEUE      (1u << 30)
#define END_W0_UCOND_NOTIFY (1u << 29)
#define END_W0_ESCALATE     (1u << 26)
#define END_W0_SILENT_ESC   (1u << 24)
#define END_W0_QSIZE(w)     (((w) >> 16) & 0xf)
#define END_W1_ESN_SHIFT    30
#define END_W1_GENERATION   (1u << 22)
#define END_W1_PAGE_OFF     0x3fffffu
#define END_W2_QADDR_HI     0x0fffffffu
#define END_W6_FORMAT       (1u << 23)
#define END_W6_NVT_BLOCK(w) (((w) >> 19) & 0xf)
#define END_W6_NVT_INDEX(w) ((w) & 0x7ffff)
#define END_W7_PRIORITY(w)  (((w) >> 16) & 0xff)
#define NVT_SHIFT           19
#define PRIORITY_MAX        7

/* Thread context: the OS ring's bytes, and its CAM word. */
#define TM_QW1_OS           0x10
#define TM_NSR              0
#define TM_CPPR             1
#define TM_IPB              2
#define TM_PIPR             7
#define TM_WORD2            8
#define TM_QW1_NSR_EO       0x80
#define TM_QW1W2_VO         (1u << 31)
#define TM_QW1W2_OS_CAM     0xffffffu

/* An ics/irq entry (version 2): server (be32), priority, saved_priority,
 * status, flags. */
#define ICS_PRIORITY        4
#define ICS_SAVED_PRIORITY  5
#define ICS_STATUS          6
#define ICS_FLAGS           7
/* XICS source status and flags. */
#define XICS_STATUS_REJECTED        0x4
#define XICS_STATUS_MASKED_PENDING  0x8
#define XICS_FLAGS_IRQ_MSI          0x2
#define XICS_MASKED_PRIORITY        0xff

static const char *const outcome_names[CARRIED_IRQ__MAX] = {
    [CARRIED_IRQ_XIVE_QUEUED] = "xive-queued",
    [CARRIED_IRQ_XIVE_COALESCED] = "xive-coalesced",
    [CARRIED_IRQ_XIVE_ESB_OFF] = "xive-esb-off",
    [CARRIED_IRQ_XIVE_MASKED] = "xive-masked",
    [CARRIED_IRQ_XIVE_END_INVALID] = "xive-end-invalid",
    [CARRIED_IRQ_XIVE_END_MASKED] = "xive-end-masked",
    [CARRIED_IRQ_XIVE_END_COALESCED] = "xive-end-coalesced",
    [CARRIED_IRQ_XIVE_END_UNSUPPORTED] = "xive-end-unsupported",
    [CARRIED_IRQ_XIVE_QUEUE_OUTSIDE_RAM] = "xive-queue-outside-ram",
    [CARRIED_IRQ_XIVE_NO_THREAD] = "xive-no-thread",
    [CARRIED_IRQ_XICS_REJECTED] = "xics-rejected",
    [CARRIED_IRQ_XICS_MASKED_PENDING] = "xics-masked-pending",
    [CARRIED_IRQ_XICS_NOT_MSI] = "xics-not-msi",
    [CARRIED_IRQ_NO_CONTROLLER] = "no-controller",
};

const char *spapr_carried_irq_outcome_name(SpaprCarriedIrqOutcome o)
{
    return outcome_names[o];
}

/* A field's bytes in a carried body, or NULL. */
static uint8_t *field_at(StreamLayout *l, const char *idstr,
                         uint32_t instance, const char *field,
                         unsigned index, const char *member, size_t want)
{
    size_t len, off, size;
    uint8_t *body = stream_layout_body(l, idstr, instance, &len);

    if (!body || !stream_layout_find_field(l, idstr, instance, field, index,
                                           member, &off, &size) ||
        size != want) {
        return NULL;
    }
    return body + off;
}

/*
 * QEMU keeps EAS and END words big-endian in memory and migrates them
 * as host integers, so on a little-endian host (the only kind illan and
 * its QEMU share) the stream holds their bytes reversed.
 */
static uint64_t ld_word(const uint8_t *p, unsigned size)
{
    uint64_t v = 0;

    for (unsigned i = size; i-- > 0;) {
        v = v << 8 | p[i];
    }
    return v;
}

static void st_word(uint8_t *p, unsigned size, uint64_t v)
{
    for (unsigned i = 0; i < size; i++, v >>= 8) {
        p[i] = v;
    }
}

typedef struct XiveEnd {
    uint8_t *w[8];
} XiveEnd;

static bool end_find(StreamLayout *l, uint32_t index, XiveEnd *end)
{
    for (unsigned i = 0; i < 8; i++) {
        char member[3] = { 'w', '0' + i, 0 };

        end->w[i] = field_at(l, "spapr-xive", 0, "endt", index, member, 4);
        if (!end->w[i]) {
            return false;
        }
    }
    return true;
}

static uint32_t end_word(const XiveEnd *end, unsigned i)
{
    return ld_word(end->w[i], 4);
}

/* An ESB's trigger: whether the event goes on (xive_esb_trigger). */
static bool esb_trigger(uint8_t *pq)
{
    switch (*pq & ESB_PQ) {
    case 0:
        *pq = ESB_P;
        return true;
    case ESB_P:
        *pq = ESB_PQ;
        return false;
    default:
        return false;
    }
}

/* The entry at the queue's index with its generation bit, then the
 * index and, on wrapping, the generation advanced (xive_end_enqueue). */
static bool end_enqueue(const XiveEnd *end, GuestRam *ram, uint32_t data)
{
    uint32_t w0 = end_word(end, 0), w1 = end_word(end, 1);
    uint64_t qaddr = (uint64_t)(end_word(end, 2) & END_W2_QADDR_HI) << 32 |
                     end_word(end, 3);
    uint32_t entries = 1u << (END_W0_QSIZE(w0) + 10);
    uint32_t index = w1 & END_W1_PAGE_OFF;
    uint32_t gen = !!(w1 & END_W1_GENERATION);

    if (!guest_ram_st_be(ram, qaddr + index * 4ull, 4,
                         gen << 31 | (data & 0x7fffffff))) {
        return false;
    }
    index = (index + 1) & (entries - 1);
    if (index == 0) {
        w1 ^= END_W1_GENERATION;
    }
    st_word(end->w[1], 4, (w1 & ~END_W1_PAGE_OFF) | index);
    return true;
}

/* The thread context whose OS ring is dispatched with NVT @cam. */
static uint8_t *tctx_os_ring(StreamLayout *l, uint32_t cam)
{
    for (uint32_t cpu = 0; stream_layout_body(l, "xive-tctx", cpu, NULL);
         cpu++) {
        uint8_t *regs = field_at(l, "xive-tctx", cpu, "regs", 0, NULL, 64);
        uint32_t w2;

        if (!regs) {
            continue;
        }
        w2 = ldn_be_p(regs + TM_QW1_OS + TM_WORD2, 4);
        if ((w2 & TM_QW1W2_VO) && (w2 & TM_QW1W2_OS_CAM) == cam) {
            return regs + TM_QW1_OS;
        }
    }
    return NULL;
}

/* The priority's bit in the IPB, PIPR from it, and the exception bit
 * when it beats CPPR (xive_tctx_ipb_update, xive_tctx_notify).  The
 * CPU's line is not in the stream: see docs/system/migration.md. */
static void tctx_notify(uint8_t *ring, uint8_t priority)
{
    if (priority <= PRIORITY_MAX) {
        ring[TM_IPB] |= 1u << (PRIORITY_MAX - priority);
    }
    ring[TM_PIPR] = ring[TM_IPB] ? __builtin_clz((uint32_t)ring[TM_IPB] << 24)
                                 : 0xff;
    if (ring[TM_PIPR] < ring[TM_CPPR]) {
        ring[TM_NSR] |= TM_QW1_NSR_EO;
    }
}

/* xive_router_end_notify for an END spapr-xive configures: queue and
 * single-NVT notification, no escalation. */
static SpaprCarriedIrqOutcome end_notify(StreamLayout *l, GuestRam *ram,
                                         uint32_t index, uint32_t data)
{
    XiveEnd end;
    uint32_t w0, w6, w7;
    uint8_t priority, esn, *ring;

    if (!end_find(l, index, &end) || !(end_word(&end, 0) & END_W0_VALID)) {
        return CARRIED_IRQ_XIVE_END_INVALID;
    }
    w0 = end_word(&end, 0);
    w6 = end_word(&end, 6);
    w7 = end_word(&end, 7);
    if ((w0 & (END_W0_ESCALATE | END_W0_SILENT_ESC)) ||
        (w6 & END_W6_FORMAT)) {
        return CARRIED_IRQ_XIVE_END_UNSUPPORTED;
    }
    if ((w0 & END_W0_ENQUEUE) && !end_enqueue(&end, ram, data)) {
        return CARRIED_IRQ_XIVE_QUEUE_OUTSIDE_RAM;
    }
    priority = END_W7_PRIORITY(w7);
    if (priority == 0xff) {
        return CARRIED_IRQ_XIVE_END_MASKED;
    }
    if (!(w0 & END_W0_UCOND_NOTIFY)) {
        uint32_t w1 = end_word(&end, 1);
        bool go;

        esn = w1 >> END_W1_ESN_SHIFT;
        go = esb_trigger(&esn);
        st_word(end.w[1], 4, (w1 & ~(3u << END_W1_ESN_SHIFT)) |
                             (uint32_t)esn << END_W1_ESN_SHIFT);
        if (!go) {
            return CARRIED_IRQ_XIVE_END_COALESCED;
        }
    }
    ring = tctx_os_ring(l, END_W6_NVT_BLOCK(w6) << NVT_SHIFT |
                           END_W6_NVT_INDEX(w6));
    if (!ring) {
        return CARRIED_IRQ_XIVE_NO_THREAD;
    }
    tctx_notify(ring, priority);
    return CARRIED_IRQ_XIVE_QUEUED;
}

/* The source's status byte: one per source in a buffer. */
static uint8_t *source_status(StreamLayout *l, uint32_t irq)
{
    size_t len, off, size;
    uint8_t *body = stream_layout_body(l, "xive-source", 0, &len);

    if (!body || !stream_layout_find_field(l, "xive-source", 0, "status", 0,
                                           NULL, &off, &size) ||
        irq >= size) {
        return NULL;
    }
    return body + off + irq;
}

/* xive_source_set_irq for an MSI, then xive_router_notify. */
static SpaprCarriedIrqOutcome xive_record(StreamLayout *l, GuestRam *ram,
                                          uint32_t irq, uint64_t eas)
{
    uint8_t *status = source_status(l, irq);
    uint8_t pq;
    bool go;

    if (!status) {
        return CARRIED_IRQ_NO_CONTROLLER;
    }
    pq = *status & ESB_PQ;
    go = esb_trigger(&pq);
    *status = (*status & ~ESB_PQ) | pq;
    if (!go) {
        return pq == ESB_Q ? CARRIED_IRQ_XIVE_ESB_OFF
                           : CARRIED_IRQ_XIVE_COALESCED;
    }
    if (eas & EAS_MASKED) {
        return CARRIED_IRQ_XIVE_MASKED;
    }
    return end_notify(l, ram, EAS_END_INDEX(eas), EAS_END_DATA(eas));
}

/*
 * ics_set_irq_msi, where the guest's CPU cannot take the interrupt: a
 * masked source is left pending for its unmasking, another is rejected
 * as icp_irq rejects one its CPPR refuses, and the guest's next EOI or
 * CPPR change resends it.  Presenting it in XIRR instead would hold it
 * there with no line raised, and every later interrupt of its priority
 * would be rejected behind it.
 */
static SpaprCarriedIrqOutcome xics_record(uint8_t *irq_state)
{
    uint8_t priority = irq_state[ICS_PRIORITY];
    uint8_t *status = &irq_state[ICS_STATUS];

    if (!(irq_state[ICS_FLAGS] & XICS_FLAGS_IRQ_MSI)) {
        return CARRIED_IRQ_XICS_NOT_MSI;
    }
    if (priority == XICS_MASKED_PRIORITY) {
        *status |= XICS_STATUS_MASKED_PENDING;
        return CARRIED_IRQ_XICS_MASKED_PENDING;
    }
    *status |= XICS_STATUS_REJECTED;
    return CARRIED_IRQ_XICS_REJECTED;
}

/*
 * QEMU's pseries-7.2 carries both controllers and uses the one the
 * guest chose.  Linux on XIVE configures the source's EAS and leaves its
 * ICS entry at priority 0xff; on XICS it sets the ICS priority (kept in
 * saved_priority while masked) and leaves the EAS masked as QEMU claimed
 * it.
 */
SpaprCarriedIrqOutcome spapr_carried_irq_record(StreamLayout *copy,
                                                GuestRam *ram, uint32_t irq)
{
    uint8_t *eas = field_at(copy, "spapr-xive", 0, "eat", irq, "w", 8);
    uint8_t *ics = irq >= SPAPR_IRQ_BASE
                   ? field_at(copy, "ics", 0, "irqs", irq - SPAPR_IRQ_BASE,
                              NULL, 8)
                   : NULL;
    uint64_t w = eas ? ld_word(eas, 8) : 0;
    bool xics_chosen = ics && (ics[ICS_PRIORITY] != XICS_MASKED_PRIORITY ||
                               ics[ICS_SAVED_PRIORITY] !=
                               XICS_MASKED_PRIORITY);

    if ((w & EAS_VALID) && (!(w & EAS_MASKED) || !xics_chosen)) {
        return xive_record(copy, ram, irq, w);
    }
    if (ics && (xics_chosen || !eas)) {
        return xics_record(ics);
    }
    return CARRIED_IRQ_NO_CONTROLLER;
}

static bool record_raised(StreamLayout *copy, void *opaque)
{
    SpaprMachineState *spapr = opaque;
    bool changed = false;

    for (uint32_t irq = SPAPR_IRQ_BASE; irq < SPAPR_IRQ_BASE + SPAPR_IRQ_NR;
         irq++) {
        if (spapr_irq_take_raised(spapr, irq)) {
            SpaprCarriedIrqOutcome o =
                spapr_carried_irq_record(copy, spapr_ram(spapr), irq);

            qemu_savevm_count_carried_irq(outcome_names[o]);
            changed = true;
        }
    }
    return changed;
}

static void forget_raised(void *opaque)
{
    spapr_irq_forget_raised(opaque);
}

void spapr_carried_irq_attach(SpaprMachineState *spapr)
{
    qemu_savevm_set_carried_hook(record_raised, spapr);
    qemu_loadvm_set_commit_hook(forget_raised, spapr);
}

void spapr_carried_irq_detach(void)
{
    qemu_savevm_set_carried_hook(NULL, NULL);
    qemu_loadvm_set_commit_hook(NULL, NULL);
}
