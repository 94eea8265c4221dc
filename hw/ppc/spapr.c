/*
 * The pseries machine.  It has no CPU: whoever issues hcalls through
 * spapr_hypercall() is the guest (a qtest client, later built-in models).
 */
#include "hw/ppc/spapr.h"
#include "hw/ppc/spapr-carried-irq.h"
#include "hw/ppc/spapr_iommu.h"
#include "hw/ppc/spapr_vio.h"
#include "migration/carry.h"
#include "qemu/module.h"
#include "qemu/option.h"

#include <errno.h>
#include <libfdt.h>
#include <stdio.h>
#include <string.h>

#define SPAPR_MIN_RAM   (16ULL << 20)
#define SPAPR_MAX_RAM   (1ULL << 40)
#define SPAPR_RAM_ALIGN (1ULL << 20)
#define SPAPR_PAGE_SIZE (4ULL << 10)   /* the unit of -M none's RAM */
#define SPAPR_DEFAULT_RAM (256ULL << 20)
#define FDT_MAX_SIZE    (1 << 20)

typedef struct SpaprHcall {
    SpaprHcallFn fn;
    unsigned nout;
} SpaprHcall;

static SpaprHcall hcall_table[MAX_HCALL_OPCODE / 4 + 1];
static SpaprMachineState *current_machine;

struct SpaprMachineState {
    const MachineClass *mc;
    char *dumpdtb;
    GuestRam *ram;
    SpaprTceRegistry *tce;
    SpaprVioBus *vio;
    IrqLine irq_inputs[SPAPR_IRQ_NR];
    IrqHandler irq_intercept;
    void *irq_intercept_opaque;
    IrqLine irq_claims[SPAPR_IRQ_NR];   /* a built-in guest's handlers */
    /* Raised since the last accepted stream: for a QEMU guest's carried
     * interrupt controller (spapr-carried-irq.c).  Atomic. */
    uint8_t irq_raised[SPAPR_IRQ_NR];
};

void spapr_register_hypercall(uint64_t opcode, SpaprHcallFn fn, unsigned nout)
{
    g_assert(opcode % 4 == 0 && opcode <= MAX_HCALL_OPCODE);
    g_assert(nout < HCALL_NARGS);
    g_assert(!hcall_table[opcode / 4].fn);
    hcall_table[opcode / 4] = (SpaprHcall){ fn, nout };
}

int64_t spapr_hypercall(SpaprMachineState *spapr, uint64_t opcode,
                        uint64_t args[HCALL_NARGS], unsigned *nout)
{
    const SpaprHcall *h = NULL;
    int64_t ret;

    if (opcode % 4 == 0 && opcode <= MAX_HCALL_OPCODE) {
        h = &hcall_table[opcode / 4];
    }
    if (!h || !h->fn) {
        *nout = 0;
        return H_FUNCTION;
    }
    ret = h->fn(spapr, opcode, args);
    /* Output registers carry meaning only when the call did not fail. */
    *nout = ret >= 0 ? h->nout : 0;
    return ret;
}

GuestRam *spapr_ram(SpaprMachineState *spapr)
{
    return spapr->ram;
}

const char *spapr_machine_type(SpaprMachineState *spapr)
{
    return spapr->mc->name;
}

const MachineClass *spapr_machine_class(SpaprMachineState *spapr)
{
    return spapr->mc;
}

SpaprVioBus *spapr_vio_bus(SpaprMachineState *spapr)
{
    return spapr->vio;
}

SpaprTceRegistry *spapr_tce_registry(SpaprMachineState *spapr)
{
    return spapr->tce;
}

/*
 * QEMU's legacy allocation hands sources out first free from 0x1000 in
 * the order they are claimed: its event sources, a spapr-vty per
 * -serial, the nvram, the default PHB's four LSIs, then the -device VIO
 * devices in command-line order.  illan has no vty, nvram or PHB, but
 * counts the nvram and the LSIs, which QEMU always has, so that its
 * numbers are QEMU's for the same command line (which has no -serial,
 * since illan takes none).  A stream may carry any number above the
 * event sources: the vtys and devices illan lacks move them.
 */
#define LEGACY_IRQS_BEFORE_VIO  (1 + 4)

bool spapr_legacy_irqs(const SpaprMachineState *spapr, SpaprLegacyIrqs *out)
{
    unsigned events = spapr->mc->legacy_irq_events;

    if (!events) {
        return false;
    }
    *out = (SpaprLegacyIrqs){
        .first = SPAPR_IRQ_BASE + events + LEGACY_IRQS_BEFORE_VIO,
        .min = SPAPR_IRQ_BASE + events,
        .max = SPAPR_IRQ_BASE + SPAPR_IRQ_NR - 1,
    };
    return true;
}

IrqLine *spapr_irq_input(SpaprMachineState *spapr, uint32_t irq)
{
    if (irq < SPAPR_IRQ_BASE || irq >= SPAPR_IRQ_BASE + SPAPR_IRQ_NR) {
        return NULL;
    }
    return &spapr->irq_inputs[irq - SPAPR_IRQ_BASE];
}

/* With no CPU to present interrupts to, a source only matters to whoever
 * intercepts it, or to the built-in guest that claimed it. */
static void spapr_irq_handler(void *opaque, int n, int level)
{
    SpaprMachineState *spapr = opaque;
    IrqLine *claim = &spapr->irq_claims[n - SPAPR_IRQ_BASE];
    uint8_t *raised = &spapr->irq_raised[n - SPAPR_IRQ_BASE];

    /* Read first: an interrupt per batch should not bounce the line. */
    if (level && !__atomic_load_n(raised, __ATOMIC_RELAXED)) {
        __atomic_store_n(raised, 1, __ATOMIC_RELEASE);
    }
    if (spapr->irq_intercept) {
        spapr->irq_intercept(spapr->irq_intercept_opaque, n, level);
    } else if (claim->handler) {
        claim->handler(claim->opaque, n, level);
    }
}

bool spapr_irq_take_raised(SpaprMachineState *spapr, uint32_t irq)
{
    if (irq < SPAPR_IRQ_BASE || irq >= SPAPR_IRQ_BASE + SPAPR_IRQ_NR) {
        return false;
    }
    return __atomic_exchange_n(&spapr->irq_raised[irq - SPAPR_IRQ_BASE], 0,
                               __ATOMIC_ACQ_REL);
}

void spapr_irq_forget_raised(SpaprMachineState *spapr)
{
    for (int i = 0; i < SPAPR_IRQ_NR; i++) {
        __atomic_store_n(&spapr->irq_raised[i], 0, __ATOMIC_RELAXED);
    }
}

bool spapr_irq_claim(SpaprMachineState *spapr, uint32_t irq,
                     IrqHandler handler, void *opaque)
{
    IrqLine *claim;

    if (irq < SPAPR_IRQ_BASE || irq >= SPAPR_IRQ_BASE + SPAPR_IRQ_NR) {
        return false;
    }
    claim = &spapr->irq_claims[irq - SPAPR_IRQ_BASE];
    if (handler && claim->handler) {
        return false;
    }
    *claim = (IrqLine){ handler, opaque, irq };
    return true;
}

void spapr_irq_intercept(SpaprMachineState *spapr, IrqHandler handler,
                         void *opaque)
{
    spapr->irq_intercept = handler;
    spapr->irq_intercept_opaque = opaque;
}

static bool check_ram_size(const MachineClass *mc, uint64_t size,
                           GError **errp)
{
    /* An empty machine runs no firmware or guest that needs a minimum. */
    if (mc->empty && size <= SPAPR_MAX_RAM && size % SPAPR_PAGE_SIZE == 0) {
        return true;
    }
    if (mc->empty) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "RAM size %" G_GUINT64_FORMAT " is not supported: use a "
                    "multiple of 4K up to 1T", size);
        return false;
    }
    if (size < SPAPR_MIN_RAM || size > SPAPR_MAX_RAM ||
        size % SPAPR_RAM_ALIGN) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "RAM size %" G_GUINT64_FORMAT " is not supported: use a "
                    "multiple of 1M between 16M and 1T", size);
        return false;
    }
    return true;
}

SpaprMachineState *spapr_machine_new(const MachineClass *mc,
                                     const MachineOptions *opts,
                                     GError **errp)
{
    SpaprMachineState *spapr;
    GuestRam *ram;

    if (!check_ram_size(mc, opts->ram_size, errp) ||
        !(ram = guest_ram_new(opts->ram_size, errp))) {
        return NULL;
    }
    spapr = g_new0(SpaprMachineState, 1);
    spapr->mc = mc;
    spapr->ram = ram;
    spapr->dumpdtb = g_strdup(opts->dumpdtb);
    spapr->tce = spapr_tce_registry_new();
    spapr->vio = spapr_vio_bus_new(spapr);
    for (int i = 0; i < SPAPR_IRQ_NR; i++) {
        spapr->irq_inputs[i] = (IrqLine){ spapr_irq_handler, spapr,
                                          SPAPR_IRQ_BASE + i };
    }
    spapr_carried_irq_attach(spapr);
    return spapr;
}

void spapr_machine_free(SpaprMachineState *spapr)
{
    if (!spapr) {
        return;
    }
    spapr_carried_irq_detach();
    spapr_vio_bus_free(spapr->vio);
    spapr_tce_registry_free(spapr->tce);
    guest_ram_free(spapr->ram);
    g_free(spapr->dumpdtb);
    g_free(spapr);
}

bool spapr_machine_plug(SpaprMachineState *spapr, void *opaque, GError **errp)
{
    DeviceState *dev = opaque;

    if (spapr->mc->empty) {
        /* QEMU's words, which clients match on. */
        g_set_error(errp, ILLAN_ERROR, 0, "No '%s' bus found for device "
                    "'%s' (machine '%s' has no buses; use -M pseries)",
                    dev->klass->bus_type ? dev->klass->bus_type : "",
                    dev->klass->name, spapr->mc->name);
        return false;
    }
    if (!spapr_vio_is_vio_class(dev->klass)) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Device '%s' can't go on the pseries machine's buses",
                    dev->klass->name);
        return false;
    }
    return spapr_vio_bus_plug(spapr->vio, opaque, errp);
}

void spapr_machine_reset(SpaprMachineState *spapr)
{
    spapr_vio_bus_reset(spapr->vio);
}

void spapr_machine_set_current(SpaprMachineState *spapr)
{
    current_machine = spapr;
}

SpaprMachineState *spapr_machine_current(void)
{
    return current_machine;
}

static bool fdt_populate(SpaprMachineState *spapr, void *fdt, GError **errp)
{
    uint64_t size = guest_ram_size(spapr->ram);
    uint32_t mem_reg[4] = { 0, 0, cpu_to_fdt32(size >> 32),
                            cpu_to_fdt32((uint32_t)size) };
    int node;

    FDT_TRY(fdt_create_empty_tree(fdt, FDT_MAX_SIZE));
    FDT_TRY(fdt_setprop_string(fdt, 0, "model",
                               "IBM pSeries (emulated by illan)"));
    FDT_TRY(fdt_setprop_string(fdt, 0, "compatible", "qemu,pseries"));
    FDT_TRY(fdt_setprop_string(fdt, 0, "device_type", "chrp"));
    FDT_TRY(fdt_setprop_cell(fdt, 0, "#address-cells", 2));
    FDT_TRY(fdt_setprop_cell(fdt, 0, "#size-cells", 2));

    /* libfdt puts a new node first among its siblings: add in reverse. */
    if (!spapr_vio_bus_fdt(spapr->vio, fdt, errp)) {
        return false;
    }
    FDT_TRY(node = fdt_add_subnode(fdt, 0, "chosen"));
    FDT_TRY(node = fdt_add_subnode(fdt, 0, "memory@0"));
    FDT_TRY(fdt_setprop_string(fdt, node, "device_type", "memory"));
    FDT_TRY(fdt_setprop(fdt, node, "reg", mem_reg, sizeof(mem_reg)));
    FDT_TRY(fdt_pack(fdt));
    return true;
}

void *spapr_build_fdt(SpaprMachineState *spapr, GError **errp)
{
    void *fdt = g_malloc0(FDT_MAX_SIZE);

    if (!fdt_populate(spapr, fdt, errp)) {
        g_free(fdt);
        return NULL;
    }
    return fdt;
}

static bool write_dtb(SpaprMachineState *spapr, GError **errp)
{
    g_autofree void *fdt = spapr_build_fdt(spapr, errp);
    FILE *f;
    bool ok;

    if (!fdt) {
        return false;
    }
    f = fopen(spapr->dumpdtb, "wb");
    ok = f && fwrite(fdt, fdt_totalsize(fdt), 1, f) == 1;
    if (f && fclose(f) != 0) {
        ok = false;
    }
    if (!ok) {
        g_set_error(errp, ILLAN_ERROR, 0, "cannot write %s: %s", spapr->dumpdtb,
                    g_strerror(errno));
    }
    return ok;
}

bool spapr_machine_done(SpaprMachineState *spapr, bool *exit_now,
                        GError **errp)
{
    *exit_now = spapr->dumpdtb != NULL;
    return !spapr->dumpdtb || write_dtb(spapr, errp);
}

/*
 * The machine types, named as QEMU names them.  pseries-2.5 was the last
 * of QEMU's to keep the legacy receive path; from pseries-2.6 on the
 * pools are on.  pseries-1.0 and pseries-2.0, the names of illan's first
 * release, stay as aliases of a type that behaves as they did, so that
 * their streams load (the stream carries the name; see savevm.c).
 * QEMU 7.2 refuses a spapr_llan section with a subsection it does not
 * know, so its machine types and older write none of illan's own; it is
 * the newest QEMU checked, so later types keep them.
 */
static const char *const pseries_7_2_compat[] = {
    "spapr-vlan.x-illan-subsections=off",
    NULL,
};

static const char *const pseries_2_5_compat[] = {
    "spapr-vlan.use-rx-buffer-pools=off",
    "spapr-vlan.offloads=off",
    "spapr-vlan.x-illan-subsections=off",
    NULL,
};

#define PSERIES(version, ...) {                                         \
        .name = "pseries-" version,                                     \
        .desc = "pSeries Logical Partition (PAPR compliant)",           \
        .default_ram_size = SPAPR_DEFAULT_RAM,                          \
        .default_ram_id = "ppc_spapr.ram",                              \
        __VA_ARGS__                                                     \
    }

#define PSERIES_7_2(version, ...) \
    PSERIES(version, .compat_props = pseries_7_2_compat, __VA_ARGS__)
/* QEMU's legacy interrupt numbering: the EPOW event source, and from
 * pseries-2.8 on the hot-plug one too, come first. */
#define EPOW_ONLY               .legacy_irq_events = 1
#define EPOW_AND_HOTPLUG        .legacy_irq_events = 2

static const MachineClass pseries_machines[] = {
    PSERIES("10.1", .alias = "pseries", .is_default = true),
    PSERIES("10.0"), PSERIES("9.2"), PSERIES("9.1"), PSERIES("9.0"),
    PSERIES("8.2"), PSERIES("8.1"), PSERIES("8.0"),
    PSERIES_7_2("7.2"), PSERIES_7_2("7.1"), PSERIES_7_2("7.0"),
    PSERIES_7_2("6.2"), PSERIES_7_2("6.1"), PSERIES_7_2("6.0"),
    PSERIES_7_2("5.2"), PSERIES_7_2("5.1"), PSERIES_7_2("5.0"),
    PSERIES_7_2("4.2"), PSERIES_7_2("4.1"), PSERIES_7_2("4.0"),
    PSERIES_7_2("3.1"), PSERIES_7_2("3.0", EPOW_AND_HOTPLUG),
    PSERIES_7_2("2.12", EPOW_AND_HOTPLUG),
    PSERIES_7_2("2.11", EPOW_AND_HOTPLUG),
    PSERIES_7_2("2.10", EPOW_AND_HOTPLUG),
    PSERIES_7_2("2.9", EPOW_AND_HOTPLUG),
    PSERIES_7_2("2.8", EPOW_AND_HOTPLUG),
    PSERIES_7_2("2.7", EPOW_ONLY),
    PSERIES_7_2("2.6", .alias = "pseries-2.0", EPOW_ONLY),
    PSERIES("2.5", .alias = "pseries-1.0",
            .compat_props = pseries_2_5_compat, EPOW_ONLY),
};

/* QEMU's -M none: the machine of its QMP and qtest tests. */
static const MachineClass none_machine = {
    .name = "none",
    .desc = "empty machine",
    .default_ram_id = "ram",
    .empty = true,
};

static void spapr_machine_register(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(pseries_machines); i++) {
        machine_class_register(&pseries_machines[i]);
    }
    machine_class_register(&none_machine);
}
illan_init(spapr_machine_register)

/*
 * A guest taken over from QEMU knows its LAN's MAC from the device tree
 * QEMU gave it, which QEMU's spapr section carries.  A device here with
 * another MAC would filter out every frame to the guest: refused, naming
 * both.
 */
static const uint8_t *fdt_mac(const void *fdt, int node)
{
    int len;
    const uint8_t *v = fdt_getprop(fdt, node, "local-mac-address", &len);

    /* 6 bytes, or 8 with two leading zeros (spapr_vlan_devnode()). */
    return !v ? NULL : len == 6 ? v : len == 8 ? v + 2 : NULL;
}

static bool compare_lan_macs(const void *guest, const void *ours,
                             GError **errp)
{
    int vdev = fdt_path_offset(ours, "/vdevice"), node;

    fdt_for_each_subnode(node, ours, vdev) {
        const char *name = fdt_get_name(ours, node, NULL);
        g_autofree char *path = g_strdup_printf("/vdevice/%s", name);
        int theirs = fdt_path_offset(guest, path);
        const uint8_t *want = fdt_mac(ours, node);
        const uint8_t *have = theirs >= 0 ? fdt_mac(guest, theirs) : NULL;

        if (want && have && memcmp(want, have, 6)) {
            MACAddr guest_mac, our_mac;
            g_autofree char *theirs = NULL, *mine = NULL;

            memcpy(guest_mac.a, have, 6);
            memcpy(our_mac.a, want, 6);
            theirs = mac_format(&guest_mac);
            mine = mac_format(&our_mac);
            g_set_error(errp, ILLAN_ERROR, 0, "the guest's %s has MAC %s "
                        "(its device tree), this machine's %s: give its "
                        "-device mac=%s", name, theirs, mine, theirs);
            return false;
        }
    }
    return true;
}

bool spapr_check_carried(const StreamLayout *l, void *opaque, GError **errp)
{
    SpaprMachineState *spapr = opaque;
    size_t len, off, size;
    const uint8_t *body = stream_layout_peek_body(l, "spapr", 0, &len);
    g_autofree void *ours = g_malloc(FDT_MAX_SIZE);
    g_autofree void *guest = NULL;

    if (!body || !stream_layout_find_subsection_field(l, "spapr", 0,
                                                      "spapr_dtb",
                                                      "fdt_blob", &off,
                                                      &size)) {
        return true;            /* no device tree to compare with */
    }
    /* libfdt wants the tree 8-byte aligned; in the section it is not. */
    guest = g_memdup2(body + off, size);
    if (fdt_check_full(guest, size) != 0) {
        return true;
    }
    if (fdt_create_empty_tree(ours, FDT_MAX_SIZE) != 0 ||
        !spapr_vio_bus_fdt(spapr->vio, ours, errp)) {
        g_prefix_error(errp, "this machine's device tree: ");
        return false;
    }
    return compare_lan_macs(guest, ours, errp);
}
