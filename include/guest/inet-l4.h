/*
 * A frame's TCP or UDP segment as the guest's stack finds it, and its
 * checksum as the stack verifies or completes it (__skb_checksum_complete(),
 * skb_checksum_help()): the guest's own reading of the headers and its own
 * sum (guest/ip-checksum.h), nothing shared with the device's offloads.
 * Ethernet II only, no VLAN tag, no IPv6 extension header.
 */
#ifndef GUEST_INET_L4_H
#define GUEST_INET_L4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest/ip-checksum.h"

#define INET_ETH_HLEN       14
#define INET_IPPROTO_TCP    6
#define INET_IPPROTO_UDP    17

typedef struct InetL4 {
    uint8_t ip_version;     /* 4 or 6 */
    uint8_t proto;          /* INET_IPPROTO_TCP or _UDP */
    uint16_t l4;            /* offset of the TCP or UDP header */
    uint32_t l4_len;        /* its header and payload, by the IP length */
    uint16_t csum_at;       /* offset of its checksum field */
} InetL4;

/* Finds the TCP or UDP segment of the Ethernet frame @f of @len bytes:
 * false for anything else, an IPv4 fragment, or lengths that do not
 * hold.  Bytes past the IP length (Ethernet padding) are not part of it. */
bool inet_l4_find(const uint8_t *f, size_t len, InetL4 *l4);
/* The pseudo-header's sum for @l4 in @f. */
InetSum inet_l4_pseudo(const uint8_t *f, const InetL4 *l4);
/* What the checksum field of a packet left to an offload holds
 * (CHECKSUM_PARTIAL): the pseudo-header's sum folded, not inverted. */
uint16_t inet_l4_partial_field(const uint8_t *f, const InetL4 *l4);
/* Whether the checksum of @l4 in @f verifies; a UDP/IPv4 checksum of 0
 * (none sent) does. */
bool inet_l4_csum_ok(const uint8_t *f, const InetL4 *l4);
/* Computes the checksum of @l4 and stores it in @f (a UDP one of 0 as
 * 0xffff). */
void inet_l4_csum_fill(uint8_t *f, const InetL4 *l4);

#endif
