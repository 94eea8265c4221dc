/*
 * ibmveth's transmit offloads (see guest/ibmveth-xmit.h).
 */
#include "guest/ibmveth-xmit.h"

#include "guest/ibmveth.h"
#include "hw/net/llan_offload.h"

static void st_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v & 0xff;
}

/* skb_checksum_help(): the sum from csum_start on, the field holding the
 * pseudo-header's, folded into the field. */
static void checksum_help(uint8_t *frame, size_t len, uint32_t start,
                          uint32_t field)
{
    st_be16(frame + field, ~llan_csum(frame + start, len - start));
}

IbmvethXmitResult ibmveth_xmit_prepare(const struct virtio_net_hdr *vnet,
                                       uint8_t *frame, size_t len,
                                       bool rx_csum, bool large_send,
                                       IbmvethXmit *out)
{
    uint32_t start = vnet->csum_start, field = start + vnet->csum_offset;
    uint8_t gso = vnet->gso_type & ~VIRTIO_NET_HDR_GSO_ECN;
    LlanOffloadError why;
    LlanL4 f;
    bool tcp;

    *out = (IbmvethXmit) { 0 };
    if (!(vnet->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)) {
        return gso == VIRTIO_NET_HDR_GSO_NONE ? IBMVETH_XMIT_OK :
                                                 IBMVETH_XMIT_BAD_HEADER;
    }
    if (start >= len || field + 2 > len) {
        return IBMVETH_XMIT_BAD_HEADER;
    }
    tcp = llan_find_l4(frame, len, &f, &why) &&
          f.proto == LLAN_IPPROTO_TCP && f.csum_at == field;
    /* Only TCP checksums go to the firmware ("veth can't checksum offload
     * UDP"). */
    if (!tcp || !rx_csum) {
        if (gso != VIRTIO_NET_HDR_GSO_NONE) {
            return IBMVETH_XMIT_BAD_HEADER;
        }
        checksum_help(frame, len, start, field);
        return IBMVETH_XMIT_OK;
    }
    st_be16(frame + field, 0);
    out->bd_flags = IBMVETH_BD_NO_CSUM | IBMVETH_BD_CSUM_GOOD;
    if (gso == VIRTIO_NET_HDR_GSO_NONE) {
        return IBMVETH_XMIT_OK;
    }
    if (gso != VIRTIO_NET_HDR_GSO_TCPV4 && gso != VIRTIO_NET_HDR_GSO_TCPV6) {
        return IBMVETH_XMIT_BAD_HEADER;
    }
    if (!large_send) {
        return IBMVETH_XMIT_NO_TSO;
    }
    out->bd_flags |= IBMVETH_BD_LRG_SND;
    out->mss = vnet->gso_size;
    return IBMVETH_XMIT_OK;
}
