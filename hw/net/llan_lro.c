/*
 * Software LRO: which received TCP segments may be merged, and the
 * headers of the merged frame.
 */
#include "hw/net/llan_lro.h"
#include "qemu/bswap.h"

#include <string.h>

#define TCP_FLAG_PSH        0x08
#define TCP_FLAG_ACK        0x10

bool llan_lro_segment(const uint8_t *f, uint32_t len, const LlanL4 *l4,
                      LlanLroSeg *seg)
{
    const uint8_t *tcp = f + l4->l4;
    uint32_t tcp_hlen;

    if (l4->proto != LLAN_IPPROTO_TCP || len != l4->l4 + l4->l4_len) {
        return false;
    }
    /* The merged frame gets a fresh header checksum, which would hide a
     * damaged header from the guest; left alone, its stack drops it. */
    if (l4->ip_version == 4 &&
        (l4->l4 != LLAN_ETH_HLEN + 20 ||
         llan_csum(f + LLAN_ETH_HLEN, 20) != 0xFFFF)) {
        return false;
    }
    tcp_hlen = (tcp[12] >> 4) * 4;
    *seg = (LlanLroSeg){
        .l4 = *l4,
        .hdr_len = l4->l4 + tcp_hlen,
        .payload = l4->l4_len - tcp_hlen,
        .seq = ldn_be_p(tcp + 4, 4),
        .ack = ldn_be_p(tcp + 8, 4),
        .flags = tcp[13],
    };
    return seg->payload &&
           (seg->flags & ~TCP_FLAG_PSH) == TCP_FLAG_ACK;
}

/* Everything that names the flow and must not change along it. */
static bool same_flow(const uint8_t *a, const uint8_t *b, const LlanL4 *l4)
{
    const uint8_t *ipa = a + LLAN_ETH_HLEN, *ipb = b + LLAN_ETH_HLEN;

    if (memcmp(a, b, LLAN_ETH_HLEN) ||
        memcmp(a + l4->l4, b + l4->l4, 4)) {        /* ports */
        return false;
    }
    if (l4->ip_version == 4) {
        /* TOS, TTL, protocol, addresses */
        return ipa[1] == ipb[1] && ipa[8] == ipb[8] &&
               !memcmp(ipa + 12, ipb + 12, 8);
    }
    /* class and flow label, next header, hop limit, addresses */
    return !memcmp(ipa, ipb, 4) && !memcmp(ipa + 6, ipb + 6, 34);
}

bool llan_lro_continues(const uint8_t *ff, const LlanLroSeg *first,
                        const LlanLroSeg *prev, const uint8_t *nf,
                        const LlanLroSeg *next)
{
    uint32_t opts = first->hdr_len - first->l4.l4 - 20;

    return next->l4.ip_version == first->l4.ip_version &&
           next->hdr_len == first->hdr_len &&
           !(prev->flags & TCP_FLAG_PSH) &&
           prev->payload == first->payload &&
           next->payload <= first->payload &&
           next->seq == prev->seq + prev->payload &&
           (int32_t)(next->ack - prev->ack) >= 0 &&
           same_flow(ff, nf, &first->l4) &&
           !memcmp(ff + first->l4.l4 + 20, nf + first->l4.l4 + 20, opts);
}

void llan_lro_header(uint8_t *hdr, const uint8_t *ff,
                     const LlanLroSeg *first, const uint8_t *lf,
                     const LlanLroSeg *last, uint32_t payload)
{
    uint32_t tcp_hlen = first->hdr_len - first->l4.l4;
    uint8_t *ip = hdr + LLAN_ETH_HLEN, *tcp = hdr + first->l4.l4;

    memcpy(hdr, ff, first->hdr_len);
    if (first->l4.ip_version == 4) {
        stn_be_p(ip + 2, 2, 20 + tcp_hlen + payload);
        llan_ipv4_fill_csum(ip);
    } else {
        stn_be_p(ip + 4, 2, tcp_hlen + payload);
    }
    memcpy(tcp + 8, lf + last->l4.l4 + 8, 4);       /* ACK */
    memcpy(tcp + 14, lf + last->l4.l4 + 14, 2);     /* window */
    tcp[13] = first->flags | (last->flags & TCP_FLAG_PSH);
    stn_be_p(tcp + 16, 2, 0);
}
