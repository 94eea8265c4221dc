/*
 * The net core: NICs and backends ("netdevs") as pairs of clients.
 *
 * A backend hands its NIC whole batches of frames, and the NIC answers with
 * what it did with each one; the core counts every frame under its result,
 * so that frames in = delivered + dropped, per client.  Frames the guest
 * sends go the other way, one call per frame, and are counted too.
 */
#ifndef NET_NET_H
#define NET_NET_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qemu/guest-ram.h"
#include "qemu/option.h"

/* The largest batch a backend hands over at once. */
#define NET_BATCH_MAX 64
/* The largest frame either side carries (no FCS). */
#define NET_FRAME_MAX 65536

typedef struct NetClientState NetClientState;

typedef struct NetFrame {
    const uint8_t *data;
    uint32_t len;
    /* 0, or the guest-physical address of @data: the host kernel wrote
     * the frame straight into a buffer the NIC lent (see rx_lend). */
    uint64_t lent;
} NetFrame;

/*
 * When a batch's last frame entered the host, from a backend that knows
 * (CLOCK_MONOTONIC ns, as its XDP program read it), and when the NIC
 * made it visible to the guest: the clock read just before the guest
 * could see the frame's place in its queue, 0 when it never could
 * (dropped, held).  A NIC may also leave @entered beside that place for
 * the guest to measure the delay to its consumption.
 */
typedef struct NetRxStamp {
    uint64_t entered;
    uint64_t visible;
} NetRxStamp;

/* What became of one received frame. */
typedef enum NetRxResult {
    NET_RX_DELIVERED,
    NET_RX_DROP_NO_NIC,         /* the netdev has no NIC attached */
    NET_RX_DROP_LINK_DOWN,      /* either side's link is down */
    NET_RX_DROP_NOT_REGISTERED, /* the guest has not opened the device */
    NET_RX_DROP_FILTERED,       /* refused by the NIC's MAC filter */
    NET_RX_DROP_NO_BUFFER,      /* no posted buffer is large enough */
    NET_RX_DROP_DMA_ERROR,      /* guest memory not mapped for the write */
    NET_RX_DROP_TOO_SHORT,      /* shorter than an Ethernet header */
    NET_RX_DROP_VM_STOPPED,     /* the machine is not running */
    NET_RX_DROP_JUMBO_TCP,      /* TCP over 1514 bytes the guest would
                                   misread as a large packet */
    NET_RX__MAX
} NetRxResult;

/* Stable names for stats: "delivered", "no-nic", "link-down", ... */
const char *net_rx_result_name(NetRxResult result);
/* The drop reasons' counts in @by_result (indexed by NetRxResult) as an
 * a{sv} dictionary in result order, for the stats every layer shows
 * (floating reference). */
GVariant *net_rx_dropped_variant(const uint64_t *by_result);

typedef struct NetClientStats {
    uint64_t rx_frames;             /* handed in by the backend */
    uint64_t rx_bytes;
    uint64_t rx_batches;
    uint64_t rx_results[NET_RX__MAX];   /* rx_frames split by result */
    uint64_t rx_errors;             /* input lost before it was a frame:
                                       oversized datagrams, broken streams */
    uint64_t tx_frames;             /* sent by the guest and accepted */
    uint64_t tx_bytes;
    uint64_t tx_errors;             /* the backend could not send */
    uint64_t tx_dropped;            /* no backend or link down */
} NetClientStats;

/* How a batch comes to the NIC (receive_batch's @flags). */
enum {
    /* The backend can leave frames where they are (an AF_XDP ring): the
     * NIC may hold some. */
    NET_RX_MAY_HOLD = 1 << 0,
    /* More frames follow at once, in another call from the same thread;
     * a run of such batches ends with a call without it, or with
     * rx_run_end.  The NIC may keep its interrupt for the end of the
     * run. */
    NET_RX_MORE = 1 << 1,
};

/* What a NIC that lends buffers (rx_lend) can lend after a call. */
typedef enum NetLendOutlook {
    NET_LEND_OFF,       /* nothing until the guest runs with the NIC open */
    NET_LEND_EMPTY,     /* nothing now; maybe as soon as the guest posts */
    NET_LEND_KEPT,      /* buffers it keeps back (@keep), or lends */
} NetLendOutlook;

/*
 * The NIC's side: one call per batch, under the NIC's lock once.  It
 * fills @results for the frames it takes, which are always a prefix of
 * the batch, and returns how many that is.  With NET_RX_MAY_HOLD the NIC
 * may stop early and hold the rest, as QEMU's can_receive does for a
 * guest that has posted no buffer; it then calls net_nic_rx_ready() once
 * it has room.  Without it the NIC takes all @n.  The frames are the
 * backend's and valid only during the call.  @stamp, when not NULL, is
 * the last frame's (see NetRxStamp); the NIC sets its "visible".
 */
typedef struct NetNicOps {
    unsigned (*receive_batch)(void *opaque, const NetFrame *frames,
                              unsigned n, unsigned flags, NetRxStamp *stamp,
                              NetRxResult *results);
    /* Optional: a run of NET_RX_MORE batches ended without another
     * batch for the NIC (the backend had no frame left, or the net core
     * dropped them all).  The delivering thread. */
    void (*rx_run_end)(void *opaque);
    /* The NIC's model ("spapr-vlan"), for x-query-net-stats. */
    const char *model;
    /* Optional, for the monitor (main thread): the device's own counters
     * (x-query-net-stats' "device"), and its receive filter as QEMU's
     * RxFilterInfo less "name" (query-rx-filter); each an a{sv}
     * dictionary, as a floating reference. */
    GVariant *(*query)(void *opaque);
    GVariant *(*query_rx_filter)(void *opaque);
    /* Optional: the MAC in force (the guest may have changed it), for
     * self-announce.  Main thread. */
    void (*get_mac)(void *opaque, uint8_t mac[6]);
    /* Optional: with @hold, waits for the send under way and keeps the
     * next from starting (the NIC's transmit lock) until called again
     * without it.  Every NIC that sends off the main thread has it, for
     * the main thread's own sends (self-announce) and for a backend that
     * replaces what its send uses.  Main thread. */
    void (*hold_sends)(void *opaque, bool hold);
    /*
     * Optional, receive zero copy: up to @max guest buffers lent to the
     * backend for the host kernel to write frames into, each given by
     * the guest-physical address where a frame's first byte must go,
     * with at least NET_LEND_DATA_ROOM bytes of buffer from there and
     * NET_LEND_HEADROOM bytes of RAM before it.  @keep: buffers to leave
     * unlent, one for each frame the kernel may still put in a buffer of
     * the backend's own, so that such a frame finds the buffer best fit
     * would have given it.  *@outlook: what the NIC can lend after this.
     * A lent buffer is the NIC's until a frame comes back in it
     * (NetFrame.lent) or the backend's rx_reclaim() returns.  The
     * delivering thread.
     */
    unsigned (*rx_lend)(void *opaque, uint64_t *addrs, unsigned max,
                        unsigned keep, NetLendOutlook *outlook);
    /* Frames in lent buffers that the NIC never saw (the link was down,
     * too short): their buffers are the NIC's to lend again. */
    void (*rx_unlend)(void *opaque, const NetFrame *frames, unsigned n);
    /* Every lent buffer died with the backend's sockets (the interface
     * went away): all are the NIC's again.  Main thread, with no
     * delivering thread left. */
    void (*rx_lent_lost)(void *opaque);
} NetNicOps;

/* What a lent buffer offers (the kernel's copy-mode chunk of 2296 bytes
 * less its 256 bytes of headroom), and what lies before it. */
#define NET_LEND_HEADROOM 256
#define NET_LEND_DATA_ROOM 2040

/* The backend's side. */
typedef struct NetBackendOps {
    /* Sends one frame; false when it could not be sent. */
    bool (*send)(void *opaque, const uint8_t *data, size_t len);
    /* Optional, transmit zero copy: sends the frame from where it lies,
     * in the RAM the NIC lends from (rx_lendable), and returns once
     * nothing reads it any more; false, with nothing sent, when it
     * cannot (the caller then sends a copy). */
    bool (*send_in_place)(void *opaque, const uint8_t *data, size_t len);
    void (*cleanup)(void *opaque);
    /* Optional: the NIC has room again for frames it held.  Any
     * thread. */
    void (*rx_ready)(void *opaque);
    /* Optional: the backend's own state and counters, as an a{sv}
     * dictionary (floating reference), for x-query-net-stats. */
    GVariant *(*query)(void *opaque);
    /* Optional, receive zero copy: the NIC lends buffers in @ram (when
     * it has some), or with @ram NULL lends none until it calls again
     * with its RAM, and takes back every lent buffer as rx_reclaim()
     * does.  Synchronous; any thread, not under the NIC's lock. */
    void (*rx_lendable)(void *opaque, GuestRam *ram);
    /* Optional: takes back every lent buffer the host kernel still holds;
     * once it returns, nothing writes them.  Any thread but the
     * delivering one, without the NIC's lock. */
    void (*rx_reclaim)(void *opaque);
} NetBackendOps;

typedef struct NetdevType {
    const char *name;
    const char *desc;
    const char *help;       /* -netdev TYPE,help: one line per option */
    /* Creates the backend from its options and registers it with
     * net_backend_new(@id, ...).  Keys other than type and id are the
     * backend's to check. */
    bool (*create)(const char *id, const QemuOpts *opts, GError **errp);
    /* Optional: the options' checks alone, opening nothing. */
    bool (*check)(const QemuOpts *opts, GError **errp);
} NetdevType;

void netdev_type_register(const NetdevType *type);
bool netdev_type_exists(const char *name);
void net_print_netdev_types(void);
/* -netdev TYPE,help; false when there is no such type. */
bool net_print_netdev_help(const char *type);

/* -netdev TYPE,id=ID,...: parses and creates the backend. */
bool net_netdev_add(const QemuOpts *opts, GError **errp);
/* The checks net_netdev_add() makes before it opens anything, and the
 * type's own check(), if it has one; creates nothing (fuzz-options). */
bool net_netdev_check(const QemuOpts *opts, GError **errp);
bool net_netdev_exists(const char *id);
/* Removes a netdev no NIC uses (netdev_del). */
bool net_netdev_del(const char *id, GError **errp);
/* The netdev's type name, or NULL when there is no such netdev. */
const char *net_netdev_type(const char *id);
/* Frees every netdev (and the NICs' pairing); at exit. */
void net_cleanup(void);

/* For backends: the client the registry knows as @id. */
NetClientState *net_backend_new(const char *id, const NetBackendOps *ops,
                                void *opaque);
/* Hands @n (at most NET_BATCH_MAX) frames to the attached NIC, which
 * takes them all.  Safe from any thread. */
void net_backend_deliver(NetClientState *backend, const NetFrame *frames,
                         unsigned n);
/* For backends that can hold frames: hands over up to @n and returns how
 * many the NIC took (delivered or dropped, and counted); the rest are
 * still the backend's, to offer again after its rx_ready().  Frames the
 * NIC could never take (no NIC, link down, too short) are always taken
 * and counted, never held.  @stamp: NULL, or when the last frame
 * entered the host; its "visible" comes back set if the NIC made the
 * frame visible to the guest (see NetRxStamp).  @more: this thread
 * calls again at once (NET_RX_MORE); a run ends with a call without
 * it, which may have @n == 0. */
unsigned net_backend_deliver_or_hold(NetClientState *backend,
                                     const NetFrame *frames, unsigned n,
                                     NetRxStamp *stamp, bool more);
/*
 * The backend's link changed: @state is "down", "up", "removed" (the host
 * interface went away), "reopened" (it came back and the backend recovered)
 * or "failed" (it came back and the backend could not recover), @detail a
 * sentence for people.  Main thread; the notifier is the monitor's
 * NETDEV_LINK_CHANGED event.
 */
void net_backend_link_event(NetClientState *backend, const char *state,
                            const char *detail);
void net_set_link_event_notifier(void (*fn)(NetClientState *backend,
                                            const char *state,
                                            const char *detail));
/*
 * A stream backend's peer arrived (@addr: QEMU's SocketAddress of it, an
 * a{sv} dictionary, floating) or went away (@addr NULL).  Main thread;
 * the notifier is the monitor's NETDEV_STREAM_CONNECTED and
 * NETDEV_STREAM_DISCONNECTED events.
 */
void net_backend_stream_event(NetClientState *backend, GVariant *addr);
void net_set_stream_event_notifier(void (*fn)(NetClientState *backend,
                                              GVariant *addr));
/* The backend's query() result, or NULL; the caller unrefs it. */
GVariant *net_backend_query(NetClientState *backend);
/* Counts input the backend lost before it became a frame; returns the
 * count so far, for the one line the backend logs. */
uint64_t net_backend_rx_error(NetClientState *backend);

/* For NICs: pairs with netdev @netdev_id (NULL for none; a netdev takes
 * one NIC). */
NetClientState *net_nic_new(const char *name, const char *netdev_id,
                            const NetNicOps *ops, void *opaque,
                            GError **errp);
void net_nic_free(NetClientState *nic);
/* The NIC has room again for frames it held.  Any thread. */
void net_nic_rx_ready(NetClientState *nic);
/* The NIC's model, and its query() and query_rx_filter() results, or
 * NULL; the caller unrefs those. */
const char *net_nic_model(const NetClientState *nic);
GVariant *net_nic_query(NetClientState *nic);
GVariant *net_nic_query_rx_filter(NetClientState *nic);
/* The NIC's MAC in force into @mac; false when it has none to tell. */
bool net_nic_get_mac(NetClientState *nic, uint8_t mac[6]);
/* Receive zero copy: the NIC lends buffers in @ram (rx_lend), and takes
 * them all back; both synchronous, not under the NIC's lock. */
void net_nic_rx_lendable(NetClientState *nic, GuestRam *ram);
void net_nic_rx_reclaim(NetClientState *nic);
/* For the backend: the NIC's rx_lend(), or 0 (NET_LEND_OFF) without a
 * NIC that lends. */
unsigned net_backend_rx_lend(NetClientState *backend, uint64_t *addrs,
                             unsigned max, unsigned keep,
                             NetLendOutlook *outlook);
/* For the backend: the NIC's rx_lent_lost(), if it lends. */
void net_backend_rx_lent_lost(NetClientState *backend);
/* For a backend replacing what its send uses, on the main thread: while
 * held, none of its NIC's sends is under way.  A NIC without hold_sends
 * sends only on the main thread. */
void net_backend_hold_sends(NetClientState *backend, bool hold);
/*
 * Sends one frame the guest built to the backend; false if dropped.  A
 * NIC's sends (this, net_nic_send_in_place, net_nic_send_announce) come
 * one at a time, on whichever thread: its tx counters have one writer, so
 * a send takes no lock of the net core's.
 */
bool net_nic_send(NetClientState *nic, const uint8_t *data, size_t len);
/* A self-announcement from the main thread, between two of the guest's
 * sends (the NIC's hold_sends). */
void net_nic_send_announce(NetClientState *nic, const uint8_t *frame,
                           size_t len);
/* Transmit zero copy: @data lies in guest RAM and is the NIC's until this
 * returns.  True when the backend sent it from there (counted as
 * net_nic_send counts); false when it could not, and nothing was sent
 * or counted: the NIC sends a copy. */
bool net_nic_send_in_place(NetClientState *nic, const uint8_t *data,
                           size_t len);

const char *net_client_name(const NetClientState *nc);
/* What a backend says of itself in HMP's "info network", after its type:
 * "listening", "tcp:127.0.0.1:5555", "udp=...".  Main thread only. */
void net_client_set_info_str(NetClientState *nc, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);
const char *net_client_info_str(const NetClientState *nc);
bool net_client_link_up(const NetClientState *nc);
void net_client_set_link(NetClientState *nc, bool up);
void net_client_get_stats(const NetClientState *nc, NetClientStats *stats);
/*
 * The guest changed a NIC's receive filter.  The notifier (the monitor's
 * NIC_RX_FILTER_CHANGED) hears of it once, and again only after
 * net_nic_rx_filter_rearm() (someone queried the filter).  Any thread:
 * the notifier runs on the main thread, posted there if need be.
 */
void net_nic_rx_filter_changed(NetClientState *nic);
void net_nic_rx_filter_rearm(NetClientState *nic);
void net_set_rx_filter_notifier(void (*fn)(NetClientState *nic));
/* The peer of a NIC or netdev, or NULL. */
NetClientState *net_client_peer(const NetClientState *nc);

/* Calls @fn for every NIC and netdev, NICs first. */
void net_foreach_client(void (*fn)(NetClientState *nc, bool is_nic,
                                   void *opaque), void *opaque);
/* The same, in the order the clients were created (QEMU's order). */
void net_foreach_client_created(void (*fn)(NetClientState *nc, bool is_nic,
                                           void *opaque), void *opaque);

#endif
