/*
 * spapr-vlan's migration image, between the device (hw/net/spapr_llan.c),
 * whose capture and commit copy it from and to the live device under the
 * device's lock, and its section (hw/net/spapr_llan_vmstate.c), which
 * carries and checks it without ever touching the live device.
 */
#ifndef HW_NET_SPAPR_LLAN_INTERNAL_H
#define HW_NET_SPAPR_LLAN_INTERNAL_H

#include "hw/net/llan_rx_pools.h"
#include "hw/net/spapr_llan_abi.h"
#include "hw/ppc/spapr_vio.h"
#include "migration/savevm.h"
#include "migration/vmstate.h"

#include <string.h>

typedef struct SpaprVlanImage {
    SpaprVioImage sdev;
    bool isopen;
    uint64_t buf_list;
    uint32_t add_buf_ptr, use_buf_ptr, rx_bufs;
    uint64_t rxq_ptr;
    LlanRxPool *rx_pool[LLAN_RX_MAX_POOLS];     /* ascending size */
    LlanRxPool pools[LLAN_RX_MAX_POOLS];        /* what rx_pool points at */
    bool use_rx_buffer_pools;                   /* this device's property */
    bool pools_received;
    /* spapr_llan/guest_mac_filters */
    uint8_t mac[6];
    bool filtering, rx_multicast;
    uint32_t nmcast;
    uint8_t mcast[LLAN_MCAST_FILTERS * 6];      /* nmcast in use, then 0 */
    uint8_t perm_mac[6];                        /* this device's mac= */
    /* spapr_llan/illan_attributes */
    uint64_t attrs;
    bool offloads;                              /* this device's property */
    bool illan_subsections;                     /* this device's property */
} SpaprVlanImage;

/* The filter part of the image, to and from the device's form. */
static inline void filter_to_image(SpaprVlanImage *img, const MACAddr *mac,
                                   const SpaprVlanFilter *f)
{
    memcpy(img->mac, mac->a, 6);
    img->filtering = f->filtering;
    img->rx_multicast = f->rx_multicast;
    img->nmcast = f->nmcast;
    memset(img->mcast, 0, sizeof(img->mcast));
    for (unsigned i = 0; i < f->nmcast; i++) {
        memcpy(img->mcast + i * 6, f->mcast[i].a, 6);
    }
}

static inline void filter_from_image(const SpaprVlanImage *img,
                                     MACAddr *mac, SpaprVlanFilter *f)
{
    memcpy(mac->a, img->mac, 6);
    spapr_vlan_filter_reset(f);
    f->filtering = img->filtering;
    f->rx_multicast = img->rx_multicast;
    f->nmcast = img->nmcast;
    for (unsigned i = 0; i < img->nmcast; i++) {
        memcpy(f->mcast[i].a, img->mcast + i * 6, 6);
    }
}

/* hw/net/spapr_llan_vmstate.c */
extern const VMStateDescription vmstate_spapr_llan;
extern const VMStateImageOps spapr_vlan_image_ops;

/* hw/net/spapr_llan.c: the only ways into the live device (the
 * VMStateImageOps capture and commit of @obj, a SpaprVlanState). */
void spapr_vlan_capture(void *obj, void *image);
void spapr_vlan_commit(void *obj, const void *image);

#endif
