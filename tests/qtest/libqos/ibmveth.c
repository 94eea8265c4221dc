/*
 * A test-side model of Linux's ibmveth driver (see ibmveth.h).  It follows
 * the driver's order of hcalls and its bookkeeping, so a test sees the
 * device driven the way a real guest drives it.
 */
#include "libqos/ibmveth.h"

#include <string.h>

#define H_PUT_TCE_INDIRECT          0x13C
#define H_LONG_BUSY_ORDER_1_MSEC    9900
#define H_LONG_BUSY_ORDER_100_SEC   9905

#define VIO_IRQ_DISABLE             0
#define VIO_IRQ_ENABLE              1

#define PAGE_SIZE                   4096ULL
#define DMA_WINDOW_SIZE             0x10000000ULL
#define TCE_READ                    1ULL
#define TCE_WRITE                   2ULL
#define TCE_RW                      (TCE_READ | TCE_WRITE)
/* One 4 KiB list page holds 512 TCEs, H_PUT_TCE_INDIRECT's maximum. */
#define TCE_LIST_ENTRIES            (PAGE_SIZE / sizeof(uint64_t))

/* Linux's sysfs limits on a pool ("num" and "size"). */
#define POOL_COUNT_MAX              4096
#define POOL_SIZE_MIN               23
#define POOL_SIZE_MAX               131072
/* skb data starts on a cache line (128 bytes on POWER). */
#define POOL_BUF_ALIGN              128

/* Linux loops without bound; a broken device must not hang the test. */
#define FREE_BUSY_TRIES             1024
#define SEND_BUSY_RETRIES           1024

static const uint32_t linux_pool_size[QIBMVETH_NUM_POOLS] = {
    512, 2048, 16384, 32768, 65536,
};
static const uint32_t linux_pool_count[QIBMVETH_NUM_POOLS] = {
    256, 512, 256, 256, 256,
};
static const bool linux_pool_active[QIBMVETH_NUM_POOLS] = {
    true, true, false, false, true,
};

typedef struct QIbmvethPool {
    unsigned index;
    bool active;
    uint32_t size, count, threshold;
    uint64_t base;              /* slot i is at base + i * stride */
    uint64_t stride;
    /* Linux's free_map: a ring of free slots, taken at @consumer and
     * returned at @producer, so slots are reused in the order freed. */
    uint32_t *free_map;
    uint32_t consumer, producer;
    uint32_t available;         /* posted and not yet consumed */
    bool *posted;               /* per slot, to catch bogus handles */
} QIbmvethPool;

struct QIbmveth {
    QTestState *qts;
    QGuestAllocator *alloc;
    uint32_t unit;
    uint64_t tce_list;          /* scratch page for H_PUT_TCE_INDIRECT */
    uint64_t buffer_list, filter_list, rxq, tx_buf;
    uint32_t rxq_len;
    uint32_t rxq_index;
    bool rxq_toggle;
    unsigned bds_per_add;
    unsigned add_failures;
    QIbmvethPool pool[QIBMVETH_NUM_POOLS];
};

void qibmveth_conf_linux_defaults(QIbmvethConf *conf, uint32_t unit)
{
    *conf = (QIbmvethConf) {
        .unit = unit,
        .mac = 0x525400123456ULL,
        .npools = QIBMVETH_NUM_POOLS,
    };
    memcpy(conf->pool_size, linux_pool_size, sizeof(linux_pool_size));
    memcpy(conf->pool_count, linux_pool_count, sizeof(linux_pool_count));
    memcpy(conf->pool_active, linux_pool_active, sizeof(linux_pool_active));
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

/* ---- DMA mapping ---- */

/*
 * Identity-maps the pages of [gpa, gpa + len): 512 TCEs per
 * H_PUT_TCE_INDIRECT keeps a 16 MiB pool to a few dozen round trips.
 */
static void map_identity(QIbmveth *v, uint64_t gpa, uint64_t len,
                         uint64_t perm)
{
    uint64_t first = gpa & ~(PAGE_SIZE - 1);
    uint64_t end = align_up(gpa + len, PAGE_SIZE);
    uint64_t list[TCE_LIST_ENTRIES];

    g_assert_cmphex(end, <=, DMA_WINDOW_SIZE);
    for (uint64_t page = first; page < end;
         page += TCE_LIST_ENTRIES * PAGE_SIZE) {
        uint64_t n = MIN(TCE_LIST_ENTRIES, (end - page) / PAGE_SIZE);

        for (uint64_t i = 0; i < n; i++) {
            list[i] = GUINT64_TO_BE((page + i * PAGE_SIZE) | perm);
        }
        qtest_memwrite(v->qts, v->tce_list, list, n * sizeof(list[0]));
        g_assert_cmpint(qtest_hcallv(v->qts, H_PUT_TCE_INDIRECT, v->unit,
                                     page, v->tce_list, n), ==, H_SUCCESS);
    }
}

/* Page-aligned, zeroed and mapped, as Linux's pages and coherent memory. */
static uint64_t alloc_zeroed_mapped(QIbmveth *v, uint64_t size,
                                    uint64_t perm)
{
    uint64_t addr = guest_alloc(v->alloc, size, PAGE_SIZE);

    qtest_memset(v->qts, addr, 0, size);
    map_identity(v, addr, size, perm);
    return addr;
}

/* ---- Pools ---- */

static void check_pool_conf(unsigned i, uint32_t size, uint32_t count)
{
    if (count < 1 || count > POOL_COUNT_MAX ||
        size < POOL_SIZE_MIN || size > POOL_SIZE_MAX) {
        g_error("ibmveth pool %u: size %u count %u is not a pool Linux "
                "accepts (count 1..%d, size %d..%d)", i, size, count,
                POOL_COUNT_MAX, POOL_SIZE_MIN, POOL_SIZE_MAX);
    }
}

static void pool_init(QIbmvethPool *p, unsigned index,
                      const QIbmvethConf *conf)
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
        check_pool_conf(index, p->size, p->count);
    }
    p->threshold = p->count * 7 / 8;
}

/* Guest buffers and host records, made only for an active pool and only
 * after a successful register, as Linux allocates its pools. */
static void pool_alloc(QIbmveth *v, QIbmvethPool *p)
{
    p->stride = align_up(p->size, POOL_BUF_ALIGN);
    p->base = guest_alloc(v->alloc, p->stride * p->count, PAGE_SIZE);
    map_identity(v, p->base, p->stride * p->count, TCE_RW);
    p->free_map = g_new(uint32_t, p->count);
    for (uint32_t slot = 0; slot < p->count; slot++) {
        p->free_map[slot] = slot;
    }
    p->posted = g_new0(bool, p->count);
}

static void pool_free(QIbmvethPool *p)
{
    g_free(p->free_map);
    g_free(p->posted);
}

static uint64_t pool_buf_addr(const QIbmvethPool *p, uint32_t slot)
{
    return p->base + slot * p->stride;
}

/* The @nth free slot from the consumer end, without taking it. */
static uint32_t pool_peek_free(const QIbmvethPool *p, uint32_t nth)
{
    return p->free_map[(p->consumer + nth) % p->count];
}

static void pool_take_free(QIbmvethPool *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        p->posted[p->free_map[p->consumer]] = true;
        p->consumer = (p->consumer + 1) % p->count;
    }
    p->available += n;
}

static void pool_return(QIbmvethPool *p, uint32_t slot)
{
    p->posted[slot] = false;
    p->free_map[p->producer] = slot;
    p->producer = (p->producer + 1) % p->count;
    p->available--;
}

/* ---- Replenish ---- */

/* Writes the correlator into the buffer (the device hands its first 8
 * bytes back as the rx handle) and returns the buffer's BD. */
static uint64_t prepare_buffer(QIbmveth *v, const QIbmvethPool *p,
                               uint32_t slot)
{
    uint64_t addr = pool_buf_addr(p, slot);

    qtest_writeq(v->qts, addr, (uint64_t)p->index << 32 | slot);
    return qibmveth_bd(p->size, addr);
}

static int64_t add_buffers(QIbmveth *v, const uint64_t *bds, unsigned n)
{
    uint64_t args[1 + QIBMVETH_MAX_BDS_PER_ADD] = { v->unit };

    if (n == 1) {
        return qtest_hcallv(v->qts, H_ADD_LOGICAL_LAN_BUFFER, v->unit,
                            bds[0]);
    }
    memcpy(&args[1], bds, n * sizeof(bds[0]));
    return qtest_hcall(v->qts, H_ADD_LOGICAL_LAN_BUFFERS, G_N_ELEMENTS(args),
                       args, NULL, 0);
}

static unsigned replenish_pool(QIbmveth *v, QIbmvethPool *p)
{
    unsigned added = 0;

    while (p->available < p->count) {
        unsigned n = MIN(p->count - p->available, v->bds_per_add);
        uint64_t bds[QIBMVETH_MAX_BDS_PER_ADD];
        int64_t rc;

        for (unsigned i = 0; i < n; i++) {
            bds[i] = prepare_buffer(v, p, pool_peek_free(p, i));
        }
        rc = add_buffers(v, bds, n);
        if (rc != H_SUCCESS) {
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

unsigned qibmveth_replenish(QIbmveth *v)
{
    unsigned added = 0;

    for (int i = QIBMVETH_NUM_POOLS - 1; i >= 0; i--) {
        QIbmvethPool *p = &v->pool[i];

        if (p->active && p->available < p->threshold) {
            added += replenish_pool(v, p);
        }
    }
    return added;
}

/* ---- Open and close ---- */

static unsigned query_bds_per_add(QIbmveth *v)
{
    uint64_t args[] = { v->unit, 0, 0 };
    uint64_t attrs = 0;

    if (qtest_hcall(v->qts, H_ILLAN_ATTRIBUTES, G_N_ELEMENTS(args), args,
                    &attrs, 1) == H_SUCCESS &&
        (attrs & IBMVETH_ILLAN_RX_MULTI_BUFF_SUPPORT)) {
        return QIBMVETH_MAX_BDS_PER_ADD;
    }
    return 1;
}

static uint32_t rxq_entries(const QIbmveth *v)
{
    uint32_t entries = 1;

    for (unsigned i = 0; i < QIBMVETH_NUM_POOLS; i++) {
        entries += v->pool[i].count;
    }
    return entries;
}

/* Linux ignores this rc in open and close: a bad unit shows up in the
 * register or free rc that follows. */
static void vio_signal_unchecked(QIbmveth *v, uint64_t mode)
{
    qtest_hcallv(v->qts, H_VIO_SIGNAL, v->unit, mode);
}

static int64_t free_lan_while_busy(QIbmveth *v)
{
    int64_t rc;
    unsigned tries = 0;

    do {
        rc = qtest_hcallv(v->qts, H_FREE_LOGICAL_LAN, v->unit);
    } while (hcall_is_busy(rc) && ++tries < FREE_BUSY_TRIES);
    return rc;
}

static int64_t register_lan(QIbmveth *v, uint64_t mac)
{
    uint64_t rxq_bd = qibmveth_bd(v->rxq_len, v->rxq);
    int64_t rc = qtest_hcallv(v->qts, H_REGISTER_LOGICAL_LAN, v->unit,
                              v->buffer_list, rxq_bd, v->filter_list, mac);

    /* After a kexec the LAN is still registered: free it, retry once. */
    if (rc != H_SUCCESS) {
        free_lan_while_busy(v);
        rc = qtest_hcallv(v->qts, H_REGISTER_LOGICAL_LAN, v->unit,
                          v->buffer_list, rxq_bd, v->filter_list, mac);
    }
    return rc;
}

static void free_model(QIbmveth *v)
{
    for (unsigned i = 0; i < QIBMVETH_NUM_POOLS; i++) {
        pool_free(&v->pool[i]);
    }
    g_free(v);
}

QIbmveth *qibmveth_open(QTestState *qts, QGuestAllocator *alloc,
                        const QIbmvethConf *conf, int64_t *rc)
{
    QIbmveth *v = g_new0(QIbmveth, 1);
    int64_t reg_rc;

    g_assert_cmpuint(conf->npools, <=, QIBMVETH_NUM_POOLS);
    v->qts = qts;
    v->alloc = alloc;
    v->unit = conf->unit;
    v->bds_per_add = conf->bulk_add ? query_bds_per_add(v) : 1;
    for (unsigned i = 0; i < QIBMVETH_NUM_POOLS; i++) {
        pool_init(&v->pool[i], i, conf);
    }
    v->rxq_len = rxq_entries(v) * IBMVETH_RXQ_ENTRY_SIZE;
    v->rxq_toggle = true;

    v->tce_list = guest_alloc(alloc, PAGE_SIZE, PAGE_SIZE);
    v->buffer_list = alloc_zeroed_mapped(v, PAGE_SIZE, TCE_RW);
    v->filter_list = alloc_zeroed_mapped(v, PAGE_SIZE, TCE_RW);
    v->rxq = alloc_zeroed_mapped(v, v->rxq_len, TCE_RW);
    v->tx_buf = alloc_zeroed_mapped(v, QIBMVETH_TX_BUF_SIZE, TCE_READ);

    vio_signal_unchecked(v, VIO_IRQ_DISABLE);
    reg_rc = register_lan(v, conf->mac);
    if (rc) {
        *rc = reg_rc;
    }
    if (reg_rc != H_SUCCESS) {
        free_model(v);
        return NULL;
    }

    for (unsigned i = 0; i < QIBMVETH_NUM_POOLS; i++) {
        if (v->pool[i].active) {
            pool_alloc(v, &v->pool[i]);
        }
    }
    /* Linux's open calls its interrupt handler once; the NAPI poll it
     * schedules replenishes and then enables the interrupt. */
    qibmveth_set_irq(v, false);
    qibmveth_replenish(v);
    qibmveth_set_irq(v, true);
    return v;
}

void qibmveth_migrate(QIbmveth *v, QTestState *qts)
{
    v->qts = qts;
}

/* ---- Save and restore ---- */

static void save_pool(GKeyFile *kf, const QIbmvethPool *p)
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
    g_key_file_set_uint64(kf, group, "stride", p->stride);
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

char *qibmveth_save(QIbmveth *v)
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
    g_key_file_set_uint64(kf, g, "rxq_index", v->rxq_index);
    g_key_file_set_boolean(kf, g, "rxq_toggle", v->rxq_toggle);
    g_key_file_set_uint64(kf, g, "bds_per_add", v->bds_per_add);
    for (unsigned i = 0; i < QIBMVETH_NUM_POOLS; i++) {
        save_pool(kf, &v->pool[i]);
    }
    return g_key_file_to_data(kf, NULL, NULL);
}

static uint64_t get_u64(GKeyFile *kf, const char *group, const char *key)
{
    g_autoptr(GError) err = NULL;
    uint64_t v = g_key_file_get_uint64(kf, group, key, &err);

    g_assert_no_error(err);
    return v;
}

static void restore_pool(GKeyFile *kf, QIbmvethPool *p, unsigned index)
{
    g_autofree char *group = g_strdup_printf("pool%u", index);
    g_autofree gint *free_map = NULL, *posted = NULL;
    gsize n_free = 0, n_posted = 0;

    p->index = index;
    p->active = g_key_file_get_boolean(kf, group, "active", NULL);
    p->size = get_u64(kf, group, "size");
    p->count = get_u64(kf, group, "count");
    p->threshold = p->count * 7 / 8;
    if (!p->active) {
        return;
    }
    p->base = get_u64(kf, group, "base");
    p->stride = get_u64(kf, group, "stride");
    p->consumer = get_u64(kf, group, "consumer");
    p->producer = get_u64(kf, group, "producer");
    p->available = get_u64(kf, group, "available");
    free_map = g_key_file_get_integer_list(kf, group, "free_map", &n_free,
                                           NULL);
    posted = g_key_file_get_integer_list(kf, group, "posted", &n_posted,
                                         NULL);
    g_assert_cmpuint(n_free, ==, p->count);
    g_assert_cmpuint(n_posted, ==, p->count);
    p->free_map = g_new(uint32_t, p->count);
    p->posted = g_new0(bool, p->count);
    for (uint32_t i = 0; i < p->count; i++) {
        p->free_map[i] = free_map[i];
        p->posted[i] = posted[i];
    }
}

QIbmveth *qibmveth_restore(QTestState *qts, const char *text)
{
    g_autoptr(GKeyFile) kf = g_key_file_new();
    static const char g[] = "ibmveth";
    QIbmveth *v = g_new0(QIbmveth, 1);

    g_assert_true(g_key_file_load_from_data(kf, text, -1, 0, NULL));
    v->qts = qts;
    v->unit = get_u64(kf, g, "unit");
    v->tce_list = get_u64(kf, g, "tce_list");
    v->buffer_list = get_u64(kf, g, "buffer_list");
    v->filter_list = get_u64(kf, g, "filter_list");
    v->rxq = get_u64(kf, g, "rxq");
    v->tx_buf = get_u64(kf, g, "tx_buf");
    v->rxq_len = get_u64(kf, g, "rxq_len");
    v->rxq_index = get_u64(kf, g, "rxq_index");
    v->rxq_toggle = g_key_file_get_boolean(kf, g, "rxq_toggle", NULL);
    v->bds_per_add = get_u64(kf, g, "bds_per_add");
    for (unsigned i = 0; i < QIBMVETH_NUM_POOLS; i++) {
        restore_pool(kf, &v->pool[i], i);
    }
    return v;
}

int64_t qibmveth_close(QIbmveth *v)
{
    int64_t rc;

    vio_signal_unchecked(v, VIO_IRQ_DISABLE);
    rc = free_lan_while_busy(v);
    free_model(v);
    return rc;
}

/* ---- Receive ---- */

static uint16_t load_be16(const uint8_t *b)
{
    return (uint16_t)(b[0] << 8 | b[1]);
}

static uint32_t load_be32(const uint8_t *b)
{
    return (uint32_t)load_be16(b) << 16 | load_be16(b + 2);
}

static uint64_t load_be64(const uint8_t *b)
{
    return (uint64_t)load_be32(b) << 32 | load_be32(b + 4);
}

static void parse_rxq_entry(const uint8_t *raw, QIbmvethRxEntry *entry)
{
    *entry = (QIbmvethRxEntry) {
        .control = raw[0],
        .valid = raw[0] & IBMVETH_RXQ_VALID,
        .offset = load_be16(raw + 2),
        .len = load_be32(raw + 4),
        .handle = load_be64(raw + 8),
    };
    entry->pool = entry->handle >> 32;
    entry->slot = (uint32_t)entry->handle;
}

/* The pool a handle names; the test fails unless it names a posted
 * buffer (Linux WARNs and resets the adapter). */
static QIbmvethPool *pool_of_handle(QIbmveth *v, const QIbmvethRxEntry *e)
{
    QIbmvethPool *p;

    if (e->pool >= QIBMVETH_NUM_POOLS ||
        !v->pool[e->pool].active || e->slot >= v->pool[e->pool].count) {
        g_error("ibmveth: rx handle 0x%" G_GINT64_MODIFIER "x names no "
                "buffer", e->handle);
    }
    p = &v->pool[e->pool];
    if (!p->posted[e->slot]) {
        g_error("ibmveth: rx handle 0x%" G_GINT64_MODIFIER "x names a "
                "buffer that is not posted", e->handle);
    }
    return p;
}

static void rxq_advance(QIbmveth *v)
{
    v->rxq_index++;
    if (v->rxq_index == v->rxq_len / IBMVETH_RXQ_ENTRY_SIZE) {
        v->rxq_index = 0;
        v->rxq_toggle = !v->rxq_toggle;
    }
}

bool qibmveth_poll(QIbmveth *v, QIbmvethRxEntry *entry, void *data,
                   size_t max)
{
    QIbmvethRxEntry local;
    uint8_t raw[IBMVETH_RXQ_ENTRY_SIZE];
    QIbmvethPool *p;

    if (!entry) {
        entry = &local;
    }
    /* All 16 bytes at once: the device writes the control byte last. */
    qtest_memread(v->qts, v->rxq + v->rxq_index * IBMVETH_RXQ_ENTRY_SIZE,
                  raw, sizeof(raw));
    if (!!(raw[0] & IBMVETH_RXQ_TOGGLE) != v->rxq_toggle) {
        return false;
    }
    parse_rxq_entry(raw, entry);
    p = pool_of_handle(v, entry);
    entry->buf_size = p->size;
    if (entry->valid && data && MIN(entry->len, max) > 0) {
        qtest_memread(v->qts, pool_buf_addr(p, entry->slot) + entry->offset,
                      data, MIN(entry->len, max));
    }
    pool_return(p, entry->slot);
    rxq_advance(v);
    return true;
}

/* ---- Transmit ---- */

int64_t qibmveth_send(QIbmveth *v, const void *frame, size_t len)
{
    uint64_t args[8] = { v->unit };
    uint64_t token = 0;
    unsigned retries = 0;
    int64_t rc;

    g_assert_cmpuint(len, <=, QIBMVETH_TX_BUF_SIZE);
    if (len > 0) {
        qtest_memwrite(v->qts, v->tx_buf, frame, len);
    }
    args[1] = qibmveth_bd(len, v->tx_buf);
    /* args[7] is the continue-token the device returned with H_BUSY. */
    do {
        args[7] = token;
        rc = qtest_hcall(v->qts, H_SEND_LOGICAL_LAN, G_N_ELEMENTS(args),
                         args, &token, 1);
    } while (rc == H_BUSY && retries++ < SEND_BUSY_RETRIES);
    return rc;
}

int64_t qibmveth_send_bds(QIbmveth *v, const uint64_t *bds, unsigned nbds)
{
    uint64_t args[2 + QIBMVETH_MAX_TX_BDS] = { v->unit };

    g_assert_cmpuint(nbds, <=, QIBMVETH_MAX_TX_BDS);
    memcpy(&args[1], bds, nbds * sizeof(bds[0]));
    return qtest_hcall(v->qts, H_SEND_LOGICAL_LAN, G_N_ELEMENTS(args), args,
                       NULL, 0);
}

/* ---- Small accessors ---- */

void qibmveth_set_irq(QIbmveth *v, bool enable)
{
    g_assert_cmpint(qtest_hcallv(v->qts, H_VIO_SIGNAL, v->unit,
                                 enable ? VIO_IRQ_ENABLE : VIO_IRQ_DISABLE),
                    ==, H_SUCCESS);
}

uint64_t qibmveth_rx_no_buffer(QIbmveth *v)
{
    return qtest_readq(v->qts, v->buffer_list + IBMVETH_RX_NO_BUFFER_OFFSET);
}

uint64_t qibmveth_buffer_list(QIbmveth *v)
{
    return v->buffer_list;
}

uint64_t qibmveth_rxq(QIbmveth *v)
{
    return v->rxq;
}

uint64_t qibmveth_tx_buffer(QIbmveth *v)
{
    return v->tx_buf;
}

unsigned qibmveth_posted(QIbmveth *v, unsigned pool)
{
    g_assert_cmpuint(pool, <, QIBMVETH_NUM_POOLS);
    return v->pool[pool].available;
}

unsigned qibmveth_add_failures(QIbmveth *v)
{
    return v->add_failures;
}

unsigned qibmveth_bds_per_add(QIbmveth *v)
{
    return v->bds_per_add;
}
