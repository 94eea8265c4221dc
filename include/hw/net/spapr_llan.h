/* spapr-vlan: the PAPR Interpartition Logical LAN device. */
#ifndef HW_NET_SPAPR_LLAN_H
#define HW_NET_SPAPR_LLAN_H

#include "hw/ppc/spapr_vio.h"

#define TYPE_SPAPR_VLAN "spapr-vlan"

typedef struct SpaprVlanState {
    SpaprVioDevice vdev;
    MACAddr mac;            /* the current MAC; the guest may change it */
    MACAddr perm_mac;       /* the command-line MAC, restored on reset */
    char *netdev;
    bool use_rx_buffer_pools;
} SpaprVlanState;

#endif
