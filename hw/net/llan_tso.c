/*
 * Software TCP segmentation: one large TCP frame becomes frames of one
 * MSS of payload each, built in place.
 */
#include "hw/net/llan_tso.h"
#include "qemu/bswap.h"

#include <glib.h>
#include <string.h>

#define TCP_FLAG_FIN        0x01
#define TCP_FLAG_PSH        0x08
#define TCP_FLAG_CWR        0x80
/* Ethernet, the largest IPv4 header and the largest TCP header. */
#define TSO_MAX_HDR         (LLAN_ETH_HLEN + 60 + 60)

/* Rewrites the headers at @seg for the segment at payload offset @off. */
static void fix_segment(uint8_t *seg, const LlanL4 *l4, uint32_t hdr,
                        uint32_t off, uint32_t seglen, unsigned index,
                        bool last)
{
    uint8_t *ip = seg + LLAN_ETH_HLEN;
    uint8_t *tcp = seg + l4->l4;
    uint32_t tcp_hlen = hdr - l4->l4;
    LlanL4 seg_l4 = *l4;
    uint8_t flags = tcp[13];

    if (l4->ip_version == 4) {
        stn_be_p(ip + 2, 2, hdr - LLAN_ETH_HLEN + seglen);
        stn_be_p(ip + 4, 2, ldn_be_p(ip + 4, 2) + index);
        llan_ipv4_fill_csum(ip);
    } else {
        stn_be_p(ip + 4, 2, tcp_hlen + seglen);
    }
    stn_be_p(tcp + 4, 4, ldn_be_p(tcp + 4, 4) + off);
    if (!last) {
        flags &= ~(TCP_FLAG_FIN | TCP_FLAG_PSH);
    }
    if (index) {
        flags &= ~TCP_FLAG_CWR;
    }
    tcp[13] = flags;
    seg_l4.l4_len = tcp_hlen + seglen;
    llan_fill_l4_csum(seg, &seg_l4);
}

unsigned llan_tso(uint8_t *f, const LlanL4 *l4, uint32_t mss,
                  LlanSendFn *send, void *opaque)
{
    uint32_t tcp_hlen = (f[l4->l4 + 12] >> 4) * 4;
    uint32_t hdr = l4->l4 + tcp_hlen;
    uint32_t payload = l4->l4_len - tcp_hlen;
    uint8_t saved[TSO_MAX_HDR];
    unsigned index = 0;
    uint32_t off = 0;

    memcpy(saved, f, hdr);
    do {
        uint32_t seglen = MIN(mss, payload - off);
        uint8_t *seg = f + off;

        /* The previous segment, already sent, lies under these headers. */
        memcpy(seg, saved, hdr);
        fix_segment(seg, l4, hdr, off, seglen, index,
                    off + seglen == payload);
        send(opaque, seg, hdr + seglen);
        off += seglen;
        index++;
    } while (off < payload);
    return index;
}
