/*
 * The built-in guest's migration section, "ibmveth-guest": the state of
 * the guest's CPU, as QEMU's stream carries a "cpu" section.  Its driver's
 * bookkeeping, the allocator's cursor and the txonly pattern's position
 * live in host memory, so without this section a migrated machine would
 * have the guest's RAM and device but no guest to run it.
 *
 * The image is captured with the vCPU parked at the top of its loop,
 * where every entry it took from the receive queue has been handled:
 * the frames still in the queue (guest RAM) are the destination's to
 * process.  The destination's guest waits without a driver until the
 * image is committed.
 */
#include "guest/guest-mem.h"
#include "guest/ibmveth-guest.h"
#include "migration/savevm.h"
#include "migration/vmstate.h"
#include "qemu/module.h"
#include "qemu/option.h"

#define SECTION_NAME "ibmveth-guest"

typedef struct GuestImage {
    uint32_t unit;              /* the device driven; must match */
    uint64_t mem_next;          /* the guest allocator's cursor */
    uint32_t tx_position;       /* fwd=txonly: the next frame's size */
    IbmvethState drv;
    /* Not migrated. */
    bool has_driver;            /* source: a driver to save */
    const char *id;             /* destination: for errors */
} GuestImage;

static bool pool_count_ok(void *opaque, int version_id)
{
    (void)version_id;
    return ((IbmvethPoolState *)opaque)->count <= IBMVETH_POOL_COUNT_MAX;
}

/* An array of @_type kept in the image itself, as many elements as the
 * uint32 @_count says (checked before it on the wire). */
#define INLINE_VARRAY(_f, _count, _info, _type) {                        \
    .name = #_f, .info = &(_info), .size = sizeof(_type),               \
    .flags = VMS_VARRAY_UINT32,                                         \
    .num_offset = offsetof(IbmvethPoolState, _count),                   \
    .offset = offsetof(IbmvethPoolState, _f),                           \
}

static const VMStateDescription vmstate_ibmveth_pool = {
    .name = "ibmveth-guest/pool",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(active, IbmvethPoolState),
        VMSTATE_UINT32(size, IbmvethPoolState),
        VMSTATE_UINT32(count, IbmvethPoolState),
        VMSTATE_VALIDATE("count", "must be at most 4096", pool_count_ok),
        VMSTATE_UINT64(base, IbmvethPoolState),
        VMSTATE_UINT64(stride, IbmvethPoolState),
        VMSTATE_UINT32(consumer, IbmvethPoolState),
        VMSTATE_UINT32(producer, IbmvethPoolState),
        VMSTATE_UINT32(available, IbmvethPoolState),
        INLINE_VARRAY(free_map, count, vmstate_info_uint32, uint32_t),
        INLINE_VARRAY(posted, count, vmstate_info_bool, bool),
        VMSTATE_END_OF_LIST()
    },
};

static bool dma_needed(void *opaque)
{
    (void)opaque;
    return true;
}

/* How the driver maps its buffers and how much its rx queue holds, since
 * buffers are mapped one by one by default. */
static const VMStateDescription vmstate_ibmveth_dma = {
    .name = "ibmveth-guest/driver/dma",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = dma_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(dma, IbmvethState),
        VMSTATE_UINT32(rxq_size, IbmvethState),
        VMSTATE_END_OF_LIST()
    },
};

/* A stream without the dma subsection came from a driver that mapped its
 * pools whole and its rx queue to its length. */
static bool driver_pre_load(void *opaque, GError **errp)
{
    IbmvethState *s = opaque;

    (void)errp;
    s->dma = IBMVETH_DMA_POOL;
    s->rxq_size = 0;
    return true;
}

static bool driver_post_load(void *opaque, int version_id, GError **errp)
{
    IbmvethState *s = opaque;

    (void)version_id;
    (void)errp;
    if (!s->rxq_size) {
        s->rxq_size = s->rxq_len;
    }
    return true;
}

static const VMStateDescription vmstate_ibmveth_driver = {
    .name = "ibmveth-guest/driver",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = driver_pre_load,
    .post_load = driver_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(tce_list, IbmvethState),
        VMSTATE_UINT64(buffer_list, IbmvethState),
        VMSTATE_UINT64(filter_list, IbmvethState),
        VMSTATE_UINT64(rxq, IbmvethState),
        VMSTATE_UINT64(tx_buf, IbmvethState),
        VMSTATE_UINT32(rxq_len, IbmvethState),
        VMSTATE_UINT32(rxq_index, IbmvethState),
        VMSTATE_BOOL(rxq_toggle, IbmvethState),
        VMSTATE_UINT32(bds_per_add, IbmvethState),
        VMSTATE_UINT64(mac, IbmvethState),
        VMSTATE_STRUCT_ARRAY(pool, IbmvethState, IBMVETH_NUM_POOLS, 1,
                             vmstate_ibmveth_pool, IbmvethPoolState),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription *const[]) {
        &vmstate_ibmveth_dma,
        NULL
    },
};

static bool guest_needed(void *opaque)
{
    return ((GuestImage *)opaque)->has_driver;
}

/* Everything the driver will trust, checked before anything commits. */
static bool guest_post_load(void *opaque, int version_id, GError **errp)
{
    GuestImage *img = opaque;
    uint64_t limit = guest_mem_limit();

    (void)version_id;
    img->drv.unit = img->unit;
    if (img->mem_next < GUEST_MEM_BASE) {
        g_set_error(errp, ILLAN_ERROR, 0, "guest '%s': the guest allocator "
                    "stands at 0x%" G_GINT64_MODIFIER "x, below 0x%llx where "
                    "it starts", img->id, img->mem_next, GUEST_MEM_BASE);
        return false;
    }
    if (img->mem_next > limit) {
        g_set_error(errp, ILLAN_ERROR, 0, "guest '%s': the guest allocator "
                    "stands at 0x%" G_GINT64_MODIFIER "x, beyond the 0x%"
                    G_GINT64_MODIFIER "x bytes it may use here (start the "
                    "destination with the source's -m)", img->id,
                    img->mem_next, limit);
        return false;
    }
    if (!ibmveth_state_check(&img->drv, GUEST_MEM_BASE, img->mem_next,
                             errp)) {
        g_prefix_error(errp, "guest '%s': driver state: ", img->id);
        return false;
    }
    return true;
}

static const VMStateDescription vmstate_ibmveth_guest = {
    .name = SECTION_NAME,
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = guest_needed,
    .post_load = guest_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_EQUAL(unit, GuestImage),
        VMSTATE_UINT64(mem_next, GuestImage),
        VMSTATE_UINT32(tx_position, GuestImage),
        VMSTATE_STRUCT(drv, GuestImage, 1, vmstate_ibmveth_driver,
                       IbmvethState),
        VMSTATE_END_OF_LIST()
    },
};

/* With the vCPU parked.  On a destination, before a load, only what the
 * stream is compared with: the device's unit. */
static void guest_capture(void *obj, void *image)
{
    IbmvethGuest *g = obj;
    GuestImage *img = image;
    IbmvethDriver *drv = ibmveth_guest_driver(g);

    img->unit = ibmveth_guest_unit(g);
    img->id = ibmveth_guest_id(g);
    if (!drv) {
        return;
    }
    img->has_driver = true;
    img->mem_next = guest_mem_cursor();
    img->tx_position = ibmveth_guest_tx_position(g);
    ibmveth_get_state(drv, &img->drv);
}

static void guest_commit(void *obj, const void *image)
{
    const GuestImage *img = image;

    guest_mem_adopt_cursor(img->mem_next);
    ibmveth_guest_adopt(obj, &img->drv, img->tx_position);
}

/* A stream that loaded without this guest's section. */
static bool guest_absent(void *obj, GError **errp)
{
    IbmvethGuest *g = obj;

    if (ibmveth_guest_driver(g)) {
        return true;
    }
    g_set_error(errp, ILLAN_ERROR, 0, "the stream has no state for guest "
                "'%s' (section '" SECTION_NAME "'): the source ran no "
                "built-in guest on dev=%s; give the destination the "
                "source's -guest options, or none", ibmveth_guest_id(g),
                ibmveth_guest_dev(g));
    return false;
}

static bool pieces_overlap(const IbmvethMemPiece *a,
                           const IbmvethMemPiece *b)
{
    return a->addr < b->addr + b->size && b->addr < a->addr + a->size;
}

/* One allocator serves every guest, and each driver gives its own pieces
 * back at close: a piece two drivers hold would be freed twice. */
static bool guests_disjoint(const GuestImage *a, const GuestImage *b,
                            GError **errp)
{
    IbmvethMemPiece pa[IBMVETH_MAX_MEM_PIECES], pb[IBMVETH_MAX_MEM_PIECES];
    unsigned na = ibmveth_state_pieces(&a->drv, pa);
    unsigned nb = ibmveth_state_pieces(&b->drv, pb);

    for (unsigned i = 0; i < na; i++) {
        for (unsigned j = 0; j < nb; j++) {
            if (pieces_overlap(&pa[i], &pb[j])) {
                g_set_error(errp, ILLAN_ERROR, 0, "section '" SECTION_NAME
                            "': a piece of guest '%s' at 0x%"
                            G_GINT64_MODIFIER "x overlaps one of guest '%s' "
                            "at 0x%" G_GINT64_MODIFIER "x", a->id,
                            pa[i].addr, b->id, pb[j].addr);
                return false;
            }
        }
    }
    return true;
}

static bool guests_check_together(void *const *images, unsigned n,
                                  GError **errp)
{
    for (unsigned i = 0; i < n; i++) {
        for (unsigned j = i + 1; j < n; j++) {
            if (!guests_disjoint(images[i], images[j], errp)) {
                return false;
            }
        }
    }
    return true;
}

/* The section carries an open driver's state and nothing of a down
 * interface (its list, its pools to come). */
static bool guest_may_save(void *obj, GError **errp)
{
    IbmvethGuest *g = obj;

    if (!ibmveth_guest_link_up(g)) {
        g_set_error(errp, ILLAN_ERROR, 0, "guest '%s' is down: bring it up "
                    "(x-guest-set-link) before migrating",
                    ibmveth_guest_id(g));
        return false;
    }
    return true;
}

static const VMStateImageOps guest_image_ops = {
    .size = sizeof(GuestImage),
    .capture = guest_capture,
    .commit = guest_commit,
    .absent = guest_absent,
    .check_together = guests_check_together,
    .may_save = guest_may_save,
};

void ibmveth_guest_vmstate_register(IbmvethGuest *g, uint32_t instance)
{
    vmstate_register(SECTION_NAME, instance, &vmstate_ibmveth_guest,
                     &guest_image_ops, g);
}

void ibmveth_guest_vmstate_unregister(IbmvethGuest *g)
{
    vmstate_unregister(g);
}

static void register_type(void)
{
    vmstate_register_type(SECTION_NAME, &vmstate_ibmveth_guest);
}
illan_init(register_type);
