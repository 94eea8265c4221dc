/*
 * spapr-vlan: the PAPR Interpartition Logical LAN device.
 *
 * Public: the device state (its field names and sizes are QEMU's, so that
 * migration lines up with QEMU's spapr_llan) and the stats API for the
 * monitor.
 */
#ifndef HW_NET_SPAPR_LLAN_H
#define HW_NET_SPAPR_LLAN_H

#include "hw/net/llan_rx_pools.h"
#include "hw/ppc/spapr_vio.h"
#include "net/net.h"
#include "qemu/thread.h"

#define TYPE_SPAPR_VLAN         "spapr-vlan"
/* Entries in the multicast filter table (ibm,mac-address-filters). */
#define LLAN_MCAST_FILTERS      16
#define LLAN_MAX_TX_BDS         6
#define LLAN_MAX_FRAME          65536

/* H_ILLAN_ATTRIBUTES bits. */
#define ILLAN_RX_MULTI_BUFF_SUPPORT 0x40000ULL

typedef struct SpaprVlanStats {
    uint64_t rx_frames;             /* delivered into guest buffers */
    uint64_t rx_bytes;
    uint64_t rx_buffer_bytes;       /* size of the buffers they used */
    uint64_t rx_interrupts;
    uint64_t rx_held;               /* times frames waited for a buffer */
    uint64_t rx_dropped[NET_RX__MAX];   /* by reason, as net_rx_result_name */
    uint64_t tx_frames;
    uint64_t tx_bytes;
    uint64_t tx_errors;             /* H_SEND_LOGICAL_LAN calls that failed */
    unsigned npools;                /* pool mode: pools with a size */
    struct {
        int32_t bufsize;
        uint32_t posted;
        uint64_t hits;
    } pools[LLAN_RX_MAX_POOLS];
    uint32_t rx_bufs;               /* buffers posted, all modes */
} SpaprVlanStats;

typedef struct SpaprVlanFilter {
    bool filtering;                 /* off: every frame is delivered */
    bool rx_multicast;              /* off: no multicast frame is */
    unsigned nmcast;
    MACAddr mcast[LLAN_MCAST_FILTERS];
} SpaprVlanFilter;

typedef struct SpaprVlanState {
    SpaprVioDevice vdev;
    MACAddr mac;            /* the current MAC; the guest may change it */
    MACAddr perm_mac;       /* the command-line MAC, restored on reset */
    char *netdev;
    bool use_rx_buffer_pools;

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
    SpaprVlanStats stats;       /* all but tx_*, which are in tx */

    QemuMutex tx_lock;          /* H_SEND_LOGICAL_LAN: the gather buffer,
                                   the backend's send, the tx counters */
    struct {
        uint64_t frames, bytes, errors;
    } tx;
    uint8_t tx_buf[LLAN_MAX_FRAME];     /* gather buffer, never per frame */
} SpaprVlanState;

/* @dev as a logical LAN, or NULL when it is another kind of VIO device. */
SpaprVlanState *spapr_vlan_from_vio(SpaprVioDevice *dev);

/* A copy of the device's counters and pool table. */
void spapr_vlan_get_stats(SpaprVlanState *s, SpaprVlanStats *stats);
void spapr_vlan_get_filter(SpaprVlanState *s, SpaprVlanFilter *filter);

#endif
