/*
 * spapr-vlan: the PAPR Interpartition Logical LAN device.
 *
 * Public: the device's type name, its PAPR constants (from
 * hw/net/spapr_llan_abi.h), and what the monitor and tests may see of its
 * state, through accessors that take the device's locks.  The state itself
 * is private to hw/net/spapr_llan.c.
 */
#ifndef HW_NET_SPAPR_LLAN_H
#define HW_NET_SPAPR_LLAN_H

#include "hw/net/llan_offload.h"
#include "hw/net/llan_rx_pools.h"
#include "hw/net/spapr_llan_abi.h"
#include "hw/ppc/spapr_vio.h"
#include "net/net.h"

#define TYPE_SPAPR_VLAN         "spapr-vlan"

/* Why a frame the guest sends is copied rather than sent from where it
 * lies in guest RAM (transmit zero copy): the device gathers it into a
 * buffer of its own first, or (backend) the netdev copies it from guest
 * RAM. */
typedef enum LlanTxCopyReason {
    LLAN_TX_COPY_GATHERED,      /* in several descriptors */
    LLAN_TX_COPY_OFFLOAD,       /* the device fills in a checksum or
                                   segments it */
    LLAN_TX_COPY_NOT_CONTIGUOUS,    /* not one run of RAM through the TCEs */
    LLAN_TX_COPY_BACKEND,       /* the netdev does not send in place, or
                                   could not take this frame */
    LLAN_TX_COPY__MAX
} LlanTxCopyReason;

/* "gathered", "offload", "not-contiguous", "backend". */
const char *llan_tx_copy_reason_name(LlanTxCopyReason why);

typedef struct SpaprVlanStats {
    uint64_t rx_frames;             /* delivered into guest buffers */
    uint64_t rx_bytes;
    uint64_t rx_buffer_bytes;       /* size of the buffers they used */
    uint64_t rx_interrupts;
    uint64_t rx_held;               /* times frames waited for a buffer */
    uint64_t rx_dropped[NET_RX__MAX];   /* by reason, as net_rx_result_name */
    /* Receive zero copy: frames delivered where the host kernel wrote
     * them, frames it wrote into a lent buffer that were copied (a
     * smaller buffer fit, or they had to move), buffers lent now, and
     * buffers the device would not lend (not one run of RAM). */
    uint64_t rx_zero_copy, rx_copy_down;
    uint32_t rx_lent;
    uint64_t rx_lend_refused;
    uint64_t tx_frames;
    uint64_t tx_bytes;
    uint64_t tx_errors;             /* H_SEND_LOGICAL_LAN calls that failed */
    /* Frames the guest sent that went out from where they lie in guest
     * RAM, and those (one per hcall, before any segmentation) copied
     * instead, by reason. */
    uint64_t tx_in_place;
    uint64_t tx_copied[LLAN_TX_COPY__MAX];
    /* Offloads (see docs/system/devices/spapr-vlan.md). */
    uint64_t attributes;            /* what H_ILLAN_ATTRIBUTES reports */
    uint64_t rx_csum_good, rx_csum_partial, rx_csum_bad;
    uint64_t rx_csum_completed;     /* partial ones we completed for a
                                       guest without checksum offload */
    uint64_t rx_lro_frames, rx_lro_segments;    /* merged, and of how many */
    uint64_t rx_long_tcp;           /* TCP over 1514 bytes, unmerged,
                                       delivered marked LRG_PKT */
    uint64_t tx_csum_completed;     /* frames whose checksum we filled */
    uint64_t tx_segmented, tx_segments;     /* large sends, frames sent */
    uint64_t tx_offload_errors[LLAN_OFFLOAD_ERROR__MAX];    /* sent as is */
    unsigned npools;                /* pool mode: pools with a size */
    struct {
        int32_t bufsize;
        uint32_t posted;
        uint64_t hits;
    } pools[LLAN_RX_MAX_POOLS];
    uint32_t rx_bufs;               /* buffers posted, all modes */
} SpaprVlanStats;

typedef struct SpaprVlanState SpaprVlanState;

/* @dev as a logical LAN, or NULL when it is another kind of VIO device. */
SpaprVlanState *spapr_vlan_from_vio(SpaprVioDevice *dev);

/* A copy of the device's counters and pool table. */
void spapr_vlan_get_stats(SpaprVlanState *s, SpaprVlanStats *stats);
/* A copy of the receive filter the guest set. */
void spapr_vlan_get_filter(SpaprVlanState *s, SpaprVlanFilter *filter);
/* The current MAC: the guest may change it (H_CHANGE_LOGICAL_LAN_MAC) on
 * any hcall thread, so it is read under the device's lock. */
MACAddr spapr_vlan_get_mac(SpaprVlanState *s);
/* The device's side of its netdev pair, for the net core's counters. */
NetClientState *spapr_vlan_nic(SpaprVlanState *s);
/* The use-rx-buffer-pools property: pool mode, or legacy page mode. */
bool spapr_vlan_rx_buffer_pools(SpaprVlanState *s);
/*
 * For the built-in guest, which measures how long frames wait for it:
 * @stamps has a slot for each of the first @n rx-queue entries, and
 * when a backend says when a batch's last frame entered the host
 * (CLOCK_MONOTONIC ns), the device stores it in the slot of the entry
 * carrying that frame before making the entry visible; the guest takes
 * it (exchanges it with 0) after reading the entry.  The caller owns the
 * array; NULL stops the stores, and once this returns the device no
 * longer touches the old array.  Not migrated: a guest sets it again
 * wherever it runs.
 */
void spapr_vlan_set_rx_stamps(SpaprVlanState *s, uint64_t *stamps,
                              uint32_t n);

#endif
