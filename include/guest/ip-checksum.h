/*
 * The guest's own Internet checksum (RFC 1071), kept apart from the
 * device's (hw/net/llan_offload.c) so that a bug there cannot hide from
 * the model meant to catch it.  Shaped as Linux's stack uses it: a
 * running 32-bit sum of buffers (csum_partial()), folded and inverted
 * into the 16-bit field (csum_fold()), the TCP/UDP pseudo-headers
 * (csum_tcpudp_nofold(), csum_ipv6_magic()), and the IPv4 header's
 * checksum (ip_fast_csum()).
 */
#ifndef GUEST_IP_CHECKSUM_H
#define GUEST_IP_CHECKSUM_H

#include <glib.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A ones' complement sum of big-endian 16-bit words, not yet folded to
 * 16 bits (Linux's __wsum). */
typedef uint32_t InetSum;

/* @sum plus the @len bytes at @p.  A buffer of odd length counts its
 * last byte as the high byte of a word, so only the last of several
 * buffers summed one after the other may be odd. */
InetSum inet_sum(const void *p, size_t len, InetSum sum);
/* @sum folded to 16 bits: the ones' complement sum of the words. */
uint16_t inet_sum_fold(InetSum sum);
/* The checksum that goes in a field: the folded sum, inverted. */
uint16_t inet_csum(InetSum sum);
/* @sum plus the pseudo-header of a TCP or UDP segment of @len bytes
 * (header and payload) of protocol @proto: over IPv4 with the source and
 * destination addresses at @addrs (8 bytes), or over IPv6 with them at
 * @addrs (32 bytes). */
InetSum inet_pseudo_v4(const uint8_t *addrs, uint16_t len, uint8_t proto,
                       InetSum sum);
InetSum inet_pseudo_v6(const uint8_t *addrs, uint32_t len, uint8_t proto,
                       InetSum sum);

/* Over @len bytes (even, as an IPv4 header is): 0 for a header whose
 * checksum field is right, else the value to store in a zeroed field.
 * Sums 32-bit words in host order, since the ones' complement sum of
 * 16-bit halves comes out the same in either byte order once swapped
 * back: the guest checks every received header, and a byte at a time
 * was a quarter of its NAPI poll at 64-byte frames.  Inline, apart from
 * inet_sum(), for that per-frame check of a 20-byte header. */
static inline uint16_t ip_header_checksum(const uint8_t *hdr, size_t len)
{
    uint64_t sum = 0;
    size_t i = 0;

    for (; i + 4 <= len; i += 4) {
        uint32_t w;

        memcpy(&w, hdr + i, 4);
        sum += w;
    }
    if (i + 2 <= len) {
        uint16_t h;

        memcpy(&h, hdr + i, 2);
        sum += h;
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~GUINT16_FROM_BE((uint16_t)sum) & 0xffff;
}

#endif
