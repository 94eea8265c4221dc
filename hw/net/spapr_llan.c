/*
 * spapr-vlan, the PAPR Interpartition Logical LAN.
 *
 * The guest registers a buffer-list page, a filter page and a receive
 * queue, posts receive buffers, and sends frames by descriptor.  Received
 * frames go into posted buffers, at offset 8, either first-fit from the
 * buffer-list page (legacy page mode) or best-fit from size-sorted pools;
 * each one gets a 16-byte receive-queue entry whose control byte is
 * written last.  Every guest address goes through the TCE table when it
 * is used, and every frame that is not delivered is counted by reason.
 */
#include "hw/net/spapr_llan.h"
#include "hw/net/spapr_llan_internal.h"
#include "hw/net/llan_bd.h"
#include "hw/net/llan_lro.h"
#include "hw/net/llan_rx_lent.h"
#include "hw/net/llan_rx_page.h"
#include "hw/net/llan_tso.h"
#include "migration/savevm.h"
#include "migration/vmstate.h"
#include "qemu/bswap.h"
#include "qemu/latency-histogram.h"
#include "qemu/module.h"
#include "qemu/option.h"
#include "qemu/runstate.h"
#include "qemu/thread.h"
#include "trace/control.h"
#include "trace/trace-hw_net.h"

#include <inttypes.h>
#include <libfdt.h>
#include <string.h>

/* H_VIO_SIGNAL mode bit 0 enables the receive interrupt. */
#define VLAN_SIGNAL_MASK    0x1
/* Frames a run of back-to-back batches delivers before the interrupt
 * goes anyway (see rx_irq_due_locked): four full batches. */
#define RX_IRQ_RUN_MAX      (4 * NET_BATCH_MAX)


#define RXQ_CTRL_TOGGLE     0x80
#define RXQ_CTRL_VALID      0x40
/* Frame data starts after the guest's 8-byte handle; a merged frame after
 * the handle and its MSS. */
#define RX_DATA_OFFSET      8
#define RX_LRO_OFFSET       16
#define RX_LRO_FRAME_MAX    (LLAN_MAX_FRAME - RX_LRO_OFFSET)
/* The longest TCP frame that goes without LRG_PKT (see long_tcp_mss). */
#define RX_PLAIN_TCP_MAX    1514
#define RX_CSUM_ATTRS       (ILLAN_IPV4_TCP_CSUM | ILLAN_IPV6_TCP_CSUM)
/* Receive zero copy lends buffers of the smallest pool that holds all
 * the host kernel may write after the handle. */
#define LEND_MIN_BUFSIZE    (RX_DATA_OFFSET + NET_LEND_DATA_ROOM)
#define BUF_LIST_RXQ_BD     0
#define BUF_LIST_FILTER_BD  8
#define BUF_LIST_NO_BUFFER  4088

/* H_MULTICAST_CTRL flags. */
#define MCAST_RECV_MODIFY   0x80000ULL
#define MCAST_FILTER_MODIFY 0x40000ULL
#define MCAST_RECV_ENABLE   0x20000ULL
#define MCAST_FILTER_ENABLE 0x10000ULL
#define MCAST_OP_MASK       0x3ULL
#define MCAST_OP_ADD        0x1
#define MCAST_OP_REMOVE     0x2
#define MCAST_OP_CLEAR      0x3
#define MCAST_KNOWN_FLAGS   (MCAST_RECV_MODIFY | MCAST_FILTER_MODIFY | \
                             MCAST_RECV_ENABLE | MCAST_FILTER_ENABLE | \
                             MCAST_OP_MASK)

/* The field names and sizes are QEMU's, so that the migration image
 * lines up with QEMU's spapr_llan. */
struct SpaprVlanState {
    SpaprVioDevice vdev;
    MACAddr mac;            /* the current MAC; the guest may change it */
    MACAddr perm_mac;       /* the command-line MAC, restored on reset */
    char *netdev;
    bool use_rx_buffer_pools;
    bool offloads;          /* offloads and bulk adds offered; off: QEMU's */
    bool lro;               /* merge received TCP segments when allowed */
    bool illan_subsections; /* off: only subsections QEMU 7.2 knows */
    int32_t bootindex;      /* kept for QEMU's command lines: no firmware */

    NetClientState *nic;
    QemuMutex lock;            /* the rx state below: one take per batch */
    bool isopen;
    uint64_t buf_list;
    uint32_t add_buf_ptr, use_buf_ptr, rx_bufs;
    uint64_t rxq_ptr;
    LlanRxPools pools;
    SpaprVlanFilter filter;
    bool rx_filter_changed;     /* by this hcall; announced after it */
    bool rx_held;               /* the backend holds frames for lack of
                                   buffers: wake it when there are some */
    uint32_t rx_irq_owed;       /* frames delivered with the interrupt on
                                   since its last pulse */
    /* Receive zero copy: the buffers lent to the host kernel; whether
     * any was since the backend last took them all back; and whether the
     * backend must take them back once this hcall has dropped the lock. */
    LlanRxLent lent;
    bool lent_any;
    bool reclaim_due;
    /* Receive zero copy: the lending pool's count at which the backend
     * must hear that it can lend again (0: it needs not), because it
     * found nothing to lend and may wait for no frame. */
    unsigned lend_wake_at;
    /* The main thread's, for the run-state notifier: whether the machine
     * ran at the last change, and whether lending waits for it to run
     * again. */
    bool ran;
    bool lend_paused;
    uint64_t attrs;             /* the attributes the guest turned on */
    SpaprVlanStats stats;       /* all but tx_*, which are in tx */
    /* The built-in guest's array, by rx-queue entry, of when the frame
     * an entry carries entered the host (see spapr_vlan_set_rx_stamps);
     * the guest owns it.  Each slot is written here before its entry's
     * control byte, and taken by the guest after reading that byte. */
    uint64_t *rx_stamps;
    uint32_t rx_nstamps;

    QemuMutex tx_lock;          /* H_SEND_LOGICAL_LAN: the gather buffer,
                                   the backend's send, the tx counters */
    struct {
        uint64_t frames, bytes, errors;
        uint64_t csum_completed, segmented, segments;
        uint64_t offload_errors[LLAN_OFFLOAD_ERROR__MAX];
        uint64_t in_place, copied[LLAN_TX_COPY__MAX];
    } tx;
    uint8_t tx_buf[LLAN_MAX_FRAME];     /* gather buffer, never per frame */
};

/* Realized devices, so that default MACs are never handed out twice. */
static GPtrArray *live_vlans;

/* Big-endian helpers for DMA through the device's TCE window. */
static bool dma_ld64(SpaprVioDevice *dev, uint64_t ioba, uint64_t *val)
{
    uint8_t be[8];

    if (!spapr_vio_dma_read(dev, ioba, be, sizeof(be))) {
        return false;
    }
    *val = ldn_be_p(be, 8);
    return true;
}

static bool dma_st64(SpaprVioDevice *dev, uint64_t ioba, uint64_t val)
{
    uint8_t be[8];

    stn_be_p(be, 8, val);
    return spapr_vio_dma_write(dev, ioba, be, sizeof(be));
}

static bool dma_zero(SpaprVioDevice *dev, uint64_t ioba, uint64_t len)
{
    static const uint8_t zeros[LLAN_PAGE_SIZE];

    for (uint64_t done = 0; done < len; done += sizeof(zeros)) {
        if (!spapr_vio_dma_write(dev, ioba + done, zeros,
                                 MIN(sizeof(zeros), len - done))) {
            return false;
        }
    }
    return true;
}

static MACAddr mac_from_u64(uint64_t v)
{
    MACAddr mac;

    stn_be_p(mac.a, 6, v);
    return mac;
}

static const SpaprVioDeviceClass spapr_vlan_class;

/* The device behind a unit address, only if it is a logical LAN.  Every
 * hcall comes through here: the class by address, not by name. */
SpaprVlanState *spapr_vlan_from_vio(SpaprVioDevice *dev)
{
    if (!dev || dev->qdev.klass != &spapr_vlan_class.parent) {
        return NULL;
    }
    return (SpaprVlanState *)dev;
}

/* The device's id as QEMU's events give it ("" when it has none). */
static const char *vlan_id(const SpaprVlanState *s)
{
    return s->vdev.qdev.id ? s->vdev.qdev.id : "";
}

static SpaprVlanState *vlan_find(SpaprMachineState *spapr, uint64_t reg)
{
    return spapr_vlan_from_vio(spapr_vio_find_by_reg(spapr_vio_bus(spapr),
                                                     reg));
}

/* Filters, as PAPR has them: unicast only to the MAC in force, whatever
 * the filtering switch says (it concerns multicast: QEMU, which never
 * filtered, delivered all unicast); broadcast always; multicast with
 * receive-multicast on, and with filtering on only the table's. */
static bool filter_has(const SpaprVlanFilter *f, const uint8_t *mac)
{
    for (unsigned i = 0; i < f->nmcast; i++) {
        if (!memcmp(f->mcast[i].a, mac, 6)) {
            return true;
        }
    }
    return false;
}

static bool filter_accepts(const SpaprVlanState *s, const uint8_t *dst)
{
    static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    const SpaprVlanFilter *f = &s->filter;

    if (!memcmp(dst, bcast, 6)) {
        return true;
    }
    if (dst[0] & 1) {
        return f->rx_multicast && (!f->filtering || filter_has(f, dst));
    }
    return !memcmp(dst, s->mac.a, 6);
}

/* H_FREE_LOGICAL_LAN: the adapter closes.  The MAC in force stays, as
 * PAPR has it: a guest that set one passes it again when it reopens. */
static void vlan_close_locked(SpaprVlanState *s)
{
    __atomic_store_n(&s->isopen, false, __ATOMIC_RELEASE);
    s->buf_list = 0;
    s->rx_bufs = 0;
    s->add_buf_ptr = s->use_buf_ptr = 0;
    s->rxq_ptr = 0;
    llan_rx_pools_reset(&s->pools);
    spapr_vlan_filter_reset(&s->filter);
    s->rx_irq_owed = 0;
    /* The buffers the kernel holds were the guest's to reuse as soon as
     * the hcall returns: they are taken back before it does. */
    llan_rx_lent_clear(&s->lent);
    s->reclaim_due |= s->lent_any;
    s->lent_any = false;
}

/* Device and machine reset: closed, with the command line's MAC and no
 * offload on.  Closing keeps the attributes: Linux sets them once, at
 * probe, and then opens and closes at will. */
static void vlan_reset_locked(SpaprVlanState *s)
{
    vlan_close_locked(s);
    s->mac = s->perm_mac;
    s->attrs = 0;
}

/*
 * QEMU's can_receive: with the guest open and running but no buffer
 * posted, frames wait in a backend that can hold them (an AF_XDP ring),
 * as on a NIC out of descriptors, instead of each costing a look for a
 * buffer and a drop.  Frames the device would refuse for another reason
 * are taken, so that they are dropped and counted with that reason.
 */
static bool nothing_posted_locked(SpaprVlanState *s)
{
    return s->isopen && s->rx_bufs == 0;
}

static bool must_hold_locked(SpaprVlanState *s)
{
    return nothing_posted_locked(s) && runstate_is_running();
}

/* True when a backend holding frames must now be told there is room:
 * after any hcall or reset, under the lock. */
static G_ALWAYS_INLINE inline bool rx_release_locked(SpaprVlanState *s)
{
    if (G_UNLIKELY(s->lend_wake_at) &&
        llan_rx_pools_lendable(&s->pools, LEND_MIN_BUFSIZE) >=
        s->lend_wake_at) {
        s->lend_wake_at = 0;
        return true;
    }
    if (!s->rx_held || must_hold_locked(s)) {
        return false;
    }
    s->rx_held = false;
    trace_spapr_vlan_rx_release(vlan_id(s));
    return true;
}

/* Whether an hcall or reset left lent buffers to take back; under the
 * lock.  The caller reclaims with the lock dropped: the reclaim waits
 * for the delivering thread, which takes the lock. */
static bool reclaim_due_locked(SpaprVlanState *s)
{
    bool due = s->reclaim_due;

    s->reclaim_due = false;
    return due;
}

static void spapr_vlan_reset(DeviceState *qdev)
{
    SpaprVlanState *s = (SpaprVlanState *)qdev;
    bool release, reclaim;

    qemu_mutex_lock(&s->lock);
    trace_spapr_vlan_reset(vlan_id(s));
    vlan_reset_locked(s);
    release = rx_release_locked(s);
    reclaim = reclaim_due_locked(s);
    qemu_mutex_unlock(&s->lock);
    if (reclaim) {
        net_nic_rx_reclaim(s->nic);
    }
    if (release) {
        net_nic_rx_ready(s->nic);
    }
}

/* Receive. */

/*
 * What one batch carries from frame to frame: the receive queue's
 * descriptor, read from the buffer list once per batch rather than per
 * frame (the device itself flips its toggle, under the lock), and the
 * frames that found no buffer, added to the guest's counter once.
 */
typedef struct RxBatch {
    uint64_t qbd;
    bool qbd_ok;
    uint64_t no_buffer;
    /* The backend's stamp, and the frame it belongs to (NULL: none). */
    NetRxStamp *stamp;
    const NetFrame *stamped;
} RxBatch;

static void count_no_buffer(SpaprVlanState *s, uint64_t frames)
{
    uint64_t n;

    /* The guest reads this as ethtool's rx_no_buffer; if it unmapped the
     * page the frames are still counted in our stats. */
    if (dma_ld64(&s->vdev, s->buf_list + BUF_LIST_NO_BUFFER, &n)) {
        dma_st64(&s->vdev, s->buf_list + BUF_LIST_NO_BUFFER, n + frames);
    }
}

/* After a buffer of at least @need bytes was taken from @pool.  Out of
 * line: inlined, its loop over the pools made take_from_pool() save six
 * registers for every frame, events on or off. */
static G_GNUC_NO_INLINE void trace_pool_taken(const SpaprVlanState *s,
                                              uint32_t need, int pool)
{
    const LlanRxPool *p = s->pools.sorted[pool];
    /* The pool just taken from still fits if it is not empty. */
    unsigned fitted = llan_rx_pools_fitting(&s->pools, need) + !p->count;

    /* QEMU's count: the pool's buffers with the one just taken. */
    trace_spapr_vlan_get_rx_bd_from_pool_found(pool, p->count + 1,
                                               s->rx_bufs);
    trace_spapr_vlan_rx_pool_choice(need, pool, p->bufsize,
                                    fitted > 1 ? "best fit" : "only fit");
}

static bool tracing_pool_taken(void)
{
    return trace_event_get_state_spapr_vlan_get_rx_bd_from_pool_found() ||
           trace_event_get_state_spapr_vlan_rx_pool_choice();
}

static bool take_from_pool(SpaprVlanState *s, uint32_t need, uint64_t *bd)
{
    int pool;

    if (!llan_rx_pool_take_best_fit(&s->pools, need, bd, &pool)) {
        return false;
    }
    if (G_UNLIKELY(tracing_pool_taken())) {
        trace_pool_taken(s, need, pool);
    }
    return true;
}

static bool tracing_page_found(void)
{
    return trace_event_get_state_spapr_vlan_get_rx_bd_from_page_found();
}

static LlanPageResult take_from_page(SpaprVlanState *s, uint32_t need,
                                     uint64_t *bd)
{
    LlanPageResult r = llan_rx_page_take_first_fit(&s->vdev, s->buf_list,
                                                   &s->use_buf_ptr, need, bd);

    /* Guarded as spapr_vlan_receive is. */
    if (r == LLAN_PAGE_OK && G_UNLIKELY(tracing_page_found())) {
        trace_spapr_vlan_get_rx_bd_from_page_found(s->use_buf_ptr,
                                                   s->rx_bufs);
    }
    return r;
}

/* Takes a buffer of at least @need bytes; false with *drop set when the
 * frame cannot have one. */
static bool take_buffer(SpaprVlanState *s, RxBatch *b, uint32_t need,
                        uint64_t *bd, NetRxResult *drop)
{
    if (s->use_rx_buffer_pools) {
        if (take_from_pool(s, need, bd)) {
            return true;
        }
    } else {
        switch (take_from_page(s, need, bd)) {
        case LLAN_PAGE_OK:
            return true;
        case LLAN_PAGE_DMA_ERROR:
            *drop = NET_RX_DROP_DMA_ERROR;
            return false;
        case LLAN_PAGE_NONE:
            break;
        }
    }
    b->no_buffer++;
    *drop = NET_RX_DROP_NO_BUFFER;
    return false;
}

/* Flips the queue's toggle in the buffer list: the guest's next lap. */
static bool wrap_rxq(SpaprVlanState *s, RxBatch *b)
{
    s->rxq_ptr = 0;
    b->qbd ^= LLAN_BD_TOGGLE;
    return dma_st64(&s->vdev, s->buf_list + BUF_LIST_RXQ_BD, b->qbd);
}

/* The slot of the entry about to be written gets @entered (0: none). */
static void set_rxq_stamp(SpaprVlanState *s, uint64_t entered)
{
    uint64_t slot = s->rxq_ptr / RXQ_ENTRY_SIZE;

    if (slot < s->rx_nstamps) {
        __atomic_store_n(&s->rx_stamps[slot], entered, __ATOMIC_RELAXED);
    }
}

/* The entry about to be written carries the stamped frame: the stamp
 * goes where the guest looks for it, and the clock is read, before the
 * entry's control byte, so that the guest cannot take the entry before
 * either. */
static void stamp_rxq_entry(SpaprVlanState *s, NetRxStamp *stamp)
{
    set_rxq_stamp(s, stamp->entered);
    stamp->visible = latency_now_ns();
}

/* The control byte was refused: the entry is not the guest's, and the
 * next frame written to its slot must not be measured from this stamp. */
static void unstamp_rxq_entry(SpaprVlanState *s, NetRxStamp *stamp)
{
    set_rxq_stamp(s, 0);
    stamp->visible = 0;
}

/* Writes the entry for a frame of @len at @offset in the buffer whose
 * handle is @handle, with the offload flags @flags; @last is the last
 * frame it carries.  The control byte goes last, with release semantics,
 * so a guest polling it never sees a half-written entry. */
static bool write_rxq_entry(SpaprVlanState *s, RxBatch *b, uint64_t handle,
                            uint16_t offset, uint32_t len, uint8_t flags,
                            const NetFrame *last)
{
    uint8_t entry[RXQ_ENTRY_SIZE] = { 0 };
    uint32_t qlen = LLAN_BD_LEN(b->qbd);

    if (!b->qbd_ok || qlen < RXQ_ENTRY_SIZE) {
        return false;
    }
    /* The guest shrank its queue under us: wrap early. */
    if (s->rxq_ptr + RXQ_ENTRY_SIZE > qlen && !wrap_rxq(s, b)) {
        return false;
    }
    /* The entry that wraps must be able to flip the toggle, or the guest
     * would take the entries after it for stale ones. */
    if (s->rxq_ptr + RXQ_ENTRY_SIZE >= qlen &&
        !spapr_vio_dma_valid(&s->vdev, s->buf_list + BUF_LIST_RXQ_BD, 8,
                             DMA_DEVICE_WRITES)) {
        return false;
    }
    stn_be_p(entry + 2, 2, offset);
    stn_be_p(entry + 4, 4, len);
    stn_be_p(entry + 8, 8, handle);
    entry[0] = RXQ_CTRL_VALID | flags |
               ((b->qbd & LLAN_BD_TOGGLE) ? 0 : RXQ_CTRL_TOGGLE);
    if (G_UNLIKELY(last == b->stamped)) {
        stamp_rxq_entry(s, b->stamp);
    }
    if (!spapr_vio_dma_write_release(&s->vdev,
                                     LLAN_BD_ADDR(b->qbd) + s->rxq_ptr,
                                     entry, sizeof(entry))) {
        if (last == b->stamped) {
            unstamp_rxq_entry(s, b->stamp);
        }
        return false;
    }
    if (G_UNLIKELY(trace_event_get_state_spapr_vlan_receive_wrote())) {
        trace_spapr_vlan_receive_wrote(s->rxq_ptr, ldn_be_p(entry, 8),
                                       ldn_be_p(entry + 8, 8));
    }
    s->rxq_ptr += RXQ_ENTRY_SIZE;
    return s->rxq_ptr < qlen || wrap_rxq(s, b);
}

/* The verdict on a received frame's checksum, reached before delivery. */
typedef struct RxCsum {
    bool checked;           /* a TCP/UDP frame the attributes cover */
    /* False while a TCP field holding the pseudo-header sum leaves the
     * verdict at partial for now: see rx_csum_check(). */
    bool settled;
    LlanRxCsum verdict;
    LlanL4 l4;
    uint16_t completed;
} RxCsum;

/* What a batch learns of its frames when the guest has offloads on. */
typedef struct RxOffload {
    RxCsum csum[NET_BATCH_MAX];
    bool mergeable[NET_BATCH_MAX];
    LlanLroSeg seg[NET_BATCH_MAX];
} RxOffload;

static void rx_csum_check(const SpaprVlanState *s, const NetFrame *f,
                          LlanL4 *l4, RxCsum *c)
{
    LlanOffloadError why;
    uint64_t want;

    c->checked = false;
    if (!llan_find_l4(f->data, f->len, l4, &why)) {
        return;
    }
    want = l4->ip_version == 4 ? ILLAN_IPV4_TCP_CSUM : ILLAN_IPV6_TCP_CSUM;
    if (!(s->attrs & want)) {
        return;
    }
    *c = (RxCsum){ .checked = true, .l4 = *l4 };
    /*
     * Such a field is partial or good, never bad: a merged segment goes
     * up the same either way, so only a frame delivered alone needs the
     * sum over its segment that tells them apart.  A local TCP sender's
     * stream is all partial fields, and summing every segment was the
     * I/O thread's largest cost of ours (docs/devel/benchmarks.md).
     */
    if (l4->proto == LLAN_IPPROTO_TCP &&
        llan_rx_csum_field_is_pseudo(f->data, l4)) {
        c->verdict = LLAN_RX_CSUM_PARTIAL;
        return;
    }
    c->settled = true;
    c->verdict = llan_rx_csum(f->data, l4, &c->completed);
}

/* The sum rx_csum_check() left for a frame that goes up alone. */
static void rx_csum_settle(const NetFrame *f, RxCsum *c)
{
    if (c->checked && !c->settled) {
        c->verdict = llan_rx_csum(f->data, &c->l4, &c->completed);
        c->settled = true;
    }
}

/*
 * Receive checksum offload, for a frame already in the guest's buffer at
 * @data: a checksum that verifies is flagged good; one that holds only
 * the pseudo-header sum (a local sender's, left for hardware to finish)
 * is flagged good too, its TCP field zeroed so that Linux marks it
 * CHECKSUM_PARTIAL, its UDP field completed; a bad one gets no flag, for
 * the guest's stack to drop.  Returns the entry's flags.
 */
static uint8_t rx_csum_apply_locked(SpaprVlanState *s, const RxCsum *c,
                                    uint64_t data)
{
    uint8_t be[2] = { 0 };

    switch (c->verdict) {
    case LLAN_RX_CSUM_GOOD:
        trace_spapr_vlan_rx_csum(c->l4.proto, "good");
        s->stats.rx_csum_good++;
        return LLAN_RXQ_CSUM_GOOD;
    case LLAN_RX_CSUM_PARTIAL:
        trace_spapr_vlan_rx_csum(c->l4.proto, "partial");
        s->stats.rx_csum_partial++;
        if (c->l4.proto == LLAN_IPPROTO_UDP) {
            stn_be_p(be, 2, c->completed);
        }
        if (!spapr_vio_dma_write(&s->vdev, data + c->l4.csum_at, be, 2)) {
            return 0;
        }
        return c->l4.proto == LLAN_IPPROTO_TCP
               ? LLAN_RXQ_NO_CSUM | LLAN_RXQ_CSUM_GOOD : LLAN_RXQ_CSUM_GOOD;
    case LLAN_RX_CSUM_BAD:
        break;
    }
    trace_spapr_vlan_rx_csum(c->l4.proto, "bad");
    s->stats.rx_csum_bad++;
    return 0;
}

/*
 * A partial checksum (a local sender's, left for hardware to finish) in
 * a frame whose IP version the guest has no checksum offload for: Linux
 * would drop it, and no frame on a wire carries one, so the device
 * completes it in the guest's copy at @data, as PowerVM does.  False
 * when that write fails.
 */
static bool rx_csum_complete_locked(SpaprVlanState *s, const NetFrame *f,
                                    uint64_t data)
{
    LlanOffloadError why;
    uint16_t completed;
    uint8_t be[2];
    LlanL4 l4;

    if (!llan_find_l4(f->data, f->len, &l4, &why) ||
        !llan_rx_csum_partial(f->data, &l4, &completed)) {
        return true;
    }
    stn_be_p(be, 2, completed);
    if (!spapr_vio_dma_write(&s->vdev, data + l4.csum_at, be, 2)) {
        return false;
    }
    trace_spapr_vlan_rx_csum(l4.proto, "completed");
    s->stats.rx_csum_completed++;
    return true;
}

/* Whether Linux's large-packet path takes @f for TCP: by the protocol
 * of the IP header alone, fragments included. */
static bool linux_sees_tcp(const NetFrame *f)
{
    switch (ldn_be_p(f->data + 12, 2)) {
    case LLAN_ETHERTYPE_IPV4:
        return f->len >= LLAN_ETH_HLEN + LLAN_IPV4_MIN_HLEN &&
               f->data[LLAN_ETH_HLEN + 9] == LLAN_IPPROTO_TCP;
    case LLAN_ETHERTYPE_IPV6:
        return f->len >= LLAN_ETH_HLEN + LLAN_IPV6_HLEN &&
               f->data[LLAN_ETH_HLEN + 6] == LLAN_IPPROTO_TCP;
    }
    return false;
}

/*
 * Linux's ibmveth takes a frame longer than its MTU + 14 for a large
 * packet and, without LRG_PKT, reads a TCP one's MSS from its checksum
 * field, which it zeroes.  No hcall tells the device the MTU, so it
 * assumes Ethernet's 1500: a longer TCP frame goes only as a large
 * packet, its own payload as the MSS (one segment), which Linux reads
 * right at any MTU, and only to a guest that turned large receive on.
 * False when it cannot go so (large receive off, or headers the device
 * cannot parse): the frame is dropped as jumbo-tcp.
 */
static bool long_tcp_mss(const SpaprVlanState *s, const NetFrame *f,
                         uint64_t *mss)
{
    LlanOffloadError why;
    LlanL4 l4;

    if (!(s->attrs & ILLAN_LRG_SR_ENABLED) ||
        !llan_find_l4(f->data, f->len, &l4, &why) ||
        l4.proto != LLAN_IPPROTO_TCP) {
        return false;
    }
    *mss = l4.l4_len - (f->data[l4.l4 + 12] >> 4) * 4;
    return true;
}

/* Receive zero copy. */

/* The buffer the kernel filled is the one best fit would take: no
 * non-empty pool of smaller buffers holds @need bytes. */
static bool lent_is_best_fit(const SpaprVlanState *s, uint64_t bd,
                             uint32_t need)
{
    int32_t size = LLAN_BD_LEN(bd);

    return (uint32_t)size >= need &&
           size <= llan_rx_pools_best_fit_size(&s->pools, need);
}

/* Where the guest's TCEs put the frame of a buffer at @bd: one run of
 * RAM, @len bytes from its data, or false. */
static bool buffer_data_gpa(SpaprVlanState *s, uint64_t bd, uint32_t len,
                            uint64_t *gpa)
{
    if (!spapr_tce_contiguous(s->vdev.tcet, LLAN_BD_ADDR(bd),
                              RX_DATA_OFFSET + len, DMA_DEVICE_WRITES, gpa)) {
        return false;
    }
    *gpa += RX_DATA_OFFSET;
    return true;
}

/* The frame at @offset in the buffer at @bd.  A frame the kernel wrote
 * into that very buffer moves within it, through a copy of its own. */
static bool write_frame(SpaprVlanState *s, uint64_t bd, uint16_t offset,
                        const NetFrame *f, bool same_buffer)
{
    uint8_t moved[NET_LEND_DATA_ROOM];

    if (same_buffer) {
        memcpy(moved, f->data, f->len);
        return spapr_vio_dma_write(&s->vdev, LLAN_BD_ADDR(bd) + offset,
                                   moved, f->len);
    }
    return spapr_vio_dma_write(&s->vdev, LLAN_BD_ADDR(bd) + offset, f->data,
                               f->len);
}

/*
 * One frame into one buffer; @csum is NULL when no offload is on.
 * @lent_bd: NULL, or the buffer the kernel wrote the frame into (0: none
 * found, as after a close).  The frame stays
 * there when best fit takes that buffer anyway and the guest still maps
 * it where the kernel wrote; otherwise it is copied, and a lent buffer
 * best fit did not take stays in *@lent_bd for the caller to give back.
 */
static NetRxResult receive_one(SpaprVlanState *s, RxBatch *b,
                               const NetFrame *f, const RxCsum *csum,
                               uint64_t *lent_bd)
{
    uint16_t offset = RX_DATA_OFFSET;
    uint64_t bd, handle, mss = 0, gpa;
    NetRxResult drop;
    uint8_t flags = 0;
    bool own = false, in_place = false;

    /* Guarded so that the id and count are loaded only when the event is
     * on: the compiler loaded them ahead of trace_*()'s own check. */
    if (G_UNLIKELY(trace_event_get_state_spapr_vlan_receive())) {
        trace_spapr_vlan_receive(vlan_id(s), s->rx_bufs);
    }
    if (!s->isopen) {
        return NET_RX_DROP_NOT_REGISTERED;
    }
    if (!filter_accepts(s, f->data)) {
        return NET_RX_DROP_FILTERED;
    }
    if (f->len > RX_PLAIN_TCP_MAX && linux_sees_tcp(f)) {
        if (!long_tcp_mss(s, f, &mss)) {
            return NET_RX_DROP_JUMBO_TCP;
        }
        offset = RX_LRO_OFFSET;
    }
    if (G_UNLIKELY(lent_bd != NULL) && *lent_bd &&
        lent_is_best_fit(s, *lent_bd, f->len + offset)) {
        bd = *lent_bd;
        *lent_bd = 0;
        own = true;
        llan_rx_pools_lent_taken(&s->pools, bd);
        in_place = offset == RX_DATA_OFFSET &&
                   buffer_data_gpa(s, bd, f->len, &gpa) && gpa == f->lent;
    } else if (!take_buffer(s, b, f->len + offset, &bd, &drop)) {
        return drop;
    }
    /* A page-mode guest can plant valid descriptors it never posted. */
    if (s->rx_bufs) {
        s->rx_bufs--;
    }
    if (in_place) {
        /* The kernel wrote it: the migration must see the pages. */
        guest_ram_mark_dirty(spapr_tce_table_ram(s->vdev.tcet), f->lent,
                             f->len);
        s->stats.rx_zero_copy++;
    } else if (!write_frame(s, bd, offset, f, own)) {
        /* The buffer is the guest's again only through its queue entry:
         * if a DMA fails, the buffer is lost, as on PAPR firmware. */
        return NET_RX_DROP_DMA_ERROR;
    } else if (f->lent) {
        s->stats.rx_copy_down++;
    }
    trace_spapr_vlan_receive_dma_completed();
    if (offset == RX_LRO_OFFSET) {
        if (!dma_st64(&s->vdev, LLAN_BD_ADDR(bd) + RX_DATA_OFFSET, mss)) {
            return NET_RX_DROP_DMA_ERROR;
        }
        flags = LLAN_RXQ_LRG_PKT;
    }
    if (csum && csum->checked) {
        flags |= rx_csum_apply_locked(s, csum, LLAN_BD_ADDR(bd) + offset);
    } else if (!rx_csum_complete_locked(s, f, LLAN_BD_ADDR(bd) + offset)) {
        return NET_RX_DROP_DMA_ERROR;
    }
    if (!dma_ld64(&s->vdev, LLAN_BD_ADDR(bd), &handle) ||
        !write_rxq_entry(s, b, handle, offset, f->len, flags, f)) {
        return NET_RX_DROP_DMA_ERROR;
    }
    s->stats.rx_frames++;
    s->stats.rx_bytes += f->len;
    s->stats.rx_buffer_bytes += LLAN_BD_LEN(bd);
    s->stats.rx_long_tcp += offset == RX_LRO_OFFSET;
    return NET_RX_DELIVERED;
}

/* The cache lines of @f after the one its data starts in, which came
 * with the batch's prefetch.  A lent buffer's data starts 8 bytes into
 * a line, so that even a 60-byte frame has a second one. */
static inline void prefetch_after_first_line(const NetFrame *f)
{
    uintptr_t end = (uintptr_t)f->data + f->len;

    for (uintptr_t at = ((uintptr_t)f->data | 63) + 1; at < end; at += 64) {
        __builtin_prefetch((const void *)at);
    }
}

/* Every frame's checksum verdict, and with large receive on which frames
 * could be merged: once per frame, before any is delivered. */
static void rx_offload_scan(const SpaprVlanState *s, const NetFrame *frames,
                            unsigned n, RxOffload *off)
{
    bool lro = s->lro && (s->attrs & ILLAN_LRG_SR_ENABLED);

    for (unsigned i = 0; i < n; i++) {
        LlanL4 l4;

        if (i + 1 < n) {
            prefetch_after_first_line(&frames[i + 1]);
        }
        rx_csum_check(s, &frames[i], &l4, &off->csum[i]);
        /* A partial checksum is a local sender's: its data is as
         * trusted as a verified one's, and the merged frame goes up as
         * partial anyway. */
        off->mergeable[i] = lro && off->csum[i].checked &&
                            off->csum[i].verdict != LLAN_RX_CSUM_BAD &&
                            llan_lro_segment(frames[i].data, frames[i].len,
                                             &l4, &off->seg[i]);
    }
}

/* How many frames from @i on make one merged frame (1: none merge). */
static unsigned lro_run(const RxOffload *off, const NetFrame *frames,
                        unsigned i, unsigned n)
{
    const LlanLroSeg *first = &off->seg[i];
    uint32_t len;
    unsigned j;

    if (!off->mergeable[i]) {
        return 1;
    }
    len = first->hdr_len + first->payload;
    for (j = i + 1; j < n && off->mergeable[j] &&
                    len + off->seg[j].payload <= RX_LRO_FRAME_MAX &&
                    llan_lro_continues(frames[i].data, first,
                                       &off->seg[j - 1], frames[j].data,
                                       &off->seg[j]); j++) {
        len += off->seg[j].payload;
    }
    return j - i;
}

/* A buffer for a merged frame, or false (nothing counted) when none is
 * big enough: the segments then go one by one. */
static bool take_lro_buffer(SpaprVlanState *s, uint32_t need, uint64_t *bd)
{
    if (s->use_rx_buffer_pools) {
        return take_from_pool(s, need, bd);
    }
    return take_from_page(s, need, bd) == LLAN_PAGE_OK;
}

/* Writes the merged frame's headers and each segment's data into the
 * buffer at @data. */
static bool write_merged(SpaprVlanState *s, uint64_t data,
                         const NetFrame *frames, const LlanLroSeg *segs,
                         unsigned run, uint32_t payload)
{
    uint8_t hdr[LLAN_LRO_MAX_HDR];
    uint32_t at = segs[0].hdr_len;

    llan_lro_header(hdr, frames[0].data, &segs[0], frames[run - 1].data,
                    &segs[run - 1], payload);
    if (!spapr_vio_dma_write(&s->vdev, data, hdr, segs[0].hdr_len)) {
        return false;
    }
    for (unsigned k = 0; k < run; k++) {
        if (!spapr_vio_dma_write(&s->vdev, data + at,
                                 frames[k].data + segs[k].hdr_len,
                                 segs[k].payload)) {
            return false;
        }
        at += segs[k].payload;
    }
    return true;
}

/*
 * Delivers @run (> 1) segments as one large packet: the frame at offset
 * 16, the first segment's payload length as the MSS (big-endian u64) at
 * offset 8, where Linux reads it, and LRG_PKT | NO_CSUM | CSUM_GOOD, so
 * that Linux makes it a GSO packet of that MSS, marked CHECKSUM_PARTIAL
 * over the zeroed TCP field (correct when forwarded and segmented again
 * only from Linux 6.6, 6.5.7 and 6.1.57: lro=off serves the others).
 * False, with nothing done, when the frames cannot be merged here; the
 * caller then delivers them one by one, and its drop reasons apply.
 */
static bool deliver_merged(SpaprVlanState *s, RxBatch *b,
                           const NetFrame *frames, const LlanLroSeg *segs,
                           unsigned run, NetRxResult *results)
{
    NetRxResult result = NET_RX_DROP_DMA_ERROR;
    uint32_t payload = 0, len;
    uint64_t bd, handle;

    if (!s->isopen || !filter_accepts(s, frames[0].data)) {
        return false;
    }
    /* Guarded so that the id and count are loaded only when the event is
     * on: the compiler loaded them ahead of trace_*()'s own check. */
    if (G_UNLIKELY(trace_event_get_state_spapr_vlan_receive())) {
        trace_spapr_vlan_receive(vlan_id(s), s->rx_bufs);
    }
    for (unsigned k = 0; k < run; k++) {
        payload += segs[k].payload;
    }
    len = segs[0].hdr_len + payload;
    if (!take_lro_buffer(s, len + RX_LRO_OFFSET, &bd)) {
        return false;
    }
    if (s->rx_bufs) {
        s->rx_bufs--;
    }
    if (write_merged(s, LLAN_BD_ADDR(bd) + RX_LRO_OFFSET, frames, segs, run,
                     payload) &&
        dma_st64(&s->vdev, LLAN_BD_ADDR(bd) + RX_DATA_OFFSET,
                 segs[0].payload) &&
        dma_ld64(&s->vdev, LLAN_BD_ADDR(bd), &handle) &&
        write_rxq_entry(s, b, handle, RX_LRO_OFFSET, len,
                        LLAN_RXQ_LRG_PKT | LLAN_RXQ_NO_CSUM |
                        LLAN_RXQ_CSUM_GOOD, &frames[run - 1])) {
        trace_spapr_vlan_rx_lro_merge(run, len, segs[0].payload);
        result = NET_RX_DELIVERED;
        s->stats.rx_frames++;
        s->stats.rx_bytes += len;
        s->stats.rx_buffer_bytes += LLAN_BD_LEN(bd);
        s->stats.rx_csum_good += run;
        s->stats.rx_lro_frames++;
        s->stats.rx_lro_segments += run;
    }
    for (unsigned k = 0; k < run; k++) {
        results[k] = result;
    }
    return true;
}

/* Delivers the frames from @i on, merging a run of segments when it can;
 * returns how many it took. */
static unsigned receive_offloaded(SpaprVlanState *s, RxBatch *b,
                                  const RxOffload *off,
                                  const NetFrame *frames, unsigned i,
                                  unsigned n, NetRxResult *results,
                                  uint64_t *lent)
{
    unsigned run = lro_run(off, frames, i, n);
    RxCsum csum;

    if (run > 1 && deliver_merged(s, b, frames + i, off->seg + i, run,
                                  results + i)) {
        return run;
    }
    csum = off->csum[i];
    rx_csum_settle(&frames[i], &csum);
    results[i] = receive_one(s, b, &frames[i], &csum, lent ? &lent[i] : NULL);
    return 1;
}

/* Returns how many of the frames it took; the rest are held. */
/* The lent buffers the batch's frames came in, out of the table; false
 * when none did.  A batch may mix them with the backend's own frames. */
static bool take_lent_locked(SpaprVlanState *s, const NetFrame *frames,
                             unsigned n, uint64_t *lent)
{
    uint64_t any = 0;

    for (unsigned i = 0; i < n; i++) {
        any |= frames[i].lent;
    }
    if (G_LIKELY(!any)) {
        return false;
    }
    for (unsigned i = 0; i < n; i++) {
        lent[i] = 0;
        if (frames[i].lent) {
            llan_rx_lent_take(&s->lent, frames[i].lent, &lent[i]);
        }
    }
    return true;
}

/* After the batch: the lent buffers no frame stayed in go back to their
 * pool, to lend again; those of held frames stay lent. */
static void settle_lent_locked(SpaprVlanState *s, const NetFrame *frames,
                               unsigned taken, unsigned n,
                               const uint64_t *lent)
{
    for (unsigned i = 0; i < n; i++) {
        if (!lent[i]) {
            continue;
        }
        if (i < taken) {
            llan_rx_pools_unlend(&s->pools, lent[i], false);
        } else {
            llan_rx_lent_put(&s->lent, frames[i].lent, lent[i]);
        }
    }
}

/* Returns how many of the frames it took; the rest are held.  @lent:
 * NULL, or the lent buffer of each frame (see receive_one). */
static unsigned receive_frames_locked(SpaprVlanState *s,
                                      const NetFrame *frames, unsigned n,
                                      bool may_hold, NetRxStamp *stamp,
                                      NetRxResult *results, uint64_t *lent)
{
    RxBatch b = { .stamp = stamp, .stamped = stamp ? &frames[n - 1] : NULL };
    /* Filled only when an offload is on: a branch otherwise. */
    RxOffload off;
    bool offload = s->attrs & RX_CSUM_ATTRS;
    unsigned i;

    /* Stopped means no frame touches guest memory.  Only the main-loop
     * backends get here then: the I/O threads are parked. */
    if (!runstate_is_running()) {
        for (i = 0; i < n; i++) {
            results[i] = NET_RX_DROP_VM_STOPPED;
        }
        return n;
    }
    /* The frames were written on another CPU: start every cache miss
     * now rather than one per frame. */
    for (i = 0; i < n; i++) {
        __builtin_prefetch(frames[i].data);
    }
    if (s->isopen) {
        b.qbd_ok = dma_ld64(&s->vdev, s->buf_list + BUF_LIST_RXQ_BD, &b.qbd);
    }
    g_assert(n <= NET_BATCH_MAX);
    if (offload) {
        rx_offload_scan(s, frames, n, &off);
    }
    /* Running was checked above, once per batch. */
    for (i = 0; i < n;) {
        if (may_hold && nothing_posted_locked(s)) {
            s->rx_held = true;
            s->stats.rx_held++;
            trace_spapr_vlan_rx_hold(vlan_id(s), n - i);
            break;
        }
        if (offload) {
            i += receive_offloaded(s, &b, &off, frames, i, n, results, lent);
        } else {
            results[i] = receive_one(s, &b, &frames[i], NULL,
                                     lent ? &lent[i] : NULL);
            i++;
        }
    }
    if (b.no_buffer) {
        count_no_buffer(s, b.no_buffer);
    }
    return i;
}

static unsigned receive_batch_locked(SpaprVlanState *s, const NetFrame *frames,
                                     unsigned n, bool may_hold,
                                     NetRxStamp *stamp,
                                     NetRxResult *results)
{
    uint64_t lent[NET_BATCH_MAX];
    unsigned taken;

    if (G_LIKELY(!take_lent_locked(s, frames, n, lent))) {
        return receive_frames_locked(s, frames, n, may_hold, stamp, results,
                                     NULL);
    }
    taken = receive_frames_locked(s, frames, n, may_hold, stamp, results,
                                  lent);
    settle_lent_locked(s, frames, taken, n, lent);
    return taken;
}

/*
 * Whether @delivered more frames make the interrupt due.  Within a run of
 * batches the backend says are followed at once (@more), the pulse waits
 * for the end of the run or for RX_IRQ_RUN_MAX frames, whichever is
 * first: a guest woken once per batch while the backend has a backlog
 * spends more on waking than on the frames.  H_VIO_SIGNAL takes the lock
 * this runs under, so either the guest's enable comes first and is seen
 * here, or the entries just written are there when the guest looks at
 * its queue after enabling.
 */
static bool rx_irq_due_locked(SpaprVlanState *s, unsigned delivered,
                              bool more)
{
    if (!(s->vdev.signal_state & VLAN_SIGNAL_MASK)) {
        s->rx_irq_owed = 0;
        return false;
    }
    s->rx_irq_owed += delivered;
    if (!s->rx_irq_owed || (more && s->rx_irq_owed < RX_IRQ_RUN_MAX)) {
        return false;
    }
    s->rx_irq_owed = 0;
    s->stats.rx_interrupts++;
    return true;
}

static unsigned spapr_vlan_receive_batch(void *opaque, const NetFrame *frames,
                                         unsigned n, unsigned flags,
                                         NetRxStamp *stamp,
                                         NetRxResult *results)
{
    SpaprVlanState *s = opaque;
    unsigned taken, delivered = 0;
    bool irq;

    qemu_mutex_lock(&s->lock);
    taken = receive_batch_locked(s, frames, n, flags & NET_RX_MAY_HOLD,
                                 stamp, results);
    for (unsigned i = 0; i < taken; i++) {
        if (results[i] == NET_RX_DELIVERED) {
            delivered++;
        } else {
            s->stats.rx_dropped[results[i]]++;
            if (G_UNLIKELY(trace_event_get_state_spapr_vlan_rx_drop())) {
                trace_spapr_vlan_rx_drop(vlan_id(s),
                                         net_rx_result_name(results[i]),
                                         frames[i].len);
            }
        }
    }
    /* Held frames wait for buffers only the guest can post. */
    irq = rx_irq_due_locked(s, delivered,
                            (flags & NET_RX_MORE) && taken == n);
    qemu_mutex_unlock(&s->lock);
    if (irq) {
        spapr_vio_irq_pulse(&s->vdev);
    }
    return taken;
}

/*
 * Lends buffers of the smallest pool that holds a whole lent frame, each
 * one whose I/O pages the guest mapped onto one run of RAM (Linux maps
 * each buffer so); the others go to the bottom of the pool, for copies.
 * At most @max looked at per call, so a pool the kernel cannot use
 * costs a bounded look each time.  Only while the guest runs: a stopped
 * or migrated machine's buffers are not the kernel's to fill.
 */
static unsigned spapr_vlan_rx_lend(void *opaque, uint64_t *addrs,
                                   unsigned max, unsigned keep,
                                   NetLendOutlook *outlook)
{
    SpaprVlanState *s = opaque;
    unsigned n = 0, looked = 0, refused = 0, lendable;
    bool lending;
    uint64_t bd, gpa;

    qemu_mutex_lock(&s->lock);
    lending = s->isopen && runstate_is_running();
    while (lending && looked++ < max &&
           llan_rx_pools_lend(&s->pools, LEND_MIN_BUFSIZE, keep, &bd)) {
        if (!buffer_data_gpa(s, bd, NET_LEND_DATA_ROOM, &gpa) ||
            gpa < NET_LEND_HEADROOM || !llan_rx_lent_put(&s->lent, gpa, bd)) {
            llan_rx_pools_unlend(&s->pools, bd, true);
            s->stats.rx_lend_refused++;
            refused++;
            continue;
        }
        addrs[n++] = gpa;
    }
    s->lent_any |= n > 0;
    lendable = llan_rx_pools_lendable(&s->pools, LEND_MIN_BUFSIZE);
    /* Buffers that were all refused are none to lend, however many the
     * pool holds: the backend must feed the kernel frames of its own. */
    *outlook = !lending ? NET_LEND_OFF
             : lendable > 0 && (n || !refused) ? NET_LEND_KEPT
             : NET_LEND_EMPTY;
    s->lend_wake_at = lending && lendable <= keep ? keep + 1 : 0;
    qemu_mutex_unlock(&s->lock);
    return n;
}

/* Frames the net core dropped before the device saw them. */
static void spapr_vlan_rx_unlend(void *opaque, const NetFrame *frames,
                                 unsigned n)
{
    SpaprVlanState *s = opaque;
    uint64_t bd;

    qemu_mutex_lock(&s->lock);
    for (unsigned i = 0; i < n; i++) {
        if (llan_rx_lent_take(&s->lent, frames[i].lent, &bd)) {
            llan_rx_pools_unlend(&s->pools, bd, false);
        }
    }
    qemu_mutex_unlock(&s->lock);
}

static void spapr_vlan_rx_run_end(void *opaque)
{
    SpaprVlanState *s = opaque;
    bool irq;

    qemu_mutex_lock(&s->lock);
    irq = rx_irq_due_locked(s, 0, false);
    qemu_mutex_unlock(&s->lock);
    if (irq) {
        spapr_vio_irq_pulse(&s->vdev);
    }
}

/* The work of the hcalls, under the device lock. */

/* A page H_REGISTER_LOGICAL_LAN takes; @what names its argument. */
static bool page_ok(SpaprVioDevice *dev, const char *hcall, const char *what,
                    uint64_t addr)
{
    const char *why =
        addr >> 32 ? "is above 4 GiB" :
        addr % LLAN_PAGE_SIZE ? "is not 4 KiB aligned" :
        !spapr_vio_dma_valid(dev, addr, LLAN_PAGE_SIZE, DMA_BOTH) ?
            "is not mapped for read and write" : NULL;

    if (why) {
        hcall_guest_error(hcall, "%s 0x%" PRIx64 " %s", what, addr, why);
    }
    return !why;
}

/* @align is a power of two: a mask, not a division, on every buffer the
 * guest posts (a division was 1 % of a vCPU's time at 64 B). */
static bool bd_ok(SpaprVioDevice *dev, const char *hcall, const char *what,
                  uint64_t bd, uint32_t align, uint32_t min_len)
{
    uint64_t addr = LLAN_BD_ADDR(bd);
    uint32_t len = LLAN_BD_LEN(bd);

    if ((addr | len) & (align - 1)) {
        hcall_guest_error(hcall, "%s 0x%" PRIx64 ": address 0x%" PRIx64
                          " or length %" PRIu32 " is not a multiple of %"
                          PRIu32, what, bd, addr, len, align);
        return false;
    }
    if (len < min_len) {
        hcall_guest_error(hcall, "%s 0x%" PRIx64 ": length %" PRIu32
                          " is below the minimum of %" PRIu32, what, bd, len,
                          min_len);
        return false;
    }
    if (!spapr_vio_dma_valid(dev, addr, len, DMA_BOTH)) {
        hcall_guest_error(hcall, "%s 0x%" PRIx64 ": %" PRIu32 " bytes at 0x%"
                          PRIx64 " are not mapped for read and write", what,
                          bd, len, addr);
        return false;
    }
    return true;
}

/* The adapter must be registered for every LAN hcall but register and
 * the attributes. */
static bool open_ok(SpaprVlanState *s, const char *hcall)
{
    if (!s->isopen) {
        hcall_guest_error(hcall, "unit 0x%" PRIx32 " is not registered "
                          "(h_register_logical_lan first)", s->vdev.reg);
    }
    return s->isopen;
}

static int64_t register_locked(SpaprVlanState *s, const char *hcall,
                               uint64_t buf_list, uint64_t rec_queue,
                               uint64_t filter_list)
{
    SpaprVioDevice *dev = &s->vdev;

    if (s->isopen) {
        hcall_guest_error(hcall, "unit 0x%" PRIx32 " is already registered "
                          "(h_free_logical_lan first)", dev->reg);
        return H_RESOURCE;
    }
    if (!page_ok(dev, hcall, "buf_list", buf_list) ||
        !page_ok(dev, hcall, "filter_list", filter_list)) {
        return H_PARAMETER;
    }
    if (!(rec_queue & LLAN_BD_VALID)) {
        hcall_guest_error(hcall, "rec_queue 0x%" PRIx64 " lacks the VALID "
                          "bit", rec_queue);
        return H_PARAMETER;
    }
    if (!bd_ok(dev, hcall, "rec_queue", rec_queue, RXQ_ENTRY_SIZE,
               RXQ_ENTRY_SIZE)) {
        return H_PARAMETER;
    }
    /* Checked above; only a TCE changed by another vCPU meanwhile fails. */
    if (!dma_st64(dev, buf_list + BUF_LIST_RXQ_BD, rec_queue & ~LLAN_BD_TOGGLE) ||
        !dma_st64(dev, buf_list + BUF_LIST_FILTER_BD,
                  LLAN_BD(LLAN_PAGE_SIZE, filter_list)) ||
        !dma_zero(dev, buf_list + 16, LLAN_PAGE_SIZE - 16) ||
        !dma_zero(dev, LLAN_BD_ADDR(rec_queue), LLAN_BD_LEN(rec_queue))) {
        hcall_guest_error(hcall, "buf_list 0x%" PRIx64 " or rec_queue 0x%"
                          PRIx64 " was unmapped during the call", buf_list,
                          rec_queue);
        return H_PARAMETER;
    }
    s->buf_list = buf_list;
    /* Filters are set up on an open adapter; each open starts from all. */
    spapr_vlan_filter_reset(&s->filter);
    dev->signal_state = 0;
    s->add_buf_ptr = s->use_buf_ptr = 8;
    s->rx_bufs = 0;
    s->rxq_ptr = 0;
    __atomic_store_n(&s->isopen, true, __ATOMIC_RELEASE);
    return H_SUCCESS;
}

/* Posts one receive buffer; the caller has checked the descriptor.  A
 * full pool or page is our limit, not the guest's mistake. */
static int64_t add_buffer_locked(SpaprVlanState *s, const char *hcall,
                                 uint64_t bd)
{
    if (s->use_rx_buffer_pools) {
        if (llan_rx_pools_add(&s->pools, bd) != LLAN_RX_POOL_ADDED) {
            return H_RESOURCE;
        }
    } else {
        if (s->rx_bufs >= LLAN_PAGE_SLOTS) {
            return H_RESOURCE;
        }
        switch (llan_rx_page_add(&s->vdev, s->buf_list, &s->add_buf_ptr, bd)) {
        case LLAN_PAGE_OK:
            trace_spapr_vlan_add_rxbuf_to_page(s->add_buf_ptr, s->rx_bufs, bd);
            break;
        case LLAN_PAGE_NONE:
            return H_RESOURCE;
        case LLAN_PAGE_DMA_ERROR:
            hcall_guest_error(hcall, "buf_list 0x%" PRIx64 " is no longer "
                              "mapped for read and write", s->buf_list);
            return H_PARAMETER;
        }
    }
    s->rx_bufs++;
    return H_SUCCESS;
}

/* The VALID bit is not checked, as on PAPR firmware and QEMU; buffers
 * need only 4-byte alignment (SLOF's are). */
static bool rx_bd_ok(SpaprVlanState *s, const char *hcall, uint64_t bd)
{
    return bd_ok(&s->vdev, hcall, "buffer", bd, 4, 16);
}

/* Undoes the first @n adds of a bulk call that failed part-way. */
static void unadd_buffers_locked(SpaprVlanState *s, const uint64_t *bds,
                                 unsigned n, const uint32_t *page_slots)
{
    for (unsigned i = n; i-- > 0;) {
        if (!bds[i]) {
            continue;
        }
        if (s->use_rx_buffer_pools) {
            llan_rx_pools_unadd(&s->pools, bds[i]);
        } else {
            llan_rx_page_clear_slot(&s->vdev, s->buf_list, page_slots[i]);
        }
        s->rx_bufs--;
    }
}

/*
 * H_ADD_LOGICAL_LAN_BUFFERS: up to eight descriptors, zeros unused.  All
 * or nothing: Linux frees every buffer of a call that failed, so keeping
 * part of them would leave the device holding memory the guest reused.
 * The return code is that of the first descriptor that failed.
 */
static int64_t add_buffers_locked(SpaprVlanState *s, const char *hcall,
                                  const uint64_t *bds)
{
    uint32_t page_slots[8], saved_add_ptr = s->add_buf_ptr;

    for (unsigned i = 0; i < 8; i++) {
        if (bds[i] && !rx_bd_ok(s, hcall, bds[i])) {
            return H_PARAMETER;
        }
    }
    if (!open_ok(s, hcall)) {
        return H_RESOURCE;
    }
    for (unsigned i = 0; i < 8; i++) {
        int64_t ret;

        if (!bds[i]) {
            continue;
        }
        ret = add_buffer_locked(s, hcall, bds[i]);
        if (ret != H_SUCCESS) {
            unadd_buffers_locked(s, bds, i, page_slots);
            s->add_buf_ptr = saved_add_ptr;
            return ret;
        }
        page_slots[i] = s->add_buf_ptr;
    }
    return H_SUCCESS;
}

/* The frame's descriptors, up to six: the first one without VALID ends
 * the list.  How many, and their bytes in *@total. */
static unsigned count_tx_descs(const uint64_t *bds, uint64_t *total)
{
    unsigned n = 0;

    *total = 0;
    for (; n < LLAN_MAX_TX_BDS; n++) {
        trace_spapr_vlan_h_send_logical_lan_buf_desc(bds[n]);
        if (!(bds[n] & LLAN_BD_VALID)) {
            break;
        }
        *total += LLAN_BD_LEN(bds[n]);
    }
    trace_spapr_vlan_h_send_logical_lan_total(n, *total);
    return n;
}

/* Gathers the frame from its @n descriptors of @total bytes.  Returns
 * the length, or an hcall error. */
static int64_t gather_tx_frame(SpaprVlanState *s, const uint64_t *bds,
                               unsigned n, uint64_t total, uint32_t *len)
{
    if (total > LLAN_MAX_FRAME) {
        hcall_guest_error("h_send_logical_lan", "the descriptors hold %"
                          PRIu64 " bytes, more than the maximum frame of %u",
                          total, LLAN_MAX_FRAME);
        return H_RESOURCE;
    }
    total = 0;
    for (unsigned i = 0; i < n; i++) {
        if (!spapr_vio_dma_read(&s->vdev, LLAN_BD_ADDR(bds[i]), s->tx_buf + total,
                                LLAN_BD_LEN(bds[i]))) {
            hcall_guest_error("h_send_logical_lan", "descriptor %u 0x%" PRIx64
                              " is not mapped for reading", i, bds[i]);
            return H_DEST_PARM;
        }
        total += LLAN_BD_LEN(bds[i]);
    }
    *len = total;
    return H_SUCCESS;
}

/* One frame to the backend, counted; under the transmit lock. */
static void send_frame(void *opaque, const uint8_t *frame, uint32_t len)
{
    SpaprVlanState *s = opaque;

    s->tx.frames++;
    s->tx.bytes += len;
    net_nic_send(s->nic, frame, len);
}

const char *llan_tx_copy_reason_name(LlanTxCopyReason why)
{
    static const char *const names[LLAN_TX_COPY__MAX] = {
        [LLAN_TX_COPY_GATHERED] = "gathered",
        [LLAN_TX_COPY_OFFLOAD] = "offload",
        [LLAN_TX_COPY_NOT_CONTIGUOUS] = "not-contiguous",
        [LLAN_TX_COPY_BACKEND] = "backend",
    };

    return names[why];
}

/*
 * A frame in one descriptor (of @n), on one run of guest RAM, that the
 * device sends as it is: where it lies, so that the device makes no copy
 * of its own.  NULL, with why in *@why, for one it gathers into tx_buf;
 * the gather checks the descriptors.
 */
/* The frame asks for a checksum fill or segmentation the device does.
 * Linux puts the same flags on every descriptor of a frame. */
static bool wants_offload(const SpaprVlanState *s, uint64_t bd)
{
    return s->offloads && (bd & (LLAN_TX_NO_CSUM | LLAN_TX_LRG_SND));
}

static const uint8_t *frame_as_it_lies(SpaprVlanState *s, const uint64_t *bds,
                                       unsigned n, LlanTxCopyReason *why)
{
    uint32_t len = LLAN_BD_LEN(bds[0]);
    const uint8_t *data = NULL;
    uint64_t gpa;

    if (n > 1) {
        *why = LLAN_TX_COPY_GATHERED;
    } else if (wants_offload(s, bds[0])) {
        *why = LLAN_TX_COPY_OFFLOAD;
    } else if (!n || !len || len > LLAN_MAX_FRAME ||
               !spapr_tce_contiguous(s->vdev.tcet, LLAN_BD_ADDR(bds[0]), len,
                                     DMA_DEVICE_READS, &gpa) ||
               !(data = guest_ram_ptr(spapr_tce_table_ram(s->vdev.tcet), gpa,
                                      len))) {
        *why = LLAN_TX_COPY_NOT_CONTIGUOUS;
    }
    return data;
}

/* Transmit zero copy if the backend can; else it copies the frame
 * straight from guest RAM. */
static void send_as_it_lies(SpaprVlanState *s, const uint8_t *data,
                            uint32_t len)
{
    if (net_nic_send_in_place(s->nic, data, len)) {
        s->tx.frames++;
        s->tx.bytes += len;
        s->tx.in_place++;
        return;
    }
    s->tx.copied[LLAN_TX_COPY_BACKEND]++;
    send_frame(s, data, len);
}

/* Linux's large send without firmware support ("old large send") marks
 * a TCP/IPv4 frame with 0xFFFF as its IP header checksum, which no real
 * header can have, and puts the MSS in the TCP checksum field. */
static bool old_large_send(const uint8_t *f, const LlanL4 *l4)
{
    return l4->ip_version == 4 && l4->proto == LLAN_IPPROTO_TCP &&
           ldn_be_p(f + LLAN_ETH_HLEN + 10, 2) == 0xFFFF;
}

static void count_offload_error(SpaprVlanState *s, LlanOffloadError why)
{
    s->tx.offload_errors[why]++;
    trace_spapr_vlan_tx_offload_error(llan_offload_error_name(why));
}

/*
 * What the guest left to the device in the frame in tx_buf: with NO_CSUM
 * the TCP or UDP checksum, with LRG_SND (MSS in r12) or the old marking
 * the segmentation too.  What it cannot parse goes out as it is, counted
 * by reason, as a NIC would send it.
 */
static void transmit_offload(SpaprVlanState *s, uint32_t len, uint64_t bd,
                             uint64_t r12_mss)
{
    LlanOffloadError why;
    uint32_t mss = 0;
    LlanL4 l4;

    if (!llan_find_l4(s->tx_buf, len, &l4, &why)) {
        count_offload_error(s, why);
        send_frame(s, s->tx_buf, len);
        return;
    }
    if (bd & LLAN_TX_LRG_SND) {
        mss = MIN(r12_mss, UINT16_MAX);
        if (l4.proto != LLAN_IPPROTO_TCP || !mss) {
            count_offload_error(s, l4.proto != LLAN_IPPROTO_TCP
                                   ? LLAN_OFFLOAD_NOT_TCP
                                   : LLAN_OFFLOAD_MSS_ZERO);
            mss = 0;
        }
    } else if (old_large_send(s->tx_buf, &l4)) {
        mss = ldn_be_p(s->tx_buf + l4.csum_at, 2);
        /* The marking must not reach the wire, segmented or not. */
        llan_ipv4_fill_csum(s->tx_buf + LLAN_ETH_HLEN);
        if (!mss) {
            count_offload_error(s, LLAN_OFFLOAD_MSS_ZERO);
        }
    }
    if (mss) {
        unsigned segments = llan_tso(s->tx_buf, &l4, mss, send_frame, s);

        trace_spapr_vlan_tx_tso(len, mss, segments);
        s->tx.segmented++;
        s->tx.segments += segments;
        return;
    }
    llan_fill_l4_csum(s->tx_buf, &l4);
    s->tx.csum_completed++;
    send_frame(s, s->tx_buf, len);
}

/* The frame of a call that may send: as it lies, or gathered and with
 * what the guest left to the device done. */
static int64_t transmit_frame(SpaprVlanState *s, const uint64_t *args)
{
    LlanTxCopyReason why = LLAN_TX_COPY__MAX;
    uint64_t total;
    unsigned n = count_tx_descs(&args[1], &total);
    const uint8_t *data = frame_as_it_lies(s, &args[1], n, &why);
    uint32_t len = 0;
    int64_t ret;

    if (data) {
        send_as_it_lies(s, data, LLAN_BD_LEN(args[1]));
        return H_SUCCESS;
    }
    ret = gather_tx_frame(s, &args[1], n, total, &len);
    if (ret != H_SUCCESS || !len) {
        return ret;
    }
    s->tx.copied[why]++;
    if (wants_offload(s, args[1])) {
        transmit_offload(s, len, args[1], args[8]);
    } else {
        send_frame(s, s->tx_buf, len);
    }
    return H_SUCCESS;
}

/*
 * H_SEND_LOGICAL_LAN.  The gather and the backend's send (a sendto(), a
 * stream write) run under the transmit lock alone, so receive never
 * waits behind a transmit; the open check is an atomic load, and the
 * device lock is taken only to trace the receive buffer count.
 */
static int64_t transmit(SpaprVlanState *s, const uint64_t *args)
{
    bool open = __atomic_load_n(&s->isopen, __ATOMIC_ACQUIRE);
    int64_t ret;

    if (G_UNLIKELY(
            trace_event_get_state_spapr_vlan_h_send_logical_lan_rxbufs())) {
        qemu_mutex_lock(&s->lock);
        trace_spapr_vlan_h_send_logical_lan_rxbufs(s->rx_bufs);
        qemu_mutex_unlock(&s->lock);
    }
    qemu_mutex_lock(&s->tx_lock);
    if (!open) {
        hcall_guest_error("h_send_logical_lan", "unit 0x%" PRIx32 " is not "
                          "registered (h_register_logical_lan first)",
                          s->vdev.reg);
        ret = H_DROPPED;
    } else if (args[7]) {
        /* No call is ever left half done, so a continuation is an error. */
        hcall_guest_error("h_send_logical_lan", "continuation token 0x%"
                          PRIx64 " continues no call", args[7]);
        ret = H_HARDWARE;
    } else {
        ret = transmit_frame(s, args);
    }
    if (ret != H_SUCCESS) {
        s->tx.errors++;
    }
    qemu_mutex_unlock(&s->tx_lock);
    return ret;
}

static int64_t mcast_table_op(SpaprVlanFilter *f, unsigned op, uint64_t addr)
{
    MACAddr mac = mac_from_u64(addr);

    if (op == MCAST_OP_CLEAR) {
        f->nmcast = 0;
        return H_SUCCESS;
    }
    if (addr >> 48 || !(mac.a[0] & 1)) {
        hcall_guest_error("h_multicast_ctrl", "address 0x%" PRIx64 " is not "
                          "a 48-bit multicast MAC", addr);
        return H_PARAMETER;
    }
    for (unsigned i = 0; i < f->nmcast; i++) {
        if (!memcmp(&f->mcast[i], &mac, sizeof(mac))) {
            if (op == MCAST_OP_REMOVE) {
                f->mcast[i] = f->mcast[--f->nmcast];
            }
            return H_SUCCESS;
        }
    }
    if (op == MCAST_OP_REMOVE) {
        hcall_guest_error("h_multicast_ctrl", "address 0x%" PRIx64 " to "
                          "remove is not in the filter table", addr);
        return H_NOT_FOUND;
    }
    if (f->nmcast == LLAN_MCAST_FILTERS) {
        return H_CONSTRAINED;
    }
    f->mcast[f->nmcast++] = mac;
    return H_SUCCESS;
}

/*
 * The hcalls.  h_vlan() does what every one of them shares: the unit
 * address must name a logical LAN, the call runs under the device lock,
 * and a change to the receive filter is announced once the lock is
 * dropped.  Each function below gets the hcall's name (for -d
 * guest_errors) and the arguments r4.. (args[0] is the unit address), and
 * may write outputs back into them.
 */
typedef int64_t (*VlanHcallFn)(SpaprVlanState *s, const char *hcall,
                               uint64_t *args);

/* A MAC a guest may give the adapter: 48 bits, unicast, not zero. */
static bool guest_mac_ok(const char *hcall, uint64_t v)
{
    bool ok = v && !(v >> 48) && !(mac_from_u64(v).a[0] & 1);

    if (!ok) {
        hcall_guest_error(hcall, "mac 0x%" PRIx64 " is not a 48-bit unicast "
                          "MAC other than 0", v);
    }
    return ok;
}

/* The MAC in force becomes @v; a change is a filter change. */
static void set_mac_locked(SpaprVlanState *s, uint64_t v)
{
    MACAddr mac = mac_from_u64(v);

    if (memcmp(&mac, &s->mac, sizeof(mac))) {
        s->mac = mac;
        s->rx_filter_changed = true;
    }
}

/*
 * r8 is the MAC the adapter answers to from now on: Linux passes its
 * interface's address, which "ip link set address" may have changed
 * while it was closed.  0 keeps the MAC in force, for a guest that
 * passes none.  Refused before anything changes.
 */
static int64_t vlan_register(SpaprVlanState *s, const char *hcall,
                             uint64_t *args)
{
    int64_t ret;

    if (!s->isopen && args[4] && !guest_mac_ok(hcall, args[4])) {
        return H_PARAMETER;
    }
    ret = register_locked(s, hcall, args[1], args[2], args[3]);
    if (ret == H_SUCCESS && args[4]) {
        set_mac_locked(s, args[4]);
    }
    /* The backend filled the kernel with frames of its own while the
     * device was closed: they go, so that the guest's buffers are lent
     * from its first frames on. */
    if (ret == H_SUCCESS && s->use_rx_buffer_pools) {
        s->reclaim_due = true;
    }
    return ret;
}

static int64_t vlan_free(SpaprVlanState *s, const char *hcall,
                         uint64_t *args)
{
    (void)args;
    if (!open_ok(s, hcall)) {
        return H_RESOURCE;
    }
    vlan_close_locked(s);
    return H_SUCCESS;
}

static int64_t vlan_add_buffer(SpaprVlanState *s, const char *hcall,
                               uint64_t *args)
{
    if (!rx_bd_ok(s, hcall, args[1])) {
        return H_PARAMETER;
    }
    if (!open_ok(s, hcall)) {
        return H_RESOURCE;
    }
    return add_buffer_locked(s, hcall, args[1]);
}

static int64_t vlan_add_buffers(SpaprVlanState *s, const char *hcall,
                                uint64_t *args)
{
    return add_buffers_locked(s, hcall, &args[1]);
}

static int64_t vlan_multicast_ctrl(SpaprVlanState *s, const char *hcall,
                                   uint64_t *args)
{
    uint64_t flags = args[1];
    SpaprVlanFilter f = s->filter;
    int64_t ret = H_SUCCESS;

    if (flags & ~MCAST_KNOWN_FLAGS) {
        hcall_guest_error(hcall, "flags 0x%" PRIx64 " set "
                          "unknown bits 0x%" PRIx64, flags,
                          (uint64_t)(flags & ~MCAST_KNOWN_FLAGS));
        return H_PARAMETER;
    }
    if (flags & MCAST_RECV_MODIFY) {
        f.rx_multicast = flags & MCAST_RECV_ENABLE;
    }
    if (flags & MCAST_FILTER_MODIFY) {
        f.filtering = flags & MCAST_FILTER_ENABLE;
    }
    if (flags & MCAST_OP_MASK) {
        ret = mcast_table_op(&f, flags & MCAST_OP_MASK, args[2]);
    }
    /* A call that fails changes nothing. */
    if (ret == H_SUCCESS && memcmp(&f, &s->filter, sizeof(f))) {
        s->filter = f;
        s->rx_filter_changed = true;
    }
    return ret;
}

static int64_t vlan_change_mac(SpaprVlanState *s, const char *hcall,
                               uint64_t *args)
{
    if (!guest_mac_ok(hcall, args[1])) {
        return H_PARAMETER;
    }
    set_mac_locked(s, args[1]);
    return H_SUCCESS;
}

/* What the guest may change, and what is always reported. */
static uint64_t changeable_attrs(const SpaprVlanState *s)
{
    return s->offloads ? ILLAN_IPV4_TCP_CSUM | ILLAN_IPV6_TCP_CSUM |
                         ILLAN_LRG_SR_ENABLED : 0;
}

/* Linux turns checksum offload on only with PADDED_PKT_CSUM, and large
 * send only with LRG_SND_SUPPORT.  offloads=off has no attributes at all:
 * H_ILLAN_ATTRIBUTES answers H_FUNCTION there. */
static uint64_t current_attrs_locked(const SpaprVlanState *s)
{
    uint64_t fixed = ILLAN_RX_MULTI_BUFF_SUPPORT | ILLAN_PADDED_PKT_CSUM |
                     ILLAN_LRG_SND_SUPPORT;

    return s->offloads ? fixed | s->attrs : 0;
}

/*
 * r4 = (current & ~reset) | set.  Changing anything but the checksum and
 * large-send bits (turning on one the device lacks, or off one it always
 * has) changes nothing and is H_CONSTRAINED: the request is well formed,
 * the device declines it, which is what PAPR's Constrained reports;
 * Parameter is for a unit address that names no adapter.  r4 is the
 * attributes in force either way.  Allowed open or closed.
 */
static int64_t vlan_attributes(SpaprVlanState *s, const char *hcall,
                               uint64_t *args)
{
    uint64_t cur = current_attrs_locked(s);
    uint64_t wanted = (cur & ~args[1]) | args[2];

    (void)hcall;
    /* Declined, not the guest's mistake: no guest-error line. */
    if ((wanted ^ cur) & ~changeable_attrs(s)) {
        args[0] = cur;
        return H_CONSTRAINED;
    }
    s->attrs = wanted & changeable_attrs(s);
    args[0] = current_attrs_locked(s);
    return H_SUCCESS;
}

/*
 * beyond_qemu: QEMU has no such hcall, so a device with offloads=off (the
 * QEMU-exact mode, pinned by pseries-2.5) answers H_FUNCTION as QEMU's
 * dispatch does; Linux then reads no attributes and adds one buffer per
 * call.  A machine where no device offers offloads lacks the hcall as
 * QEMU does, so a unit address naming no LAN gets H_FUNCTION there too.
 */
static const struct {
    uint64_t opcode;
    VlanHcallFn fn;
    unsigned nout;
    bool beyond_qemu;
    const char *name;       /* for -d guest_errors */
} vlan_hcalls[] = {
    { H_REGISTER_LOGICAL_LAN, vlan_register, 0, false,
      "h_register_logical_lan" },
    { H_FREE_LOGICAL_LAN, vlan_free, 0, false, "h_free_logical_lan" },
    { H_ADD_LOGICAL_LAN_BUFFER, vlan_add_buffer, 0, false,
      "h_add_logical_lan_buffer" },
    { H_ADD_LOGICAL_LAN_BUFFERS, vlan_add_buffers, 0, true,
      "h_add_logical_lan_buffers" },
    { H_MULTICAST_CTRL, vlan_multicast_ctrl, 0, false, "h_multicast_ctrl" },
    { H_CHANGE_LOGICAL_LAN_MAC, vlan_change_mac, 0, false,
      "h_change_logical_lan_mac" },
    { H_ILLAN_ATTRIBUTES, vlan_attributes, 1, true, "h_illan_attributes" },
};

static G_GNUC_NO_INLINE void trace_add_buffers(uint64_t reg,
                                               const uint64_t *bds,
                                               int64_t ret)
{
    unsigned count = 0;
    uint64_t first = 0;

    for (unsigned i = 0; i < 8; i++) {
        if (bds[i] && !count++) {
            first = bds[i];
        }
    }
    trace_spapr_vlan_h_add_logical_lan_buffers(reg, count, first, ret);
}

/* The hcalls QEMU does not trace, once done: @reg is the unit address,
 * @args the arguments after it (r5..), the outputs written back.  Out
 * of line, so that the dispatch keeps nothing live for it. */
static G_GNUC_NO_INLINE void trace_hcall(uint64_t opcode, uint64_t reg,
                                         const uint64_t *args, int64_t ret)
{
    switch (opcode) {
    case H_REGISTER_LOGICAL_LAN:
        trace_spapr_vlan_h_register_logical_lan(reg, args[1], args[2],
                                                args[3], ret);
        break;
    case H_FREE_LOGICAL_LAN:
        trace_spapr_vlan_h_free_logical_lan(reg, ret);
        break;
    case H_ADD_LOGICAL_LAN_BUFFERS:
        if (trace_event_get_state_spapr_vlan_h_add_logical_lan_buffers()) {
            trace_add_buffers(reg, &args[1], ret);
        }
        break;
    case H_MULTICAST_CTRL:
        trace_spapr_vlan_h_multicast_ctrl(reg, args[1], args[2], ret);
        break;
    case H_CHANGE_LOGICAL_LAN_MAC:
        trace_spapr_vlan_h_change_logical_lan_mac(reg, args[1], ret);
        break;
    case H_ILLAN_ATTRIBUTES:
        trace_spapr_vlan_h_illan_attributes(reg, args[1], args[2], args[0],
                                            ret);
        break;
    }
}

static void note_offloads(SpaprVioDevice *dev, void *opaque)
{
    SpaprVlanState *s = spapr_vlan_from_vio(dev);

    *(bool *)opaque |= s && s->offloads;
}

/* The VIO bus is fixed once the machine is built, so any thread reads it. */
static bool machine_has_offloads(SpaprMachineState *spapr)
{
    bool any = false;

    spapr_vio_bus_foreach(spapr_vio_bus(spapr), note_offloads, &any);
    return any;
}

static int64_t h_vlan(SpaprMachineState *spapr, uint64_t opcode,
                      uint64_t *args)
{
    SpaprVlanState *s = vlan_find(spapr, args[0]);
    uint64_t reg = args[0];
    VlanHcallFn fn = NULL;
    const char *name = NULL;
    bool beyond_qemu = false, changed, release, reclaim;
    int64_t ret;

    for (size_t i = 0; i < G_N_ELEMENTS(vlan_hcalls); i++) {
        if (vlan_hcalls[i].opcode == opcode) {
            fn = vlan_hcalls[i].fn;
            beyond_qemu = vlan_hcalls[i].beyond_qemu;
            name = vlan_hcalls[i].name;
        }
    }
    g_assert(fn);
    /* As QEMU: traced before the unit is looked at. */
    if (opcode == H_ADD_LOGICAL_LAN_BUFFER) {
        trace_spapr_vlan_h_add_logical_lan_buffer(reg, args[1]);
    }
    if (beyond_qemu && (s ? !s->offloads : !machine_has_offloads(spapr))) {
        return H_FUNCTION;
    }
    if (!s) {
        hcall_guest_error(name, "unit 0x%" PRIx64 " is not a logical LAN",
                          args[0]);
        return H_PARAMETER;
    }
    qemu_mutex_lock(&s->lock);
    ret = fn(s, name, args);
    if (G_UNLIKELY(trace_any_event_enabled())) {
        trace_hcall(opcode, reg, args, ret);
    }
    changed = s->rx_filter_changed;
    s->rx_filter_changed = false;
    release = rx_release_locked(s);
    reclaim = reclaim_due_locked(s);
    qemu_mutex_unlock(&s->lock);
    if (reclaim) {
        net_nic_rx_reclaim(s->nic);
    }
    if (changed) {
        net_nic_rx_filter_changed(s->nic);
    }
    if (release) {
        net_nic_rx_ready(s->nic);
    }
    return ret;
}

static int64_t h_vlan_send(SpaprMachineState *spapr, uint64_t opcode,
                           uint64_t *args)
{
    SpaprVlanState *s = vlan_find(spapr, args[0]);

    (void)opcode;
    /* As QEMU: traced before the unit is looked at. */
    trace_spapr_vlan_h_send_logical_lan(args[0], args[7]);
    if (!s) {
        hcall_guest_error("h_send_logical_lan", "unit 0x%" PRIx64 " is not "
                          "a logical LAN", args[0]);
        return H_PARAMETER;
    }
    return transmit(s, args);
}

static void spapr_vlan_set_signal(SpaprVioDevice *dev, uint64_t mode)
{
    SpaprVlanState *s = (SpaprVlanState *)dev;

    qemu_mutex_lock(&s->lock);
    dev->signal_state = mode;
    qemu_mutex_unlock(&s->lock);
}

/* Type, properties, device tree. */

static bool mac_in_use(const MACAddr *mac)
{
    for (guint i = 0; live_vlans && i < live_vlans->len; i++) {
        SpaprVlanState *s = g_ptr_array_index(live_vlans, i);
        if (!memcmp(&s->perm_mac, mac, sizeof(*mac))) {
            return true;
        }
    }
    return false;
}

/* QEMU's default MACs: 52:54:00:12:34:56 and up, skipping those in use. */
static bool mac_default_if_unset(MACAddr *mac, GError **errp)
{
    static const MACAddr zero;

    if (memcmp(mac, &zero, sizeof(zero))) {
        return true;
    }
    for (unsigned last = 0x56; last <= 0xff; last++) {
        *mac = (MACAddr){ { 0x52, 0x54, 0x00, 0x12, 0x34, last } };
        if (!mac_in_use(mac)) {
            return true;
        }
    }
    g_set_error(errp, ILLAN_ERROR, 0,
                "no default MAC left (52:54:00:12:34:56 to :ff are taken): "
                "give each device mac=...");
    return false;
}

/* Migration: the image, its section and their checks are in
 * spapr_llan_vmstate.c; capture and commit are its only ways into the
 * live device, and take its lock. */

/* The pools go into the image in their sorted order, as QEMU sends them. */
static void lent_back_to_pool(void *opaque, uint64_t bd)
{
    SpaprVlanState *s = opaque;

    llan_rx_pools_unlend(&s->pools, bd, false);
}

/* Every lent buffer back in its pool, once the backend took them from
 * the kernel: the stream carries them as posted, and the guest reads
 * none of them. */
static void lent_back_to_pools(SpaprVlanState *s)
{
    qemu_mutex_lock(&s->lock);
    llan_rx_lent_drain(&s->lent, lent_back_to_pool, s);
    s->lent_any = false;
    qemu_mutex_unlock(&s->lock);
}

static void spapr_vlan_rx_lent_lost(void *opaque)
{
    lent_back_to_pools(opaque);
}

/* The kernel holds no lent buffer, and is lent more at once: the
 * backend refills it with frames of its own meanwhile. */
static void take_back_lent(SpaprVlanState *s)
{
    net_nic_rx_reclaim(s->nic);
    lent_back_to_pools(s);
}

/*
 * A machine that stops stops writing guest RAM: the kernel gives back
 * what it was lent (the notifier runs with every thread parked), and
 * the backend waits on its own frames, whose socket costs far less to
 * open than one on guest RAM: that cost was a migration's downtime.
 * Lending resumes with the machine.  Only a machine that ran stops so:
 * a migration's destination keeps the socket it opened at realize, or
 * its start would pay that cost instead; one that shuts down needs
 * nothing back.
 */
static void spapr_vlan_runstate(RunstateEvent event, const char *reason,
                                void *opaque)
{
    SpaprVlanState *s = opaque;
    bool running = runstate_is_running();

    (void)reason;
    if (event != RUNSTATE_EVENT_CHANGED || running == s->ran) {
        return;
    }
    s->ran = running;
    if (running && s->lend_paused) {
        s->lend_paused = false;
        net_nic_rx_lendable(s->nic, spapr_tce_table_ram(s->vdev.tcet));
    } else if (!running && runstate_get() != RUN_STATE_SHUTDOWN) {
        s->lend_paused = true;
        net_nic_rx_lendable(s->nic, NULL);
        lent_back_to_pools(s);
    }
}

void spapr_vlan_capture(void *obj, void *image)
{
    SpaprVlanState *s = obj;
    SpaprVlanImage *img = image;

    take_back_lent(s);
    qemu_mutex_lock(&s->lock);
    spapr_vio_capture(&s->vdev, &img->sdev);
    img->isopen = s->isopen;
    img->buf_list = s->buf_list;
    img->add_buf_ptr = s->add_buf_ptr;
    img->use_buf_ptr = s->use_buf_ptr;
    img->rx_bufs = s->rx_bufs;
    img->rxq_ptr = s->rxq_ptr;
    for (int i = 0; i < LLAN_RX_MAX_POOLS; i++) {
        img->pools[i] = *s->pools.sorted[i];
        img->rx_pool[i] = &img->pools[i];
    }
    img->use_rx_buffer_pools = s->use_rx_buffer_pools;
    filter_to_image(img, &s->mac, &s->filter);
    memcpy(img->perm_mac, s->perm_mac.a, 6);
    img->attrs = s->attrs;
    img->offloads = s->offloads;
    img->illan_subsections = s->illan_subsections;
    qemu_mutex_unlock(&s->lock);
}

/*
 * Page mode: rx_bufs becomes the valid BDs the loaded page holds, what a
 * take can find, whatever count the stream gave (QEMU trusts it, so a
 * stream saying 0 over 37 buffers would hold frames back until the guest
 * posts again).  The TCE table's section is committed before this one:
 * the VIO bus registers a device's table before the device.
 */
static void page_mode_recount_locked(SpaprVlanState *s)
{
    uint32_t count;

    if (!s->use_rx_buffer_pools && s->isopen &&
        llan_rx_page_count(&s->vdev, s->buf_list, &count) == LLAN_PAGE_OK) {
        s->rx_bufs = count;
    }
}

void spapr_vlan_commit(void *obj, const void *image)
{
    SpaprVlanState *s = obj;
    const SpaprVlanImage *img = image;
    bool release;

    qemu_mutex_lock(&s->lock);
    spapr_vio_commit(&s->vdev, &img->sdev);
    __atomic_store_n(&s->isopen, img->isopen, __ATOMIC_RELEASE);
    s->buf_list = img->buf_list;
    s->add_buf_ptr = img->add_buf_ptr;
    s->use_buf_ptr = img->use_buf_ptr;
    s->rx_bufs = img->rx_bufs;
    page_mode_recount_locked(s);
    s->rxq_ptr = img->rxq_ptr;
    for (int i = 0; i < LLAN_RX_MAX_POOLS; i++) {
        s->pools.storage[i] = *img->rx_pool[i];
        s->pools.storage[i].hits = 0;
        s->pools.storage[i].lent = 0;
        s->pools.sorted[i] = &s->pools.storage[i];
    }
    llan_rx_pools_sort(&s->pools);
    filter_from_image(img, &s->mac, &s->filter);
    s->attrs = img->attrs;
    release = rx_release_locked(s);
    qemu_mutex_unlock(&s->lock);
    if (release) {
        net_nic_rx_ready(s->nic);
    }
}


/* What the monitor shows, from the same accessors anyone else has: the
 * device's counters (x-query-net-stats' "device") and its receive filter
 * (query-rx-filter), as a{sv} dictionaries in the order QMP lists them. */

static void dict_add(GVariantBuilder *b, const char *key, GVariant *v)
{
    g_variant_builder_add(b, "{sv}", key, v);
}

static GVariant *pool_stats(const SpaprVlanStats *vs)
{
    GVariantBuilder b;

    g_variant_builder_init(&b, G_VARIANT_TYPE("aa{sv}"));
    for (unsigned i = 0; i < vs->npools; i++) {
        g_variant_builder_open(&b, G_VARIANT_TYPE_VARDICT);
        dict_add(&b, "bufsize", g_variant_new_int32(vs->pools[i].bufsize));
        dict_add(&b, "posted", g_variant_new_uint32(vs->pools[i].posted));
        dict_add(&b, "hits", g_variant_new_uint64(vs->pools[i].hits));
        g_variant_builder_close(&b);
    }
    return g_variant_builder_end(&b);
}

/* The attribute bits by their Linux names, as ethtool would say them. */
static GVariant *attribute_names(uint64_t attrs)
{
    static const struct {
        uint64_t bit;
        const char *name;
    } names[] = {
        { ILLAN_IPV4_TCP_CSUM, "ipv4-tcp-csum" },
        { ILLAN_IPV6_TCP_CSUM, "ipv6-tcp-csum" },
        { ILLAN_PADDED_PKT_CSUM, "padded-pkt-csum" },
        { ILLAN_LRG_SND_SUPPORT, "lrg-snd-support" },
        { ILLAN_LRG_SR_ENABLED, "lrg-sr-enabled" },
        { ILLAN_RX_MULTI_BUFF_SUPPORT, "rx-multi-buff-support" },
    };
    GVariantBuilder b;

    g_variant_builder_init(&b, G_VARIANT_TYPE_STRING_ARRAY);
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        if (attrs & names[i].bit) {
            g_variant_builder_add(&b, "s", names[i].name);
        }
    }
    return g_variant_builder_end(&b);
}

static GVariant *offload_errors(const SpaprVlanStats *vs)
{
    GVariantBuilder b;

    g_variant_builder_init(&b, G_VARIANT_TYPE_VARDICT);
    for (int i = 0; i < LLAN_OFFLOAD_ERROR__MAX; i++) {
        dict_add(&b, llan_offload_error_name(i),
                 g_variant_new_uint64(vs->tx_offload_errors[i]));
    }
    return g_variant_builder_end(&b);
}

static GVariant *tx_copied(const SpaprVlanStats *vs)
{
    GVariantBuilder b;

    g_variant_builder_init(&b, G_VARIANT_TYPE_VARDICT);
    for (int i = 0; i < LLAN_TX_COPY__MAX; i++) {
        dict_add(&b, llan_tx_copy_reason_name(i),
                 g_variant_new_uint64(vs->tx_copied[i]));
    }
    return g_variant_builder_end(&b);
}

static GVariant *spapr_vlan_query(void *opaque)
{
    SpaprVlanState *s = opaque;
    SpaprVlanStats vs;
    GVariantBuilder b;

    spapr_vlan_get_stats(s, &vs);
    g_variant_builder_init(&b, G_VARIANT_TYPE_VARDICT);
    dict_add(&b, "rx-buffer-pools",
             g_variant_new_boolean(spapr_vlan_rx_buffer_pools(s)));
    dict_add(&b, "rx-frames", g_variant_new_uint64(vs.rx_frames));
    dict_add(&b, "rx-bytes", g_variant_new_uint64(vs.rx_bytes));
    dict_add(&b, "rx-buffer-bytes", g_variant_new_uint64(vs.rx_buffer_bytes));
    dict_add(&b, "rx-interrupts", g_variant_new_uint64(vs.rx_interrupts));
    dict_add(&b, "rx-held", g_variant_new_uint64(vs.rx_held));
    dict_add(&b, "rx-bufs-posted", g_variant_new_uint32(vs.rx_bufs));
    dict_add(&b, "rx-dropped", net_rx_dropped_variant(vs.rx_dropped));
    dict_add(&b, "rx-zero-copy", g_variant_new_uint64(vs.rx_zero_copy));
    dict_add(&b, "rx-copy-down", g_variant_new_uint64(vs.rx_copy_down));
    dict_add(&b, "rx-lent", g_variant_new_uint32(vs.rx_lent));
    dict_add(&b, "rx-lend-refused", g_variant_new_uint64(vs.rx_lend_refused));
    dict_add(&b, "tx-frames", g_variant_new_uint64(vs.tx_frames));
    dict_add(&b, "tx-bytes", g_variant_new_uint64(vs.tx_bytes));
    dict_add(&b, "tx-errors", g_variant_new_uint64(vs.tx_errors));
    dict_add(&b, "tx-in-place", g_variant_new_uint64(vs.tx_in_place));
    dict_add(&b, "tx-copied", tx_copied(&vs));
    dict_add(&b, "attributes", g_variant_new_uint64(vs.attributes));
    dict_add(&b, "attribute-names", attribute_names(vs.attributes));
    dict_add(&b, "rx-csum-good", g_variant_new_uint64(vs.rx_csum_good));
    dict_add(&b, "rx-csum-partial", g_variant_new_uint64(vs.rx_csum_partial));
    dict_add(&b, "rx-csum-bad", g_variant_new_uint64(vs.rx_csum_bad));
    dict_add(&b, "rx-csum-completed",
             g_variant_new_uint64(vs.rx_csum_completed));
    dict_add(&b, "rx-lro-frames", g_variant_new_uint64(vs.rx_lro_frames));
    dict_add(&b, "rx-lro-segments",
             g_variant_new_uint64(vs.rx_lro_segments));
    dict_add(&b, "rx-long-tcp", g_variant_new_uint64(vs.rx_long_tcp));
    dict_add(&b, "tx-csum-completed",
             g_variant_new_uint64(vs.tx_csum_completed));
    dict_add(&b, "tx-segmented", g_variant_new_uint64(vs.tx_segmented));
    dict_add(&b, "tx-segments", g_variant_new_uint64(vs.tx_segments));
    dict_add(&b, "tx-offload-errors", offload_errors(&vs));
    dict_add(&b, "pools", pool_stats(&vs));
    return g_variant_builder_end(&b);
}

static GVariant *mac_list(const MACAddr *macs, unsigned n)
{
    GVariantBuilder b;

    g_variant_builder_init(&b, G_VARIANT_TYPE_STRING_ARRAY);
    for (unsigned i = 0; i < n; i++) {
        g_autofree char *str = mac_format(&macs[i]);

        g_variant_builder_add(&b, "s", str);
    }
    return g_variant_builder_end(&b);
}

static const char *rx_state(bool all, bool none)
{
    return all ? "all" : none ? "none" : "normal";
}

/* The filter as QEMU's RxFilterInfo describes one: never promiscuous,
 * since unicast is always the MAC alone; multicast is all with filtering
 * off, the table with it on. */
static GVariant *spapr_vlan_query_rx_filter(void *opaque)
{
    SpaprVlanState *s = opaque;
    MACAddr current = spapr_vlan_get_mac(s);
    g_autofree char *mac = mac_format(&current);
    SpaprVlanFilter f;
    GVariantBuilder b;

    spapr_vlan_get_filter(s, &f);
    g_variant_builder_init(&b, G_VARIANT_TYPE_VARDICT);
    dict_add(&b, "promiscuous", g_variant_new_boolean(false));
    dict_add(&b, "multicast",
             g_variant_new_string(rx_state(f.rx_multicast && !f.filtering,
                                           !f.rx_multicast)));
    dict_add(&b, "unicast", g_variant_new_string("normal"));
    dict_add(&b, "vlan", g_variant_new_string("all"));
    dict_add(&b, "broadcast-allowed", g_variant_new_boolean(true));
    dict_add(&b, "multicast-overflow", g_variant_new_boolean(false));
    dict_add(&b, "unicast-overflow", g_variant_new_boolean(false));
    dict_add(&b, "main-mac", g_variant_new_string(mac));
    /* No VLAN filter, and no unicast table beside the MAC. */
    dict_add(&b, "vlan-table",
             g_variant_new_array(G_VARIANT_TYPE_INT32, NULL, 0));
    dict_add(&b, "unicast-table", mac_list(NULL, 0));
    dict_add(&b, "multicast-table", mac_list(f.mcast, f.nmcast));
    return g_variant_builder_end(&b);
}

static void spapr_vlan_mac_bytes(void *opaque, uint8_t mac[6])
{
    MACAddr current = spapr_vlan_get_mac(opaque);

    memcpy(mac, current.a, 6);
}

static void spapr_vlan_hold_sends(void *opaque, bool hold)
{
    SpaprVlanState *s = opaque;

    if (hold) {
        qemu_mutex_lock(&s->tx_lock);
    } else {
        qemu_mutex_unlock(&s->tx_lock);
    }
}

static const NetNicOps spapr_vlan_nic_ops = {
    .receive_batch = spapr_vlan_receive_batch,
    .rx_run_end = spapr_vlan_rx_run_end,
    .rx_lend = spapr_vlan_rx_lend,
    .rx_unlend = spapr_vlan_rx_unlend,
    .rx_lent_lost = spapr_vlan_rx_lent_lost,
    .model = TYPE_SPAPR_VLAN,
    .query = spapr_vlan_query,
    .query_rx_filter = spapr_vlan_query_rx_filter,
    .get_mac = spapr_vlan_mac_bytes,
    .hold_sends = spapr_vlan_hold_sends,
};

static bool spapr_vlan_realize(DeviceState *qdev, GError **errp)
{
    SpaprVlanState *s = (SpaprVlanState *)qdev;
    g_autofree char *idstr = NULL;

    if (s->mac.a[0] & 1) {
        g_autofree char *str = mac_format(&s->mac);
        g_set_error(errp, ILLAN_ERROR, 0,
                    "mac=%s is a multicast address: a NIC needs a unicast "
                    "MAC (even first octet)", str);
        return false;
    }
    if (!mac_default_if_unset(&s->mac, errp)) {
        return false;
    }
    s->nic = net_nic_new(qdev->id, s->netdev, &spapr_vlan_nic_ops, s, errp);
    if (!s->nic) {
        return false;
    }
    s->perm_mac = s->mac;
    qemu_mutex_init(&s->lock);
    qemu_mutex_init(&s->tx_lock);
    vlan_reset_locked(s);
    if (!live_vlans) {
        live_vlans = g_ptr_array_new();
    }
    g_ptr_array_add(live_vlans, s);
    /* QEMU's id: the VIO path ("l-lan@71000000"), then the vmsd name. */
    idstr = g_strdup_printf("%s@%x/%s", SPAPR_VIO_CLASS(s)->dt_name,
                            s->vdev.reg, vmstate_spapr_llan.name);
    vmstate_register(idstr, 0, &vmstate_spapr_llan, &spapr_vlan_image_ops, s);
    /* Only pools keep buffers by size, as lending needs. */
    if (s->use_rx_buffer_pools) {
        s->ran = runstate_is_running();
        runstate_add_notifier(spapr_vlan_runstate, s);
        net_nic_rx_lendable(s->nic, spapr_tce_table_ram(s->vdev.tcet));
    }
    return true;
}

static void spapr_vlan_finalize(DeviceState *qdev)
{
    SpaprVlanState *s = (SpaprVlanState *)qdev;

    if (!s->nic) {
        return;     /* never realized */
    }
    vmstate_unregister(s);
    if (s->use_rx_buffer_pools) {
        runstate_remove_notifier(spapr_vlan_runstate, s);
    }
    g_ptr_array_remove_fast(live_vlans, s);
    net_nic_free(s->nic);
    qemu_mutex_destroy(&s->lock);
    qemu_mutex_destroy(&s->tx_lock);
}

/*
 * Old Linux guessed the length of local-mac-address from its first byte;
 * a locally administered unicast MAC (low bits 0b10) is given as 6 bytes,
 * anything else as 8 with two leading zeros, which both old and new guests
 * read correctly.
 */
static bool spapr_vlan_devnode(SpaprVioDevice *dev, void *fdt, int node,
                               GError **errp)
{
    SpaprVlanState *s = (SpaprVlanState *)dev;
    uint8_t padded[8] = { 0 };

    if ((s->perm_mac.a[0] & 3) == 2) {
        FDT_TRY(fdt_setprop(fdt, node, "local-mac-address", s->perm_mac.a, 6));
    } else {
        memcpy(padded + 2, s->perm_mac.a, 6);
        FDT_TRY(fdt_setprop(fdt, node, "local-mac-address", padded,
                            sizeof(padded)));
    }
    /* QEMU advertises no filters; Linux then turns filtering off as soon
     * as the guest joins any multicast group. */
    FDT_TRY(fdt_setprop_cell(fdt, node, "ibm,mac-address-filters",
                             s->offloads ? LLAN_MCAST_FILTERS : 0));
    /*
     * Linux offers checksum offload only when this property exists; PAPR
     * gives it as one cell.  One cell of 0 serves both: a presence test
     * finds it, a client reading a cell finds a value, and 0 claims
     * nothing beyond what H_ILLAN_ATTRIBUTES reports.
     */
    if (s->offloads) {
        FDT_TRY(fdt_setprop_cell(fdt, node, "ibm,illan-options", 0));
    }
    return true;
}

void spapr_vlan_set_rx_stamps(SpaprVlanState *s, uint64_t *stamps,
                              uint32_t n)
{
    qemu_mutex_lock(&s->lock);
    s->rx_stamps = stamps;
    s->rx_nstamps = stamps ? n : 0;
    qemu_mutex_unlock(&s->lock);
}

void spapr_vlan_get_stats(SpaprVlanState *s, SpaprVlanStats *stats)
{
    qemu_mutex_lock(&s->lock);
    *stats = s->stats;
    stats->rx_bufs = s->rx_bufs;
    stats->rx_lent = s->lent.count;
    stats->attributes = current_attrs_locked(s);
    stats->npools = 0;
    for (int i = 0; s->use_rx_buffer_pools && i < LLAN_RX_MAX_POOLS; i++) {
        const LlanRxPool *p = s->pools.sorted[i];

        if (p->bufsize != LLAN_RX_POOL_UNUSED) {
            stats->pools[stats->npools].bufsize = p->bufsize;
            stats->pools[stats->npools].posted = p->count + p->lent;
            stats->pools[stats->npools].hits = p->hits;
            stats->npools++;
        }
    }
    qemu_mutex_unlock(&s->lock);
    qemu_mutex_lock(&s->tx_lock);
    stats->tx_frames = s->tx.frames;
    stats->tx_bytes = s->tx.bytes;
    stats->tx_errors = s->tx.errors;
    stats->tx_in_place = s->tx.in_place;
    memcpy(stats->tx_copied, s->tx.copied, sizeof(stats->tx_copied));
    stats->tx_csum_completed = s->tx.csum_completed;
    stats->tx_segmented = s->tx.segmented;
    stats->tx_segments = s->tx.segments;
    memcpy(stats->tx_offload_errors, s->tx.offload_errors,
           sizeof(stats->tx_offload_errors));
    qemu_mutex_unlock(&s->tx_lock);
}

void spapr_vlan_get_filter(SpaprVlanState *s, SpaprVlanFilter *filter)
{
    qemu_mutex_lock(&s->lock);
    *filter = s->filter;
    qemu_mutex_unlock(&s->lock);
}

MACAddr spapr_vlan_get_mac(SpaprVlanState *s)
{
    MACAddr mac;

    qemu_mutex_lock(&s->lock);
    mac = s->mac;
    qemu_mutex_unlock(&s->lock);
    return mac;
}

NetClientState *spapr_vlan_nic(SpaprVlanState *s)
{
    return s->nic;
}

bool spapr_vlan_rx_buffer_pools(SpaprVlanState *s)
{
    return s->use_rx_buffer_pools;
}

/* The MAC the guest set with H_CHANGE_LOGICAL_LAN_MAC, as QEMU's qom-get
 * reports it; a built-in guest changes it from its vCPU thread. */
static char *spapr_vlan_live_mac(DeviceState *dev)
{
    MACAddr mac = spapr_vlan_get_mac((SpaprVlanState *)dev);

    return mac_format(&mac);
}

static const Property spapr_vlan_props[] = {
    { "mac", PROP_MACADDR, offsetof(SpaprVlanState, mac), NULL,
      "Ethernet MAC address, e.g. 52:54:00:12:34:56; unset means "
      "52:54:00:12:34:56 and up", spapr_vlan_live_mac },
    { "netdev", PROP_NETDEV, offsetof(SpaprVlanState, netdev), NULL,
      "id of the -netdev backend that carries its frames", NULL },
    { "reg", PROP_UINT32, offsetof(SpaprVlanState, vdev.reg), "0xffffffff",
      "VIO unit address; 0xffffffff assigns the next free from 0x71000000",
      NULL },
    { "use-rx-buffer-pools", PROP_BOOL,
      offsetof(SpaprVlanState, use_rx_buffer_pools), "on",
      "receive into size-sorted buffer pools (off: legacy page mode, "
      "pinned by pseries-2.5 alias pseries-1.0)", NULL },
    { "offloads", PROP_BOOL, offsetof(SpaprVlanState, offloads), "on",
      "offer checksum offload, large send and bulk adds (off: QEMU's "
      "device tree, and H_FUNCTION for H_ILLAN_ATTRIBUTES and "
      "H_ADD_LOGICAL_LAN_BUFFERS; pinned by pseries-2.5 alias pseries-1.0)",
      NULL },
    { "lro", PROP_BOOL, offsetof(SpaprVlanState, lro), "on",
      "coalesce received TCP segments into large packets when the guest "
      "turns large send on (off for Linux guests that forward, as routers "
      "or NAT hosts, and predate 6.6, 6.5.7 or 6.1.57)", NULL },
    { "x-illan-subsections", PROP_BOOL,
      offsetof(SpaprVlanState, illan_subsections), "on",
      "migrate the guest's MAC, filters and attributes in illan's own "
      "subsections (off: QEMU 7.2's layout, which leaves them behind as "
      "QEMU does; pinned by pseries-7.2 and older)", NULL },
    { "bootindex", PROP_INT32, offsetof(SpaprVlanState, bootindex), "-1",
      "boot order, as in QEMU; stored only, illan has no firmware", NULL },
    PROP_END
};

static const SpaprVioDeviceClass spapr_vlan_class = {
    .parent = {
        .name = TYPE_SPAPR_VLAN,
        .desc = "PAPR Interpartition Logical LAN (ibmveth)",
        .category = "Network devices",
        .bus_type = TYPE_SPAPR_VIO_BUS,
        .instance_size = sizeof(SpaprVlanState),
        .props = spapr_vlan_props,
        .realize = spapr_vlan_realize,
        .reset = spapr_vlan_reset,
        .finalize = spapr_vlan_finalize,
    },
    .dt_name = "l-lan",
    .dt_type = "network",
    .dt_compatible = "IBM,l-lan",
    .signal_mask = VLAN_SIGNAL_MASK,
    .set_signal = spapr_vlan_set_signal,
    .devnode = spapr_vlan_devnode,
};

static void spapr_vlan_register(void)
{
    device_class_register(&spapr_vlan_class.parent);
    vmstate_register_type(TYPE_SPAPR_VLAN, &vmstate_spapr_llan);
    for (size_t i = 0; i < G_N_ELEMENTS(vlan_hcalls); i++) {
        spapr_register_hypercall(vlan_hcalls[i].opcode, h_vlan,
                                 vlan_hcalls[i].nout);
    }
    spapr_register_hypercall(H_SEND_LOGICAL_LAN, h_vlan_send, 0);
}
illan_init(spapr_vlan_register)
