/* The Internet checksum (RFC 1071) of an IPv4 header, for the guest
 * models that build and check headers. */
#ifndef GUEST_IP_CHECKSUM_H
#define GUEST_IP_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* Over @len bytes (even, as an IPv4 header is): 0 for a header whose
 * checksum field is right, else the value to store in a zeroed field. */
static inline uint16_t ip_header_checksum(const uint8_t *hdr, size_t len)
{
    uint32_t sum = 0;

    for (size_t i = 0; i + 1 < len; i += 2) {
        sum += (uint32_t)hdr[i] << 8 | hdr[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum & 0xffff;
}

#endif
