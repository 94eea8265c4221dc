/*
 * An interrupt illan raised, recorded in a QEMU guest's carried
 * interrupt controller: the sections' descriptions are those of a QEMU
 * 7.2 pseries-7.2 stream (/tmp/ppcguest/s72.json of the takeover
 * setup), their bodies hold what Linux 6.1 had configured there (the
 * LAN's EAS, its END 6 and the CPU's thread context, read from that
 * stream), and every field the recording writes is checked.
 */
#include "hw/ppc/spapr-carried-irq.h"
#include "migration/carry.h"
#include "migration/savevm.h"
#include "qemu/bswap.h"

#include <string.h>

#define LAN_IRQ         0x1102
#define RAM_SIZE        (64u << 20)
#define QUEUE_ADDR      0x03170000u
#define QUEUE_ENTRIES   (1u << 14)
#define END_INDEX       6
#define LAN_DATA        0x14

static const char desc_xive_source[] =
    "{\"name\": \"xive-source\", \"instance_id\": 0, \"vmsd_name\": "
    "\"xive-source\", \"version\": 1, \"fields\": [{\"name\": \"nr_irqs\", "
    "\"type\": \"uint32 equal\", \"size\": 4}, {\"name\": \"status\", "
    "\"type\": \"buffer\", \"size\": 8192}]}";
static const char desc_spapr_xive[] =
    "{\"name\": \"spapr-xive\", \"instance_id\": 0, \"vmsd_name\": "
    "\"spapr-xive\", \"version\": 1, \"fields\": [{\"name\": \"nr_irqs\", "
    "\"type\": \"uint32 equal\", \"size\": 4}, {\"name\": \"eat\", "
    "\"array_len\": 8192, \"type\": \"struct\", \"struct\": {\"vmsd_name\": "
    "\"spapr-xive/eas\", \"version\": 1, \"fields\": [{\"name\": \"w\", "
    "\"type\": \"uint64\", \"size\": 8}]}, \"size\": 8}, {\"name\": "
    "\"endt\", \"array_len\": 8, \"type\": \"struct\", \"struct\": "
    "{\"vmsd_name\": \"spapr-xive/end\", \"version\": 1, \"fields\": ["
    "{\"name\": \"w0\", \"type\": \"uint32\", \"size\": 4}, {\"name\": "
    "\"w1\", \"type\": \"uint32\", \"size\": 4}, {\"name\": \"w2\", "
    "\"type\": \"uint32\", \"size\": 4}, {\"name\": \"w3\", \"type\": "
    "\"uint32\", \"size\": 4}, {\"name\": \"w4\", \"type\": \"uint32\", "
    "\"size\": 4}, {\"name\": \"w5\", \"type\": \"uint32\", \"size\": 4}, "
    "{\"name\": \"w6\", \"type\": \"uint32\", \"size\": 4}, {\"name\": "
    "\"w7\", \"type\": \"uint32\", \"size\": 4}]}, \"size\": 32}]}";
static const char desc_xive_tctx[] =
    "{\"name\": \"xive-tctx\", \"instance_id\": 0, \"vmsd_name\": "
    "\"xive-tctx\", \"version\": 1, \"fields\": [{\"name\": \"regs\", "
    "\"type\": \"buffer\", \"size\": 64}]}";
static const char desc_ics[] =
    "{\"name\": \"ics\", \"instance_id\": 0, \"vmsd_name\": \"ics\", "
    "\"version\": 1, \"fields\": [{\"name\": \"nr_irqs\", \"type\": "
    "\"uint32 equal\", \"size\": 4}, {\"name\": \"irqs\", \"array_len\": "
    "4096, \"type\": \"struct\", \"struct\": {\"vmsd_name\": \"ics/irq\", "
    "\"version\": 2, \"fields\": [{\"name\": \"server\", \"type\": "
    "\"uint32\", \"size\": 4}, {\"name\": \"priority\", \"type\": "
    "\"uint8\", \"size\": 1}, {\"name\": \"saved_priority\", \"type\": "
    "\"uint8\", \"size\": 1}, {\"name\": \"status\", \"type\": \"uint8\", "
    "\"size\": 1}, {\"name\": \"flags\", \"type\": \"uint8\", \"size\": "
    "1}]}, \"size\": 8}]}";
static const char desc_icp[] =
    "{\"name\": \"icp/server\", \"instance_id\": 0, \"vmsd_name\": "
    "\"icp/server\", \"version\": 1, \"fields\": [{\"name\": \"xirr\", "
    "\"type\": \"uint32\", \"size\": 4}, {\"name\": \"pending_priority\", "
    "\"type\": \"uint8\", \"size\": 1}, {\"name\": \"mfrr\", \"type\": "
    "\"uint8\", \"size\": 1}]}";

/* Body offsets, from the descriptions above. */
#define XSRC_STATUS(irq)    (4 + (irq))
#define XIVE_EAS(irq)       (4 + 8 * (irq))
#define XIVE_END(i, w)      (4 + 8 * 8192 + 32 * (i) + 4 * (w))
#define ICS_IRQ(irq)        (4 + 8 * ((irq) - 0x1000))
#define TM_OS               0x10

/* EAS and END words travel as a little-endian host's QEMU writes its
 * big-endian copies: bytes reversed. */
static void st_le(uint8_t *p, unsigned size, uint64_t v)
{
    for (unsigned i = 0; i < size; i++, v >>= 8) {
        p[i] = v;
    }
}

static uint64_t ld_le(const uint8_t *p, unsigned size)
{
    uint64_t v = 0;

    for (unsigned i = size; i-- > 0;) {
        v = v << 8 | p[i];
    }
    return v;
}

typedef struct Fixture {
    StreamLayout *layout;
    GuestRam *ram;
} Fixture;

static void add(StreamLayout *l, const char *idstr, uint32_t id,
                const void *body, size_t len, const char *desc)
{
    g_autoptr(GBytes) b = g_bytes_new(body, len);

    stream_layout_add_carried(l, idstr, 0, 1, id, b, desc);
}

/* What Linux 6.1 left on pseries-7.2 (XIVE chosen): the LAN's EAS to
 * END 6 with data 0x14; END 6 valid, enqueuing to a 64 KiB queue,
 * notifying unconditionally at priority 6 to NVT 0x400; CPU 0's OS ring
 * at CPPR 0xff with that CAM; the ICS entry left at priority 0xff. */
static void xive_bodies(StreamLayout *l, uint32_t qindex, bool gen)
{
    g_autofree uint8_t *xsrc = g_malloc0(4 + 8192);
    g_autofree uint8_t *xive = g_malloc0(4 + 8 * 8192 + 8 * 32);
    g_autofree uint8_t *ics = g_malloc0(4 + 8 * 4096);
    uint8_t tctx[64] = { 0 };

    stn_be_p(xsrc, 4, 8192);
    stn_be_p(xive, 4, 8192);
    stn_be_p(ics, 4, 4096);
    st_le(xive + XIVE_EAS(LAN_IRQ), 8, 0x8000000600000000ull | LAN_DATA);
    st_le(xive + XIVE_END(END_INDEX, 0), 4, 0xe0040000);
    st_le(xive + XIVE_END(END_INDEX, 1), 4, (gen ? 0x00400000 : 0) | qindex);
    st_le(xive + XIVE_END(END_INDEX, 3), 4, QUEUE_ADDR);
    st_le(xive + XIVE_END(END_INDEX, 6), 4, 0x400);
    st_le(xive + XIVE_END(END_INDEX, 7), 4, 0x00060000);
    memset(ics + ICS_IRQ(LAN_IRQ) + 4, 0xff, 2);
    ics[ICS_IRQ(LAN_IRQ) + 7] = 0x02;
    tctx[TM_OS + 1] = 0xff;
    tctx[TM_OS + 7] = 0xff;
    stn_be_p(tctx + TM_OS + 8, 4, 0x80000400);
    add(l, "ics", 10, ics, 4 + 8 * 4096, desc_ics);
    add(l, "xive-source", 11, xsrc, 4 + 8192, desc_xive_source);
    add(l, "spapr-xive", 12, xive, 4 + 8 * 8192 + 8 * 32, desc_spapr_xive);
    add(l, "xive-tctx", 13, tctx, sizeof(tctx), desc_xive_tctx);
}

/* pseries-2.5: XICS only, the LAN at @priority for server 0. */
static void xics_bodies(StreamLayout *l, uint8_t priority)
{
    g_autofree uint8_t *ics = g_malloc0(4 + 8 * 4096);
    uint8_t icp[6] = { 0, 0, 0, 0, 0xff, 0xff };

    stn_be_p(ics, 4, 4096);
    ics[ICS_IRQ(LAN_IRQ) + 4] = priority;
    ics[ICS_IRQ(LAN_IRQ) + 5] = 0xff;
    ics[ICS_IRQ(LAN_IRQ) + 7] = 0x02;
    add(l, "ics", 10, ics, 4 + 8 * 4096, desc_ics);
    add(l, "icp/server", 11, icp, sizeof(icp), desc_icp);
}

static void fixture_init(Fixture *f, StreamLayout *built)
{
    f->layout = stream_layout_copy(built);
    stream_layout_unref(built);
    f->ram = guest_ram_new(RAM_SIZE, NULL);
    g_assert_nonnull(f->ram);
}

static void fixture_free(Fixture *f)
{
    stream_layout_unref(f->layout);
    guest_ram_free(f->ram);
}

static uint8_t *body(Fixture *f, const char *idstr)
{
    size_t len;
    uint8_t *b = stream_layout_body(f->layout, idstr, 0, &len);

    g_assert_nonnull(b);
    return b;
}

static uint32_t queue_entry(Fixture *f, uint32_t index)
{
    uint64_t v;

    g_assert_true(guest_ram_ld_be(f->ram, QUEUE_ADDR + 4 * index, 4, &v));
    return v;
}

static SpaprCarriedIrqOutcome record(Fixture *f)
{
    return spapr_carried_irq_record(f->layout, f->ram, LAN_IRQ);
}

/* The first raise: PQ 00 -> 10, the entry with generation 1 at the
 * queue's index, the index advanced, the OS ring's IPB, PIPR and NSR. */
static void test_xive_first_raise(void)
{
    StreamLayout *l = stream_layout_new();
    uint8_t *xive, *ring;
    Fixture f;

    xive_bodies(l, 5, true);
    fixture_init(&f, l);
    g_assert_cmpint(record(&f), ==, CARRIED_IRQ_XIVE_QUEUED);
    g_assert_cmphex(body(&f, "xive-source")[XSRC_STATUS(LAN_IRQ)], ==, 0x2);
    g_assert_cmphex(queue_entry(&f, 5), ==, 0x80000000u | LAN_DATA);
    g_assert_cmphex(queue_entry(&f, 4), ==, 0);
    g_assert_cmphex(queue_entry(&f, 6), ==, 0);
    xive = body(&f, "spapr-xive");
    g_assert_cmphex(ld_le(xive + XIVE_END(END_INDEX, 1), 4), ==, 0x00400006);
    g_assert_cmphex(ld_le(xive + XIVE_END(END_INDEX, 0), 4), ==, 0xe0040000);
    ring = body(&f, "xive-tctx") + TM_OS;
    g_assert_cmphex(ring[2], ==, 0x02);             /* IPB: priority 6 */
    g_assert_cmphex(ring[7], ==, 6);                /* PIPR */
    g_assert_cmphex(ring[0], ==, 0x80);             /* NSR: EO */
    g_assert_cmphex(ring[1], ==, 0xff);             /* CPPR untouched */
    /* The ICS of the controller not chosen stays as it was. */
    g_assert_cmphex(body(&f, "ics")[ICS_IRQ(LAN_IRQ) + 6], ==, 0);
    g_assert_cmpstr(spapr_carried_irq_outcome_name(CARRIED_IRQ_XIVE_QUEUED),
                    ==, "xive-queued");
    fixture_free(&f);
}

/* A second raise before the guest saw the first coalesces in Q, as
 * QEMU's ESB does: nothing else moves. */
static void test_xive_coalesces(void)
{
    StreamLayout *l = stream_layout_new();
    Fixture f;

    xive_bodies(l, 0, true);
    fixture_init(&f, l);
    g_assert_cmpint(record(&f), ==, CARRIED_IRQ_XIVE_QUEUED);
    g_assert_cmpint(record(&f), ==, CARRIED_IRQ_XIVE_COALESCED);
    g_assert_cmphex(body(&f, "xive-source")[XSRC_STATUS(LAN_IRQ)], ==, 0x3);
    g_assert_cmphex(queue_entry(&f, 1), ==, 0);
    g_assert_cmphex(ld_le(body(&f, "spapr-xive") + XIVE_END(END_INDEX, 1), 4),
                    ==, 0x00400001);
    fixture_free(&f);
}

/* The last slot: the entry carries the old generation, the index wraps
 * to 0 and the generation flips. */
static void test_xive_queue_wraps(void)
{
    StreamLayout *l = stream_layout_new();
    Fixture f;

    xive_bodies(l, QUEUE_ENTRIES - 1, false);
    fixture_init(&f, l);
    g_assert_cmpint(record(&f), ==, CARRIED_IRQ_XIVE_QUEUED);
    g_assert_cmphex(queue_entry(&f, QUEUE_ENTRIES - 1), ==, LAN_DATA);
    g_assert_cmphex(ld_le(body(&f, "spapr-xive") + XIVE_END(END_INDEX, 1), 4),
                    ==, 0x00400000);
    fixture_free(&f);
}

/* A source the guest turned off (PQ 01) stays off; a masked EAS takes
 * the PQ and goes no further. */
static void test_xive_off_and_masked(void)
{
    StreamLayout *l = stream_layout_new();
    uint8_t *xive;
    Fixture f;

    xive_bodies(l, 0, true);
    fixture_init(&f, l);
    body(&f, "xive-source")[XSRC_STATUS(LAN_IRQ)] = 0x1;
    g_assert_cmpint(record(&f), ==, CARRIED_IRQ_XIVE_ESB_OFF);
    g_assert_cmphex(body(&f, "xive-source")[XSRC_STATUS(LAN_IRQ)], ==, 0x1);
    body(&f, "xive-source")[XSRC_STATUS(LAN_IRQ)] = 0;
    xive = body(&f, "spapr-xive");
    st_le(xive + XIVE_EAS(LAN_IRQ), 8,
          0x8000000680000000ull | LAN_DATA);
    g_assert_cmpint(record(&f), ==, CARRIED_IRQ_XIVE_MASKED);
    g_assert_cmphex(body(&f, "xive-source")[XSRC_STATUS(LAN_IRQ)], ==, 0x2);
    g_assert_cmphex(queue_entry(&f, 0), ==, 0);
    g_assert_cmphex(body(&f, "xive-tctx")[TM_OS + 2], ==, 0);
    fixture_free(&f);
}

/* A guest that chose XICS on a machine with both: QEMU's claim left the
 * EAS valid and masked, the guest set the ICS priority.  The ICS records
 * it and XIVE's PQ stays. */
static void test_dual_xics_chosen(void)
{
    StreamLayout *l = stream_layout_new();
    uint8_t *ics;
    Fixture f;

    xive_bodies(l, 0, true);
    fixture_init(&f, l);
    st_le(body(&f, "spapr-xive") + XIVE_EAS(LAN_IRQ), 8,
          0x8000000080000000ull);
    ics = body(&f, "ics") + ICS_IRQ(LAN_IRQ);
    ics[4] = 5;
    g_assert_cmpint(record(&f), ==, CARRIED_IRQ_XICS_REJECTED);
    g_assert_cmphex(ics[6], ==, 0x4);
    g_assert_cmphex(body(&f, "xive-source")[XSRC_STATUS(LAN_IRQ)], ==, 0);
    fixture_free(&f);
}

/* pseries-2.5: REJECTED for the next EOI or CPPR change to resend, the
 * ICP left alone; a masked source pending for its unmasking. */
static void test_xics(void)
{
    StreamLayout *l = stream_layout_new();
    static const uint8_t icp_before[6] = { 0, 0, 0, 0, 0xff, 0xff };
    Fixture f;

    xics_bodies(l, 5);
    fixture_init(&f, l);
    g_assert_cmpint(record(&f), ==, CARRIED_IRQ_XICS_REJECTED);
    g_assert_cmphex(body(&f, "ics")[ICS_IRQ(LAN_IRQ) + 6], ==, 0x4);
    g_assert_cmpmem(body(&f, "icp/server"), 6, icp_before, 6);
    g_assert_cmpint(record(&f), ==, CARRIED_IRQ_XICS_REJECTED);
    g_assert_cmphex(body(&f, "ics")[ICS_IRQ(LAN_IRQ) + 6], ==, 0x4);
    fixture_free(&f);

    l = stream_layout_new();
    xics_bodies(l, 0xff);
    fixture_init(&f, l);
    g_assert_cmpint(record(&f), ==, CARRIED_IRQ_XICS_MASKED_PENDING);
    g_assert_cmphex(body(&f, "ics")[ICS_IRQ(LAN_IRQ) + 6], ==, 0x8);
    fixture_free(&f);
}

/* No carried controller: nothing to record. */
static void test_no_controller(void)
{
    StreamLayout *l = stream_layout_new();
    Fixture f;

    fixture_init(&f, l);
    g_assert_cmpint(record(&f), ==, CARRIED_IRQ_NO_CONTROLLER);
    fixture_free(&f);
}

/* The machine remembers a raised source until it is taken or a stream
 * is accepted. */
static void test_machine_remembers_raises(void)
{
    MachineOptions opts = { .ram_size = 16u << 20 };
    const MachineClass *mc = machine_class_find("pseries-7.2");
    SpaprMachineState *spapr = spapr_machine_new(mc, &opts, NULL);

    g_assert_nonnull(spapr);
    g_assert_false(spapr_irq_take_raised(spapr, LAN_IRQ));
    irq_pulse(spapr_irq_input(spapr, LAN_IRQ));
    g_assert_true(spapr_irq_take_raised(spapr, LAN_IRQ));
    g_assert_false(spapr_irq_take_raised(spapr, LAN_IRQ));
    irq_pulse(spapr_irq_input(spapr, LAN_IRQ));
    spapr_irq_forget_raised(spapr);
    g_assert_false(spapr_irq_take_raised(spapr, LAN_IRQ));
    spapr_machine_free(spapr);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/carried-irq/xive/first-raise", test_xive_first_raise);
    g_test_add_func("/carried-irq/xive/coalesces", test_xive_coalesces);
    g_test_add_func("/carried-irq/xive/queue-wraps", test_xive_queue_wraps);
    g_test_add_func("/carried-irq/xive/off-and-masked",
                    test_xive_off_and_masked);
    g_test_add_func("/carried-irq/dual/xics-chosen", test_dual_xics_chosen);
    g_test_add_func("/carried-irq/xics", test_xics);
    g_test_add_func("/carried-irq/no-controller", test_no_controller);
    g_test_add_func("/carried-irq/machine-remembers-raises",
                    test_machine_remembers_raises);
    return g_test_run();
}
