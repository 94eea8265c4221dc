/*
 * TCE tables: the guest's IOMMU for VIO devices.  Each entry maps one 4 KiB
 * I/O page to a real page with read/write permission bits, and every DMA a
 * device does is translated through the table at the moment of access.
 */
#ifndef HW_PPC_SPAPR_IOMMU_H
#define HW_PPC_SPAPR_IOMMU_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "qemu/guest-ram.h"

typedef struct SpaprTceTable SpaprTceTable;
typedef struct SpaprTceRegistry SpaprTceRegistry;

#define SPAPR_TCE_PAGE_SHIFT   12
#define SPAPR_TCE_PAGE_SIZE    (1ULL << SPAPR_TCE_PAGE_SHIFT)
#define SPAPR_TCE_PAGE_MASK    (~(SPAPR_TCE_PAGE_SIZE - 1))
#define SPAPR_VIO_DMA_WINDOW   0x10000000ULL     /* 256 MiB */

/* TCE permission bits (low two bits of an entry). */
#define TCE_READ   1ULL     /* the device may read guest memory */
#define TCE_WRITE  2ULL     /* the device may write guest memory */

/* What a DMA does, named by the permission it needs. */
typedef enum DmaDirection {
    DMA_DEVICE_READS = TCE_READ,    /* guest memory to the device */
    DMA_DEVICE_WRITES = TCE_WRITE,  /* the device to guest memory */
    DMA_BOTH = TCE_READ | TCE_WRITE,
} DmaDirection;

SpaprTceRegistry *spapr_tce_registry_new(void);
void spapr_tce_registry_free(SpaprTceRegistry *reg);
SpaprTceTable *spapr_tce_find_by_liobn(SpaprTceRegistry *reg, uint64_t liobn);

/* A zeroed table of @window / 4 KiB entries at bus offset 0. */
SpaprTceTable *spapr_tce_table_new(SpaprTceRegistry *reg, uint32_t liobn,
                                   uint64_t window, GuestRam *ram,
                                   GError **errp);
void spapr_tce_table_free(SpaprTceTable *tcet);
void spapr_tce_table_reset(SpaprTceTable *tcet);
uint32_t spapr_tce_table_liobn(const SpaprTceTable *tcet);
uint32_t spapr_tce_table_entries(const SpaprTceTable *tcet);

/* Entry access by I/O address; false when @ioba is outside the window. */
bool spapr_tce_put(SpaprTceTable *tcet, uint64_t ioba, uint64_t tce);
bool spapr_tce_get(const SpaprTceTable *tcet, uint64_t ioba, uint64_t *tce);

/* Translate one I/O address for access @dir: the real address and how many
 * bytes remain in its I/O page.  False when unmapped, not permitted or not
 * backed by RAM. */
bool spapr_tce_translate(const SpaprTceTable *tcet, uint64_t ioba,
                         DmaDirection dir, uint64_t *gpa, uint64_t *avail);

/* The real address of [ioba, ioba + len) when the whole range is mapped
 * for @dir onto one run of guest RAM (consecutive I/O pages on
 * consecutive real pages), as a buffer lent to the host kernel must be. */
bool spapr_tce_contiguous(const SpaprTceTable *tcet, uint64_t ioba,
                          uint64_t len, DmaDirection dir, uint64_t *gpa);
/* The RAM the table maps into. */
GuestRam *spapr_tce_table_ram(const SpaprTceTable *tcet);

/* Whole-range DMA; each fails cleanly, before touching memory, if any page
 * of the range is not mapped for @dir (reads and writes check first, so a
 * failed write changes nothing). */
bool spapr_tce_dma_valid(const SpaprTceTable *tcet, uint64_t ioba,
                         uint64_t len, DmaDirection dir);
bool spapr_tce_dma_read(const SpaprTceTable *tcet, uint64_t ioba, void *buf,
                        uint64_t len);
bool spapr_tce_dma_write(const SpaprTceTable *tcet, uint64_t ioba,
                         const void *buf, uint64_t len);
/* A record whose first byte the guest polls: bytes 1 to @len - 1, then
 * byte 0 with release semantics, so that the guest never sees it half
 * written; one translation when it lies in one I/O page.  @len >= 1.
 * On failure the record may be written without its first byte. */
bool spapr_tce_dma_write_release(const SpaprTceTable *tcet, uint64_t ioba,
                                 const void *buf, uint64_t len);


#endif
