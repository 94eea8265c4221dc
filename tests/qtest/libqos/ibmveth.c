/*
 * The ibmveth driver model over qtest (see ibmveth.h): a bus whose hcalls
 * and memory accesses are qtest commands.
 */
#include "libqos/ibmveth.h"

struct QIbmveth {
    QTestState *qts;
    QGuestAllocator *alloc;
    IbmvethDriver *drv;
};

static int64_t bus_hcall(void *opaque, uint64_t opcode, unsigned nargs,
                         uint64_t *args, unsigned nout)
{
    QIbmveth *v = opaque;

    return qtest_hcall(v->qts, opcode, nargs, args, args, nout);
}

static void bus_read(void *opaque, uint64_t gpa, void *buf, size_t len)
{
    qtest_memread(((QIbmveth *)opaque)->qts, gpa, buf, len);
}

static void bus_write(void *opaque, uint64_t gpa, const void *buf,
                      size_t len)
{
    qtest_memwrite(((QIbmveth *)opaque)->qts, gpa, buf, len);
}

static void bus_fill(void *opaque, uint64_t gpa, uint8_t byte, size_t len)
{
    qtest_memset(((QIbmveth *)opaque)->qts, gpa, byte, len);
}

static uint64_t bus_alloc(void *opaque, uint64_t size, uint64_t align)
{
    return guest_alloc(((QIbmveth *)opaque)->alloc, size, align);
}

static IbmvethBus qtest_bus(QIbmveth *v)
{
    return (IbmvethBus) {
        .hcall = bus_hcall, .read = bus_read, .write = bus_write,
        .fill = bus_fill, .alloc = bus_alloc, .opaque = v,
    };
}

QIbmveth *qibmveth_open(QTestState *qts, QGuestAllocator *alloc,
                        const IbmvethConf *conf, int64_t *rc)
{
    QIbmveth *v = g_new0(QIbmveth, 1);
    IbmvethConf probed;
    IbmvethBus bus;
    g_autoptr(GError) err = NULL;
    int64_t reg_rc = H_SUCCESS;

    v->qts = qts;
    v->alloc = alloc;
    bus = qtest_bus(v);
    probed = *conf;
    /* The probe's read, which Linux makes once, before any open. */
    probed.bulk_add = conf->bulk_add &&
                      ibmveth_offers_bulk_add(&bus, conf->unit);
    v->drv = ibmveth_open(&bus, &probed, &reg_rc, &err);
    if (rc) {
        *rc = reg_rc;
    }
    if (!v->drv) {
        /* Only a failed register is the test's to check. */
        if (reg_rc == H_SUCCESS) {
            g_error("ibmveth: %s", err->message);
        }
        g_free(v);
        return NULL;
    }
    return v;
}

unsigned qibmveth_replenish(QIbmveth *v)
{
    return ibmveth_replenish(v->drv);
}

bool qibmveth_poll(QIbmveth *v, IbmvethRxEntry *entry, void *data,
                   size_t max)
{
    IbmvethRxEntry local;

    if (!entry) {
        entry = &local;
    }
    switch (ibmveth_rx_peek(v->drv, entry)) {
    case IBMVETH_RX_EMPTY:
        return false;
    case IBMVETH_RX_BAD_HANDLE:
        g_error("ibmveth: rx handle 0x%" G_GINT64_MODIFIER "x names no "
                "posted buffer", entry->handle);
    case IBMVETH_RX_READY:
        break;
    }
    if (entry->valid && data && MIN(entry->len, max) > 0) {
        qtest_memread(v->qts, ibmveth_rx_data_addr(v->drv, entry), data,
                      MIN(entry->len, max));
    }
    ibmveth_rx_consume(v->drv, entry);
    return true;
}

typedef struct RxWait {
    QIbmveth *v;
    IbmvethRxEntry e;
    void *data;
    size_t max;
} RxWait;

static bool rx_entry_ready(void *opaque)
{
    RxWait *w = opaque;

    return qibmveth_poll(w->v, &w->e, w->data, w->max);
}

IbmvethRxEntry qibmveth_wait_rx(QIbmveth *v, void *data, size_t max)
{
    RxWait w = { .v = v, .data = data, .max = max };

    qtest_wait_until(rx_entry_ready, &w, QTEST_WAIT_S,
                     "a frame in the guest's rx queue");
    g_assert_true(w.e.valid);
    return w.e;
}

uint64_t qibmveth_rx_buffer_addr(QIbmveth *v, const IbmvethRxEntry *e)
{
    return ibmveth_rx_data_addr(v->drv, e) - e->offset;
}

uint64_t qibmveth_rx_buffer_ioba(QIbmveth *v, const IbmvethRxEntry *e)
{
    return ibmveth_rx_buffer_ioba(v->drv, e);
}

int64_t qibmveth_send(QIbmveth *v, const void *frame, size_t len)
{
    g_assert_cmpuint(len, <=, IBMVETH_TX_BUF_SIZE);
    return ibmveth_send(v->drv, frame, len);
}

int64_t qibmveth_send_bds(QIbmveth *v, const uint64_t *bds, unsigned nbds)
{
    g_assert_cmpuint(nbds, <=, IBMVETH_MAX_TX_BDS);
    return ibmveth_send_bds(v->drv, bds, nbds);
}

void qibmveth_set_irq(QIbmveth *v, bool enable)
{
    g_assert_cmpint(ibmveth_set_irq(v->drv, enable), ==, H_SUCCESS);
}

uint64_t qibmveth_rx_no_buffer(QIbmveth *v)
{
    return ibmveth_rx_no_buffer(v->drv);
}

uint64_t qibmveth_buffer_list(QIbmveth *v)
{
    return ibmveth_buffer_list(v->drv);
}

uint64_t qibmveth_rxq(QIbmveth *v)
{
    return ibmveth_rxq(v->drv);
}

uint64_t qibmveth_tx_buffer(QIbmveth *v)
{
    return ibmveth_tx_buffer(v->drv);
}

unsigned qibmveth_posted(QIbmveth *v, unsigned pool)
{
    g_assert_cmpuint(pool, <, IBMVETH_NUM_POOLS);
    return ibmveth_posted(v->drv, pool);
}

unsigned qibmveth_add_failures(QIbmveth *v)
{
    return ibmveth_add_failures(v->drv);
}

unsigned qibmveth_bds_per_add(QIbmveth *v)
{
    return ibmveth_bds_per_add(v->drv);
}

void qibmveth_migrate(QIbmveth *v, QTestState *qts)
{
    IbmvethBus bus;

    v->qts = qts;
    bus = qtest_bus(v);
    ibmveth_set_bus(v->drv, &bus);
}

char *qibmveth_save(QIbmveth *v)
{
    return ibmveth_save(v->drv);
}

QIbmveth *qibmveth_restore(QTestState *qts, const char *text)
{
    QIbmveth *v = g_new0(QIbmveth, 1);
    IbmvethBus bus;
    g_autoptr(GError) err = NULL;

    v->qts = qts;
    bus = qtest_bus(v);
    v->drv = ibmveth_restore(&bus, text, &err);
    g_assert_no_error(err);
    return v;
}

int64_t qibmveth_close(QIbmveth *v)
{
    int64_t rc = ibmveth_close(v->drv);

    g_free(v);
    return rc;
}
