/*
 * A frame's TCP or UDP segment and its checksum, as the guest's stack
 * reads them (see guest/inet-l4.h).
 */
#include "guest/inet-l4.h"

#define ETHERTYPE_IPV4      0x0800
#define ETHERTYPE_IPV6      0x86dd
#define IPV6_HLEN           40
#define TCP_MIN_HLEN        20
#define UDP_HLEN            8

static uint16_t be16_at(const uint8_t *b)
{
    return (uint16_t)(b[0] << 8 | b[1]);
}

static void put_be16(uint8_t *b, uint16_t v)
{
    b[0] = v >> 8;
    b[1] = v & 0xff;
}

/* The IPv4 header at @ip, with @room bytes from it in the frame. */
static bool ipv4_segment(const uint8_t *ip, size_t room, InetL4 *l4)
{
    size_t ihl, tot_len;

    if (room < 20 || ip[0] >> 4 != 4) {
        return false;
    }
    ihl = (size_t)(ip[0] & 0x0f) * 4;
    tot_len = be16_at(ip + 2);
    /* ip_rcv_core()'s length rules; a fragment (MF or an offset) has no
     * whole segment to find. */
    if (ihl < 20 || tot_len < ihl || tot_len > room ||
        (be16_at(ip + 6) & 0x3fff)) {
        return false;
    }
    l4->ip_version = 4;
    l4->proto = ip[9];
    l4->l4 = INET_ETH_HLEN + ihl;
    l4->l4_len = tot_len - ihl;
    return true;
}

static bool ipv6_segment(const uint8_t *ip, size_t room, InetL4 *l4)
{
    if (room < IPV6_HLEN || ip[0] >> 4 != 6 ||
        IPV6_HLEN + (size_t)be16_at(ip + 4) > room) {
        return false;
    }
    l4->ip_version = 6;
    l4->proto = ip[6];
    l4->l4 = INET_ETH_HLEN + IPV6_HLEN;
    l4->l4_len = be16_at(ip + 4);
    return true;
}

/* The transport header must fit in the segment the IP header gives. */
static bool transport_header(const uint8_t *f, InetL4 *l4)
{
    const uint8_t *th = f + l4->l4;

    switch (l4->proto) {
    case INET_IPPROTO_TCP:
        l4->csum_at = l4->l4 + 16;
        return l4->l4_len >= TCP_MIN_HLEN &&
               (th[12] >> 4) * 4 >= TCP_MIN_HLEN &&
               (uint32_t)(th[12] >> 4) * 4 <= l4->l4_len;
    case INET_IPPROTO_UDP:
        l4->csum_at = l4->l4 + 6;
        return l4->l4_len >= UDP_HLEN && be16_at(th + 4) == l4->l4_len;
    default:
        return false;
    }
}

bool inet_l4_find(const uint8_t *f, size_t len, InetL4 *l4)
{
    bool ip;

    if (len < INET_ETH_HLEN) {
        return false;
    }
    switch (be16_at(f + 12)) {
    case ETHERTYPE_IPV4:
        ip = ipv4_segment(f + INET_ETH_HLEN, len - INET_ETH_HLEN, l4);
        break;
    case ETHERTYPE_IPV6:
        ip = ipv6_segment(f + INET_ETH_HLEN, len - INET_ETH_HLEN, l4);
        break;
    default:
        return false;
    }
    return ip && transport_header(f, l4);
}

InetSum inet_l4_pseudo(const uint8_t *f, const InetL4 *l4)
{
    const uint8_t *ip = f + INET_ETH_HLEN;

    if (l4->ip_version == 4) {
        return inet_pseudo_v4(ip + 12, l4->l4_len, l4->proto, 0);
    }
    return inet_pseudo_v6(ip + 8, l4->l4_len, l4->proto, 0);
}

uint16_t inet_l4_partial_field(const uint8_t *f, const InetL4 *l4)
{
    return inet_sum_fold(inet_l4_pseudo(f, l4));
}

bool inet_l4_csum_ok(const uint8_t *f, const InetL4 *l4)
{
    InetSum sum;

    if (l4->proto == INET_IPPROTO_UDP && l4->ip_version == 4 &&
        !be16_at(f + l4->csum_at)) {
        return true;
    }
    /* Summed with its checksum field, a good segment folds to all ones. */
    sum = inet_sum(f + l4->l4, l4->l4_len, inet_l4_pseudo(f, l4));
    return inet_sum_fold(sum) == 0xffff;
}

void inet_l4_csum_fill(uint8_t *f, const InetL4 *l4)
{
    uint16_t c;

    put_be16(f + l4->csum_at, 0);
    c = inet_csum(inet_sum(f + l4->l4, l4->l4_len, inet_l4_pseudo(f, l4)));
    /* UDP's 0 means no checksum; Linux sends a computed 0 as 0xffff. */
    put_be16(f + l4->csum_at,
             !c && l4->proto == INET_IPPROTO_UDP ? 0xffff : c);
}
