/*
 * TCE tables and the four TCE hcalls.  Translation happens on every access,
 * never cached, because the guest may change or revoke a mapping between
 * two DMAs and the device must honour that.
 */
#include "hw/ppc/spapr_iommu.h"
#include "hw/ppc/spapr.h"
#include "migration/savevm.h"
#include "migration/vmstate.h"
#include "qemu/module.h"
#include "qemu/option.h"
#include "trace/trace-hw_ppc.h"

#include <inttypes.h>
#include <string.h>

#define TCE_PERM_MASK           (TCE_READ | TCE_WRITE)
/* H_PUT_TCE_INDIRECT takes one 4 KiB page of 8-byte entries at most. */
#define TCE_INDIRECT_MAX        (SPAPR_TCE_PAGE_SIZE / sizeof(uint64_t))

struct SpaprTceRegistry {
    GHashTable *by_liobn;
};

struct SpaprTceTable {
    SpaprTceRegistry *registry;
    GuestRam *ram;
    uint32_t liobn;
    uint32_t nb_table;
    uint64_t *table;
    bool def_win;               /* only migrated, see SpaprTceImage */
};

SpaprTceRegistry *spapr_tce_registry_new(void)
{
    SpaprTceRegistry *reg = g_new0(SpaprTceRegistry, 1);
    reg->by_liobn = g_hash_table_new(g_direct_hash, g_direct_equal);
    return reg;
}

void spapr_tce_registry_free(SpaprTceRegistry *reg)
{
    if (reg) {
        g_hash_table_destroy(reg->by_liobn);
        g_free(reg);
    }
}

SpaprTceTable *spapr_tce_find_by_liobn(SpaprTceRegistry *reg, uint64_t liobn)
{
    if (liobn >> 32) {
        return NULL;
    }
    return g_hash_table_lookup(reg->by_liobn, GUINT_TO_POINTER(liobn));
}

/*
 * Migration, as QEMU's "spapr_iommu" (one section per table, instance =
 * LIOBN): the whole table.  The window's offset and page size are fixed
 * here, so a stream with others (subsection spapr_iommu_ex) is refused.
 * Version 3, QEMU 7.2's, adds def_win, which QEMU sets only for a PCI
 * host bridge's default window; it means nothing to a VIO table, but the
 * value loaded is written back so that a table returns as it came.
 */
typedef struct SpaprTceImage {
    uint32_t liobn;
    uint32_t mig_nb_table;
    bool bypass;
    uint64_t *mig_table;
    uint64_t bus_offset;
    uint32_t page_shift;
    bool def_win;
    uint32_t nb_table;          /* this table's size; not migrated */
} SpaprTceImage;

static bool tce_ex_needed(void *opaque)
{
    SpaprTceImage *img = opaque;

    return img->bus_offset != 0 || img->page_shift != SPAPR_TCE_PAGE_SHIFT;
}

static bool tce_ex_post_load(void *opaque, int version_id, GError **errp)
{
    (void)version_id;
    if (tce_ex_needed(opaque)) {
        g_set_error(errp, ILLAN_ERROR, 0, "a window at bus offset 0x%"
                    G_GINT64_MODIFIER "x with %u-bit pages is not supported "
                    "(only offset 0, 4 KiB pages)",
                    ((SpaprTceImage *)opaque)->bus_offset,
                    ((SpaprTceImage *)opaque)->page_shift);
        return false;
    }
    return true;
}

static const VMStateDescription vmstate_spapr_tce_table_ex = {
    .name = "spapr_iommu_ex",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = tce_ex_needed,
    .post_load = tce_ex_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(bus_offset, SpaprTceImage),
        VMSTATE_UINT32(page_shift, SpaprTceImage),
        VMSTATE_END_OF_LIST()
    },
};

static bool tce_size_matches(void *opaque, int version_id)
{
    SpaprTceImage *img = opaque;

    (void)version_id;
    return img->mig_nb_table == img->nb_table;
}

static bool tce_post_load(void *opaque, int version_id, GError **errp)
{
    (void)version_id;
    if (((SpaprTceImage *)opaque)->bypass) {
        g_set_error(errp, ILLAN_ERROR, 0, "bypass mode is not supported");
        return false;
    }
    return true;
}

static const VMStateDescription vmstate_spapr_tce_table = {
    .name = "spapr_iommu",
    .version_id = 3,
    .minimum_version_id = 2,
    .post_load = tce_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(liobn, SpaprTceImage),
        VMSTATE_UINT32_V(mig_nb_table, SpaprTceImage, 2),
        VMSTATE_BOOL(bypass, SpaprTceImage),
        VMSTATE_VALIDATE("mig_nb_table",
                         "must equal this table's entry count",
                         tce_size_matches),
        VMSTATE_VARRAY_UINT32(mig_table, SpaprTceImage, mig_nb_table, 0,
                              vmstate_info_uint64, uint64_t),
        VMSTATE_BOOL_V(def_win, SpaprTceImage, 3),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription *const[]) {
        &vmstate_spapr_tce_table_ex,
        NULL
    },
};

static void tce_capture(void *obj, void *image)
{
    const SpaprTceTable *tcet = obj;
    SpaprTceImage *img = image;

    img->liobn = tcet->liobn;
    img->nb_table = img->mig_nb_table = tcet->nb_table;
    img->page_shift = SPAPR_TCE_PAGE_SHIFT;
    img->def_win = tcet->def_win;
    img->mig_table = g_new(uint64_t, tcet->nb_table);
    memcpy(img->mig_table, tcet->table, tcet->nb_table * sizeof(uint64_t));
}

static void tce_commit(void *obj, const void *image)
{
    SpaprTceTable *tcet = obj;
    const SpaprTceImage *img = image;

    memcpy(tcet->table, img->mig_table, tcet->nb_table * sizeof(uint64_t));
    tcet->def_win = img->def_win;
}

static void tce_release(void *image)
{
    g_free(((SpaprTceImage *)image)->mig_table);
}

static const VMStateImageOps tce_image_ops = {
    .size = sizeof(SpaprTceImage),
    .capture = tce_capture,
    .commit = tce_commit,
    .release = tce_release,
};

SpaprTceTable *spapr_tce_table_new(SpaprTceRegistry *reg, uint32_t liobn,
                                   uint64_t window, GuestRam *ram,
                                   GError **errp)
{
    SpaprTceTable *tcet;

    if (spapr_tce_find_by_liobn(reg, liobn)) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "a TCE table with LIOBN 0x%x already exists", liobn);
        return NULL;
    }
    tcet = g_new0(SpaprTceTable, 1);
    tcet->registry = reg;
    tcet->ram = ram;
    tcet->liobn = liobn;
    tcet->nb_table = window >> SPAPR_TCE_PAGE_SHIFT;
    tcet->table = g_new0(uint64_t, tcet->nb_table);
    /* QEMU's fd is the KVM table's; illan's tables are always its own. */
    trace_spapr_iommu_new_table(liobn, tcet->table, -1);
    g_hash_table_insert(reg->by_liobn, GUINT_TO_POINTER(liobn), tcet);
    vmstate_register("spapr_iommu", liobn, &vmstate_spapr_tce_table,
                     &tce_image_ops, tcet);
    return tcet;
}

void spapr_tce_table_free(SpaprTceTable *tcet)
{
    if (tcet) {
        vmstate_unregister(tcet);
        g_hash_table_remove(tcet->registry->by_liobn,
                            GUINT_TO_POINTER(tcet->liobn));
        g_free(tcet->table);
        g_free(tcet);
    }
}

/* Entries are read by the af-xdp I/O threads while hcalls and resets
 * write them, so every access is one atomic 64-bit load or store: a DMA
 * sees an entry as it was before a change or after it, never half. */
void spapr_tce_table_reset(SpaprTceTable *tcet)
{
    for (uint32_t i = 0; i < tcet->nb_table; i++) {
        __atomic_store_n(&tcet->table[i], 0, __ATOMIC_RELAXED);
    }
}

uint32_t spapr_tce_table_liobn(const SpaprTceTable *tcet)
{
    return tcet->liobn;
}

uint32_t spapr_tce_table_entries(const SpaprTceTable *tcet)
{
    return tcet->nb_table;
}

static bool tce_index(const SpaprTceTable *tcet, uint64_t ioba, uint64_t *idx)
{
    *idx = ioba >> SPAPR_TCE_PAGE_SHIFT;
    return *idx < tcet->nb_table;
}

bool spapr_tce_put(SpaprTceTable *tcet, uint64_t ioba, uint64_t tce)
{
    uint64_t idx;

    if (!tce_index(tcet, ioba, &idx)) {
        return false;
    }
    __atomic_store_n(&tcet->table[idx], tce, __ATOMIC_RELAXED);
    return true;
}

bool spapr_tce_get(const SpaprTceTable *tcet, uint64_t ioba, uint64_t *tce)
{
    uint64_t idx;

    if (!tce_index(tcet, ioba, &idx)) {
        return false;
    }
    *tce = __atomic_load_n(&tcet->table[idx], __ATOMIC_RELAXED);
    return true;
}

/* What entry @tce grants a DMA at @ioba in direction @dir. */
static inline bool tce_grant(const SpaprTceTable *tcet, uint64_t ioba,
                             uint64_t tce, DmaDirection dir, uint64_t *gpa,
                             uint64_t *avail)
{
    uint64_t offset = ioba & ~SPAPR_TCE_PAGE_MASK;

    if ((tce & TCE_PERM_MASK & dir) != (uint64_t)dir) {
        return false;
    }
    *gpa = (tce & SPAPR_TCE_PAGE_MASK) | offset;
    *avail = SPAPR_TCE_PAGE_SIZE - offset;
    return guest_ram_range_ok(tcet->ram, *gpa, *avail);
}

/* The translation with spapr_iommu_xlate on, apart so that the usual one
 * stays a leaf. */
static bool G_GNUC_NO_INLINE translate_traced(const SpaprTceTable *tcet,
                                              uint64_t ioba,
                                              DmaDirection dir,
                                              uint64_t *gpa, uint64_t *avail)
{
    uint64_t idx, tce;

    if (!tce_index(tcet, ioba, &idx)) {
        /* QEMU's answer outside the window: no page, all-ones mask. */
        trace_spapr_iommu_xlate(tcet->liobn, ioba, 0, 0, UINT32_MAX);
        return false;
    }
    tce = __atomic_load_n(&tcet->table[idx], __ATOMIC_RELAXED);
    trace_spapr_iommu_xlate(tcet->liobn, ioba, tce & SPAPR_TCE_PAGE_MASK,
                            tce & TCE_PERM_MASK, ~SPAPR_TCE_PAGE_MASK);
    return tce_grant(tcet, ioba, tce, dir, gpa, avail);
}

/*
 * spapr_iommu_xlate is looked at once per DMA, at the entry points below,
 * and the bodies take the answer as @traced: a call to translate_traced()
 * reachable inside their page loops would make every DMA save and restore
 * registers, events on or off.  With the event on, each entry point goes
 * to an out-of-line twin of its body.  The bodies are forced inline so
 * that the untraced copy is the very code a build without trace events
 * has.
 */
static bool xlate_traced(void)
{
    return G_UNLIKELY(trace_event_get_state_spapr_iommu_xlate());
}

static G_ALWAYS_INLINE inline bool translate(const SpaprTceTable *tcet,
                                             uint64_t ioba, DmaDirection dir,
                                             uint64_t *gpa, uint64_t *avail,
                                             bool traced)
{
    uint64_t idx;

    if (traced) {
        return translate_traced(tcet, ioba, dir, gpa, avail);
    }
    if (!tce_index(tcet, ioba, &idx)) {
        return false;
    }
    return tce_grant(tcet, ioba,
                     __atomic_load_n(&tcet->table[idx], __ATOMIC_RELAXED),
                     dir, gpa, avail);
}

bool spapr_tce_translate(const SpaprTceTable *tcet, uint64_t ioba,
                         DmaDirection dir, uint64_t *gpa, uint64_t *avail)
{
    return translate(tcet, ioba, dir, gpa, avail, xlate_traced());
}

/* The host address of [ioba, ioba + len) when it lies in one I/O page,
 * as most DMAs do (a frame into a buffer, a descriptor, a queue entry):
 * one translation instead of a check pass and a copy pass. */
static G_ALWAYS_INLINE inline void *single_page(const SpaprTceTable *tcet,
                                                uint64_t ioba, uint64_t len,
                                                DmaDirection dir,
                                                uint64_t *gpa, bool traced)
{
    uint64_t avail;

    if (len == 0 ||
        len > SPAPR_TCE_PAGE_SIZE - (ioba & ~SPAPR_TCE_PAGE_MASK) ||
        !translate(tcet, ioba, dir, gpa, &avail, traced)) {
        return NULL;
    }
    return guest_ram_ptr(tcet->ram, *gpa, len);
}

/* Copies between @buf and [ioba, ioba + len) page by page, once
 * dma_valid() has passed the whole range; false if the guest revoked a
 * page in between.  The loop is bounded by the window size, not by
 * anything the guest controls. */
static G_ALWAYS_INLINE inline bool copy_pages(const SpaprTceTable *tcet,
                                              uint64_t ioba, uint8_t *buf,
                                              uint64_t len, DmaDirection dir,
                                              bool traced)
{
    for (uint64_t done = 0, gpa, avail, n; done < len; done += n) {
        if (!translate(tcet, ioba + done, dir, &gpa, &avail, traced)) {
            return false;
        }
        n = MIN(avail, len - done);
        if (dir == DMA_DEVICE_WRITES) {
            memcpy(guest_ram_ptr(tcet->ram, gpa, n), buf + done, n);
            guest_ram_mark_dirty(tcet->ram, gpa, n);
        } else {
            memcpy(buf + done, guest_ram_ptr(tcet->ram, gpa, n), n);
        }
    }
    return true;
}

bool spapr_tce_contiguous(const SpaprTceTable *tcet, uint64_t ioba,
                          uint64_t len, DmaDirection dir, uint64_t *gpa)
{
    uint64_t first, at, avail;

    if (len == 0 || !translate(tcet, ioba, dir, &first, &avail, false)) {
        return false;
    }
    for (uint64_t done = avail; done < len; done += avail) {
        if (!translate(tcet, ioba + done, dir, &at, &avail, false) ||
            at != first + done) {
            return false;
        }
    }
    *gpa = first;
    return true;
}

GuestRam *spapr_tce_table_ram(const SpaprTceTable *tcet)
{
    return tcet->ram;
}

static G_ALWAYS_INLINE inline bool dma_valid(const SpaprTceTable *tcet,
                                             uint64_t ioba, uint64_t len,
                                             DmaDirection dir, bool traced)
{
    uint64_t window = (uint64_t)tcet->nb_table << SPAPR_TCE_PAGE_SHIFT;

    if (ioba > window || len > window - ioba) {
        return false;
    }
    for (uint64_t done = 0, gpa, avail; done < len; done += avail) {
        if (!translate(tcet, ioba + done, dir, &gpa, &avail, traced)) {
            return false;
        }
    }
    return true;
}

static G_GNUC_NO_INLINE bool dma_valid_traced(const SpaprTceTable *tcet,
                                              uint64_t ioba, uint64_t len,
                                              DmaDirection dir)
{
    return dma_valid(tcet, ioba, len, dir, true);
}

bool spapr_tce_dma_valid(const SpaprTceTable *tcet, uint64_t ioba,
                         uint64_t len, DmaDirection dir)
{
    if (xlate_traced()) {
        return dma_valid_traced(tcet, ioba, len, dir);
    }
    return dma_valid(tcet, ioba, len, dir, false);
}

static G_ALWAYS_INLINE inline bool dma_read(const SpaprTceTable *tcet,
                                            uint64_t ioba, void *buf,
                                            uint64_t len, bool traced)
{
    uint64_t gpa;
    void *host = single_page(tcet, ioba, len, DMA_DEVICE_READS, &gpa,
                             traced);

    if (host) {
        memcpy(buf, host, len);
        return true;
    }
    return dma_valid(tcet, ioba, len, DMA_DEVICE_READS, traced) &&
           copy_pages(tcet, ioba, buf, len, DMA_DEVICE_READS, traced);
}

static G_GNUC_NO_INLINE bool dma_read_traced(const SpaprTceTable *tcet,
                                             uint64_t ioba, void *buf,
                                             uint64_t len)
{
    return dma_read(tcet, ioba, buf, len, true);
}

bool spapr_tce_dma_read(const SpaprTceTable *tcet, uint64_t ioba, void *buf,
                        uint64_t len)
{
    if (xlate_traced()) {
        return dma_read_traced(tcet, ioba, buf, len);
    }
    return dma_read(tcet, ioba, buf, len, false);
}

static G_ALWAYS_INLINE inline bool dma_write(const SpaprTceTable *tcet,
                                             uint64_t ioba, const void *buf,
                                             uint64_t len, bool traced)
{
    uint64_t gpa;
    void *host = single_page(tcet, ioba, len, DMA_DEVICE_WRITES, &gpa,
                             traced);

    if (host) {
        memcpy(host, buf, len);
        guest_ram_mark_dirty(tcet->ram, gpa, len);
        return true;
    }
    return dma_valid(tcet, ioba, len, DMA_DEVICE_WRITES, traced) &&
           copy_pages(tcet, ioba, (uint8_t *)buf, len, DMA_DEVICE_WRITES,
                      traced);
}

static G_GNUC_NO_INLINE bool dma_write_traced(const SpaprTceTable *tcet,
                                              uint64_t ioba, const void *buf,
                                              uint64_t len)
{
    return dma_write(tcet, ioba, buf, len, true);
}

bool spapr_tce_dma_write(const SpaprTceTable *tcet, uint64_t ioba,
                         const void *buf, uint64_t len)
{
    if (xlate_traced()) {
        return dma_write_traced(tcet, ioba, buf, len);
    }
    return dma_write(tcet, ioba, buf, len, false);
}

static G_ALWAYS_INLINE inline bool dma_write_release(
    const SpaprTceTable *tcet, uint64_t ioba, const uint8_t *buf,
    uint64_t len, bool traced)
{
    uint64_t gpa;
    uint8_t *host = single_page(tcet, ioba, len, DMA_DEVICE_WRITES, &gpa,
                                traced);

    if (!host) {
        /* Across pages: the first byte's page is looked up after the
         * rest is written, so a revoke in between refuses it. */
        if (!dma_write(tcet, ioba + 1, buf + 1, len - 1, traced)) {
            return false;
        }
        host = single_page(tcet, ioba, 1, DMA_DEVICE_WRITES, &gpa, traced);
        if (!host) {
            return false;
        }
        len = 1;
    } else {
        memcpy(host + 1, buf + 1, len - 1);
    }
    __atomic_store_n(host, buf[0], __ATOMIC_RELEASE);
    guest_ram_mark_dirty(tcet->ram, gpa, len);
    return true;
}

static G_GNUC_NO_INLINE bool dma_write_release_traced(
    const SpaprTceTable *tcet, uint64_t ioba, const uint8_t *buf,
    uint64_t len)
{
    return dma_write_release(tcet, ioba, buf, len, true);
}

bool spapr_tce_dma_write_release(const SpaprTceTable *tcet, uint64_t ioba,
                                 const void *buf, uint64_t len)
{
    g_assert(len > 0);
    if (xlate_traced()) {
        return dma_write_release_traced(tcet, ioba, buf, len);
    }
    return dma_write_release(tcet, ioba, buf, len, false);
}

/* The hcalls.  Argument checks follow PAPR as QEMU applies them, and
 * each traces what QEMU's traces, at the same points. */

static SpaprTceTable *hcall_table(SpaprMachineState *spapr, uint64_t liobn,
                                  const char *hcall)
{
    SpaprTceTable *tcet = spapr_tce_find_by_liobn(spapr_tce_registry(spapr),
                                                  liobn);

    if (!tcet) {
        hcall_guest_error(hcall, "liobn 0x%" PRIx64 " names no TCE table",
                          liobn);
    }
    return tcet;
}

static bool ioba_ok(const SpaprTceTable *tcet, uint64_t ioba,
                    const char *hcall)
{
    uint64_t idx;

    if (!tce_index(tcet, ioba, &idx)) {
        hcall_guest_error(hcall, "ioba 0x%" PRIx64 " is outside the window "
                          "of liobn 0x%" PRIx32 " (0x%" PRIx64 " bytes)",
                          ioba, tcet->liobn,
                          (uint64_t)tcet->nb_table << SPAPR_TCE_PAGE_SHIFT);
        return false;
    }
    return true;
}

/* QEMU refuses a call that puts no entry: it still traces it. */
static bool npages_ok(uint64_t npages, const char *hcall)
{
    if (!npages) {
        hcall_guest_error(hcall, "npages 0: no entry to put");
        return false;
    }
    return true;
}

/* The per-frame TCE hcalls trace from out of line, reading their
 * arguments there, so that with the events off the hcalls keep nothing
 * live for them: a load and a branch. */
static G_GNUC_NO_INLINE void trace_put(const uint64_t *args, uint64_t ioba,
                                       int64_t ret)
{
    trace_spapr_iommu_put(args[0], ioba, args[2], ret);
}

static G_GNUC_NO_INLINE void trace_stuff(const uint64_t *args,
                                         uint64_t ioba, int64_t ret)
{
    trace_spapr_iommu_stuff(args[0], ioba, args[2], args[3], ret);
}

/* As QEMU's: the hcall's ioba, and the index of the last entry put or of
 * the first that failed. */
static G_GNUC_NO_INLINE void trace_indirect(const uint64_t *args,
                                            uint64_t i, uint64_t tce,
                                            int64_t ret)
{
    trace_spapr_iommu_indirect(args[0], args[1], args[2], i ? i - 1 : 0, tce,
                               ret);
}

static int64_t h_put_tce(SpaprMachineState *spapr, uint64_t opcode,
                         uint64_t *args)
{
    SpaprTceTable *tcet = hcall_table(spapr, args[0], __func__);
    uint64_t ioba = args[1];
    int64_t ret = H_PARAMETER;

    (void)opcode;
    if (tcet) {
        ioba &= SPAPR_TCE_PAGE_MASK;
        if (ioba_ok(tcet, ioba, __func__)) {
            spapr_tce_put(tcet, ioba, args[2]);
            ret = H_SUCCESS;
        }
    }
    if (G_UNLIKELY(trace_event_get_state_spapr_iommu_put())) {
        trace_put(args, ioba, ret);
    }
    return ret;
}

static int64_t h_get_tce(SpaprMachineState *spapr, uint64_t opcode,
                         uint64_t *args)
{
    uint64_t liobn = args[0], ioba = args[1], tce = 0;
    SpaprTceTable *tcet = hcall_table(spapr, liobn, __func__);
    int64_t ret = H_PARAMETER;

    (void)opcode;
    if (tcet) {
        ioba &= SPAPR_TCE_PAGE_MASK;
        if (ioba_ok(tcet, ioba, __func__)) {
            spapr_tce_get(tcet, ioba, &tce);
            args[0] = tce;
            ret = H_SUCCESS;
        }
    }
    trace_spapr_iommu_get(liobn, ioba, ret, tce);
    return ret;
}

static int64_t h_stuff_tce(SpaprMachineState *spapr, uint64_t opcode,
                           uint64_t *args)
{
    SpaprTceTable *tcet = hcall_table(spapr, args[0], __func__);
    uint64_t ioba = args[1] & SPAPR_TCE_PAGE_MASK, npages = args[3];
    int64_t ret;

    (void)opcode;
    if (!tcet) {
        return H_PARAMETER;
    }
    if (npages > tcet->nb_table) {
        hcall_guest_error(__func__, "npages %" PRIu64 " is more than the "
                          "%" PRIu32 " entries of liobn 0x%" PRIx32, npages,
                          tcet->nb_table, tcet->liobn);
        return H_PARAMETER;
    }
    ret = npages_ok(npages, __func__) ? H_SUCCESS : H_PARAMETER;
    for (uint64_t i = 0; i < npages; i++, ioba += SPAPR_TCE_PAGE_SIZE) {
        if (!ioba_ok(tcet, ioba, __func__)) {
            ret = H_PARAMETER;
            break;
        }
        spapr_tce_put(tcet, ioba, args[2]);
    }
    /* The ioba where it stopped, as QEMU's. */
    if (G_UNLIKELY(trace_event_get_state_spapr_iommu_stuff())) {
        trace_stuff(args, ioba, ret);
    }
    return ret;
}

static int64_t h_put_tce_indirect(SpaprMachineState *spapr, uint64_t opcode,
                                  uint64_t *args)
{
    SpaprTceTable *tcet = hcall_table(spapr, args[0], __func__);
    uint64_t ioba = args[1] & SPAPR_TCE_PAGE_MASK, list = args[2];
    uint64_t npages = args[3], i, tce = 0;
    int64_t ret;

    (void)opcode;
    if (!tcet) {
        return H_PARAMETER;
    }
    if (npages > TCE_INDIRECT_MAX) {
        hcall_guest_error(__func__, "npages %" PRIu64 " is more than the "
                          "%zu entries of one list page", npages,
                          (size_t)TCE_INDIRECT_MAX);
        return H_PARAMETER;
    }
    if (list & ~SPAPR_TCE_PAGE_MASK) {
        hcall_guest_error(__func__, "tce_list 0x%" PRIx64 " is not 4 KiB "
                          "aligned", list);
        return H_PARAMETER;
    }
    ret = npages_ok(npages, __func__) ? H_SUCCESS : H_PARAMETER;
    for (i = 0; i < npages; i++, ioba += SPAPR_TCE_PAGE_SIZE) {
        if (!guest_ram_ld_be(spapr_ram(spapr), list + i * 8, 8, &tce)) {
            hcall_guest_error(__func__, "tce_list 0x%" PRIx64 " entry %" PRIu64
                              " is outside guest RAM", list, i);
            ret = H_PARAMETER;
            break;
        }
        if (!ioba_ok(tcet, ioba, __func__)) {
            ret = H_PARAMETER;
            break;
        }
        spapr_tce_put(tcet, ioba, tce);
    }
    if (G_UNLIKELY(trace_event_get_state_spapr_iommu_indirect())) {
        trace_indirect(args, i, tce, ret);
    }
    return ret;
}

static void spapr_tce_register(void)
{
    spapr_register_hypercall(H_PUT_TCE, h_put_tce, 0);
    spapr_register_hypercall(H_GET_TCE, h_get_tce, 1);
    spapr_register_hypercall(H_STUFF_TCE, h_stuff_tce, 0);
    spapr_register_hypercall(H_PUT_TCE_INDIRECT, h_put_tce_indirect, 0);
    vmstate_register_part_type("spapr-tce-table", &vmstate_spapr_tce_table);
}
illan_init(spapr_tce_register)
