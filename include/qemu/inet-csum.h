/*
 * The Internet checksum (RFC 1071) over Ethernet frames: where a frame's
 * TCP or UDP header and checksum field lie, the sums a NIC offload
 * computes, checks and completes.  For the device's offloads and the guest
 * models, which both read frames as they are on the wire.
 */
#ifndef QEMU_INET_CSUM_H
#define QEMU_INET_CSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INET_ETH_HLEN       14
#define INET_PROTO_TCP      6
#define INET_PROTO_UDP      17

/* A frame's layers, as inet_frame_parse() found them. */
typedef struct InetFrame {
    uint8_t ip_version;     /* 4 or 6 */
    uint8_t proto;          /* INET_PROTO_TCP or INET_PROTO_UDP */
    uint16_t l3_off;        /* the IP header (after the Ethernet header) */
    uint16_t l3_len;        /* IPv4 header with options, or 40 */
    uint16_t l4_off;
    uint32_t l4_len;        /* the IP payload the header says, <= frame */
    uint16_t csum_off;      /* the TCP or UDP checksum field */
} InetFrame;

/*
 * Finds the TCP or UDP segment in an Ethernet frame: IPv4 (not a
 * fragment) or IPv6 without extension headers, untagged.  False for
 * anything else, or a header the frame is too short for.
 */
bool inet_frame_parse(const uint8_t *frame, size_t len, InetFrame *f);

/* One's-complement sum of @len bytes added to @sum, unfolded. */
uint64_t inet_csum_add(uint64_t sum, const void *data, size_t len);
/* @sum folded to 16 bits (not inverted). */
uint16_t inet_csum_fold(uint64_t sum);
/* The pseudo-header of the segment @f describes, unfolded. */
uint64_t inet_pseudo_sum(const uint8_t *frame, const InetFrame *f);

/* True when the segment's checksum verifies (UDP's 0, "none", counts as
 * good over IPv4). */
bool inet_l4_csum_ok(const uint8_t *frame, const InetFrame *f);
/* True when the checksum field holds what a sender that left the sum to
 * its NIC puts there: the pseudo-header sum, not inverted. */
bool inet_l4_csum_is_partial(const uint8_t *frame, const InetFrame *f);
/* Computes the segment's checksum into its field. */
void inet_l4_csum_complete(uint8_t *frame, const InetFrame *f);
/* Stores the pseudo-header sum in the field, as a sender leaving the rest
 * to an offload does. */
void inet_l4_csum_set_partial(uint8_t *frame, const InetFrame *f);
/* Recomputes an IPv4 header's checksum (a no-op for IPv6). */
void inet_ip_csum_update(uint8_t *frame, const InetFrame *f);

#endif
