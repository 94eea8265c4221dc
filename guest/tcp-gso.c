/*
 * Software TCP segmentation in the guest's stack (see guest/tcp-gso.h).
 */
#include "guest/tcp-gso.h"

#include <string.h>

#define TCP_FIN             0x01
#define TCP_PSH             0x08
#define TCP_CWR             0x80
/* Ethernet, the largest IPv4 header, the largest TCP header. */
#define HDR_MAX             (INET_ETH_HLEN + 60 + 60)

static void put_be16(uint8_t *b, uint16_t v)
{
    b[0] = v >> 8;
    b[1] = v & 0xff;
}

static void put_be32(uint8_t *b, uint32_t v)
{
    put_be16(b, v >> 16);
    put_be16(b + 2, v & 0xffff);
}

static uint32_t be32_at(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
           (uint32_t)b[2] << 8 | b[3];
}

/* The packet's headers @hdr (@hdr_len bytes) made into those of segment
 * @index, carrying @payload bytes from payload offset @offset, at @seg. */
static void segment_headers(uint8_t *seg, const uint8_t *hdr,
                            uint32_t hdr_len, const InetL4 *pkt,
                            unsigned index, uint32_t offset,
                            uint32_t payload, bool last)
{
    uint8_t *ip = seg + INET_ETH_HLEN, *th = seg + pkt->l4;
    InetL4 l4 = *pkt;

    memcpy(seg, hdr, hdr_len);
    l4.l4_len = hdr_len - pkt->l4 + payload;
    if (pkt->ip_version == 4) {
        uint32_t ihl = (ip[0] & 0x0f) * 4;

        put_be16(ip + 2, ihl + l4.l4_len);
        put_be16(ip + 4, (uint16_t)((ip[4] << 8 | ip[5]) + index));
        put_be16(ip + 10, 0);
        put_be16(ip + 10, ip_header_checksum(ip, ihl));
    } else {
        put_be16(ip + 4, l4.l4_len);
    }
    put_be32(th + 4, be32_at(th + 4) + offset);
    if (!last) {
        th[13] &= ~(TCP_FIN | TCP_PSH);
    }
    if (index) {
        th[13] &= ~TCP_CWR;
    }
    inet_l4_csum_fill(seg, &l4);
}

unsigned tcp_gso_segment(uint8_t *f, const InetL4 *l4, uint32_t mss,
                         TcpGsoSendFn *send, void *opaque)
{
    uint32_t hdr_len = l4->l4 + (f[l4->l4 + 12] >> 4) * 4;
    uint32_t total = l4->l4 + l4->l4_len - hdr_len;
    uint8_t hdr[HDR_MAX];
    uint32_t offset = 0;
    unsigned index = 0;

    memcpy(hdr, f, hdr_len);
    do {
        uint32_t payload = total - offset < mss ? total - offset : mss;
        /* Headers go just before this segment's payload, over the end of
         * the previous one, which has gone. */
        uint8_t *seg = f + offset;

        segment_headers(seg, hdr, hdr_len, l4, index, offset, payload,
                        offset + payload == total);
        send(opaque, seg, hdr_len + payload);
        offset += payload;
        index++;
    } while (offset < total);
    return index;
}
