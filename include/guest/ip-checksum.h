/* The Internet checksum (RFC 1071) of an IPv4 header, for the guest
 * models that build and check headers. */
#ifndef GUEST_IP_CHECKSUM_H
#define GUEST_IP_CHECKSUM_H

#include <glib.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Over @len bytes (even, as an IPv4 header is): 0 for a header whose
 * checksum field is right, else the value to store in a zeroed field.
 * Sums 32-bit words in host order, since the ones' complement sum of
 * 16-bit halves comes out the same in either byte order once swapped
 * back: the guest checks every received header, and a byte at a time
 * was a quarter of its NAPI poll at 64-byte frames.  Not llan_csum():
 * built for payloads, its 8-byte steps and partial tail cost the vCPU
 * more on a 20-byte header (98-102 ns a frame against 90-94). */
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
