/*
 * The ibmveth driver model (guest/ibmveth.h) driven over qtest: a test acts
 * as a Linux guest with it.  Memory accesses and hcalls become qtest
 * commands; anything Linux would WARN about, or an hcall the model cannot
 * do without (a TCE mapping), fails the test.
 */
#ifndef LIBQOS_IBMVETH_H
#define LIBQOS_IBMVETH_H

#include "guest/ibmveth.h"
#include "hw/ppc/hcall.h"
#include "libqtest.h"

typedef struct QIbmveth QIbmveth;

/*
 * Opens as guest/ibmveth.h's ibmveth_open() describes, with memory from
 * @alloc (which must stay below the 256 MiB DMA window).  Asserts the conf
 * is one Linux accepts and that every TCE hcall succeeds (so @unit must
 * name a device with a TCE table).  Returns NULL and stores H_REGISTER's
 * rc in *rc when it fails; else *rc is H_SUCCESS.  @rc may be NULL.
 */
QIbmveth *qibmveth_open(QTestState *qts, QGuestAllocator *alloc,
                        const IbmvethConf *conf, int64_t *rc);

/* ibmveth_replenish(): returns how many buffers were added. */
unsigned qibmveth_replenish(QIbmveth *v);

/*
 * Consumes the next rx-queue entry if its toggle bit matches the expected
 * toggle.  For a valid entry copies up to @max bytes of frame data (from
 * buffer + offset) into @data when non-NULL.  False when the queue has no
 * new entry.  A handle naming no posted buffer fails the test.  @entry may
 * be NULL.
 */
bool qibmveth_poll(QIbmveth *v, IbmvethRxEntry *entry, void *data,
                   size_t max);

/* Waits (QTEST_WAIT_S) for the next rx-queue entry and consumes it as
 * qibmveth_poll() does; it must be a valid one. */
IbmvethRxEntry qibmveth_wait_rx(QIbmveth *v, void *data, size_t max);
/* Guest address of the buffer of entry @e, until the next replenish. */
uint64_t qibmveth_rx_buffer_addr(QIbmveth *v, const IbmvethRxEntry *e);
/* The I/O address that buffer was posted at. */
uint64_t qibmveth_rx_buffer_ioba(QIbmveth *v, const IbmvethRxEntry *e);

int64_t qibmveth_send(QIbmveth *v, const void *frame, size_t len);
int64_t qibmveth_send_bds(QIbmveth *v, const uint64_t *bds, unsigned nbds);

/* H_VIO_SIGNAL(enable ? 1 : 0); asserts it succeeds. */
void qibmveth_set_irq(QIbmveth *v, bool enable);
uint64_t qibmveth_rx_no_buffer(QIbmveth *v);
uint64_t qibmveth_buffer_list(QIbmveth *v);
uint64_t qibmveth_rxq(QIbmveth *v);
uint64_t qibmveth_tx_buffer(QIbmveth *v);
unsigned qibmveth_posted(QIbmveth *v, unsigned pool);
unsigned qibmveth_add_failures(QIbmveth *v);
unsigned qibmveth_bds_per_add(QIbmveth *v);

/* The guest has migrated: the same model now drives @qts, whose device
 * and memory came from the stream. */
void qibmveth_migrate(QIbmveth *v, QTestState *qts);

/* The driver's state as text, and a model rebuilt from it driving @qts
 * (see ibmveth_save()). */
char *qibmveth_save(QIbmveth *v);
QIbmveth *qibmveth_restore(QTestState *qts, const char *text);

/* ibmveth_close(): frees the model whatever the rc; returns H_FREE's. */
int64_t qibmveth_close(QIbmveth *v);

#endif
