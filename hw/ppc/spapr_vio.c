/*
 * The VIO bus.  It owns what every VIO device has in common (unit address,
 * interrupt, TCE window, signal state, device-tree node) so that device
 * models only add what is theirs.
 */
#include "hw/ppc/spapr_vio.h"
#include "migration/vmstate.h"
#include "qemu/module.h"
#include "qemu/option.h"

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
 * 256 addresses hold every possibility. */
static bool next_free_reg(SpaprVioBus *bus, uint32_t *reg, GError **errp)
{
    for (uint32_t r = SPAPR_VIO_REG_BASE; r < SPAPR_VIO_REG_BASE + 256; r++) {
        if (!spapr_vio_find_by_reg(bus, r) &&
            !find_by_irq(bus, spapr_vio_reg_to_irq(r))) {
            *reg = r;
            return true;
        }
    }
    g_set_error(errp, ILLAN_ERROR, 0,
                "no free VIO unit address: all 256 VIO interrupts are used");
    return false;
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
    dev->irq = spapr_vio_reg_to_irq(dev->reg);
    if ((other = find_by_irq(bus, dev->irq))) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "reg=0x%x maps to interrupt 0x%x, already used by %s; "
                    "choose a reg that differs in its low byte",
                    dev->reg, dev->irq, other->qdev.id);
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

/* Migration: reg and irq must match the destination's device; the signal
 * state must be one the device accepts from H_VIO_SIGNAL. */
static bool vio_post_load(void *opaque, int version_id, GError **errp)
{
    SpaprVioImage *img = opaque;

    (void)version_id;
    if (img->signal_state & ~img->signal_mask) {
        g_set_error(errp, ILLAN_ERROR, 0, "signal_state 0x%" G_GINT64_MODIFIER
                    "x has bits the device does not accept (mask 0x%"
                    G_GINT64_MODIFIER "x)", img->signal_state,
                    img->signal_mask);
        return false;
    }
    return true;
}

const VMStateDescription vmstate_spapr_vio = {
    .name = "spapr_vio",
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = vio_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(reg, SpaprVioImage),
        VMSTATE_UINT32_EQUAL(irq, SpaprVioImage),
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
    };
}

void spapr_vio_commit(SpaprVioDevice *dev, const SpaprVioImage *img)
{
    dev->signal_state = img->signal_state;
}

static int64_t h_vio_signal(SpaprMachineState *spapr, uint64_t opcode,
                            uint64_t *args)
{
    SpaprVioDevice *dev = spapr_vio_find_by_reg(spapr_vio_bus(spapr), args[0]);

    (void)opcode;
    if (!dev || (args[1] & ~SPAPR_VIO_CLASS(dev)->signal_mask)) {
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
