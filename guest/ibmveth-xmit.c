/*
 * ibmveth's transmit offloads (see guest/ibmveth-xmit.h).
 */
#include "guest/ibmveth-xmit.h"

#include "guest/ibmveth.h"

static void st_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v & 0xff;
}

static uint16_t ld_be16(const uint8_t *p)
{
    return p[0] << 8 | p[1];
}

/* skb_checksum_help(): the sum from csum_start on, the field holding the
 * pseudo-header's, folded into the field, 0 sent as 0xffff. */
static void checksum_help(uint8_t *frame, size_t len, uint32_t start,
                          uint32_t field)
{
    uint16_t c = inet_csum(inet_sum(frame + start, len - start, 0));

    st_be16(frame + field, c ? c : 0xffff);
}

IbmvethXmitResult ibmveth_xmit_prepare(const struct virtio_net_hdr *vnet,
                                       uint8_t *frame, size_t len,
                                       bool rx_csum, bool large_send,
                                       IbmvethXmit *out)
{
    uint32_t start = vnet->csum_start, field = start + vnet->csum_offset;
    uint8_t gso = vnet->gso_type & ~VIRTIO_NET_HDR_GSO_ECN;
    InetL4 f;
    bool tcp;

    *out = (IbmvethXmit) { 0 };
    if (!(vnet->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)) {
        return gso == VIRTIO_NET_HDR_GSO_NONE ? IBMVETH_XMIT_OK :
                                                 IBMVETH_XMIT_BAD_HEADER;
    }
    if (start >= len || field + 2 > len) {
        return IBMVETH_XMIT_BAD_HEADER;
    }
    tcp = inet_l4_find(frame, len, &f) && f.proto == INET_IPPROTO_TCP &&
          f.csum_at == field;
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

bool ibmveth_rx_partial(uint8_t *frame, size_t len, uint8_t rx_control,
                        uint16_t gso_size, struct virtio_net_hdr *vnet)
{
    InetL4 f;

    if (!(rx_control & IBMVETH_RXQ_CSUM_GOOD) ||
        !inet_l4_find(frame, len, &f) ||
        f.proto != INET_IPPROTO_TCP || ld_be16(frame + f.csum_at)) {
        return false;
    }
    st_be16(frame + f.csum_at, inet_l4_partial_field(frame, &f));
    *vnet = (struct virtio_net_hdr) {
        .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
        .csum_start = f.l4,
        .csum_offset = f.csum_at - f.l4,
    };
    if (gso_size) {
        vnet->gso_type = f.ip_version == 4 ? VIRTIO_NET_HDR_GSO_TCPV4 :
                                             VIRTIO_NET_HDR_GSO_TCPV6;
        vnet->gso_size = gso_size;
    }
    return true;
}

unsigned ibmveth_xmit_segment(uint8_t *frame, size_t len, uint16_t mss,
                              TcpGsoSendFn *send, void *opaque)
{
    InetL4 f;

    if (!mss || !inet_l4_find(frame, len, &f) ||
        f.proto != INET_IPPROTO_TCP) {
        return 0;
    }
    return tcp_gso_segment(frame, &f, mss, send, opaque);
}
