/* Frames a test host sends (see eth-frames.h). */
#include "libqos/eth-frames.h"

#include <stdbool.h>
#include <string.h>

#define IP_HLEN         20
#define ICMP_HLEN       8
#define MTU             1500

static void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    put_be16(p, v >> 16);
    put_be16(p + 2, v);
}

uint16_t eth_frame_ip_checksum(const uint8_t *data, size_t len)
{
    uint32_t sum = 0;

    for (size_t i = 0; i + 1 < len; i += 2) {
        sum += (uint32_t)data[i] << 8 | data[i + 1];
    }
    if (len & 1) {
        sum += (uint32_t)data[len - 1] << 8;
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum;
}

static void eth_header(uint8_t *f, const uint8_t dst[6], const uint8_t src[6])
{
    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    put_be16(f + 12, 0x0800);
}

static void ip_header(uint8_t *ip, size_t total, uint16_t id,
                      uint16_t frag, uint8_t proto, uint32_t src,
                      uint32_t dst)
{
    memset(ip, 0, IP_HLEN);
    ip[0] = 0x45;
    put_be16(ip + 2, total);
    put_be16(ip + 4, id);
    put_be16(ip + 6, frag);
    ip[8] = 64;
    ip[9] = proto;
    put_be32(ip + 12, src);
    put_be32(ip + 16, dst);
    put_be16(ip + 10, eth_frame_ip_checksum(ip, IP_HLEN));
}

void eth_frame_udp(uint8_t *f, size_t len, const uint8_t dst[6],
                   const uint8_t src[6], uint16_t tag)
{
    uint8_t *ip = f + ETH_FRAME_HLEN, *udp = ip + IP_HLEN;

    g_assert_cmpuint(len, >=, ETH_FRAME_HLEN + IP_HLEN + 8);
    eth_header(f, dst, src);
    ip_header(ip, len - ETH_FRAME_HLEN, tag, 0, 17, 0x0a000001, 0x0a000002);
    put_be16(udp, 9);
    put_be16(udp + 2, 9);
    put_be16(udp + 4, len - ETH_FRAME_HLEN - IP_HLEN);
    put_be16(udp + 6, 0);
    for (size_t i = udp + 8 - f; i < len; i++) {
        f[i] = tag + i;
    }
    if (len >= ETH_FRAME_HLEN + IP_HLEN + 10) {
        put_be16(udp + 8, tag);
    }
}

void eth_frame_tcp(uint8_t *f, size_t len, const uint8_t dst[6],
                   const uint8_t src[6], uint16_t tag)
{
    uint8_t *ip = f + ETH_FRAME_HLEN, *tcp = ip + IP_HLEN;
    size_t seg = len - ETH_FRAME_HLEN - IP_HLEN;
    uint8_t pseudo[12] = { [9] = 6 };

    g_assert_cmpuint(len, >=, ETH_FRAME_HLEN + IP_HLEN + 20);
    eth_header(f, dst, src);
    ip_header(ip, len - ETH_FRAME_HLEN, tag, 0x4000, 6, 0x0a000001,
              0x0a000002);
    memset(tcp, 0, 20);
    put_be16(tcp, 40000);
    put_be16(tcp + 2, 5001);
    put_be32(tcp + 4, 0x10000000u + tag);
    put_be32(tcp + 8, 1);
    tcp[12] = 5 << 4;
    tcp[13] = 0x10;                     /* ACK */
    put_be16(tcp + 14, 0xffff);
    for (size_t i = tcp + 20 - f; i < len; i++) {
        f[i] = tag + i;
    }
    memcpy(pseudo, ip + 12, 8);
    put_be16(pseudo + 10, seg);
    put_be16(tcp + 16, ~eth_frame_ip_checksum(pseudo, sizeof(pseudo)));
    put_be16(tcp + 16, eth_frame_ip_checksum(tcp, seg));
}

#define SEQ_OFFSET      (ETH_FRAME_HLEN + IP_HLEN + 8)

void eth_frame_udp_seq(uint8_t *f, size_t len, const uint8_t dst[6],
                       const uint8_t src[6], uint64_t seq)
{
    g_assert_cmpuint(len, >=, ETH_FRAME_SEQ_MIN);
    eth_frame_udp(f, len, dst, src, seq);
    put_be32(f + SEQ_OFFSET, seq >> 32);
    put_be32(f + SEQ_OFFSET + 4, seq);
}

bool eth_frame_udp_seq_check(const uint8_t *f, size_t len,
                             const uint8_t dst[6], const uint8_t src[6],
                             uint64_t *seq)
{
    uint8_t want[ETH_FRAME_SEQ_MAX];

    if (len < ETH_FRAME_SEQ_MIN || len > sizeof(want)) {
        return false;
    }
    *seq = 0;
    for (int i = 0; i < 8; i++) {
        *seq = *seq << 8 | f[SEQ_OFFSET + i];
    }
    eth_frame_udp_seq(want, len, dst, src, *seq);
    return memcmp(f, want, len) == 0;
}

static size_t tag_offset(size_t len, EthFrameTagAt tag_at)
{
    return tag_at == ETH_FRAME_TAG_FIRST ? ETH_FRAME_HLEN : len - 2;
}

void eth_frame_tagged(uint8_t *f, size_t len, const uint8_t dst[6],
                      const uint8_t src[6], uint16_t ethertype,
                      uint16_t tag, EthFrameTagAt tag_at)
{
    g_assert_cmpuint(len, >=, ETH_FRAME_HLEN + 2);
    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    put_be16(f + 12, ethertype);
    for (size_t i = ETH_FRAME_HLEN; i < len; i++) {
        f[i] = i * 7 + tag;
    }
    put_be16(f + tag_offset(len, tag_at), tag);
}

uint16_t eth_frame_tag(const uint8_t *f, size_t len, EthFrameTagAt tag_at)
{
    const uint8_t *p = f + tag_offset(len, tag_at);

    g_assert_cmpuint(len, >=, ETH_FRAME_HLEN + 2);
    return p[0] << 8 | p[1];
}

uint16_t eth_frame_assert_tagged(const uint8_t *f, size_t len,
                                 const uint8_t dst[6], const uint8_t src[6],
                                 uint16_t ethertype, EthFrameTagAt tag_at)
{
    uint16_t tag = eth_frame_tag(f, len, tag_at);
    g_autofree uint8_t *want = g_malloc(len);

    eth_frame_tagged(want, len, dst, src, ethertype, tag, tag_at);
    g_assert_cmpmem(f, len, want, len);
    return tag;
}

GPtrArray *eth_frames_icmp_echo(const uint8_t dst[6], const uint8_t src[6],
                                uint32_t src_ip, uint32_t dst_ip,
                                uint16_t id, uint16_t seq, size_t payload)
{
    size_t l4_len = ICMP_HLEN + payload, max = MTU - IP_HLEN;
    g_autofree uint8_t *l4 = g_malloc0(l4_len);
    GPtrArray *frames = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_bytes_unref);

    l4[0] = 8;
    put_be16(l4 + 4, id);
    put_be16(l4 + 6, seq);
    for (size_t i = 0; i < payload; i++) {
        l4[ICMP_HLEN + i] = i;
    }
    put_be16(l4 + 2, eth_frame_ip_checksum(l4, l4_len));
    for (size_t off = 0; off < l4_len; off += max & ~7u) {
        size_t chunk = MIN(l4_len - off, max & ~7u);
        bool more = off + chunk < l4_len;
        uint8_t *f = g_malloc0(ETH_FRAME_HLEN + IP_HLEN + chunk);

        eth_header(f, dst, src);
        ip_header(f + ETH_FRAME_HLEN, IP_HLEN + chunk, id,
                  (more ? 0x2000 : 0) | off / 8, 1, src_ip, dst_ip);
        memcpy(f + ETH_FRAME_HLEN + IP_HLEN, l4 + off, chunk);
        g_ptr_array_add(frames, g_bytes_new_take(f, ETH_FRAME_HLEN + IP_HLEN +
                                                 chunk));
    }
    return frames;
}
