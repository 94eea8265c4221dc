/*
 * The Internet checksum over Ethernet frames (see qemu/inet-csum.h).
 *
 * Sums are kept in host byte order over 64-bit words: one's-complement
 * addition does not care where the 16-bit words start or which byte of
 * each is high (RFC 1071), so the byte order is put right once, at the
 * fold.  Every sum starts at an even offset of the frame.
 */
#include "qemu/inet-csum.h"

#include <glib.h>
#include <string.h>

#define ETHERTYPE_IPV4      0x0800
#define ETHERTYPE_IPV6      0x86dd
#define IPV6_HLEN           40
#define TCP_HLEN_MIN        20
#define UDP_HLEN            8
#define TCP_CSUM_OFF        16
#define UDP_CSUM_OFF        6
#define IPV4_CSUM_OFF       10
#define IPV4_FRAG_MASK      0x3fff  /* MF and the fragment offset */

static uint16_t ld_be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static void st_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v & 0xff;
}

static uint64_t add_carry(uint64_t sum, uint64_t v)
{
    sum += v;
    return sum + (sum < v);
}

uint64_t inet_csum_add(uint64_t sum, const void *data, size_t len)
{
    const uint8_t *p = data;
    uint64_t a = 0, b = 0, w[2];
    uint16_t half;
    uint32_t word;

    /* Two accumulators, so that one add's carry does not wait for the
     * other's. */
    for (; len >= 16; p += 16, len -= 16) {
        memcpy(w, p, sizeof(w));
        a = add_carry(a, w[0]);
        b = add_carry(b, w[1]);
    }
    sum = add_carry(sum, add_carry(a, b));
    if (len >= 8) {
        memcpy(w, p, 8);
        sum = add_carry(sum, w[0]);
        p += 8;
        len -= 8;
    }
    if (len >= 4) {
        memcpy(&word, p, 4);
        sum = add_carry(sum, word);
        p += 4;
        len -= 4;
    }
    if (len >= 2) {
        memcpy(&half, p, 2);
        sum = add_carry(sum, half);
        p += 2;
        len -= 2;
    }
    if (len) {
        /* The odd byte is the high half of a word padded with zero. */
        uint8_t pad[2] = { p[0], 0 };

        memcpy(&half, pad, 2);
        sum = add_carry(sum, half);
    }
    return sum;
}

uint16_t inet_csum_fold(uint64_t sum)
{
    uint32_t s32 = (uint32_t)(sum >> 32);
    uint32_t lo = (uint32_t)sum;
    uint16_t host;
    uint8_t be[2];

    s32 += lo;
    s32 += s32 < lo;
    s32 = (s32 & 0xffff) + (s32 >> 16);
    s32 = (s32 & 0xffff) + (s32 >> 16);
    host = (uint16_t)s32;
    memcpy(be, &host, 2);
    return ld_be16(be);
}

bool inet_frame_parse(const uint8_t *frame, size_t len, InetFrame *f)
{
    const uint8_t *ip = frame + INET_ETH_HLEN;
    size_t avail;

    if (len < INET_ETH_HLEN + 20) {
        return false;
    }
    avail = len - INET_ETH_HLEN;
    f->l3_off = INET_ETH_HLEN;
    switch (ld_be16(frame + 12)) {
    case ETHERTYPE_IPV4: {
        uint32_t total = ld_be16(ip + 2);

        f->ip_version = 4;
        f->l3_len = (ip[0] & 0xf) * 4;
        if (ip[0] >> 4 != 4 || f->l3_len < 20 || total < f->l3_len ||
            total > avail || (ld_be16(ip + 6) & IPV4_FRAG_MASK)) {
            return false;
        }
        f->proto = ip[9];
        f->l4_len = total - f->l3_len;
        break;
    }
    case ETHERTYPE_IPV6:
        if (avail < IPV6_HLEN || ip[0] >> 4 != 6 ||
            ld_be16(ip + 4) > avail - IPV6_HLEN) {
            return false;
        }
        f->ip_version = 6;
        f->l3_len = IPV6_HLEN;
        f->proto = ip[6];
        f->l4_len = ld_be16(ip + 4);
        break;
    default:
        return false;
    }
    f->l4_off = f->l3_off + f->l3_len;
    if (f->proto == INET_PROTO_TCP) {
        f->csum_off = f->l4_off + TCP_CSUM_OFF;
        return f->l4_len >= TCP_HLEN_MIN &&
               (frame[f->l4_off + 12] >> 4) * 4 >= TCP_HLEN_MIN &&
               (frame[f->l4_off + 12] >> 4) * 4 <= f->l4_len;
    }
    if (f->proto == INET_PROTO_UDP) {
        f->csum_off = f->l4_off + UDP_CSUM_OFF;
        return f->l4_len >= UDP_HLEN;
    }
    return false;
}

uint64_t inet_pseudo_sum(const uint8_t *frame, const InetFrame *f)
{
    const uint8_t *ip = frame + f->l3_off;
    uint8_t tail[8] = { 0 };

    if (f->ip_version == 4) {
        tail[1] = f->proto;
        st_be16(tail + 2, (uint16_t)f->l4_len);
        return inet_csum_add(inet_csum_add(0, ip + 12, 8), tail, 4);
    }
    tail[0] = f->l4_len >> 24;
    tail[1] = (f->l4_len >> 16) & 0xff;
    st_be16(tail + 2, f->l4_len & 0xffff);
    tail[7] = f->proto;
    return inet_csum_add(inet_csum_add(0, ip + 8, 32), tail, 8);
}

static uint64_t segment_sum(const uint8_t *frame, const InetFrame *f)
{
    return inet_csum_add(inet_pseudo_sum(frame, f), frame + f->l4_off,
                         f->l4_len);
}

bool inet_l4_csum_ok(const uint8_t *frame, const InetFrame *f)
{
    if (f->proto == INET_PROTO_UDP && f->ip_version == 4 &&
        ld_be16(frame + f->csum_off) == 0) {
        return true;
    }
    return inet_csum_fold(segment_sum(frame, f)) == 0xffff;
}

bool inet_l4_csum_is_partial(const uint8_t *frame, const InetFrame *f)
{
    return ld_be16(frame + f->csum_off) ==
           inet_csum_fold(inet_pseudo_sum(frame, f));
}

void inet_l4_csum_complete(uint8_t *frame, const InetFrame *f)
{
    uint16_t csum;

    st_be16(frame + f->csum_off, 0);
    csum = ~inet_csum_fold(segment_sum(frame, f));
    /* UDP's 0 means "no checksum": its all-ones twin says the same sum. */
    if (csum == 0 && f->proto == INET_PROTO_UDP) {
        csum = 0xffff;
    }
    st_be16(frame + f->csum_off, csum);
}

void inet_l4_csum_set_partial(uint8_t *frame, const InetFrame *f)
{
    st_be16(frame + f->csum_off, inet_csum_fold(inet_pseudo_sum(frame, f)));
}

void inet_ip_csum_update(uint8_t *frame, const InetFrame *f)
{
    uint8_t *ip = frame + f->l3_off;

    if (f->ip_version != 4) {
        return;
    }
    st_be16(ip + IPV4_CSUM_OFF, 0);
    st_be16(ip + IPV4_CSUM_OFF,
            (uint16_t)~inet_csum_fold(inet_csum_add(0, ip, f->l3_len)));
}
