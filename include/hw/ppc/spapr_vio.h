/*
 * The VIO bus of the pseries machine: unit addresses ("reg"), interrupt
 * numbers, one TCE window per device, H_VIO_SIGNAL, and the DMA helpers
 * every VIO device uses.
 */
#ifndef HW_PPC_SPAPR_VIO_H
#define HW_PPC_SPAPR_VIO_H

#include "hw/irq.h"
#include "hw/ppc/spapr.h"
#include "hw/ppc/spapr_iommu.h"
#include "hw/qdev.h"

#define TYPE_SPAPR_VIO_BUS   "spapr-vio-bus"
#define SPAPR_VIO_REG_BASE   0x71000000u
#define SPAPR_VIO_REG_AUTO   0xFFFFFFFFu

typedef struct SpaprVioDevice SpaprVioDevice;

typedef struct SpaprVioDeviceClass {
    DeviceClass parent;
    const char *dt_name;            /* node name before '@' */
    const char *dt_type;            /* device_type */
    const char *dt_compatible;
    uint64_t signal_mask;           /* H_VIO_SIGNAL mode bits it accepts */
    /* Optional: stores an accepted H_VIO_SIGNAL mode in signal_state, for
     * a device whose interrupt is raised off the hcall's thread: under
     * the lock that path reads it with, so that an enable and a frame
     * arriving at once cannot miss each other. */
    void (*set_signal)(SpaprVioDevice *dev, uint64_t mode);
    /* Adds the device's own properties to its node @offset. */
    bool (*devnode)(SpaprVioDevice *dev, void *fdt, int offset,
                    GError **errp);
} SpaprVioDeviceClass;

struct SpaprVioDevice {
    DeviceState qdev;
    SpaprVioBus *bus;
    uint32_t reg;
    uint32_t irq;
    uint64_t signal_state;
    SpaprTceTable *tcet;
    IrqLine irq_out;
};

/* The VIO part of a device's migration image, QEMU's nested "spapr_vio"
 * struct.  The CRQ is unused by the logical LAN and migrates as zeros. */
typedef struct SpaprVioImage {
    uint32_t reg;
    uint32_t irq;
    uint64_t signal_state;
    struct {
        uint64_t qladdr;
        uint32_t qsize, qnext;
    } crq;
    /* Not migrated: this device's */
    uint64_t signal_mask;
    uint32_t local_irq;
    const SpaprVioDevice *dev;
} SpaprVioImage;

typedef struct VMStateDescription VMStateDescription;
extern const VMStateDescription vmstate_spapr_vio;

/* For the device's own capture and commit, under its lock. */
void spapr_vio_capture(const SpaprVioDevice *dev, SpaprVioImage *img);
void spapr_vio_commit(SpaprVioDevice *dev, const SpaprVioImage *img);
/* On a machine type with QEMU's legacy numbering a device adopts the
 * stream's interrupt: the device other than @imgs[i]'s that will have
 * the same one once @imgs, the images of one load, commit; or NULL. */
const SpaprVioDevice *spapr_vio_irq_clash(const SpaprVioImage *const *imgs,
                                          unsigned n, unsigned i);

#define SPAPR_VIO_CLASS(dev) \
    ((const SpaprVioDeviceClass *)((DeviceState *)(dev))->klass)

/* True when @dc plugs into the VIO bus. */
bool spapr_vio_is_vio_class(const DeviceClass *dc);

SpaprVioBus *spapr_vio_bus_new(SpaprMachineState *spapr);
void spapr_vio_bus_free(SpaprVioBus *bus);
/* Assigns reg (or checks an explicit one), the IRQ, the TCE window and the
 * default id, then realizes the device. */
bool spapr_vio_bus_plug(SpaprVioBus *bus, SpaprVioDevice *dev, GError **errp);
SpaprVioDevice *spapr_vio_find_by_reg(SpaprVioBus *bus, uint64_t reg);
/* Finds a device by id or "/machine/peripheral/ID". */
SpaprVioDevice *spapr_vio_find_by_path(SpaprVioBus *bus, const char *path);
void spapr_vio_bus_reset(SpaprVioBus *bus);
/* Calls @fn for each device in plug order. */
void spapr_vio_bus_foreach(SpaprVioBus *bus,
                           void (*fn)(SpaprVioDevice *dev, void *opaque),
                           void *opaque);
bool spapr_vio_bus_fdt(SpaprVioBus *bus, void *fdt, GError **errp);

/* The IRQ number PAPR assigns to a unit address. */
uint32_t spapr_vio_reg_to_irq(uint32_t reg);

/* DMA through the device's TCE window. */
static inline bool spapr_vio_dma_valid(SpaprVioDevice *dev, uint64_t ioba,
                                       uint64_t len, DmaDirection dir)
{
    return spapr_tce_dma_valid(dev->tcet, ioba, len, dir);
}

static inline bool spapr_vio_dma_read(SpaprVioDevice *dev, uint64_t ioba,
                                      void *buf, uint64_t len)
{
    return spapr_tce_dma_read(dev->tcet, ioba, buf, len);
}

static inline bool spapr_vio_dma_write_release(SpaprVioDevice *dev,
                                               uint64_t ioba, const void *buf,
                                               uint64_t len)
{
    return spapr_tce_dma_write_release(dev->tcet, ioba, buf, len);
}

static inline bool spapr_vio_dma_write(SpaprVioDevice *dev, uint64_t ioba,
                                       const void *buf, uint64_t len)
{
    return spapr_tce_dma_write(dev->tcet, ioba, buf, len);
}

/* One edge on the device's interrupt line. */
static inline void spapr_vio_irq_pulse(SpaprVioDevice *dev)
{
    irq_pulse(&dev->irq_out);
}

#endif
