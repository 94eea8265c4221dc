/*
 * The built-in guest: the ibmveth driver model (guest/ibmveth.h) on a vCPU
 * thread of its own inside illan, issuing hcalls through the same entry
 * point as qtest, with one of testpmd's forwarding modes as its workload,
 * or a host TAP device as its network stack.
 *
 * It sleeps until the device's interrupt wakes it and then polls as NAPI
 * does (interrupt off, up to budget entries, replenish, interrupt on,
 * re-check), unless poll=spin keeps it polling.  Received frames are
 * charged the memory Linux charges for their buffer, and IPv4 fragments
 * are held against Linux's reassembly limit (guest/ip-reasm.h).
 */
#ifndef GUEST_IBMVETH_GUEST_H
#define GUEST_IBMVETH_GUEST_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "guest/ibmveth.h"
#include "hw/ppc/spapr.h"
#include "qemu/latency-histogram.h"

typedef struct IbmvethGuest IbmvethGuest;

typedef enum GuestFwd {
    GUEST_FWD_RXONLY,       /* count and recycle */
    GUEST_FWD_TXONLY,       /* generate frames */
    GUEST_FWD_MACSWAP,      /* send each frame back, MACs swapped */
    GUEST_FWD_TAP,          /* bridge to a host TAP device */
    GUEST_FWD__MAX,
} GuestFwd;

const char *guest_fwd_name(GuestFwd fwd);

#define IBMVETH_GUEST_MIX   0   /* tx_size: cycle 64/594/1518 bytes */
#define IBMVETH_GUEST_BUDGET_MAX 256    /* the largest NAPI weight */

typedef struct IbmvethGuestConf {
    const char *id;
    GuestFwd fwd;
    const char *ifname;     /* fwd=tap */
    bool spin;              /* poll=spin */
    unsigned budget;        /* NAPI weight, 1..IBMVETH_GUEST_BUDGET_MAX */
    uint32_t tx_size;       /* fwd=txonly: frame bytes, or ..._MIX */
    uint8_t tx_dst[6];      /* fwd=txonly: destination MAC */
    uint32_t page_size;     /* the guest kernel's page size */
    uint64_t ipfrag_high_thresh;
    uint64_t ipfrag_time_ns;
    bool offloads;          /* checksum offload and TSO, when offered */
    bool csum_audit;        /* check what CSUM_GOOD vouches for */
    IbmvethConf drv;        /* unit and MAC are the device's; dma=
                               and page_size are -guest's */
} IbmvethGuestConf;

typedef enum GuestDrop {
    GUEST_DROP_RX_INVALID,      /* entry without the valid bit */
    GUEST_DROP_BAD_HANDLE,      /* entry naming no posted buffer */
    GUEST_DROP_REASM_REFUSED,   /* fragment over ipfrag_high_thresh */
    GUEST_DROP_REASM_DROPPED,   /* duplicate, overlap, malformed fragment */
    GUEST_DROP_REASM_TIMEOUT,   /* datagram incomplete after ipfrag_time */
    GUEST_DROP_IP_HEADER,       /* IPv4 header Linux would refuse */
    GUEST_DROP_TAP_WRITE,       /* the TAP refused the frame */
    GUEST_DROP_TX_FAILED,       /* H_SEND_LOGICAL_LAN failed */
    GUEST_DROP_MACHINE_RESET,   /* delivered, not yet taken at a reset */
    GUEST_DROP_CLOSED,          /* delivered, not yet taken at a close */
    GUEST_DROP_TX_BAD_OFFLOAD,  /* the TAP asked for an offload the
                                   driver cannot do with this frame */
    GUEST_DROP_RX_CSUM_BAD,     /* fwd=rxonly: a TCP segment whose
                                   checksum is neither vouched for by the
                                   device nor right, as Linux's TCP drops */
    GUEST_DROP__MAX,
} GuestDrop;

const char *guest_drop_name(GuestDrop drop);

/* The hcalls a driver issues, counted by opcode: the figures a real
 * guest's hcall trace is compared with. */
typedef enum GuestHcall {
    GUEST_HCALL_PUT_TCE,
    GUEST_HCALL_PUT_TCE_INDIRECT,
    GUEST_HCALL_STUFF_TCE,
    GUEST_HCALL_VIO_SIGNAL,
    GUEST_HCALL_REGISTER_LOGICAL_LAN,
    GUEST_HCALL_FREE_LOGICAL_LAN,
    GUEST_HCALL_ADD_LOGICAL_LAN_BUFFER,
    GUEST_HCALL_ADD_LOGICAL_LAN_BUFFERS,
    GUEST_HCALL_SEND_LOGICAL_LAN,
    GUEST_HCALL_MULTICAST_CTRL,
    GUEST_HCALL_CHANGE_LOGICAL_LAN_MAC,
    GUEST_HCALL_ILLAN_ATTRIBUTES,
    GUEST_HCALL_OTHER,
    GUEST_HCALL__MAX,
} GuestHcall;

/* PAPR's name of the hcall ("H_PUT_TCE"), "other" for the rest. */
const char *guest_hcall_name(GuestHcall h);

/* The vCPU's paths whose TCE hcalls are counted apart from those of
 * opens and closes: receive (NAPI poll and replenish) and transmit. */
typedef enum GuestPath {
    GUEST_PATH_RX,
    GUEST_PATH_TX,
    GUEST_PATH__MAX,
    GUEST_PATH_NONE = GUEST_PATH__MAX,
} GuestPath;

typedef struct IbmvethGuestStats {
    uint64_t rx_frames, rx_bytes;
    uint64_t tx_frames, tx_bytes;       /* H_SEND succeeded or H_DROPPED */
    uint64_t tap_rx_frames;
    uint64_t rx_csum_good;              /* frames the device flagged */
    uint64_t rx_csum_audited;           /* csum-audit=on: of those, the
                                           checksums the guest checked */
    uint64_t rx_csum_lied;              /* ... and found wrong */
    uint64_t rx_large;                  /* frames Linux takes for large
                                           packets (rx_large_packets) */
    uint64_t tx_csum_offloaded;         /* sent with NO_CSUM */
    uint64_t tx_large_sends;            /* sent with LRG_SND */
    uint64_t gro_packets, gro_merged;   /* GRO's packets to the TAP, and
                                           the segments merged into them */
    uint64_t gro_csum_checked;          /* checksums GRO computed */
    uint64_t wakeups;                   /* interrupts that woke the vCPU */
    uint64_t woken_late;        /* a frame waited over 250 ms for its
                                   interrupt while the vCPU slept */
    uint64_t resets;            /* machine resets: the device reopened */
    uint64_t adapter_resets;    /* mainline's ibmveth_reset after an entry
                                   naming no posted buffer */
    uint64_t napi_polls;
    uint64_t frames_in_pool[IBMVETH_NUM_POOLS];
    uint64_t pool_size[IBMVETH_NUM_POOLS];  /* 0: inactive */
    uint64_t buffer_bytes;      /* buffer sizes of the frames received */
    uint64_t charged_bytes;     /* skb truesize held now */
    uint64_t charged_peak_bytes;
    uint64_t datagrams_ok, datagrams_failed;
    uint64_t fragments, fragments_refused;
    uint64_t add_failures;
    uint64_t rx_no_buffer;      /* the device's count at buffer-list+4088 */
    uint64_t drops[GUEST_DROP__MAX];
    uint64_t hcalls[GUEST_HCALL__MAX];
    uint64_t tce_hcalls[GUEST_PATH__MAX];
    uint64_t cpu_ns;            /* the vCPU thread's CPU time */
    /* One sample a device batch that came with the XDP program's
     * stamp: from the program to the vCPU's reading its last frame's
     * rx-queue entry. */
    LatencyHistogram rx_latency;
} IbmvethGuestStats;

/* Checks @conf against the machine (the device exists and is a
 * spapr-vlan, a TAP opens), opens the driver as Linux does and claims the
 * device's interrupt.  With @incoming the driver is not opened: its state
 * comes with the migration stream (ibmveth_guest_adopt()).  The vCPU
 * thread starts with ibmveth_guest_start(). */
IbmvethGuest *ibmveth_guest_new(SpaprMachineState *spapr, const char *dev,
                                const IbmvethGuestConf *conf, bool incoming,
                                GError **errp);
bool ibmveth_guest_start(IbmvethGuest *g, GError **errp);
/* Stops and joins the vCPU thread; no hcall is made after this. */
void ibmveth_guest_stop(IbmvethGuest *g);
/* The machine was reset with the vCPU parked: the driver closes, giving
 * its memory back, and once every guest has closed it opens again, as a
 * rebooted guest would; a guest still waiting for its state from a stream
 * (inmigrate) stays as it is.  Main thread. */
void ibmveth_guest_reset_close(IbmvethGuest *g);
void ibmveth_guest_reset_open(IbmvethGuest *g);
/* Closes the driver, gives the interrupt back and frees; call once no
 * backend can raise the interrupt any more. */
void ibmveth_guest_free(IbmvethGuest *g);

/* Migration (guest/ibmveth-guest-vmstate.c), main thread, vCPU parked:
 * the driver (NULL while its state is awaited), the device's unit, the
 * txonly pattern's position, and the driver carrying on from a stream's
 * state. */
IbmvethDriver *ibmveth_guest_driver(IbmvethGuest *g);
uint32_t ibmveth_guest_unit(IbmvethGuest *g);
uint32_t ibmveth_guest_tx_position(IbmvethGuest *g);
void ibmveth_guest_adopt(IbmvethGuest *g, const IbmvethState *s,
                         uint32_t tx_position);
/* The section "ibmveth-guest" for @g, instance @instance. */
void ibmveth_guest_vmstate_register(IbmvethGuest *g, uint32_t instance);
void ibmveth_guest_vmstate_unregister(IbmvethGuest *g);

/*
 * What a Linux admin does to a running interface, done as Linux's driver
 * does it (main thread; the vCPU is parked meanwhile):
 * "ip link set address": H_CHANGE_LOGICAL_LAN_MAC, and the next open
 * registers with it.  "ip link set mtu": Linux's change_mtu, a close,
 * every pool activated from the smallest up to the first that holds
 * MTU + 22 bytes, and an open.  A machine reset brings back the
 * device-tree MAC and the -guest pools, as a reboot would.
 */
bool ibmveth_guest_set_mac(IbmvethGuest *g, const uint8_t *addr,
                           GError **errp);
bool ibmveth_guest_set_mtu(IbmvethGuest *g, uint32_t mtu, GError **errp);
/* "ethtool -K rx @rx_csum tso @tso" on the running interface, as Linux's
 * ibmveth_set_features does it: for each feature that changes, a close,
 * its attribute hcalls and an open (no rx mode).  A feature the probe
 * did not offer cannot be turned on. */
bool ibmveth_guest_set_offloads(IbmvethGuest *g, bool rx_csum, bool tso,
                                GError **errp);

/*
 * "ip link set eth0 down" and "up" (main thread): down is Linux's
 * __dev_change_flags, an rx mode while still up, then ibmveth_close,
 * the frames still queued counted closed; while down the vCPU sleeps
 * and makes no hcall, set_mac issues its hcall alone, set_mtu and
 * set_offloads change no more than the next open.  Up is ibmveth_open
 * and an ifup's rx mode.  Up when up and down when down do nothing.
 */
bool ibmveth_guest_set_link(IbmvethGuest *g, bool up, GError **errp);
bool ibmveth_guest_link_up(IbmvethGuest *g);
/* "ip maddr add/del dev eth0 @addr": the interface's multicast list,
 * and on an interface that is up one rx mode over it (an add of an
 * address already listed included); a del of an address not added is
 * refused with no hcall. */
bool ibmveth_guest_add_multicast(IbmvethGuest *g, const uint8_t *addr,
                                 GError **errp);
bool ibmveth_guest_del_multicast(IbmvethGuest *g, const uint8_t *addr,
                                 GError **errp);

const char *ibmveth_guest_id(IbmvethGuest *g);
const char *ibmveth_guest_dev(IbmvethGuest *g);
const IbmvethGuestConf *ibmveth_guest_conf(IbmvethGuest *g);
/* How the driver maps its rx buffers: the open one's (after an incoming
 * migration the stream's, until the next open), or, while the interface
 * is down, how the next open will.  Main thread. */
IbmvethDma ibmveth_guest_dma(IbmvethGuest *g);
void ibmveth_guest_get_stats(IbmvethGuest *g, IbmvethGuestStats *st);

#endif
