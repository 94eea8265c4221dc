/*
 * The guest's Internet checksum (see guest/ip-checksum.h): RFC 1071's sum
 * of 16-bit words, taken two words at a time as big-endian 32-bit values
 * into a 64-bit total, which no frame can overflow, and folded at the end
 * (RFC 1071 section 2(C): the sum of wider words folds to the same).
 */
#include "guest/ip-checksum.h"

static uint32_t be32_at(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
           (uint32_t)b[2] << 8 | b[3];
}

/* Folds a 64-bit total to 32 bits, the carries added back. */
static InetSum fold64(uint64_t total)
{
    total = (total & 0xffffffffu) + (total >> 32);
    total = (total & 0xffffffffu) + (total >> 32);
    return (InetSum)total;
}

InetSum inet_sum(const void *p, size_t len, InetSum sum)
{
    const uint8_t *b = p;
    uint64_t total = sum, second = 0;
    size_t i = 0;

    /* Two totals, so that the adds of a long buffer do not all wait on
     * one another. */
    for (; i + 8 <= len; i += 8) {
        total += be32_at(b + i);
        second += be32_at(b + i + 4);
    }
    total += second;
    for (; i + 4 <= len; i += 4) {
        total += be32_at(b + i);
    }
    if (i + 2 <= len) {
        total += (uint32_t)b[i] << 8 | b[i + 1];
        i += 2;
    }
    if (i < len) {
        total += (uint32_t)b[i] << 8;
    }
    return fold64(total);
}

uint16_t inet_sum_fold(InetSum sum)
{
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)sum;
}

uint16_t inet_csum(InetSum sum)
{
    return (uint16_t)~inet_sum_fold(sum);
}

InetSum inet_pseudo_v4(const uint8_t *addrs, uint16_t len, uint8_t proto,
                       InetSum sum)
{
    /* RFC 793's pseudo-header: addresses, zero, protocol, length. */
    uint64_t total = (uint64_t)sum + be32_at(addrs) + be32_at(addrs + 4) +
                     proto + len;

    return fold64(total);
}

InetSum inet_pseudo_v6(const uint8_t *addrs, uint32_t len, uint8_t proto,
                       InetSum sum)
{
    /* RFC 8200 section 8.1: addresses, 32-bit length, 24 zero bits, next
     * header. */
    uint64_t total = (uint64_t)sum + len + proto;

    for (unsigned i = 0; i < 32; i += 4) {
        total += be32_at(addrs + i);
    }
    return fold64(total);
}
