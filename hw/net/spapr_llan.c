/*
 * spapr-vlan, the PAPR Interpartition Logical LAN.  This file holds the
 * device type: its properties, its defaults and its device-tree node.
 */
#include "hw/net/spapr_llan.h"
#include "qemu/module.h"
#include "qemu/option.h"

#include <libfdt.h>
#include <string.h>

/* H_VIO_SIGNAL mode bit 0 enables the receive interrupt. */
#define VLAN_SIGNAL_MASK 0x1

/* Realized devices, so that default MACs are never handed out twice. */
static GPtrArray *live_vlans;

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

static bool spapr_vlan_realize(DeviceState *qdev, GError **errp)
{
    SpaprVlanState *s = (SpaprVlanState *)qdev;

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
    s->perm_mac = s->mac;
    if (!live_vlans) {
        live_vlans = g_ptr_array_new();
    }
    g_ptr_array_add(live_vlans, s);
    return true;
}

static void spapr_vlan_finalize(DeviceState *qdev)
{
    if (live_vlans) {
        g_ptr_array_remove_fast(live_vlans, qdev);
    }
}

static void spapr_vlan_reset(DeviceState *qdev)
{
    SpaprVlanState *s = (SpaprVlanState *)qdev;

    s->mac = s->perm_mac;
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
    FDT_TRY(fdt_setprop_cell(fdt, node, "ibm,mac-address-filters", 0));
    return true;
}

static const Property spapr_vlan_props[] = {
    { "mac", PROP_MACADDR, offsetof(SpaprVlanState, mac), NULL,
      "Ethernet MAC address, e.g. 52:54:00:12:34:56; unset means "
      "52:54:00:12:34:56 and up" },
    { "netdev", PROP_NETDEV, offsetof(SpaprVlanState, netdev), NULL,
      "id of the -netdev backend that carries its frames" },
    { "reg", PROP_UINT32, offsetof(SpaprVlanState, vdev.reg), "0xffffffff",
      "VIO unit address; 0xffffffff assigns the next free from 0x71000000" },
    { "use-rx-buffer-pools", PROP_BOOL,
      offsetof(SpaprVlanState, use_rx_buffer_pools), "on",
      "receive into size-sorted buffer pools (off: legacy page mode, "
      "pinned by pseries-1.0)" },
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
    .devnode = spapr_vlan_devnode,
};

static void spapr_vlan_register(void)
{
    device_class_register(&spapr_vlan_class.parent);
}
illan_init(spapr_vlan_register)
