/*
 * spapr-vlan's migration section, its subsections and their checks.
 *
 * The section is QEMU's spapr_llan, field for field, with the pools in
 * subsection spapr_llan/rx_pools whenever they are on; page mode keeps its
 * buffers in guest memory and needs nothing more, so a pools-off stream
 * has the legacy layout.  The MAC and filters a guest set travel in
 * subsection spapr_llan/guest_mac_filters, only when they differ from what
 * registering leaves (the device's own MAC, filtering off, the table
 * empty), so a guest that set neither still gives QEMU's layout.  The
 * counters do not migrate.  With x-illan-subsections=off (pinned by the
 * machine types QEMU 7.2 has) neither illan subsection is written, since
 * QEMU refuses a section with a subsection it does not know: the MAC and
 * filters stay behind as QEMU's own device leaves them, and so do the
 * attributes, which QEMU has none of.
 */
#include "hw/net/spapr_llan_internal.h"
#include "hw/net/llan_bd.h"
#include "hw/net/llan_rx_page.h"
#include "qemu/option.h"

static const VMStateDescription vmstate_rx_buffer_pool = {
    .name = "spapr_llan/rx_buffer_pool",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_INT32(bufsize, LlanRxPool),
        VMSTATE_INT32(count, LlanRxPool),
        VMSTATE_UINT64_ARRAY(bds, LlanRxPool, LLAN_RX_POOL_MAX_BDS),
        VMSTATE_END_OF_LIST()
    },
};

static bool rx_pools_needed(void *opaque)
{
    return ((SpaprVlanImage *)opaque)->use_rx_buffer_pools;
}

static bool rx_pools_pre_load(void *opaque, GError **errp)
{
    if (!rx_pools_needed(opaque)) {
        g_set_error(errp, ILLAN_ERROR, 0, "the stream has RX buffer pools but "
                    "this device has use-rx-buffer-pools=off (given on its "
                    "-device, or pinned by machine pseries-1.0), so the "
                    "posted buffers would be lost");
        return false;
    }
    return true;
}

/* A pool is usable only if its size is a BD length and every buffer in it
 * has exactly that length: best fit trusts the size. */
static bool pool_ok(const LlanRxPool *p, GError **errp)
{
    if (p->count < 0 || p->count > LLAN_RX_POOL_MAX_BDS) {
        g_set_error(errp, ILLAN_ERROR, 0, "pool of size %d has count %d "
                    "(0..%d)", p->bufsize, p->count, LLAN_RX_POOL_MAX_BDS);
        return false;
    }
    if (p->bufsize == LLAN_RX_POOL_UNUSED) {
        if (p->count) {
            g_set_error(errp, ILLAN_ERROR, 0, "an unused pool holds %d "
                        "buffers", p->count);
            return false;
        }
        return true;
    }
    if (p->bufsize <= 0 || p->bufsize > 0xFFFFFF) {
        g_set_error(errp, ILLAN_ERROR, 0, "pool size %d is not a buffer "
                    "length", p->bufsize);
        return false;
    }
    for (int i = 0; i < p->count; i++) {
        if (LLAN_BD_LEN(p->bds[i]) != (uint32_t)p->bufsize) {
            g_set_error(errp, ILLAN_ERROR, 0, "pool of size %d holds a "
                        "%u-byte buffer", p->bufsize, LLAN_BD_LEN(p->bds[i]));
            return false;
        }
    }
    return true;
}

static bool rx_pools_post_load(void *opaque, int version_id, GError **errp)
{
    SpaprVlanImage *img = opaque;

    (void)version_id;
    for (int i = 0; i < LLAN_RX_MAX_POOLS; i++) {
        if (!pool_ok(img->rx_pool[i], errp)) {
            return false;
        }
        for (int j = 0; j < i; j++) {
            if (img->rx_pool[i]->bufsize != LLAN_RX_POOL_UNUSED &&
                img->rx_pool[i]->bufsize == img->rx_pool[j]->bufsize) {
                g_set_error(errp, ILLAN_ERROR, 0, "two pools of size %d",
                            img->rx_pool[i]->bufsize);
                return false;
            }
        }
    }
    img->pools_received = true;
    return true;
}

static const VMStateDescription vmstate_rx_pools = {
    .name = "spapr_llan/rx_pools",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rx_pools_needed,
    .pre_load = rx_pools_pre_load,
    .post_load = rx_pools_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_ARRAY_OF_POINTER_TO_STRUCT(rx_pool, SpaprVlanImage,
                                           LLAN_RX_MAX_POOLS, 1,
                                           vmstate_rx_buffer_pool,
                                           LlanRxPool),
        VMSTATE_END_OF_LIST()
    },
};

/* Sent only when the state differs from a freshly registered device's:
 * the guest changed its MAC (H_CHANGE_LOGICAL_LAN_MAC) or its filter
 * (H_MULTICAST_CTRL).  Both calls work on a device not registered too,
 * so this is not tied to isopen. */
static bool mac_filters_needed(void *opaque)
{
    SpaprVlanImage *img = opaque;

    return img->illan_subsections &&
           (memcmp(img->mac, img->perm_mac, 6) || img->filtering ||
            !img->rx_multicast || img->nmcast);
}

/* An image keeps MACs as bytes; errors print them as the command line
 * spells them. */
static char *image_mac_format(const uint8_t *bytes)
{
    MACAddr m;

    memcpy(m.a, bytes, 6);
    return mac_format(&m);
}

static bool mcast_entry_ok(const SpaprVlanImage *img, unsigned i,
                           GError **errp)
{
    const uint8_t *e = img->mcast + i * 6;

    if (!(e[0] & 1)) {
        g_autofree char *str = image_mac_format(e);

        g_set_error(errp, ILLAN_ERROR, 0, "multicast filter %u is %s, not "
                    "a multicast address", i, str);
        return false;
    }
    for (unsigned j = 0; j < i; j++) {
        if (!memcmp(e, img->mcast + j * 6, 6)) {
            g_set_error(errp, ILLAN_ERROR, 0, "multicast filters %u and %u "
                        "are the same address", j, i);
            return false;
        }
    }
    return true;
}

/* What H_CHANGE_LOGICAL_LAN_MAC and H_MULTICAST_CTRL would have refused. */
static bool mac_filters_post_load(void *opaque, int version_id,
                                  GError **errp)
{
    static const uint8_t zero[6];
    SpaprVlanImage *img = opaque;

    (void)version_id;
    if ((img->mac[0] & 1) || !memcmp(img->mac, zero, 6)) {
        g_autofree char *str = image_mac_format(img->mac);

        g_set_error(errp, ILLAN_ERROR, 0, "mac %s is not a unicast address",
                    str);
        return false;
    }
    if (img->nmcast > LLAN_MCAST_FILTERS) {
        g_set_error(errp, ILLAN_ERROR, 0, "nmcast %u is more than the %u "
                    "multicast filters the device has", img->nmcast,
                    LLAN_MCAST_FILTERS);
        return false;
    }
    for (unsigned i = 0; i < img->nmcast; i++) {
        if (!mcast_entry_ok(img, i, errp)) {
            return false;
        }
    }
    for (unsigned i = img->nmcast * 6; i < sizeof(img->mcast); i++) {
        if (img->mcast[i]) {
            g_set_error(errp, ILLAN_ERROR, 0, "multicast filter %u is set "
                        "beyond the %u in use", i / 6, img->nmcast);
            return false;
        }
    }
    return true;
}

static const VMStateDescription vmstate_mac_filters = {
    .name = "spapr_llan/guest_mac_filters",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = mac_filters_needed,
    .post_load = mac_filters_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_BUFFER(mac, SpaprVlanImage),
        VMSTATE_BOOL(filtering, SpaprVlanImage),
        VMSTATE_BOOL(rx_multicast, SpaprVlanImage),
        VMSTATE_UINT32(nmcast, SpaprVlanImage),
        VMSTATE_BUFFER(mcast, SpaprVlanImage),
        VMSTATE_END_OF_LIST()
    },
};

/* The attributes the guest turned on (H_ILLAN_ATTRIBUTES), sent only
 * when there are some, so that a guest that turned on none still gives
 * the layout of QEMU and of illan before offloads. */
static bool attributes_needed(void *opaque)
{
    SpaprVlanImage *img = opaque;

    return img->illan_subsections && img->attrs != 0;
}

static bool attributes_post_load(void *opaque, int version_id,
                                 GError **errp)
{
    SpaprVlanImage *img = opaque;
    uint64_t allowed = ILLAN_IPV4_TCP_CSUM | ILLAN_IPV6_TCP_CSUM |
                       ILLAN_LRG_SR_ENABLED;

    (void)version_id;
    if (!img->offloads) {
        g_set_error(errp, ILLAN_ERROR, 0, "the guest turned on attributes "
                    "0x%" G_GINT64_MODIFIER "x but this device has "
                    "offloads=off (given on its -device, or pinned by "
                    "machine pseries-2.5)", img->attrs);
        return false;
    }
    if (img->attrs & ~allowed) {
        g_set_error(errp, ILLAN_ERROR, 0, "attributes 0x%" G_GINT64_MODIFIER
                    "x are not ones a guest can turn on (0x%"
                    G_GINT64_MODIFIER "x)", img->attrs, allowed);
        return false;
    }
    return true;
}

static const VMStateDescription vmstate_attributes = {
    .name = "spapr_llan/illan_attributes",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = attributes_needed,
    .post_load = attributes_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(attrs, SpaprVlanImage),
        VMSTATE_END_OF_LIST()
    },
};

/* A stream without a subsection means its state is as registering left
 * it: the pools empty, this device's own MAC, filtering off, no
 * attributes turned on. */
static bool vlan_pre_load(void *opaque, GError **errp)
{
    SpaprVlanImage *img = opaque;
    SpaprVlanFilter fresh;
    MACAddr perm;
    LlanRxPools empty;

    (void)errp;
    llan_rx_pools_reset(&empty);
    memcpy(img->pools, empty.storage, sizeof(img->pools));
    img->pools_received = false;
    spapr_vlan_filter_reset(&fresh);
    memcpy(perm.a, img->perm_mac, 6);
    filter_to_image(img, &perm, &fresh);
    img->attrs = 0;
    return true;
}

/*
 * The state must agree with itself: what the running device could never
 * reach is refused, since the device would trust it.  Page mode's
 * rx_bufs is not compared with the buffer-list page: the page is guest
 * memory, which the guest may rewrite at any time, and QEMU counts a
 * posted BD without VALID that leaves its slot free, so a mismatch can
 * come from a real QEMU and must not veto the migration.  The commit
 * counts the page instead (page_mode_recount_locked()).
 */
static bool vlan_consistent(const SpaprVlanImage *img, GError **errp)
{
    uint32_t pooled = 0;

    if (!img->isopen && img->rx_bufs) {
        g_set_error(errp, ILLAN_ERROR, 0, "rx_bufs %u but the device is not "
                    "registered (isopen 0), so it holds no buffers",
                    img->rx_bufs);
        return false;
    }
    for (int i = 0; img->pools_received && i < LLAN_RX_MAX_POOLS; i++) {
        pooled += img->rx_pool[i]->count;
    }
    if (!img->isopen && pooled) {
        g_set_error(errp, ILLAN_ERROR, 0, "the pools hold %u buffers but "
                    "the device is not registered (isopen 0)", pooled);
        return false;
    }
    if (img->pools_received && pooled != img->rx_bufs) {
        g_set_error(errp, ILLAN_ERROR, 0, "rx_bufs %u but the pools hold %u "
                    "buffers", img->rx_bufs, pooled);
        return false;
    }
    return true;
}

/* Everything the device later trusts, checked before anything commits. */
static bool vlan_post_load(void *opaque, int version_id, GError **errp)
{
    SpaprVlanImage *img = opaque;
    uint32_t max_bufs = img->use_rx_buffer_pools
                        ? LLAN_RX_MAX_POOLS * LLAN_RX_POOL_MAX_BDS
                        : LLAN_PAGE_SLOTS;

    (void)version_id;
    if (img->isopen && (img->buf_list % LLAN_PAGE_SIZE ||
                        img->buf_list >> 32)) {
        g_set_error(errp, ILLAN_ERROR, 0, "buf_list 0x%" G_GINT64_MODIFIER
                    "x is not a page below 4 GiB", img->buf_list);
        return false;
    }
    if (img->add_buf_ptr % 8 || img->add_buf_ptr >= LLAN_PAGE_SLOTS_END ||
        img->use_buf_ptr % 8 || img->use_buf_ptr >= LLAN_PAGE_SLOTS_END) {
        g_set_error(errp, ILLAN_ERROR, 0, "add_buf_ptr %u / use_buf_ptr %u "
                    "do not name buffer-list slots", img->add_buf_ptr,
                    img->use_buf_ptr);
        return false;
    }
    if (img->rxq_ptr % RXQ_ENTRY_SIZE || img->rxq_ptr > LLAN_BD_LEN(~0ULL)) {
        g_set_error(errp, ILLAN_ERROR, 0, "rxq_ptr 0x%" G_GINT64_MODIFIER
                    "x is not an entry of a receive queue", img->rxq_ptr);
        return false;
    }
    if (img->rx_bufs > max_bufs) {
        g_set_error(errp, ILLAN_ERROR, 0, "rx_bufs %u is more than the %u "
                    "buffers the device can hold", img->rx_bufs, max_bufs);
        return false;
    }
    if (img->use_rx_buffer_pools && !img->pools_received && img->isopen &&
        img->rx_bufs) {
        g_set_error(errp, ILLAN_ERROR, 0, "the stream is from a device in "
                    "page mode with %u buffers posted, but this device has "
                    "use-rx-buffer-pools=on and would lose them",
                    img->rx_bufs);
        return false;
    }
    return vlan_consistent(img, errp);
}

const VMStateDescription vmstate_spapr_llan = {
    .name = "spapr_llan",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = vlan_pre_load,
    .post_load = vlan_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT(sdev, SpaprVlanImage, 0, vmstate_spapr_vio,
                       SpaprVioImage),
        VMSTATE_BOOL(isopen, SpaprVlanImage),
        VMSTATE_UINT64(buf_list, SpaprVlanImage),
        VMSTATE_UINT32(add_buf_ptr, SpaprVlanImage),
        VMSTATE_UINT32(use_buf_ptr, SpaprVlanImage),
        VMSTATE_UINT32(rx_bufs, SpaprVlanImage),
        VMSTATE_UINT64(rxq_ptr, SpaprVlanImage),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription *const[]) {
        &vmstate_rx_pools,
        &vmstate_mac_filters,
        &vmstate_attributes,
        NULL
    },
};

/* A device that adopts a stream's interrupt number must not share it. */
static bool vlan_check_together(void *const *images, unsigned n,
                                GError **errp)
{
    g_autofree const SpaprVioImage **vio = g_new(const SpaprVioImage *, n);

    for (unsigned i = 0; i < n; i++) {
        vio[i] = &((const SpaprVlanImage *)images[i])->sdev;
    }
    for (unsigned i = 0; i < n; i++) {
        const SpaprVioDevice *clash = spapr_vio_irq_clash(vio, n, i);

        if (clash) {
            g_set_error(errp, ILLAN_ERROR, 0, "section 'l-lan@%x/%s' "
                        "instance 0: interrupt 0x%x (0x%x here) would also "
                        "be %s's", vio[i]->reg, vmstate_spapr_llan.name,
                        vio[i]->irq, vio[i]->local_irq, clash->qdev.id);
            return false;
        }
    }
    return true;
}

const VMStateImageOps spapr_vlan_image_ops = {
    .size = sizeof(SpaprVlanImage),
    .capture = spapr_vlan_capture,
    .commit = spapr_vlan_commit,
    .check_together = vlan_check_together,
};
