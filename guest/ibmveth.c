/*
 * A model of Linux's ibmveth driver (see guest/ibmveth.h).  It follows the
 * driver's order of hcalls and its bookkeeping, so whoever runs it drives
 * the device the way a real guest does.
 */
#include "guest/ibmveth.h"

#include <stdlib.h>
#include <string.h>

#include "hw/ppc/hcall.h"

#define H_LONG_BUSY_ORDER_1_MSEC    9900
#define H_LONG_BUSY_ORDER_100_SEC   9905

#define VIO_IRQ_DISABLE             0
#define VIO_IRQ_ENABLE              1

#define PAGE_SIZE                   4096ULL
#define DMA_WINDOW_SIZE             0x10000000ULL
#define TCE_READ                    1ULL
#define TCE_WRITE                   2ULL
#define TCE_RW                      (TCE_READ | TCE_WRITE)
/* One 4 KiB list page holds 512 TCEs, H_PUT_TCE_INDIRECT's maximum;
 * Linux stuffs as many per H_STUFF_TCE. */
#define TCE_LIST_ENTRIES            (PAGE_SIZE / sizeof(uint64_t))

/* skb data starts on a cache line (128 bytes on POWER). */
#define POOL_BUF_ALIGN              128

/* Linux 6.1's netdev_alloc_skb() on ppc64le (net/core/skbuff.c): the
 * data starts NET_SKB_PAD into the head, which ends with the aligned
 * skb_shared_info; kernel pages are 64 KiB, and so are the page
 * fragment cache's (PAGE_FRAG_CACHE_MAX_SIZE, 32 KiB rounded up to a
 * page). */
#define NET_SKB_PAD                 128
#define SKB_SHINFO_ALIGNED          384
#define SKB_WITH_OVERHEAD(x)        ((x) - SKB_SHINFO_ALIGNED)
#define KERNEL_PAGE_SIZE            65536
#define PAGE_FRAG_CACHE_SIZE        65536

/* Linux loops without bound; a broken device must not hang the guest. */
#define FREE_BUSY_TRIES             1024
#define SEND_BUSY_RETRIES           1024

#define IBMVETH_ERROR (g_quark_from_static_string("ibmveth-error"))

static const uint32_t linux_pool_size[IBMVETH_NUM_POOLS] = {
    512, 2048, 16384, 32768, 65536,
};
static const uint32_t linux_pool_count[IBMVETH_NUM_POOLS] = {
    256, 512, 256, 256, 256,
};
static const bool linux_pool_active[IBMVETH_NUM_POOLS] = {
    true, true, false, false, true,
};

/*
 * Where a pool's buffers lie.  Slots come in groups of per_group, one
 * group every stride bytes of guest memory from the pool's base: a
 * fragment cache page carved from its top down in fragments of frag
 * bytes, data NET_SKB_PAD into each; or one buffer, data at data_offset.
 */
typedef struct PoolLayout {
    uint64_t stride;
    uint32_t per_group;
    uint32_t frag;              /* 0: one buffer per group */
    uint32_t data_offset;
} PoolLayout;

typedef struct IbmvethPool {
    unsigned index;
    bool active;
    uint32_t size, count, threshold;
    uint64_t base;
    PoolLayout layout;
    /* dma PER_BUFFER: slot i's own I/O range starts at ioba + i * io_pages
     * TCE pages; 0 with dma POOL, whose pools are identity-mapped. */
    uint64_t ioba;
    uint32_t io_pages;
    /* Linux's free_map: a ring of free slots, taken at @consumer and
     * returned at @producer, so slots are reused in the order freed. */
    uint32_t *free_map;
    uint32_t consumer, producer;
    uint32_t available;         /* posted and not yet consumed */
    bool *posted;               /* per slot, to catch bogus handles */
} IbmvethPool;

struct IbmvethDriver {
    IbmvethBus bus;
    IbmvethDma dma;
    uint32_t unit;
    uint64_t mac;               /* the interface's address (dev_addr) */
    uint64_t tce_list;          /* scratch page for H_PUT_TCE_INDIRECT */
    uint64_t buffer_list, filter_list, rxq, tx_buf;
    uint32_t rxq_len;
    uint32_t rxq_size;          /* rxq_len in whole kernel pages */
    uint32_t rxq_index;
    bool rxq_toggle;
    unsigned bds_per_add;
    bool large_send;
    uint64_t add_failures;
    IbmvethPool pool[IBMVETH_NUM_POOLS];
    /* Everything identity-mapped lies below this: the pools' I/O ranges
     * take the window above it. */
    uint64_t io_floor;
};

void ibmveth_conf_linux_defaults(IbmvethConf *conf, uint32_t unit)
{
    *conf = (IbmvethConf) {
        .unit = unit,
        .mac = 0x525400123456ULL,
        .npools = IBMVETH_NUM_POOLS,
        .page_size = 65536,
    };
    memcpy(conf->pool_size, linux_pool_size, sizeof(linux_pool_size));
    memcpy(conf->pool_count, linux_pool_count, sizeof(linux_pool_count));
    memcpy(conf->pool_active, linux_pool_active, sizeof(linux_pool_active));
}

bool ibmveth_conf_check(const IbmvethConf *conf, GError **errp)
{
    if (conf->npools > IBMVETH_NUM_POOLS) {
        g_set_error(errp, IBMVETH_ERROR, 0, "%u pools: ibmveth has %d",
                    conf->npools, IBMVETH_NUM_POOLS);
        return false;
    }
    for (unsigned i = 0; i < conf->npools; i++) {
        uint32_t size = conf->pool_size[i], count = conf->pool_count[i];

        if (count < 1 || count > IBMVETH_POOL_COUNT_MAX ||
            size < IBMVETH_POOL_SIZE_MIN || size > IBMVETH_POOL_SIZE_MAX) {
            g_set_error(errp, IBMVETH_ERROR, 0, "pool %u: size %u count %u "
                        "is not a pool Linux accepts (count 1..%d, size "
                        "%d..%d)", i, size, count, IBMVETH_POOL_COUNT_MAX,
                        IBMVETH_POOL_SIZE_MIN, IBMVETH_POOL_SIZE_MAX);
            return false;
        }
    }
    return true;
}

static uint64_t align_up(uint64_t x, uint64_t align)
{
    return (x + align - 1) & ~(align - 1);
}

static bool hcall_is_busy(int64_t rc)
{
    return rc == H_BUSY || (rc >= H_LONG_BUSY_ORDER_1_MSEC &&
                            rc <= H_LONG_BUSY_ORDER_100_SEC);
}

static int64_t hcall(IbmvethDriver *v, uint64_t opcode, unsigned nargs,
                     uint64_t *args, unsigned nout)
{
    return v->bus.hcall(v->bus.opaque, opcode, nargs, args, nout);
}

/* An hcall whose arguments are all inputs. */
#define HCALL_IN(v, opcode, ...)                                          \
    hcall((v), (opcode),                                                  \
          sizeof((uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t),         \
          (uint64_t[]){ __VA_ARGS__ }, 0)

/* ---- DMA mapping ---- */

static bool tce_failed(const char *hcall_name, uint64_t page, int64_t rc,
                       GError **errp)
{
    g_set_error(errp, IBMVETH_ERROR, 0, "%s at 0x%" G_GINT64_MODIFIER "x: rc %"
                G_GINT64_FORMAT, hcall_name, page, rc);
    return false;
}

/* How many 4 KiB TCE pages [addr, addr + len) touches. */
static uint64_t tce_pages(uint64_t addr, uint64_t len)
{
    return (align_up(addr + len, PAGE_SIZE) - (addr & ~(PAGE_SIZE - 1))) /
           PAGE_SIZE;
}

/*
 * Maps the guest pages of [gpa, gpa + len) at the I/O address @ioba,
 * which has the same offset in its page, as Linux's pseries IOMMU does
 * with "hcall-multi-tce": one page with H_PUT_TCE, more with one
 * H_PUT_TCE_INDIRECT per 512 pages.
 */
static bool map_range(IbmvethDriver *v, uint64_t ioba, uint64_t gpa,
                      uint64_t len, uint64_t perm, GError **errp)
{
    uint64_t io_first = ioba & ~(PAGE_SIZE - 1);
    uint64_t first = gpa & ~(PAGE_SIZE - 1);
    uint64_t pages = tce_pages(gpa, len);
    uint64_t list[TCE_LIST_ENTRIES];
    int64_t rc;

    if (pages == 1) {
        rc = HCALL_IN(v, H_PUT_TCE, v->unit, io_first, first | perm);
        return rc == H_SUCCESS || tce_failed("H_PUT_TCE", io_first, rc, errp);
    }
    for (uint64_t done = 0; done < pages; done += TCE_LIST_ENTRIES) {
        uint64_t n = MIN(TCE_LIST_ENTRIES, pages - done);
        uint64_t page = io_first + done * PAGE_SIZE;

        for (uint64_t i = 0; i < n; i++) {
            list[i] = GUINT64_TO_BE((first + (done + i) * PAGE_SIZE) | perm);
        }
        v->bus.write(v->bus.opaque, v->tce_list, list, n * sizeof(list[0]));
        rc = HCALL_IN(v, H_PUT_TCE_INDIRECT, v->unit, page, v->tce_list, n);
        if (rc != H_SUCCESS) {
            return tce_failed("H_PUT_TCE_INDIRECT", page, rc, errp);
        }
    }
    return true;
}

static bool map_identity(IbmvethDriver *v, uint64_t gpa, uint64_t len,
                         uint64_t perm, GError **errp)
{
    return map_range(v, gpa, gpa, len, perm, errp);
}

/* Unmaps the pages of [ioba, ioba + len): one H_STUFF_TCE per 512
 * pages, even for one.  Linux only logs a failure. */
static void unmap(IbmvethDriver *v, uint64_t ioba, uint64_t len)
{
    uint64_t first = ioba & ~(PAGE_SIZE - 1);
    uint64_t end = align_up(ioba + len, PAGE_SIZE);

    for (uint64_t page = first; page < end;
         page += TCE_LIST_ENTRIES * PAGE_SIZE) {
        uint64_t n = MIN(TCE_LIST_ENTRIES, (end - page) / PAGE_SIZE);

        HCALL_IN(v, H_STUFF_TCE, v->unit, page, 0, n);
    }
}

/* Guest memory below @limit, at most the DMA window's end, or 0 saying
 * why. */
static uint64_t alloc_dma(IbmvethDriver *v, uint64_t size, uint64_t limit,
                          GError **errp)
{
    uint64_t addr = v->bus.alloc(v->bus.opaque, size, PAGE_SIZE);

    /* A block the device could not reach goes back, or it would be
     * lost to every later open. */
    if (addr && addr + size > limit) {
        if (v->bus.free) {
            v->bus.free(v->bus.opaque, addr, size);
        }
        addr = 0;
    }
    if (!addr) {
        g_set_error(errp, IBMVETH_ERROR, 0, "no guest memory for %"
                    G_GUINT64_FORMAT " bytes below 0x%" G_GINT64_MODIFIER
                    "x in the 256 MiB DMA window (raise -m or shrink the "
                    "pools)", size, limit);
        return 0;
    }
    return addr;
}

static bool zero_and_map(IbmvethDriver *v, uint64_t addr, uint64_t size,
                         uint64_t perm, GError **errp)
{
    v->bus.fill(v->bus.opaque, addr, 0, size);
    return map_identity(v, addr, size, perm, errp);
}

/* ---- Pools ---- */

static void pool_init(IbmvethPool *p, unsigned index,
                      const IbmvethConf *conf)
{
    p->index = index;
    if (conf->npools == 0) {
        p->size = linux_pool_size[index];
        p->count = linux_pool_count[index];
        p->active = linux_pool_active[index];
    } else if (index < conf->npools) {
        p->size = conf->pool_size[index];
        p->count = conf->pool_count[index];
        p->active = conf->pool_active[index];
    }
    p->threshold = p->count * 7 / 8;
}

static void pool_init_free_map(IbmvethPool *p)
{
    p->free_map = g_new(uint32_t, p->count);
    for (uint32_t slot = 0; slot < p->count; slot++) {
        p->free_map[slot] = slot;
    }
    p->posted = g_new0(bool, p->count);
}

/* kmalloc's size classes on POWER (none under a cache line, no 96 or
 * 192) and the page allocator's orders above them: powers of two. */
static uint64_t kmalloc_object_size(uint64_t n)
{
    uint64_t size = POOL_BUF_ALIGN;

    while (size < n) {
        size <<= 1;
    }
    return size;
}

/*
 * Where a pool's buffers lie.  dma POOL packs them a cache line apart.
 * Mapped one by one, they lie where Linux 6.1's netdev_alloc_skb() puts
 * them, since that decides how many TCEs each takes: a head between
 * SKB_WITH_OVERHEAD(1024) and SKB_WITH_OVERHEAD(PAGE_SIZE) bytes is a
 * fragment of a 64 KiB page, carved from the top down; any other is a
 * kmalloc object, a power of two aligned to its size.  An object of a
 * TCE page or more is put only a TCE page apart from the next: its data
 * is still NET_SKB_PAD into a TCE page, and the guest memory is spared.
 */
static PoolLayout pool_layout(IbmvethDma dma, uint32_t size)
{
    uint64_t len = (uint64_t)size + NET_SKB_PAD;
    uint64_t head = align_up(len, POOL_BUF_ALIGN) + SKB_SHINFO_ALIGNED;
    uint64_t object = kmalloc_object_size(head);

    if (dma == IBMVETH_DMA_POOL) {
        return (PoolLayout){ .stride = align_up(size, POOL_BUF_ALIGN),
                             .per_group = 1 };
    }
    if (len > SKB_WITH_OVERHEAD(1024) &&
        len <= SKB_WITH_OVERHEAD(KERNEL_PAGE_SIZE)) {
        return (PoolLayout){ .stride = PAGE_FRAG_CACHE_SIZE,
                             .per_group = PAGE_FRAG_CACHE_SIZE / head,
                             .frag = head };
    }
    return (PoolLayout){
        .stride = object < PAGE_SIZE ? object : align_up(len, PAGE_SIZE),
        .per_group = 1, .data_offset = NET_SKB_PAD,
    };
}

static uint64_t layout_bytes(const PoolLayout *l, uint32_t count)
{
    return (count + l->per_group - 1) / l->per_group * l->stride;
}

/* Where the data of @slot lies from the start of its pool. */
static uint64_t layout_offset(const PoolLayout *l, uint32_t slot)
{
    uint32_t group, k;

    if (!l->frag) {
        return slot * l->stride + l->data_offset;
    }
    group = slot / l->per_group;
    k = slot % l->per_group;
    return (uint64_t)group * l->stride + l->stride -
           (uint64_t)(k + 1) * l->frag + NET_SKB_PAD;
}

/* The TCE pages of the I/O range each slot owns: enough for the slot
 * whose buffer touches the most. */
static uint32_t layout_io_pages(const PoolLayout *l, uint32_t size)
{
    uint64_t pages = 0;

    for (uint32_t k = 0; k < l->per_group; k++) {
        pages = MAX(pages, tce_pages(layout_offset(l, k), size));
    }
    return pages;
}

/*
 * dma PER_BUFFER: the I/O addresses the pools' slots own, from the top
 * of the DMA window down, pool 0's highest, each slot io_pages TCE pages
 * (a Linux guest's IOMMU gives each mapping TCEs of its own too).  They
 * follow from the pools' sizes and counts alone.  Sets each pool's
 * layout and I/O range, and io_floor, the lowest, below which everything
 * identity-mapped lies; false when they do not fit the window.
 */
static bool place_pools(IbmvethDriver *v)
{
    v->io_floor = DMA_WINDOW_SIZE;
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        IbmvethPool *p = &v->pool[i];
        uint64_t bytes;

        p->layout = pool_layout(v->dma, p->size);
        p->io_pages = layout_io_pages(&p->layout, p->size);
        p->ioba = 0;
        if (!p->active || v->dma == IBMVETH_DMA_POOL) {
            continue;
        }
        bytes = (uint64_t)p->count * p->io_pages * PAGE_SIZE;
        if (bytes >= v->io_floor) {
            v->io_floor = 0;
            return false;
        }
        v->io_floor -= bytes;
        p->ioba = v->io_floor;
    }
    return true;
}

static uint64_t pool_bytes(const IbmvethPool *p)
{
    return layout_bytes(&p->layout, p->count);
}

static uint64_t pool_buf_addr(const IbmvethPool *p, uint32_t slot)
{
    return p->base + layout_offset(&p->layout, slot);
}

/* The I/O address the device is given for @slot's buffer. */
static uint64_t pool_buf_ioba(const IbmvethPool *p, uint32_t slot)
{
    uint64_t addr = pool_buf_addr(p, slot);

    if (!p->ioba) {
        return addr;
    }
    return p->ioba + (uint64_t)slot * p->io_pages * PAGE_SIZE +
           (addr & (PAGE_SIZE - 1));
}

/* Given host records only after a successful register, as Linux
 * allocates its pools (and, with dma POOL, mapped whole); the guest
 * memory was set aside before. */
static bool pool_map(IbmvethDriver *v, IbmvethPool *p, GError **errp)
{
    if (v->dma == IBMVETH_DMA_POOL &&
        !map_identity(v, p->base, pool_bytes(p), TCE_RW, errp)) {
        return false;
    }
    pool_init_free_map(p);
    return true;
}

/* ibmveth_free_buffer_pool: every buffer still posted is unmapped. */
static void pool_unmap(IbmvethDriver *v, const IbmvethPool *p)
{
    if (v->dma == IBMVETH_DMA_POOL) {
        unmap(v, p->base, pool_bytes(p));
        return;
    }
    for (uint32_t slot = 0; slot < p->count; slot++) {
        if (p->posted[slot]) {
            unmap(v, pool_buf_ioba(p, slot), p->size);
        }
    }
}

static void pool_free(IbmvethPool *p)
{
    g_free(p->free_map);
    g_free(p->posted);
}

/* @i + @n (both below @count) around a ring of @count: a compare, where
 * a modulo's division was a quarter of the replenish's time. */
static uint32_t ring_add(uint32_t i, uint32_t n, uint32_t count)
{
    return i + n >= count ? i + n - count : i + n;
}

/* The @nth free slot from the consumer end, without taking it. */
static uint32_t pool_peek_free(const IbmvethPool *p, uint32_t nth)
{
    return p->free_map[ring_add(p->consumer, nth, p->count)];
}

static void pool_take_free(IbmvethPool *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        p->posted[p->free_map[p->consumer]] = true;
        p->consumer = ring_add(p->consumer, 1, p->count);
    }
    p->available += n;
}

static void pool_return(IbmvethPool *p, uint32_t slot)
{
    p->posted[slot] = false;
    p->free_map[p->producer] = slot;
    p->producer = ring_add(p->producer, 1, p->count);
    p->available--;
}

/* ---- Replenish ---- */

/* Writes the correlator into the buffer (the device hands its first 8
 * bytes back as the rx handle) and returns the buffer's BD. */
static uint64_t prepare_buffer(IbmvethDriver *v, const IbmvethPool *p,
                               uint32_t slot)
{
    uint64_t addr = pool_buf_addr(p, slot);
    uint64_t correlator = GUINT64_TO_BE((uint64_t)p->index << 32 | slot);

    v->bus.write(v->bus.opaque, addr, &correlator, sizeof(correlator));
    return ibmveth_bd(p->size, pool_buf_ioba(p, slot));
}

/* dma PER_BUFFER: the next @n free buffers of @p unmapped again. */
static void unmap_buffers(IbmvethDriver *v, const IbmvethPool *p,
                          unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        unmap(v, pool_buf_ioba(p, pool_peek_free(p, i)), p->size);
    }
}

/* dma PER_BUFFER: the next @n free buffers of @p mapped for the device
 * to write, or none. */
static bool map_buffers(IbmvethDriver *v, const IbmvethPool *p, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        uint32_t slot = pool_peek_free(p, i);

        if (!map_range(v, pool_buf_ioba(p, slot), pool_buf_addr(p, slot),
                       p->size, TCE_RW, NULL)) {
            unmap_buffers(v, p, i);
            return false;
        }
    }
    return true;
}

static int64_t add_buffers(IbmvethDriver *v, const uint64_t *bds,
                           unsigned n)
{
    uint64_t args[1 + IBMVETH_MAX_BDS_PER_ADD] = { v->unit };

    if (n == 1) {
        return HCALL_IN(v, H_ADD_LOGICAL_LAN_BUFFER, v->unit, bds[0]);
    }
    memcpy(&args[1], bds, n * sizeof(bds[0]));
    return hcall(v, H_ADD_LOGICAL_LAN_BUFFERS, G_N_ELEMENTS(args), args, 0);
}

static unsigned replenish_pool(IbmvethDriver *v, IbmvethPool *p)
{
    unsigned added = 0;

    while (p->available < p->count) {
        unsigned n = MIN(p->count - p->available, v->bds_per_add);
        uint64_t bds[IBMVETH_MAX_BDS_PER_ADD];
        int64_t rc;

        for (unsigned i = 0; i < n; i++) {
            bds[i] = prepare_buffer(v, p, pool_peek_free(p, i));
        }
        if (v->dma == IBMVETH_DMA_PER_BUFFER && !map_buffers(v, p, n)) {
            v->add_failures += n;
            break;
        }
        rc = add_buffers(v, bds, n);
        if (rc != H_SUCCESS) {
            if (v->dma == IBMVETH_DMA_PER_BUFFER) {
                unmap_buffers(v, p, n);
            }
            v->add_failures += n;
            /* Firmware without the bulk hcall (e.g. after migration). */
            if (v->bds_per_add > 1 && rc == H_FUNCTION) {
                v->bds_per_add = 1;
            }
            break;
        }
        pool_take_free(p, n);
        added += n;
    }
    return added;
}

unsigned ibmveth_replenish(IbmvethDriver *v)
{
    unsigned added = 0;

    for (int i = IBMVETH_NUM_POOLS - 1; i >= 0; i--) {
        IbmvethPool *p = &v->pool[i];

        if (p->active && p->available < p->threshold) {
            added += replenish_pool(v, p);
        }
    }
    return added;
}

/* ---- Open and close ---- */

static uint64_t read_attributes(IbmvethDriver *v, int64_t *rc)
{
    uint64_t args[] = { v->unit, 0, 0 };

    *rc = hcall(v, H_ILLAN_ATTRIBUTES, G_N_ELEMENTS(args), args, 1);
    return *rc == H_SUCCESS ? args[0] : 0;
}

/* H_ILLAN_ATTRIBUTES(reset @clr, set @set); a refusal is undone with
 * the masks swapped, as ibmveth_set_csum_offload and ibmveth_set_tso
 * do.  Returns the change's rc. */
static int64_t change_attributes(IbmvethDriver *v, uint64_t clr,
                                 uint64_t set)
{
    int64_t rc = HCALL_IN(v, H_ILLAN_ATTRIBUTES, v->unit, clr, set);

    if (rc != H_SUCCESS) {
        HCALL_IN(v, H_ILLAN_ATTRIBUTES, v->unit, set, clr);
    }
    return rc;
}

bool ibmveth_set_csum_offload(const IbmvethBus *bus, IbmvethConf *conf,
                              bool on, GError **errp)
{
    IbmvethDriver d = { .bus = *bus, .unit = conf->unit };
    uint64_t v4 = IBMVETH_ILLAN_IPV4_TCP_CSUM, v6 = IBMVETH_ILLAN_IPV6_TCP_CSUM;
    int64_t rc, rc4, rc6;
    uint64_t attrs = read_attributes(&d, &rc);

    if (rc != H_SUCCESS) {
        g_set_error(errp, IBMVETH_ERROR, 0, "the device refused "
                    "rx-checksumming (H_ILLAN_ATTRIBUTES rc %" G_GINT64_FORMAT
                    "); Linux's ibmveth returns EIO", rc);
        return false;
    }
    if (!(attrs & IBMVETH_ILLAN_PADDED_PKT_CSUM)) {
        g_set_error(errp, IBMVETH_ERROR, 0, "the device reports no "
                    "PADDED_PKT_CSUM, so rx-checksumming cannot change; "
                    "Linux's ibmveth returns EIO");
        return false;
    }
    rc4 = change_attributes(&d, on ? 0 : v4, on ? v4 : 0);
    rc6 = change_attributes(&d, on ? 0 : v6, on ? v6 : 0);
    /* One of the two taken is enough for Linux. */
    if (rc4 != H_SUCCESS && rc6 != H_SUCCESS) {
        g_set_error(errp, IBMVETH_ERROR, 0, "the device refused "
                    "rx-checksumming (H_ILLAN_ATTRIBUTES rc %" G_GINT64_FORMAT
                    " for IPv4, %" G_GINT64_FORMAT " for IPv6); Linux's "
                    "ibmveth returns EIO", rc4, rc6);
        return false;
    }
    conf->rx_csum = on;
    return true;
}

bool ibmveth_set_tso(const IbmvethBus *bus, IbmvethConf *conf, bool on,
                     GError **errp)
{
    IbmvethDriver d = { .bus = *bus, .unit = conf->unit };
    uint64_t bit = IBMVETH_ILLAN_LRG_SR_ENABLED;
    int64_t rc;
    uint64_t attrs = read_attributes(&d, &rc);

    if (rc != H_SUCCESS || !(attrs & IBMVETH_ILLAN_LRG_SND_SUPPORT)) {
        conf->large_send = false;
        if (on) {
            g_set_error(errp, IBMVETH_ERROR, 0, "the device reports no "
                        "LRG_SND_SUPPORT (H_ILLAN_ATTRIBUTES rc %"
                        G_GINT64_FORMAT "), and the old firmware's large "
                        "send Linux's ibmveth falls back to is not modelled",
                        rc);
        }
        return !on;
    }
    rc = change_attributes(&d, on ? 0 : bit, on ? bit : 0);
    if (rc != H_SUCCESS) {
        g_set_error(errp, IBMVETH_ERROR, 0, "the device refused "
                    "tcp-segmentation-offload (H_ILLAN_ATTRIBUTES rc %"
                    G_GINT64_FORMAT "); Linux's ibmveth returns EIO", rc);
        return false;
    }
    conf->large_send = on;
    return true;
}

bool ibmveth_offers_bulk_add(const IbmvethBus *bus, uint32_t unit)
{
    IbmvethDriver probe = { .bus = *bus, .unit = unit };
    int64_t rc;
    uint64_t attrs = read_attributes(&probe, &rc);

    return rc == H_SUCCESS && (attrs & IBMVETH_ILLAN_RX_MULTI_BUFF_SUPPORT);
}

void ibmveth_probe_features(const IbmvethBus *bus, IbmvethConf *conf,
                            bool illan_options, bool want)
{
    IbmvethDriver probe = { .bus = *bus, .unit = conf->unit };
    int64_t rc;
    uint64_t attrs = read_attributes(&probe, &rc);

    conf->bulk_add = conf->bulk_add && rc == H_SUCCESS &&
                     (attrs & IBMVETH_ILLAN_RX_MULTI_BUFF_SUPPORT);
    conf->csum_offered = illan_options;
    conf->tso_offered = rc == H_SUCCESS &&
                        (attrs & IBMVETH_ILLAN_LRG_SND_SUPPORT);
    conf->rx_csum = conf->large_send = false;
    /* ibmveth_set_features with the features probe turned on: each
     * differs from the adapter's initial off. */
    if (conf->csum_offered) {
        ibmveth_set_csum_offload(bus, conf, true, NULL);
    }
    if (conf->tso_offered) {
        ibmveth_set_tso(bus, conf, true, NULL);
    }
    if (want) {
        return;
    }
    /* "ethtool -K rx off tso off" before ifup: ibmveth_set_features
     * again, for the features that are on. */
    if (conf->rx_csum) {
        ibmveth_set_csum_offload(bus, conf, false, NULL);
    }
    if (conf->large_send) {
        ibmveth_set_tso(bus, conf, false, NULL);
    }
}

void ibmveth_read_features(const IbmvethBus *bus, IbmvethConf *conf)
{
    IbmvethDriver probe = { .bus = *bus, .unit = conf->unit };
    int64_t rc;
    uint64_t attrs = read_attributes(&probe, &rc);

    conf->rx_csum = attrs & (IBMVETH_ILLAN_IPV4_TCP_CSUM |
                             IBMVETH_ILLAN_IPV6_TCP_CSUM);
    conf->large_send = attrs & IBMVETH_ILLAN_LRG_SR_ENABLED;
    conf->tso_offered = attrs & IBMVETH_ILLAN_LRG_SND_SUPPORT;
}

static uint32_t rxq_entries(const IbmvethDriver *v)
{
    uint32_t entries = 1;

    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        entries += v->pool[i].count;
    }
    return entries;
}

static int64_t free_lan_while_busy(IbmvethDriver *v)
{
    int64_t rc;
    unsigned tries = 0;

    do {
        rc = HCALL_IN(v, H_FREE_LOGICAL_LAN, v->unit);
    } while (hcall_is_busy(rc) && ++tries < FREE_BUSY_TRIES);
    return rc;
}

static int64_t register_lan(IbmvethDriver *v, uint64_t mac)
{
    uint64_t rxq_bd = ibmveth_bd(v->rxq_len, v->rxq);
    int64_t rc = HCALL_IN(v, H_REGISTER_LOGICAL_LAN, v->unit,
                          v->buffer_list, rxq_bd, v->filter_list, mac);

    /* After a kexec the LAN is still registered: free it, retry once. */
    if (rc != H_SUCCESS) {
        free_lan_while_busy(v);
        rc = HCALL_IN(v, H_REGISTER_LOGICAL_LAN, v->unit,
                      v->buffer_list, rxq_bd, v->filter_list, mac);
    }
    return rc;
}

/* Gives the driver's guest memory back through the bus, if the bus
 * takes it back; @v is left as it is. */
static void give_back_memory(IbmvethDriver *v)
{
    const struct {
        uint64_t addr, size;
    } pieces[] = {
        { v->tce_list, PAGE_SIZE }, { v->buffer_list, PAGE_SIZE },
        { v->filter_list, PAGE_SIZE }, { v->rxq, v->rxq_size },
        { v->tx_buf, IBMVETH_TX_BUF_SIZE },
    };

    if (!v->bus.free) {
        return;
    }
    for (unsigned i = 0; i < G_N_ELEMENTS(pieces); i++) {
        if (pieces[i].addr) {
            v->bus.free(v->bus.opaque, pieces[i].addr, pieces[i].size);
        }
    }
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        if (v->pool[i].active && v->pool[i].base) {
            v->bus.free(v->bus.opaque, v->pool[i].base,
                        pool_bytes(&v->pool[i]));
        }
    }
}

static void free_driver(IbmvethDriver *v)
{
    give_back_memory(v);
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        pool_free(&v->pool[i]);
    }
    g_free(v);
}

/* All the guest memory an open needs, before any hcall, so that running
 * out refuses the open with the device untouched: the pages and queues
 * Linux allocates before it registers, and the active pools' buffers it
 * allocates after. */
static bool alloc_memory(IbmvethDriver *v, GError **errp)
{
    if (!place_pools(v)) {
        g_set_error(errp, IBMVETH_ERROR, 0, "the rx buffers' I/O ranges do "
                    "not fit the 256 MiB DMA window (shrink the pools)");
        return false;
    }
    if (!(v->tce_list = alloc_dma(v, PAGE_SIZE, v->io_floor, errp)) ||
        !(v->buffer_list = alloc_dma(v, PAGE_SIZE, v->io_floor, errp)) ||
        !(v->filter_list = alloc_dma(v, PAGE_SIZE, v->io_floor, errp)) ||
        !(v->rxq = alloc_dma(v, v->rxq_size, v->io_floor, errp)) ||
        !(v->tx_buf = alloc_dma(v, IBMVETH_TX_BUF_SIZE, v->io_floor,
                                errp))) {
        return false;
    }
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        IbmvethPool *p = &v->pool[i];

        if (p->active &&
            !(p->base = alloc_dma(v, pool_bytes(p), p->ioba ?
                                  DMA_WINDOW_SIZE : v->io_floor, errp))) {
            return false;
        }
    }
    return true;
}

/* The structures Linux sets up before it registers, in its order:
 * zeroed and mapped as its coherent memory (whole kernel pages) and
 * pages are, and its tx long-term buffer (ibmveth_allocate_tx_ltb; one,
 * for the model's one tx queue). */
static bool map_queues(IbmvethDriver *v, GError **errp)
{
    return zero_and_map(v, v->rxq, v->rxq_size, TCE_RW, errp) &&
           zero_and_map(v, v->buffer_list, PAGE_SIZE, TCE_RW, errp) &&
           zero_and_map(v, v->filter_list, PAGE_SIZE, TCE_RW, errp) &&
           zero_and_map(v, v->tx_buf, IBMVETH_TX_BUF_SIZE, TCE_READ, errp);
}

/* ibmveth_close's unmaps, in its order; the pools only once they have
 * host records. */
static void unmap_all(IbmvethDriver *v)
{
    unmap(v, v->buffer_list, PAGE_SIZE);
    unmap(v, v->filter_list, PAGE_SIZE);
    unmap(v, v->rxq, v->rxq_size);
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        if (v->pool[i].active && v->pool[i].posted) {
            pool_unmap(v, &v->pool[i]);
        }
    }
    unmap(v, v->tx_buf, IBMVETH_TX_BUF_SIZE);
}

static bool map_pools(IbmvethDriver *v, GError **errp)
{
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        if (v->pool[i].active && !pool_map(v, &v->pool[i], errp)) {
            return false;
        }
    }
    return true;
}

/* A closed driver for @conf: no hcall, no memory yet. */
static IbmvethDriver *driver_new(const IbmvethBus *bus,
                                 const IbmvethConf *conf)
{
    IbmvethDriver *v = g_new0(IbmvethDriver, 1);

    v->bus = *bus;
    v->dma = conf->dma;
    v->unit = conf->unit;
    v->mac = conf->mac;
    v->bds_per_add = conf->bulk_add ? IBMVETH_MAX_BDS_PER_ADD : 1;
    v->large_send = conf->large_send;
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        pool_init(&v->pool[i], i, conf);
    }
    v->rxq_len = rxq_entries(v) * IBMVETH_RXQ_ENTRY_SIZE;
    v->rxq_size = align_up(v->rxq_len, conf->page_size ? conf->page_size
                                                       : PAGE_SIZE);
    v->rxq_toggle = true;
    return v;
}

bool ibmveth_memory_fits(const IbmvethBus *bus, const IbmvethConf *conf,
                         IbmvethDriver *replacing, GError **errp)
{
    IbmvethDriver *v;
    bool fits;

    if (!ibmveth_conf_check(conf, errp)) {
        return false;
    }
    if (replacing) {
        give_back_memory(replacing);
    }
    v = driver_new(bus, conf);
    fits = alloc_memory(v, errp);
    free_driver(v);
    return fits;
}

IbmvethDriver *ibmveth_open(const IbmvethBus *bus, const IbmvethConf *conf,
                            int64_t *rc, GError **errp)
{
    IbmvethDriver *v;
    int64_t reg_rc = H_SUCCESS;

    if (!ibmveth_conf_check(conf, errp)) {
        return NULL;
    }
    v = driver_new(bus, conf);
    if (!alloc_memory(v, errp) || !map_queues(v, errp)) {
        goto fail;
    }
    HCALL_IN(v, H_VIO_SIGNAL, v->unit, VIO_IRQ_DISABLE);
    reg_rc = register_lan(v, conf->mac);
    if (reg_rc != H_SUCCESS) {
        g_set_error(errp, IBMVETH_ERROR, 0, "H_REGISTER_LOGICAL_LAN(0x%x): "
                    "rc %" G_GINT64_FORMAT, v->unit, reg_rc);
        unmap_all(v);
        goto fail;
    }
    if (!map_pools(v, errp)) {
        free_lan_while_busy(v);
        unmap_all(v);
        goto fail;
    }
    if (rc) {
        *rc = reg_rc;
    }
    /* Linux's open calls its interrupt handler once; the NAPI poll it
     * schedules replenishes and then enables the interrupt. */
    ibmveth_set_irq(v, false);
    ibmveth_replenish(v);
    ibmveth_set_irq(v, true);
    return v;

fail:
    if (rc) {
        *rc = reg_rc;
    }
    free_driver(v);
    return NULL;
}

int64_t ibmveth_close(IbmvethDriver *v)
{
    int64_t rc;

    /* Linux ignores this rc: a bad unit shows in H_FREE's. */
    HCALL_IN(v, H_VIO_SIGNAL, v->unit, VIO_IRQ_DISABLE);
    rc = free_lan_while_busy(v);
    unmap_all(v);
    free_driver(v);
    return rc;
}

void ibmveth_set_bus(IbmvethDriver *v, const IbmvethBus *bus)
{
    v->bus = *bus;
}

/* ---- Receive ---- */

static void parse_rxq_entry(const uint8_t *raw, IbmvethRxEntry *entry)
{
    uint16_t offset;
    uint32_t len;
    uint64_t handle;

    memcpy(&offset, raw + 2, sizeof(offset));
    memcpy(&len, raw + 4, sizeof(len));
    memcpy(&handle, raw + 8, sizeof(handle));
    *entry = (IbmvethRxEntry) {
        .control = raw[0],
        .valid = raw[0] & IBMVETH_RXQ_VALID,
        .offset = GUINT16_FROM_BE(offset),
        .len = GUINT32_FROM_BE(len),
        .handle = GUINT64_FROM_BE(handle),
    };
    entry->pool = entry->handle >> 32;
    entry->slot = (uint32_t)entry->handle;
}

/* The pool of a handle that names a posted buffer, else NULL. */
static IbmvethPool *pool_of_handle(IbmvethDriver *v,
                                   const IbmvethRxEntry *e)
{
    IbmvethPool *p;

    if (e->pool >= IBMVETH_NUM_POOLS) {
        return NULL;
    }
    p = &v->pool[e->pool];
    if (!p->active || e->slot >= p->count || !p->posted[e->slot]) {
        return NULL;
    }
    return p;
}

IbmvethRxStatus ibmveth_rx_peek(IbmvethDriver *v, IbmvethRxEntry *e)
{
    uint8_t raw[IBMVETH_RXQ_ENTRY_SIZE];
    IbmvethPool *p;

    uint64_t gpa = v->rxq + v->rxq_index * IBMVETH_RXQ_ENTRY_SIZE;
    uint8_t ctrl;

    /* The device writes the control byte last, with release: read it
     * first, with acquire, and the rest of the entry (and the frame)
     * only if it is this lap's. */
    if (v->bus.read_u8_acquire) {
        ctrl = v->bus.read_u8_acquire(v->bus.opaque, gpa);
    } else {
        v->bus.read(v->bus.opaque, gpa, &ctrl, 1);
    }
    if (!!(ctrl & IBMVETH_RXQ_TOGGLE) != v->rxq_toggle) {
        return IBMVETH_RX_EMPTY;
    }
    v->bus.read(v->bus.opaque, gpa, raw, sizeof(raw));
    raw[0] = ctrl;
    parse_rxq_entry(raw, e);
    e->index = v->rxq_index;
    p = pool_of_handle(v, e);
    if (!p) {
        return IBMVETH_RX_BAD_HANDLE;
    }
    e->buf_size = p->size;
    return IBMVETH_RX_READY;
}

uint32_t ibmveth_rxq_entries(IbmvethDriver *v)
{
    return v->rxq_len / IBMVETH_RXQ_ENTRY_SIZE;
}

uint64_t ibmveth_rx_data_addr(IbmvethDriver *v, const IbmvethRxEntry *e)
{
    return pool_buf_addr(&v->pool[e->pool], e->slot) + e->offset;
}

uint64_t ibmveth_rx_buffer_ioba(IbmvethDriver *v, const IbmvethRxEntry *e)
{
    return pool_buf_ioba(&v->pool[e->pool], e->slot);
}

uint16_t ibmveth_rx_mss(IbmvethDriver *v, const IbmvethRxEntry *e)
{
    uint64_t mss;

    v->bus.read(v->bus.opaque, pool_buf_addr(&v->pool[e->pool], e->slot) + 8,
                &mss, sizeof(mss));
    return (uint16_t)GUINT64_FROM_BE(mss);
}

static uint16_t ld_be16(const uint8_t *p)
{
    return p[0] << 8 | p[1];
}

IbmvethRxLarge ibmveth_rx_large(uint8_t *frame, uint32_t len, uint32_t mtu,
                                bool lrg_pkt, uint16_t lrg_mss)
{
    bool ipv4 = len >= 34 && ld_be16(frame + 12) == 0x0800;
    bool ipv6 = len >= 54 && ld_be16(frame + 12) == 0x86DD;
    IbmvethRxLarge r = {
        .large = len > (uint64_t)mtu + 14 || lrg_pkt ||
                 (ipv4 && ld_be16(frame + 24) == 0xFFFF),
    };
    uint32_t tcp;

    if (!r.large) {
        return r;
    }
    if (ipv4 && frame[23] == 6) {
        tcp = 14 + (frame[14] & 0xF) * 4;
    } else if (ipv6 && frame[20] == 6) {
        tcp = 54;
    } else {
        return r;
    }
    /* Linux would read past the frame here; the model stops. */
    if (tcp + 20 > len) {
        return r;
    }
    if (lrg_pkt) {
        r.gso_size = lrg_mss;
    } else if (tcp > 14) {
        r.gso_size = ld_be16(frame + tcp + 16);
        frame[tcp + 16] = frame[tcp + 17] = 0;
        r.zeroed_at = tcp + 16;
    }
    return r;
}

static void rxq_advance(IbmvethDriver *v)
{
    v->rxq_index++;
    if (v->rxq_index == v->rxq_len / IBMVETH_RXQ_ENTRY_SIZE) {
        v->rxq_index = 0;
        v->rxq_toggle = !v->rxq_toggle;
    }
}

void ibmveth_rx_consume(IbmvethDriver *v, const IbmvethRxEntry *e)
{
    IbmvethPool *p = pool_of_handle(v, e);

    if (p) {
        if (v->dma == IBMVETH_DMA_PER_BUFFER) {
            unmap(v, pool_buf_ioba(p, e->slot), p->size);
        }
        pool_return(p, e->slot);
    }
    rxq_advance(v);
}

int64_t ibmveth_rx_recycle(IbmvethDriver *v, const IbmvethRxEntry *e)
{
    IbmvethPool *p = pool_of_handle(v, e);
    int64_t rc = H_PARAMETER;

    if (p) {
        rc = HCALL_IN(v, H_ADD_LOGICAL_LAN_BUFFER, v->unit,
                      ibmveth_bd(p->size, pool_buf_ioba(p, e->slot)));
    }
    if (rc != H_SUCCESS) {
        ibmveth_rx_consume(v, e);
        return rc;
    }
    rxq_advance(v);
    return rc;
}

/* ---- Transmit ---- */

int64_t ibmveth_send(IbmvethDriver *v, const void *frame, size_t len)
{
    return ibmveth_send_offload(v, frame, len, 0, 0);
}

void ibmveth_set_large_send(IbmvethDriver *v, bool large_send)
{
    v->large_send = large_send;
}

int64_t ibmveth_send_offload(IbmvethDriver *v, const void *frame, size_t len,
                             uint64_t bd_flags, uint64_t mss)
{
    /* Linux passes the MSS in r12 only with large send in force. */
    uint64_t args[9] = { v->unit };
    unsigned nargs = v->large_send ? 9 : 8;
    uint64_t token = 0;
    unsigned retries = 0;
    int64_t rc;

    if (len > IBMVETH_TX_BUF_SIZE) {
        return H_PARAMETER;
    }
    if (len > 0) {
        v->bus.write(v->bus.opaque, v->tx_buf, frame, len);
    }
    /* args[7] is the continue-token the device returned with H_BUSY. */
    do {
        args[0] = v->unit;
        args[1] = ibmveth_bd(len, v->tx_buf) | bd_flags;
        memset(&args[2], 0, 5 * sizeof(args[0]));
        args[7] = token;
        args[8] = mss;
        rc = hcall(v, H_SEND_LOGICAL_LAN, nargs, args, 1);
        token = rc == H_BUSY ? args[0] : 0;
    } while (rc == H_BUSY && retries++ < SEND_BUSY_RETRIES);
    return rc;
}

int64_t ibmveth_send_bds(IbmvethDriver *v, const uint64_t *bds,
                         unsigned nbds)
{
    uint64_t args[2 + IBMVETH_MAX_TX_BDS] = { v->unit };

    if (nbds > IBMVETH_MAX_TX_BDS) {
        return H_PARAMETER;
    }
    memcpy(&args[1], bds, nbds * sizeof(bds[0]));
    return hcall(v, H_SEND_LOGICAL_LAN, G_N_ELEMENTS(args), args, 0);
}

/* ---- Small accessors ---- */

int64_t ibmveth_set_irq(IbmvethDriver *v, bool enable)
{
    return HCALL_IN(v, H_VIO_SIGNAL, v->unit,
                    enable ? VIO_IRQ_ENABLE : VIO_IRQ_DISABLE);
}

uint64_t ibmveth_rx_no_buffer(IbmvethDriver *v)
{
    uint64_t be;

    v->bus.read(v->bus.opaque, v->buffer_list + IBMVETH_RX_NO_BUFFER_OFFSET,
                &be, sizeof(be));
    return GUINT64_FROM_BE(be);
}

uint64_t ibmveth_buffer_list(IbmvethDriver *v)
{
    return v->buffer_list;
}

uint64_t ibmveth_rxq(IbmvethDriver *v)
{
    return v->rxq;
}

uint64_t ibmveth_tx_buffer(IbmvethDriver *v)
{
    return v->tx_buf;
}

unsigned ibmveth_posted(IbmvethDriver *v, unsigned pool)
{
    return pool < IBMVETH_NUM_POOLS ? v->pool[pool].available : 0;
}

IbmvethDma ibmveth_dma(IbmvethDriver *v)
{
    return v->dma;
}

uint32_t ibmveth_pool_size(IbmvethDriver *v, unsigned pool)
{
    return pool < IBMVETH_NUM_POOLS && v->pool[pool].active ?
           v->pool[pool].size : 0;
}

uint64_t ibmveth_add_failures(IbmvethDriver *v)
{
    return v->add_failures;
}

unsigned ibmveth_bds_per_add(IbmvethDriver *v)
{
    return v->bds_per_add;
}

/* ---- Addresses ---- */

uint64_t ibmveth_mac(IbmvethDriver *v)
{
    return v->mac;
}

/* ndo_set_mac_address on a running interface. */
int64_t ibmveth_change_mac(IbmvethDriver *v, uint64_t mac)
{
    int64_t rc = HCALL_IN(v, H_CHANGE_LOGICAL_LAN_MAC, v->unit, mac);

    if (rc == H_SUCCESS) {
        v->mac = mac;
    }
    return rc;
}

/* H_MULTICAST_CTRL flags, as ibmveth names them. */
#define MCAST_ENABLE_RECV       0xA0000ULL
#define MCAST_DISABLE_FILTERING 0x40000ULL
#define MCAST_ENABLE_FILTERING  0x50000ULL
#define MCAST_ADD_FILTER        0x1ULL
#define MCAST_CLEAR_TABLE       0x3ULL

/* ibmveth_set_multicast_list.  The errors are only counted, as Linux
 * only logs them. */
unsigned ibmveth_set_rx_mode(IbmvethDriver *v, bool all, const uint64_t *groups,
                             unsigned ngroups, unsigned table_size)
{
    unsigned failed = 0;

    if (all || ngroups > table_size) {
        return HCALL_IN(v, H_MULTICAST_CTRL, v->unit,
                        MCAST_ENABLE_RECV | MCAST_DISABLE_FILTERING, 0) !=
               H_SUCCESS;
    }
    failed += HCALL_IN(v, H_MULTICAST_CTRL, v->unit, MCAST_ENABLE_RECV |
                       MCAST_DISABLE_FILTERING | MCAST_CLEAR_TABLE, 0) !=
              H_SUCCESS;
    for (unsigned i = 0; i < ngroups; i++) {
        failed += HCALL_IN(v, H_MULTICAST_CTRL, v->unit, MCAST_ADD_FILTER,
                           groups[i]) != H_SUCCESS;
    }
    failed += HCALL_IN(v, H_MULTICAST_CTRL, v->unit, MCAST_ENABLE_FILTERING,
                       0) != H_SUCCESS;
    return failed;
}

/* ---- Migration ---- */

void ibmveth_get_state(IbmvethDriver *v, IbmvethState *s)
{
    *s = (IbmvethState) {
        .unit = v->unit, .tce_list = v->tce_list,
        .buffer_list = v->buffer_list, .filter_list = v->filter_list,
        .rxq = v->rxq, .tx_buf = v->tx_buf, .rxq_len = v->rxq_len,
        .rxq_index = v->rxq_index, .rxq_toggle = v->rxq_toggle,
        .bds_per_add = v->bds_per_add, .mac = v->mac, .dma = v->dma,
        .rxq_size = v->rxq_size,
    };
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        const IbmvethPool *p = &v->pool[i];
        IbmvethPoolState *ps = &s->pool[i];

        ps->active = p->active;
        ps->size = p->size;
        ps->count = p->count;
        if (!p->active) {
            continue;
        }
        ps->base = p->base;
        ps->stride = p->layout.stride;
        ps->consumer = p->consumer;
        ps->producer = p->producer;
        ps->available = p->available;
        memcpy(ps->free_map, p->free_map, p->count * sizeof(p->free_map[0]));
        memcpy(ps->posted, p->posted, p->count * sizeof(p->posted[0]));
    }
}

/* [addr, addr + len) lies in guest memory in [@mem_start, @mem_end). */
static bool range_ok(uint64_t addr, uint64_t len, uint64_t mem_start,
                     uint64_t mem_end)
{
    return addr >= mem_start && len <= mem_end && addr <= mem_end - len;
}

/* The free slots are exactly the slots not posted, each once, in the
 * ring between consumer and producer. */
static bool free_ring_ok(const IbmvethPoolState *p)
{
    uint32_t nfree = p->count - p->available;
    g_autofree bool *seen = g_new0(bool, p->count);
    uint32_t posted = 0;

    if (p->consumer >= p->count || p->producer != (p->consumer + nfree) %
                                                  p->count) {
        return false;
    }
    for (uint32_t slot = 0; slot < p->count; slot++) {
        posted += p->posted[slot];
    }
    if (posted != p->available) {
        return false;
    }
    for (uint32_t i = 0; i < nfree; i++) {
        uint32_t slot = p->free_map[(p->consumer + i) % p->count];

        if (slot >= p->count || p->posted[slot] || seen[slot]) {
            return false;
        }
        seen[slot] = true;
    }
    return true;
}

static uint64_t pool_state_bytes(const IbmvethPoolState *p, IbmvethDma dma)
{
    PoolLayout l = pool_layout(dma, p->size);

    return layout_bytes(&l, p->count);
}

static bool pool_state_check(const IbmvethPoolState *p, unsigned i,
                             IbmvethDma dma, uint64_t mem_start,
                             uint64_t mem_end, GError **errp)
{
    if (p->count > IBMVETH_POOL_COUNT_MAX) {
        g_set_error(errp, IBMVETH_ERROR, 0, "pool %u: count %u is over %d",
                    i, p->count, IBMVETH_POOL_COUNT_MAX);
        return false;
    }
    if (!p->active) {
        return true;
    }
    if (p->count < 1 || p->size < IBMVETH_POOL_SIZE_MIN ||
        p->size > IBMVETH_POOL_SIZE_MAX ||
        p->stride != pool_layout(dma, p->size).stride ||
        !range_ok(p->base, pool_state_bytes(p, dma), mem_start, mem_end)) {
        g_set_error(errp, IBMVETH_ERROR, 0, "pool %u: size %u, count %u, "
                    "%" G_GUINT64_FORMAT " bytes apart at 0x%"
                    G_GINT64_MODIFIER "x is not a pool the driver makes in "
                    "this machine's memory", i, p->size, p->count, p->stride,
                    p->base);
        return false;
    }
    if (p->available > p->count || !free_ring_ok(p)) {
        g_set_error(errp, IBMVETH_ERROR, 0, "pool %u: the free slots "
                    "(consumer %u, producer %u, %u posted) do not match the "
                    "posted buffers", i, p->consumer, p->producer,
                    p->available);
        return false;
    }
    return true;
}

unsigned ibmveth_state_pieces(const IbmvethState *s,
                              IbmvethMemPiece p[IBMVETH_MAX_MEM_PIECES])
{
    unsigned n = 0;

    p[n++] = (IbmvethMemPiece){ s->tce_list, PAGE_SIZE };
    p[n++] = (IbmvethMemPiece){ s->buffer_list, PAGE_SIZE };
    p[n++] = (IbmvethMemPiece){ s->filter_list, PAGE_SIZE };
    p[n++] = (IbmvethMemPiece){ s->rxq, s->rxq_size };
    p[n++] = (IbmvethMemPiece){ s->tx_buf, IBMVETH_TX_BUF_SIZE };
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        if (s->pool[i].active) {
            p[n++] = (IbmvethMemPiece){
                s->pool[i].base, pool_state_bytes(&s->pool[i], s->dma) };
        }
    }
    return n;
}

static int piece_cmp(const void *a, const void *b)
{
    const IbmvethMemPiece *x = a, *y = b;

    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The driver gives each of its pieces back on its own at close: two
 * that overlap would be freed twice. */
static bool pieces_disjoint(const IbmvethState *s, GError **errp)
{
    IbmvethMemPiece p[IBMVETH_MAX_MEM_PIECES];
    unsigned n = ibmveth_state_pieces(s, p);

    qsort(p, n, sizeof(p[0]), piece_cmp);
    for (unsigned i = 1; i < n; i++) {
        if (p[i - 1].addr + p[i - 1].size > p[i].addr) {
            g_set_error(errp, IBMVETH_ERROR, 0, "the driver's pieces at 0x%"
                        G_GINT64_MODIFIER "x and 0x%" G_GINT64_MODIFIER "x "
                        "overlap", p[i - 1].addr, p[i].addr);
            return false;
        }
    }
    return true;
}

/* What places a pool: its index, whether active, its size and count. */
static void pool_shape_from_state(IbmvethPool *p, unsigned index,
                                  const IbmvethPoolState *ps)
{
    p->index = index;
    p->active = ps->active;
    p->size = ps->size;
    p->count = ps->count;
    p->threshold = p->count * 7 / 8;
}

/* dma PER_BUFFER: the pools' I/O ranges fit the window, and lower
 * *@mem_end to where they start, since the queues are identity-mapped
 * below them. */
static bool io_floor_check(const IbmvethState *s, uint64_t *mem_end,
                           GError **errp)
{
    IbmvethDriver placed = { .dma = s->dma };

    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        pool_shape_from_state(&placed.pool[i], i, &s->pool[i]);
    }
    if (!place_pools(&placed)) {
        g_set_error(errp, IBMVETH_ERROR, 0, "the pools' rx buffers do not "
                    "fit the 256 MiB DMA window one I/O range each");
        return false;
    }
    *mem_end = MIN(*mem_end, placed.io_floor);
    return true;
}

/* The rx queue holds one entry per buffer and one more. */
static bool rxq_len_check(uint64_t len, uint64_t index, uint64_t entries,
                          GError **errp)
{
    if (len != entries * IBMVETH_RXQ_ENTRY_SIZE || index >= entries) {
        g_set_error(errp, IBMVETH_ERROR, 0, "rx queue of %" G_GUINT64_FORMAT
                    " bytes at entry %" G_GUINT64_FORMAT ": the pools make "
                    "it %" G_GUINT64_FORMAT " entries", len, index, entries);
        return false;
    }
    return true;
}

/* Whole kernel pages of 4 to 64 KiB. */
static bool rxq_size_check(uint64_t len, uint64_t size, GError **errp)
{
    if (size < len || size % PAGE_SIZE || size > align_up(len, 65536)) {
        g_set_error(errp, IBMVETH_ERROR, 0, "an rx queue of %"
                    G_GUINT64_FORMAT " bytes in %" G_GUINT64_FORMAT " bytes "
                    "is not in whole pages of 4 to 64 KiB", len, size);
        return false;
    }
    return true;
}

bool ibmveth_state_check(const IbmvethState *s, uint64_t mem_start,
                         uint64_t mem_end, GError **errp)
{
    uint64_t entries = 1;

    if (s->dma > IBMVETH_DMA_POOL) {
        g_set_error(errp, IBMVETH_ERROR, 0, "dma %u is neither per buffer "
                    "(%d) nor pool (%d)", s->dma, IBMVETH_DMA_PER_BUFFER,
                    IBMVETH_DMA_POOL);
        return false;
    }
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        if (!pool_state_check(&s->pool[i], i, s->dma, mem_start, mem_end,
                              errp)) {
            return false;
        }
        entries += s->pool[i].count;
    }
    if (!rxq_len_check(s->rxq_len, s->rxq_index, entries, errp) ||
        !rxq_size_check(s->rxq_len, s->rxq_size, errp)) {
        return false;
    }
    if (s->bds_per_add != 1 && s->bds_per_add != IBMVETH_MAX_BDS_PER_ADD) {
        g_set_error(errp, IBMVETH_ERROR, 0, "bds_per_add %u is neither 1 "
                    "nor %d", s->bds_per_add, IBMVETH_MAX_BDS_PER_ADD);
        return false;
    }
    if (!s->mac || s->mac >> 48 || (s->mac >> 40) & 1) {
        g_set_error(errp, IBMVETH_ERROR, 0, "MAC 0x%012" G_GINT64_MODIFIER
                    "x is not an interface's unicast address", s->mac);
        return false;
    }
    if (!io_floor_check(s, &mem_end, errp)) {
        return false;
    }
    if (!range_ok(s->tce_list, PAGE_SIZE, mem_start, mem_end) ||
        !range_ok(s->buffer_list, PAGE_SIZE, mem_start, mem_end) ||
        !range_ok(s->filter_list, PAGE_SIZE, mem_start, mem_end) ||
        !range_ok(s->rxq, s->rxq_size, mem_start, mem_end) ||
        !range_ok(s->tx_buf, IBMVETH_TX_BUF_SIZE, mem_start, mem_end)) {
        g_set_error(errp, IBMVETH_ERROR, 0, "a queue or page lies outside "
                    "the guest memory the driver allocates from (0x%"
                    G_GINT64_MODIFIER "x to 0x%" G_GINT64_MODIFIER "x)",
                    mem_start, mem_end);
        return false;
    }
    return pieces_disjoint(s, errp);
}

IbmvethDriver *ibmveth_adopt(const IbmvethBus *bus, const IbmvethState *s)
{
    IbmvethDriver *v = g_new0(IbmvethDriver, 1);

    v->bus = *bus;
    v->dma = s->dma;
    v->unit = s->unit;
    v->tce_list = s->tce_list;
    v->buffer_list = s->buffer_list;
    v->filter_list = s->filter_list;
    v->rxq = s->rxq;
    v->tx_buf = s->tx_buf;
    v->rxq_len = s->rxq_len;
    v->rxq_size = s->rxq_size;
    v->rxq_index = s->rxq_index;
    v->rxq_toggle = s->rxq_toggle;
    v->bds_per_add = s->bds_per_add;
    v->mac = s->mac;
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        const IbmvethPoolState *ps = &s->pool[i];
        IbmvethPool *p = &v->pool[i];

        pool_shape_from_state(p, i, ps);
        if (!p->active) {
            continue;
        }
        p->base = ps->base;
        p->consumer = ps->consumer;
        p->producer = ps->producer;
        p->available = ps->available;
        p->free_map = g_memdup2(ps->free_map,
                                p->count * sizeof(p->free_map[0]));
        p->posted = g_memdup2(ps->posted, p->count * sizeof(p->posted[0]));
    }
    /* ibmveth_state_check() saw the I/O ranges fit. */
    place_pools(v);
    return v;
}

/* ---- Save and restore ---- */

static void save_pool(GKeyFile *kf, const IbmvethPool *p)
{
    g_autofree char *group = g_strdup_printf("pool%u", p->index);
    g_autofree gint *free_map = g_new0(gint, p->count + 1);
    g_autofree gint *posted = g_new0(gint, p->count + 1);

    g_key_file_set_boolean(kf, group, "active", p->active);
    g_key_file_set_uint64(kf, group, "size", p->size);
    g_key_file_set_uint64(kf, group, "count", p->count);
    if (!p->active) {
        return;
    }
    g_key_file_set_uint64(kf, group, "base", p->base);
    g_key_file_set_uint64(kf, group, "stride", p->layout.stride);
    g_key_file_set_uint64(kf, group, "consumer", p->consumer);
    g_key_file_set_uint64(kf, group, "producer", p->producer);
    g_key_file_set_uint64(kf, group, "available", p->available);
    for (uint32_t i = 0; i < p->count; i++) {
        free_map[i] = p->free_map[i];
        posted[i] = p->posted[i];
    }
    g_key_file_set_integer_list(kf, group, "free_map", free_map, p->count);
    g_key_file_set_integer_list(kf, group, "posted", posted, p->count);
}

char *ibmveth_save(IbmvethDriver *v)
{
    g_autoptr(GKeyFile) kf = g_key_file_new();
    static const char g[] = "ibmveth";

    g_key_file_set_uint64(kf, g, "unit", v->unit);
    g_key_file_set_uint64(kf, g, "tce_list", v->tce_list);
    g_key_file_set_uint64(kf, g, "buffer_list", v->buffer_list);
    g_key_file_set_uint64(kf, g, "filter_list", v->filter_list);
    g_key_file_set_uint64(kf, g, "rxq", v->rxq);
    g_key_file_set_uint64(kf, g, "tx_buf", v->tx_buf);
    g_key_file_set_uint64(kf, g, "rxq_len", v->rxq_len);
    g_key_file_set_uint64(kf, g, "rxq_size", v->rxq_size);
    g_key_file_set_uint64(kf, g, "dma", v->dma);
    g_key_file_set_uint64(kf, g, "rxq_index", v->rxq_index);
    g_key_file_set_boolean(kf, g, "rxq_toggle", v->rxq_toggle);
    g_key_file_set_uint64(kf, g, "bds_per_add", v->bds_per_add);
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        save_pool(kf, &v->pool[i]);
    }
    return g_key_file_to_data(kf, NULL, NULL);
}

/* Reads the keys in @keys into @out, in order; false at the first one
 * missing or malformed, with errp saying which. */
static bool get_u64s(GKeyFile *kf, const char *group,
                     const char *const *keys, uint64_t *out, GError **errp)
{
    for (unsigned i = 0; keys[i]; i++) {
        GError *err = NULL;

        out[i] = g_key_file_get_uint64(kf, group, keys[i], &err);
        if (err) {
            g_propagate_prefixed_error(errp, err, "[%s] %s: ", group,
                                       keys[i]);
            return false;
        }
    }
    return true;
}

static bool restore_free_map(GKeyFile *kf, const char *group, IbmvethPool *p,
                             GError **errp)
{
    g_autofree gint *free_map = NULL, *posted = NULL;
    gsize n_free = 0, n_posted = 0;

    free_map = g_key_file_get_integer_list(kf, group, "free_map", &n_free,
                                           NULL);
    posted = g_key_file_get_integer_list(kf, group, "posted", &n_posted,
                                         NULL);
    if (n_free != p->count || n_posted != p->count) {
        g_set_error(errp, IBMVETH_ERROR, 0, "[%s]: free_map and posted must "
                    "have %u entries", group, p->count);
        return false;
    }
    pool_init_free_map(p);
    for (uint32_t i = 0; i < p->count; i++) {
        if ((uint32_t)free_map[i] >= p->count) {
            g_set_error(errp, IBMVETH_ERROR, 0, "[%s]: free_map[%u] = %d is "
                        "no slot", group, i, free_map[i]);
            return false;
        }
        p->free_map[i] = free_map[i];
        p->posted[i] = posted[i];
    }
    return true;
}

static bool restore_pool(GKeyFile *kf, IbmvethPool *p, unsigned index,
                         IbmvethDma dma, GError **errp)
{
    static const char *const sizes[] = { "size", "count", NULL };
    static const char *const keys[] = { "base", "stride", "consumer",
                                        "producer", "available", NULL };
    g_autofree char *group = g_strdup_printf("pool%u", index);
    uint64_t s[2], k[5];

    p->index = index;
    p->active = g_key_file_get_boolean(kf, group, "active", NULL);
    if (!get_u64s(kf, group, sizes, s, errp)) {
        return false;
    }
    p->size = s[0];
    p->count = s[1];
    p->threshold = p->count * 7 / 8;
    if (!p->active) {
        return true;
    }
    if (!get_u64s(kf, group, keys, k, errp)) {
        return false;
    }
    if (p->count < 1 || p->count > IBMVETH_POOL_COUNT_MAX ||
        k[1] != pool_layout(dma, p->size).stride ||
        k[2] >= p->count || k[3] >= p->count || k[4] > p->count) {
        g_set_error(errp, IBMVETH_ERROR, 0, "[%s]: inconsistent pool",
                    group);
        return false;
    }
    p->base = k[0];
    p->consumer = k[2];
    p->producer = k[3];
    p->available = k[4];
    return restore_free_map(kf, group, p, errp);
}

IbmvethDriver *ibmveth_restore(const IbmvethBus *bus, const char *text,
                               GError **errp)
{
    static const char *const keys[] = { "unit", "tce_list", "buffer_list",
                                        "filter_list", "rxq", "tx_buf",
                                        "rxq_len", "rxq_index", "bds_per_add",
                                        NULL };
    g_autoptr(GKeyFile) kf = g_key_file_new();
    IbmvethDriver *v = g_new0(IbmvethDriver, 1);
    uint64_t k[9], dma, rxq_size, entries = 1;
    bool has_rxq_size;

    v->bus = *bus;
    /* Its memory came from no allocator of this process. */
    v->bus.free = NULL;
    if (!g_key_file_load_from_data(kf, text, -1, 0, errp) ||
        !get_u64s(kf, "ibmveth", keys, k, errp)) {
        goto fail;
    }
    v->unit = k[0];
    v->tce_list = k[1];
    v->buffer_list = k[2];
    v->filter_list = k[3];
    v->rxq = k[4];
    v->tx_buf = k[5];
    v->rxq_len = k[6];
    v->rxq_index = k[7];
    v->bds_per_add = k[8];
    v->rxq_toggle = g_key_file_get_boolean(kf, "ibmveth", "rxq_toggle",
                                           NULL);
    /* Saved before buffers were mapped one by one: pools mapped whole,
     * the queue exactly its length. */
    dma = g_key_file_has_key(kf, "ibmveth", "dma", NULL) ?
          g_key_file_get_uint64(kf, "ibmveth", "dma", NULL) :
          IBMVETH_DMA_POOL;
    has_rxq_size = g_key_file_has_key(kf, "ibmveth", "rxq_size", NULL);
    rxq_size = has_rxq_size ?
               g_key_file_get_uint64(kf, "ibmveth", "rxq_size", NULL) : k[6];
    /* Checked as a u64: the enum would truncate 2^32 to a valid 0. */
    if (dma > IBMVETH_DMA_POOL) {
        g_set_error(errp, IBMVETH_ERROR, 0, "[ibmveth] dma: %"
                    G_GUINT64_FORMAT " is neither per buffer (%d) nor pool "
                    "(%d)", dma, IBMVETH_DMA_PER_BUFFER, IBMVETH_DMA_POOL);
        goto fail;
    }
    v->dma = dma;
    for (unsigned i = 0; i < IBMVETH_NUM_POOLS; i++) {
        if (!restore_pool(kf, &v->pool[i], i, v->dma, errp)) {
            goto fail;
        }
        entries += v->pool[i].count;
    }
    if (!rxq_len_check(k[6], k[7], entries, errp) ||
        (has_rxq_size && !rxq_size_check(k[6], rxq_size, errp))) {
        g_prefix_error(errp, "[ibmveth] ");
        goto fail;
    }
    v->rxq_size = rxq_size;
    if (!place_pools(v)) {
        g_set_error(errp, IBMVETH_ERROR, 0, "[pool*]: the rx buffers' I/O "
                    "ranges do not fit the DMA window");
        goto fail;
    }
    return v;

fail:
    free_driver(v);
    return NULL;
}
