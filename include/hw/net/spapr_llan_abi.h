/*
 * spapr-vlan's guest interface: the PAPR constants a guest sees (table
 * sizes, attribute bits, descriptor and queue-entry flags) and the
 * receive filter it sets, with what registering leaves it as.  The
 * device, its migration section and the monitor all use them; this header
 * includes nothing of the device, so any of them can include it.
 */
#ifndef HW_NET_SPAPR_LLAN_ABI_H
#define HW_NET_SPAPR_LLAN_ABI_H

#include "hw/qdev.h"

/* Entries in the multicast filter table (ibm,mac-address-filters). */
#define LLAN_MCAST_FILTERS      16
#define LLAN_MAX_TX_BDS         6
#define LLAN_MAX_FRAME          65536

/* H_ILLAN_ATTRIBUTES bits: what the guest may turn on... */
#define ILLAN_IPV4_TCP_CSUM         0x2ULL
#define ILLAN_IPV6_TCP_CSUM         0x4ULL
#define ILLAN_LRG_SR_ENABLED        0x10000ULL
/* ...and what the device always reports. */
#define ILLAN_PADDED_PKT_CSUM       0x2000ULL
#define ILLAN_LRG_SND_SUPPORT       0x8000ULL
#define ILLAN_RX_MULTI_BUFF_SUPPORT 0x40000ULL

/* Descriptor flags of H_SEND_LOGICAL_LAN (in the BD's control byte) and
 * of the receive queue's entries (its control byte). */
#define LLAN_TX_LRG_SND             0x0400000000000000ULL
#define LLAN_TX_NO_CSUM             0x0200000000000000ULL
#define LLAN_TX_CSUM_GOOD           0x0100000000000000ULL
#define LLAN_RXQ_LRG_PKT            0x04
#define LLAN_RXQ_NO_CSUM            0x02
#define LLAN_RXQ_CSUM_GOOD          0x01

/* A receive-queue entry, and the pages the guest registers. */
#define RXQ_ENTRY_SIZE      16
#define LLAN_PAGE_SIZE      4096

typedef struct SpaprVlanFilter {
    bool filtering;                 /* off: every multicast frame is */
    bool rx_multicast;              /* off: no multicast frame is */
    unsigned nmcast;
    MACAddr mcast[LLAN_MCAST_FILTERS];
} SpaprVlanFilter;

/* What registering leaves: filtering off, every multicast frame received. */
static inline void spapr_vlan_filter_reset(SpaprVlanFilter *f)
{
    *f = (SpaprVlanFilter){ .filtering = false, .rx_multicast = true };
}

#endif
