/*
 * One AF_XDP queue of the af-xdp netdev: a socket bound to one queue of a
 * host interface, its UMEM and four rings, and the I/O thread that owns
 * them.  The thread hands received frames to the net core a batch at a
 * time and returns them to the fill ring at once; frames the guest sends
 * are copied into the UMEM by the sending thread and transmitted by the
 * I/O thread, which reaps the completion ring.
 */
#ifndef NET_XSK_QUEUE_H
#define NET_XSK_QUEUE_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/net.h"
#include "qemu/latency-histogram.h"

/* Every UMEM frame is one page.  A received frame longer than one UMEM
 * frame's data room (the kernel keeps 256 bytes of headroom in each:
 * 3840 bytes) comes, with multi-buffer, as a chain of descriptors; a sent
 * one goes as a chain of whole UMEM frames. */
#define XSK_FRAME_SIZE 4096
#define XSK_RX_DATA_SIZE (XSK_FRAME_SIZE - 256)
/* The longest chain a queue accepts on receive, whatever the kernel's
 * max_skb_frags says, so that a batch's look at the ring is bounded. */
#define XSK_CHAIN_CAP 64

typedef struct XskQueue XskQueue;

/*
 * Receive zero copy (guest-umem): while the NIC lends guest buffers, the
 * queue's UMEM is guest RAM and its fill ring holds only those buffers,
 * so the kernel writes each frame straight into one.  Why a frame came
 * the copy path instead, for its counter.
 */
typedef enum XskCopyReason {
    XSK_COPY_NOT_LENDING,   /* zero copy allowed; the NIC lends nothing */
    XSK_COPY_OFF,           /* guest-umem=off */
    XSK_COPY_SOCK_FDS,      /* another process made the socket */
    XSK_COPY_MAP_PATH,      /* another process's program and map */
    XSK_COPY_RX_METADATA,   /* rx-metadata=on: it would land outside */
    XSK_COPY_MTU,           /* the interface's frames outgrow a lent buffer */
    XSK_COPY_REFUSED,       /* the kernel refused guest RAM as a UMEM */
    XSK_COPY__MAX
} XskCopyReason;

/* The largest interface MTU at which frames (with an Ethernet header and
 * a VLAN tag) fit a lent buffer. */
#define XSK_LEND_MTU_MAX (NET_LEND_DATA_ROOM - 18)

/* The MTU of host interface @ifname, or 0 when it cannot be read. */
unsigned xsk_interface_mtu(const char *ifname);

/* "not-lending", "off", "sock-fds", "map-path", "rx-metadata", "mtu",
 * "refused". */
const char *xsk_copy_reason_name(XskCopyReason reason);
struct xsk_ring_cons;
struct xsk_ring_prod;

typedef struct XskQueueConfig {
    const char *ifname;
    unsigned ifindex;
    uint32_t queue_id;
    bool force_copy;
    int sock_fd;            /* an unbound AF_XDP socket to use (the
                               caller closes it), or -1 to create one */
    uint32_t rx_ring_size;  /* rx and fill rings; as many UMEM frames */
    uint32_t tx_ring_size;  /* tx and completion rings; as many frames */
    unsigned batch;         /* frames per delivery, 1..NET_BATCH_MAX */
    bool spin;              /* never sleep in poll(2) */
    bool sched_batch;       /* the I/O thread moves from SCHED_OTHER to
                               SCHED_BATCH */
    unsigned busy_poll_usecs;   /* 0: no SO_PREFER_BUSY_POLL */
    bool multi_buffer;      /* bind with XDP_USE_SG, and without it if
                               the kernel refuses */
    uint32_t meta_btf_id;   /* 0, or the BTF id of struct illan_xdp_meta
                               to look for in front of each frame */
    /* XSK_COPY_NOT_LENDING to lend guest buffers when the NIC offers
     * them, else why never. */
    XskCopyReason copy_reason;
    /* Receive zero copy: the queue's socket is about to close (@fd -1:
     * the program drops and counts the queue's frames meanwhile), or its
     * new socket @fd goes into the program's XSK map, its frames landing
     * in guest buffers when @lending.  The I/O thread, or the caller of
     * xsk_queue_lendable() or xsk_queue_reclaim(). */
    bool (*socket_changed)(void *opaque, uint32_t queue_id, int fd,
                           bool lending);
    void *opaque;
} XskQueueConfig;

/* Counters of one queue; "xdp_*" are the kernel's XDP_STATISTICS.
 * rx_chains and tx_chains are the frames among rx_frames and tx_frames
 * that spanned several descriptors; rx_too_long and rx_truncated the
 * chains dropped before the NIC saw them (longer than NET_FRAME_MAX or
 * than XSK_CHAIN_CAP descriptors, or without their last descriptor). */
typedef struct XskQueueStats {
    uint64_t rx_frames, rx_batches, rx_wakeups, sleeps;
    uint64_t load_sleeps;   /* of sleeps, those timed, not on the socket,
                               as frames came in faster than a batch per
                               wake-up */
    uint64_t rx_chains, rx_too_long, rx_truncated;
    uint64_t tx_frames, tx_kicks, tx_kick_errors, tx_ring_full, tx_oversize;
    uint64_t tx_chains;
    uint64_t tx_no_socket;  /* guest frames dropped: the queue has no
                               socket (one it could not replace) */
    bool failed;            /* see xsk_queue_failed() */
    int io_policy;          /* the I/O thread's SCHED_*, -1 before it runs */
    /* Of tx_frames, those sent in place (guest RAM as the UMEM); of
     * those, the ones whose completion was not there when the kick
     * returned, those moved into a frame of the queue's own because the
     * kernel did not take them, and those taken but left to the kernel
     * after waiting a second for them. */
    uint64_t tx_in_place, tx_in_place_waits, tx_in_place_moved;
    uint64_t tx_in_place_late;
    /* With meta_btf_id: frames with our struct in front and with any
     * other, and the struct of the last of ours (CLOCK_MONOTONIC ns with
     * ILLAN_XDP_META_TS_KTIME in its flags). */
    uint64_t rx_meta_frames, rx_meta_foreign;
    uint64_t rx_meta_timestamp, rx_meta_flags, rx_meta_hash;
    /* One sample a batch whose last frame has our struct with a
     * CLOCK_MONOTONIC timestamp and was delivered: from the XDP program
     * to the device's making its rx-queue entry visible to the guest. */
    LatencyHistogram rx_latency;
    /* Receive zero copy: whether the UMEM is guest RAM now, the frames
     * the kernel wrote into lent buffers and those that came the copy
     * path (by XskCopyReason), the changes of UMEM, and the errno with
     * which the kernel last refused guest RAM. */
    bool lending;
    uint64_t rx_lent_frames, rx_copied[XSK_COPY__MAX];
    uint64_t lend_switches, lend_reclaims;
    uint64_t reclaim_dropped;   /* frames a replaced socket still held */
    uint32_t host_frames;       /* the queue's own frames in the kernel */
    int lend_error;
    uint64_t xdp_rx_dropped, xdp_rx_invalid_descs, xdp_rx_ring_full,
             xdp_rx_fill_ring_empty_descs, xdp_tx_invalid_descs,
             xdp_tx_ring_empty_descs;
} XskQueueStats;

/* UMEM bytes a queue with @cfg's rings locks. */
size_t xsk_queue_umem_size(const XskQueueConfig *cfg);

/* Creates the UMEM, the rings and the socket, and binds it; the caller
 * puts the socket in its program's XSK map.  On failure
 * sets @errno_out to the failing call's errno for the caller's advice.
 * Delivers to @backend once started. */
XskQueue *xsk_queue_open(const XskQueueConfig *cfg, NetClientState *backend,
                         int *errno_out, GError **errp);
/*
 * For tests of the receive path: a queue on the rx and fill rings @rx and
 * @fill, which the caller made and fills as the kernel would, over @umem
 * (xsk_queue_umem_size() bytes, mapped with mmap(), the queue's from now
 * on).  No socket and no thread: xsk_queue_rx_poll() receives.
 */
XskQueue *xsk_queue_new_on_rings(const XskQueueConfig *cfg,
                                 NetClientState *backend,
                                 const struct xsk_ring_cons *rx,
                                 const struct xsk_ring_prod *fill,
                                 void *umem);
/* One pass of the I/O thread's receive: a batch from the rx ring to the
 * NIC.  How many frames the NIC took, or 1 if it only dropped chains. */
unsigned xsk_queue_rx_poll(XskQueue *q);
/* Starts the I/O thread. */
void xsk_queue_start(XskQueue *q);
/* Stops the thread, closes the socket and frees everything. */
void xsk_queue_close(XskQueue *q);

/* Copies one frame into the UMEM and queues it for transmission, as a
 * chain of UMEM frames if it is longer than one; false (and counted) when
 * it is too large (one UMEM frame without multi-buffer, max_skb_frags + 1
 * of them with it) or the tx ring is full.  Any thread; senders are
 * serialized. */
bool xsk_queue_send(XskQueue *q, const uint8_t *data, size_t len);
/*
 * Transmit zero copy: a frame that lies in the guest RAM the queue's UMEM
 * now is (see xsk_queue_lendable) goes to the tx ring by its address, and
 * the call returns once the kernel is done with those bytes.  False, with
 * nothing sent, when the UMEM is not guest RAM, the frame is longer than
 * a lent chunk or the tx ring stays full: the caller copies.  Any thread;
 * senders are serialized.
 */
bool xsk_queue_send_in_place(XskQueue *q, const uint8_t *data, size_t len);

/* The NIC has room again for frames the queue held back, or buffers to
 * lend again.  Any thread. */
void xsk_queue_rx_ready(XskQueue *q);
/*
 * The NIC lends buffers in @ram: the queue's UMEM becomes guest RAM
 * followed by the queue's own frames, unless the config or the
 * interface's MTU rules it out (or the kernel refuses).  From then on
 * the fill ring holds the buffers the NIC lends and, when it has none,
 * frames of the queue's own.  @ram NULL: the NIC lends nothing until it
 * calls again with its RAM (a stopped machine), and the queue goes back
 * to its own UMEM, taking back what is lent.  Synchronous.
 */
void xsk_queue_lendable(XskQueue *q, GuestRam *ram);
/*
 * xsk_queue_lendable(q, NULL) for a machine that stops to leave (a
 * migration's switchover): returns once the kernel holds no lent buffer,
 * as that does, but binds the socket on the queue's own UMEM in the
 * background, which would add the kernel's release of the queue (about
 * 16 ms) to the downtime.  Frames that arrive before it is bound are
 * dropped and counted by the program, as the source drops those that
 * wait in its rings once the machine has left.
 */
void xsk_queue_unlend_leaving(XskQueue *q);
/* Takes back every lent buffer the kernel holds (with a new socket):
 * once it returns the kernel writes none of them.  Synchronous; tens of
 * milliseconds when something was lent. */
void xsk_queue_reclaim(XskQueue *q);

/*
 * The machine has migrated away (run state postmigrate) and @on: the main
 * thread takes the I/O thread's place on the receive side, which the run
 * state keeps parked, as it keeps the guest's vCPU.  It has the kernel
 * send what the guest queued before it stopped, hands what waits in the
 * rx ring to the NIC now, and again whenever the socket is
 * readable, so that those frames are counted as the NIC drops them
 * (vm-stopped) instead of left to overflow the ring.  Off before the I/O
 * thread may run again.  Main thread only, with the I/O thread parked.
 */
void xsk_queue_drain_parked(XskQueue *q, bool on);

/* True once the kernel reported the socket dead (interface gone). */
bool xsk_queue_failed(const XskQueue *q);
bool xsk_queue_zero_copy(const XskQueue *q);
/* Whether the socket is bound with XDP_USE_SG. */
bool xsk_queue_multi_buffer(const XskQueue *q);
/* The errno with which the kernel refused XDP_USE_SG (the queue then
 * runs without it), or 0. */
int xsk_queue_sg_refused(const XskQueue *q);
/* The longest frame the queue can send. */
size_t xsk_queue_tx_max(const XskQueue *q);
int xsk_queue_fd(const XskQueue *q);
uint32_t xsk_queue_id(const XskQueue *q);
void xsk_queue_get_stats(XskQueue *q, XskQueueStats *st);

#endif
