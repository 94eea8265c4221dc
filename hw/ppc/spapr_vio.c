/*
 * The VIO bus.  It owns what every VIO device has in common (unit address,
 * interrupt, TCE window, signal state, device-tree node) so that device
 * models only add what is theirs.
 */
#include "hw/ppc/spapr_vio.h"
#include "migration/vmstate.h"
#include "qemu/module.h"
#include "qemu/option.h"

#include <inttypes.h>
#include <libfdt.h>
#include <string.h>

struct SpaprVioBus {
    SpaprMachineState *spapr;
    GPtrArray *devices;     /* SpaprVioDevice *, in plug order */
};

bool spapr_vio_is_vio_class(const DeviceClass *dc)
{
    return !g_strcmp0(dc->bus_type, TYPE_SPAPR_VIO_BUS);
}

SpaprVioBus *spapr_vio_bus_new(SpaprMachineState *spapr)
{
    SpaprVioBus *bus = g_new0(SpaprVioBus, 1);

    bus->spapr = spapr;
    bus->devices = g_ptr_array_new();
    return bus;
}

void spapr_vio_bus_free(SpaprVioBus *bus)
{
    if (!bus) {
        return;
    }
    for (guint i = 0; i < bus->devices->len; i++) {
        SpaprVioDevice *dev = g_ptr_array_index(bus->devices, i);
        SpaprTceTable *tcet = dev->tcet;

        device_free(&dev->qdev);
        spapr_tce_table_free(tcet);
    }
    g_ptr_array_free(bus->devices, TRUE);
    g_free(bus);
}

uint32_t spapr_vio_reg_to_irq(uint32_t reg)
{
    if (reg >= SPAPR_VIO_REG_BASE) {
        return SPAPR_IRQ_VIO | (reg & 0xFF);
    }
    if (reg >= 0x30000000) {
        return SPAPR_IRQ_VIO | 0xF0 | ((reg >> 12) & 0xF);
    }
    return SPAPR_IRQ_VIO | ((reg >> 12) & 0xFF);
}

SpaprVioDevice *spapr_vio_find_by_reg(SpaprVioBus *bus, uint64_t reg)
{
    for (guint i = 0; i < bus->devices->len; i++) {
        SpaprVioDevice *dev = g_ptr_array_index(bus->devices, i);
        if (dev->reg == reg) {
            return dev;
        }
    }
    return NULL;
}

SpaprVioDevice *spapr_vio_find_by_path(SpaprVioBus *bus, const char *path)
{
    const char *id = path;

    if (g_str_has_prefix(path, "/machine/peripheral/")) {
        id = path + strlen("/machine/peripheral/");
    }
    for (guint i = 0; i < bus->devices->len; i++) {
        SpaprVioDevice *dev = g_ptr_array_index(bus->devices, i);
        if (!g_strcmp0(dev->qdev.id, id)) {
            return dev;
        }
    }
    return NULL;
}

static SpaprVioDevice *find_by_irq(SpaprVioBus *bus, uint32_t irq)
{
    for (guint i = 0; i < bus->devices->len; i++) {
        SpaprVioDevice *dev = g_ptr_array_index(bus->devices, i);
        if (dev->irq == irq) {
            return dev;
        }
    }
    return NULL;
}

/* The lowest unit address from the base up whose address and interrupt
 * are both free; above the base the interrupt follows the low byte, so
 * 256 addresses hold every possibility.  With QEMU's legacy numbering
 * the interrupt does not follow the address. */
static bool next_free_reg(SpaprVioBus *bus, uint32_t *reg, GError **errp)
{
    SpaprLegacyIrqs legacy;
    bool by_reg = !spapr_legacy_irqs(bus->spapr, &legacy);

    for (uint32_t r = SPAPR_VIO_REG_BASE; r < SPAPR_VIO_REG_BASE + 256; r++) {
        if (!spapr_vio_find_by_reg(bus, r) &&
            (!by_reg || !find_by_irq(bus, spapr_vio_reg_to_irq(r)))) {
            *reg = r;
            return true;
        }
    }
    g_set_error(errp, ILLAN_ERROR, 0, "no free VIO unit address: %s",
                by_reg ? "all 256 VIO interrupts are used"
                       : "0x71000000 to 0x710000ff are all used");
    return false;
}

/* QEMU's legacy numbering: the lowest number from legacy->first up that
 * no device has, devices numbered in the order they are plugged. */
static bool next_legacy_irq(SpaprVioBus *bus, const SpaprLegacyIrqs *legacy,
                            uint32_t *irq, GError **errp)
{
    for (uint32_t i = legacy->first; i <= legacy->max; i++) {
        if (!find_by_irq(bus, i)) {
            *irq = i;
            return true;
        }
    }
    g_set_error(errp, ILLAN_ERROR, 0, "no free VIO interrupt: this machine "
                "type numbers them from 0x%x to 0x%x, and all are used",
                legacy->first, legacy->max);
    return false;
}

static bool assign_irq(SpaprVioBus *bus, SpaprVioDevice *dev, GError **errp)
{
    SpaprLegacyIrqs legacy;
    SpaprVioDevice *other;

    if (spapr_legacy_irqs(bus->spapr, &legacy)) {
        return next_legacy_irq(bus, &legacy, &dev->irq, errp);
    }
    dev->irq = spapr_vio_reg_to_irq(dev->reg);
    if ((other = find_by_irq(bus, dev->irq))) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "reg=0x%x maps to interrupt 0x%x, already used by %s; "
                    "choose a reg that differs in its low byte",
                    dev->reg, dev->irq, other->qdev.id);
        return false;
    }
    return true;
}

bool spapr_vio_bus_plug(SpaprVioBus *bus, SpaprVioDevice *dev, GError **errp)
{
    const SpaprVioDeviceClass *vc = SPAPR_VIO_CLASS(dev);
    SpaprVioDevice *other;
    IrqLine *input;

    if (dev->reg == SPAPR_VIO_REG_AUTO) {
        if (!next_free_reg(bus, &dev->reg, errp)) {
            return false;
        }
    } else if ((other = spapr_vio_find_by_reg(bus, dev->reg))) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "reg=0x%x is already used by %s; choose another reg or "
                    "leave it out to have one assigned", dev->reg,
                    other->qdev.id);
        return false;
    }
    if (!assign_irq(bus, dev, errp)) {
        return false;
    }
    if (!dev->qdev.id) {
        dev->qdev.id = g_strdup_printf("%s@%x", vc->dt_name, dev->reg);
    }
    if (spapr_vio_find_by_path(bus, dev->qdev.id)) {
        g_set_error(errp, ILLAN_ERROR, 0, "Duplicate device ID '%s'",
                    dev->qdev.id);
        return false;
    }
    input = spapr_irq_input(bus->spapr, dev->irq);
    g_assert(input);
    dev->bus = bus;
    dev->irq_out = *input;
    dev->tcet = spapr_tce_table_new(spapr_tce_registry(bus->spapr), dev->reg,
                                    SPAPR_VIO_DMA_WINDOW,
                                    spapr_ram(bus->spapr), errp);
    if (!dev->tcet) {
        return false;
    }
    if (!device_realize(&dev->qdev, errp)) {
        spapr_tce_table_free(dev->tcet);
        dev->tcet = NULL;
        return false;
    }
    g_ptr_array_add(bus->devices, dev);
    return true;
}

void spapr_vio_bus_reset(SpaprVioBus *bus)
{
    for (guint i = 0; i < bus->devices->len; i++) {
        SpaprVioDevice *dev = g_ptr_array_index(bus->devices, i);

        dev->signal_state = 0;
        spapr_tce_table_reset(dev->tcet);
        device_reset(&dev->qdev);
    }
}

void spapr_vio_bus_foreach(SpaprVioBus *bus,
                           void (*fn)(SpaprVioDevice *dev, void *opaque),
                           void *opaque)
{
    for (guint i = 0; i < bus->devices->len; i++) {
        fn(g_ptr_array_index(bus->devices, i), opaque);
    }
}

static bool vio_make_devnode(SpaprVioDevice *dev, void *fdt, int vdevice,
                             GError **errp)
{
    const SpaprVioDeviceClass *vc = SPAPR_VIO_CLASS(dev);
    g_autofree char *name = g_strdup_printf("%s@%x", vc->dt_name, dev->reg);
    uint32_t interrupts[2] = { cpu_to_fdt32(dev->irq), 0 };
    uint32_t window[5] = {
        cpu_to_fdt32(spapr_tce_table_liobn(dev->tcet)), 0, 0,
        0, cpu_to_fdt32((uint32_t)SPAPR_VIO_DMA_WINDOW),
    };
    int node = fdt_add_subnode(fdt, vdevice, name);

    FDT_TRY(node);
    FDT_TRY(fdt_setprop_cell(fdt, node, "reg", dev->reg));
    FDT_TRY(fdt_setprop_string(fdt, node, "device_type", vc->dt_type));
    FDT_TRY(fdt_setprop_string(fdt, node, "compatible", vc->dt_compatible));
    /* The second cell 0 marks the interrupt edge-triggered. */
    FDT_TRY(fdt_setprop(fdt, node, "interrupts", interrupts,
                        sizeof(interrupts)));
    FDT_TRY(fdt_setprop_cell(fdt, node, "ibm,#dma-address-cells", 2));
    FDT_TRY(fdt_setprop_cell(fdt, node, "ibm,#dma-size-cells", 2));
    FDT_TRY(fdt_setprop(fdt, node, "ibm,my-dma-window", window,
                        sizeof(window)));
    return !vc->devnode || vc->devnode(dev, fdt, node, errp);
}

static gint compare_reg(gconstpointer a, gconstpointer b)
{
    const SpaprVioDevice *x = *(const SpaprVioDevice *const *)a;
    const SpaprVioDevice *y = *(const SpaprVioDevice *const *)b;
    return x->reg < y->reg ? -1 : x->reg > y->reg;
}

bool spapr_vio_bus_fdt(SpaprVioBus *bus, void *fdt, GError **errp)
{
    g_autoptr(GPtrArray) sorted = g_ptr_array_copy(bus->devices, NULL, NULL);
    int node = fdt_add_subnode(fdt, 0, "vdevice");

    FDT_TRY(node);
    FDT_TRY(fdt_setprop_string(fdt, node, "device_type", "vdevice"));
    FDT_TRY(fdt_setprop_string(fdt, node, "compatible", "IBM,vdevice"));
    FDT_TRY(fdt_setprop_cell(fdt, node, "#address-cells", 1));
    FDT_TRY(fdt_setprop_cell(fdt, node, "#size-cells", 0));
    FDT_TRY(fdt_setprop_cell(fdt, node, "#interrupt-cells", 2));
    FDT_TRY(fdt_setprop(fdt, node, "interrupt-controller", NULL, 0));
    /* Nodes are added in front of their siblings; adding in descending
     * order leaves the tree in ascending unit-address order. */
    g_ptr_array_sort(sorted, compare_reg);
    for (guint i = sorted->len; i-- > 0;) {
        if (!vio_make_devnode(g_ptr_array_index(sorted, i), fdt, node, errp)) {
            return false;
        }
    }
    return true;
}

/*
 * Migration: reg must match the destination's device, and so must irq
 * where the number follows reg.  With QEMU's legacy numbering a QEMU
 * stream's number depends on devices illan does not have (a spapr-vty
 * per -serial, its nvram), so the device adopts any number that
 * numbering can give a VIO device; spapr_vio_irq_clash() keeps the
 * numbers apart.  The signal state must be one the device accepts from
 * H_VIO_SIGNAL.
 */
static bool irq_adoptable(const SpaprVioImage *img, GError **errp)
{
    SpaprLegacyIrqs legacy;

    if (img->irq == img->local_irq) {
        return true;
    }
    if (!spapr_legacy_irqs(img->dev->bus->spapr, &legacy)) {
        g_set_error(errp, ILLAN_ERROR, 0, "interrupt 0x%x (0x%x here) must "
                    "match: this machine type numbers a VIO device's "
                    "interrupt by its unit address", img->irq,
                    img->local_irq);
        return false;
    }
    if (img->irq < legacy.min || img->irq > legacy.max) {
        g_set_error(errp, ILLAN_ERROR, 0, "interrupt 0x%x (0x%x here) is "
                    "not one QEMU's legacy numbering gives a VIO device "
                    "(0x%x to 0x%x)", img->irq, img->local_irq, legacy.min,
                    legacy.max);
        return false;
    }
    return true;
}

static bool vio_post_load(void *opaque, int version_id, GError **errp)
{
    SpaprVioImage *img = opaque;

    (void)version_id;
    if (!irq_adoptable(img, errp)) {
        return false;
    }
    if (img->signal_state & ~img->signal_mask) {
        g_set_error(errp, ILLAN_ERROR, 0, "signal_state 0x%" G_GINT64_MODIFIER
                    "x has bits the device does not accept (mask 0x%"
                    G_GINT64_MODIFIER "x)", img->signal_state,
                    img->signal_mask);
        return false;
    }
    return true;
}

/* QEMU's "uint32 equal", read without the comparison, which
 * irq_adoptable() makes. */
static void put_irq(QEMUFile *f, const void *pv, size_t size)
{
    (void)size;
    qemu_put_be32(f, *(const uint32_t *)pv);
}

static bool get_irq(QEMUFile *f, void *pv, size_t size, GError **errp)
{
    (void)size;
    (void)errp;
    *(uint32_t *)pv = qemu_get_be32(f);
    return true;
}

static const VMStateInfo vmstate_info_vio_irq = {
    "uint32 equal", put_irq, get_irq
};

const VMStateDescription vmstate_spapr_vio = {
    .name = "spapr_vio",
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = vio_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(reg, SpaprVioImage),
        VMSTATE_SINGLE(irq, SpaprVioImage, 0, vmstate_info_vio_irq,
                       uint32_t),
        VMSTATE_UINT64(signal_state, SpaprVioImage),
        VMSTATE_UINT64(crq.qladdr, SpaprVioImage),
        VMSTATE_UINT32(crq.qsize, SpaprVioImage),
        VMSTATE_UINT32(crq.qnext, SpaprVioImage),
        VMSTATE_END_OF_LIST()
    },
};

void spapr_vio_capture(const SpaprVioDevice *dev, SpaprVioImage *img)
{
    *img = (SpaprVioImage){
        .reg = dev->reg,
        .irq = dev->irq,
        .signal_state = dev->signal_state,
        .signal_mask = SPAPR_VIO_CLASS(dev)->signal_mask,
        .local_irq = dev->irq,
        .dev = dev,
    };
}

/* An adopted number is told to the line, whether the controller's input
 * or qtest's interception, which both forward by number. */
void spapr_vio_commit(SpaprVioDevice *dev, const SpaprVioImage *img)
{
    dev->signal_state = img->signal_state;
    dev->irq = img->irq;
    dev->irq_out.n = img->irq;
}

static uint32_t irq_after_commit(const SpaprVioDevice *dev,
                                 const SpaprVioImage *const *imgs,
                                 unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        if (imgs[i]->dev == dev) {
            return imgs[i]->irq;
        }
    }
    return dev->irq;
}

const SpaprVioDevice *spapr_vio_irq_clash(const SpaprVioImage *const *imgs,
                                          unsigned n, unsigned i)
{
    const SpaprVioBus *bus = imgs[i]->dev->bus;

    for (guint j = 0; j < bus->devices->len; j++) {
        const SpaprVioDevice *other = g_ptr_array_index(bus->devices, j);

        if (other != imgs[i]->dev &&
            irq_after_commit(other, imgs, n) == imgs[i]->irq) {
            return other;
        }
    }
    return NULL;
}

static int64_t h_vio_signal(SpaprMachineState *spapr, uint64_t opcode,
                            uint64_t *args)
{
    SpaprVioDevice *dev = spapr_vio_find_by_reg(spapr_vio_bus(spapr), args[0]);

    (void)opcode;
    if (!dev) {
        hcall_guest_error(__func__, "unit 0x%" PRIx64 " does not exist",
                          args[0]);
        return H_PARAMETER;
    }
    if (args[1] & ~SPAPR_VIO_CLASS(dev)->signal_mask) {
        hcall_guest_error(__func__, "mode 0x%" PRIx64 " sets bits outside "
                          "the unit's mask 0x%" PRIx64, args[1],
                          (uint64_t)SPAPR_VIO_CLASS(dev)->signal_mask);
        return H_PARAMETER;
    }
    if (SPAPR_VIO_CLASS(dev)->set_signal) {
        SPAPR_VIO_CLASS(dev)->set_signal(dev, args[1]);
    } else {
        dev->signal_state = args[1];
    }
    return H_SUCCESS;
}

static void spapr_vio_register_hcalls(void)
{
    spapr_register_hypercall(H_VIO_SIGNAL, h_vio_signal, 0);
}
illan_init(spapr_vio_register_hcalls)
