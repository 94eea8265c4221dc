/*
 * A test-side model of Linux's ibmveth driver: it opens a spapr-vlan the way
 * Linux does, keeps its receive pools filled, consumes the receive queue and
 * sends frames, all through qtest memory accesses and hcalls.
 *
 * Every structure is identity-mapped: its I/O address in the device's DMA
 * window equals its guest-physical address, so the allocator handed to
 * qibmveth_open() must stay below the 256 MiB window.
 */
#ifndef LIBQOS_IBMVETH_H
#define LIBQOS_IBMVETH_H

#include "hw/ppc/hcall.h"
#include "libqtest.h"

/* H_ILLAN_ATTRIBUTES: the firmware takes up to 8 rx buffers per hcall. */
#define IBMVETH_ILLAN_RX_MULTI_BUFF_SUPPORT 0x40000ULL

/* Buffer descriptor: flags and a 24-bit length above a 32-bit I/O address. */
#define IBMVETH_BD_VALID            0x8000000000000000ULL
#define IBMVETH_BD_TOGGLE           0x4000000000000000ULL
#define IBMVETH_BD_LEN_SHIFT        32
#define IBMVETH_BD_LEN_MASK         0xFFFFFFULL

/* Receive-queue entry: 16 bytes; these are bits of its control byte. */
#define IBMVETH_RXQ_ENTRY_SIZE      16
#define IBMVETH_RXQ_TOGGLE          0x80
#define IBMVETH_RXQ_VALID           0x40

/* Buffer-list page: the device's count of frames dropped for want of a
 * buffer sits in its last 8 bytes. */
#define IBMVETH_RX_NO_BUFFER_OFFSET 4088

#define QIBMVETH_NUM_POOLS          5
/* The bulk hcall's 8 descriptors, unused ones 0. */
#define QIBMVETH_MAX_BDS_PER_ADD    8
/* H_SEND_LOGICAL_LAN takes up to 6 descriptors. */
#define QIBMVETH_MAX_TX_BDS         6
/* Linux's transmit "long-term buffer": every frame is copied into it. */
#define QIBMVETH_TX_BUF_SIZE        65536

/* A valid descriptor for @len bytes at I/O address @ioba. */
static inline uint64_t qibmveth_bd(uint32_t len, uint32_t ioba)
{
    return IBMVETH_BD_VALID |
           ((uint64_t)(len & IBMVETH_BD_LEN_MASK) << IBMVETH_BD_LEN_SHIFT) |
           ioba;
}

typedef struct QIbmveth QIbmveth;

typedef struct QIbmvethConf {
    uint32_t unit;               /* VIO unit address, e.g. 0x71000000 */
    uint64_t mac;                /* low 48 bits, first octet in bits 47..40 */
    unsigned npools;             /* 0 = Linux defaults */
    uint32_t pool_size[QIBMVETH_NUM_POOLS];
    uint32_t pool_count[QIBMVETH_NUM_POOLS];
    bool pool_active[QIBMVETH_NUM_POOLS];
    bool bulk_add;               /* use H_ADD_LOGICAL_LAN_BUFFERS when
                                    H_ILLAN_ATTRIBUTES offers it */
} QIbmvethConf;

/*
 * Linux's pools: sizes 512, 2048, 16384, 32768, 65536; counts 256, 512, 256,
 * 256, 256; active 1, 1, 0, 0, 1.  The MAC is 52:54:00:12:34:56, the default
 * a lone spapr-vlan gets when no mac= is given.  No bulk add.
 */
void qibmveth_conf_linux_defaults(QIbmvethConf *conf, uint32_t unit);

/*
 * Opens as Linux does: with bulk_add, H_ILLAN_ATTRIBUTES(unit, 0, 0) first
 * (Linux asks at probe); a zeroed buffer-list page and filter page and a
 * zeroed rx queue of 16 x (1 + the counts of all pools, active or not)
 * bytes, mapped read/write, and a zeroed 64 KiB tx buffer mapped read-only
 * (Linux maps it to-device); H_VIO_SIGNAL(disable); H_REGISTER_LOGICAL_LAN,
 * and on failure H_FREE_LOGICAL_LAN (repeated while busy) and one retry.
 * After a successful register: the buffers of the active pools, mapped
 * read/write, then Linux's first interrupt and NAPI poll: H_VIO_SIGNAL
 * (disable), the initial replenish, H_VIO_SIGNAL(enable).  So the rx
 * interrupt is ENABLED when this returns.
 * Asserts the conf is one Linux accepts (pool counts 1..4096, sizes
 * 23..131072), that everything fits below the 256 MiB DMA window and that
 * every TCE hcall succeeds (so @unit must name a device with a TCE table).
 * Returns NULL and stores H_REGISTER's rc in *rc when it fails; else *rc is
 * H_SUCCESS.  @rc may be NULL.
 */
QIbmveth *qibmveth_open(QTestState *qts, QGuestAllocator *alloc,
                        const QIbmvethConf *conf, int64_t *rc);

/*
 * Replenishes as Linux does: pools 4 down to 0; an active pool with fewer
 * than count * 7 / 8 buffers posted is refilled up to count, free slots
 * taken in the order they were freed.  Each buffer's first 8 bytes get the
 * correlator (pool << 32 | slot); its BD is VALID | size | address.  One
 * buffer per H_ADD_LOGICAL_LAN_BUFFER, or in bulk mode up to 8 per
 * H_ADD_LOGICAL_LAN_BUFFERS (a batch of exactly one still goes through the
 * single hcall).  A failed hcall counts its buffers as add failures and ends
 * that pool's refill for this call; H_FUNCTION in bulk mode drops to one
 * buffer per hcall for good.  Returns how many buffers were added.
 */
unsigned qibmveth_replenish(QIbmveth *v);

typedef struct QIbmvethRxEntry {
    bool valid;          /* the "valid message" bit */
    unsigned pool, slot; /* from the handle */
    uint32_t buf_size;
    uint32_t len, offset;
    uint64_t handle;
    uint8_t control;     /* the raw control byte, for checks of other bits */
} QIbmvethRxEntry;

/*
 * Consumes the next rx-queue entry if its toggle bit matches the expected
 * toggle (1 at open, flipped each time the index wraps).  For a valid entry
 * copies up to @max bytes of frame data (from buffer + offset) into @data
 * when non-NULL.  The buffer goes back to its pool's free slots for the next
 * replenish, as current Linux does for every entry.  False when the queue
 * has no new entry.  A handle naming no posted buffer (pool out of range or
 * inactive, slot out of range, or a slot not posted) fails the test.
 * @entry may be NULL.
 */
bool qibmveth_poll(QIbmveth *v, QIbmvethRxEntry *entry, void *data,
                   size_t max);

/*
 * Sends one frame as current Linux does: copied into the tx buffer, one BD,
 * repeated with the returned continue-token while H_BUSY (up to 1024
 * retries).  Returns the last rc.  @len is at most QIBMVETH_TX_BUF_SIZE.
 */
int64_t qibmveth_send(QIbmveth *v, const void *frame, size_t len);
/* One H_SEND_LOGICAL_LAN with up to 6 caller-given BDs, unused ones 0, and
 * continue-token 0; no retry.  For gather and hostile tests. */
int64_t qibmveth_send_bds(QIbmveth *v, const uint64_t *bds, unsigned nbds);

/* H_VIO_SIGNAL(enable ? 1 : 0); asserts it succeeds. */
void qibmveth_set_irq(QIbmveth *v, bool enable);
/* The BE64 drop counter at buffer-list + 4088. */
uint64_t qibmveth_rx_no_buffer(QIbmveth *v);

/* Guest addresses (equal to I/O addresses), for hostile tests. */
uint64_t qibmveth_buffer_list(QIbmveth *v);
uint64_t qibmveth_rxq(QIbmveth *v);
/* The read-only-mapped tx buffer, QIBMVETH_TX_BUF_SIZE bytes, for building
 * the BDs of qibmveth_send_bds(). */
uint64_t qibmveth_tx_buffer(QIbmveth *v);

/* Buffers of @pool posted to the device and not yet consumed. */
unsigned qibmveth_posted(QIbmveth *v, unsigned pool);
/* Buffers whose add hcall failed, summed over all replenishes (Linux's
 * replenish_add_buff_failure). */
unsigned qibmveth_add_failures(QIbmveth *v);
/* 8 while bulk add is in use, else 1. */
unsigned qibmveth_bds_per_add(QIbmveth *v);

/* The guest has migrated: the same model now drives @qts, whose device
 * and memory came from the stream. */
void qibmveth_migrate(QIbmveth *v, QTestState *qts);

/*
 * The model's own state as text, and a model rebuilt from it driving
 * @qts: for streams kept as test fixtures, whose guest must carry on in
 * a later process.  The restored model cannot open again (no allocator).
 */
char *qibmveth_save(QIbmveth *v);
QIbmveth *qibmveth_restore(QTestState *qts, const char *text);

/*
 * Closes as Linux does: H_VIO_SIGNAL(disable), H_FREE_LOGICAL_LAN repeated
 * while busy (bounded), then frees the model whatever the rc.  Guest memory
 * and TCEs stay as they are.  Returns H_FREE's rc.
 */
int64_t qibmveth_close(QIbmveth *v);

#endif
