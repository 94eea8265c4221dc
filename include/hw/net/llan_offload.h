/*
 * Checksum offload for the logical LAN: finding the TCP or UDP header of
 * an Ethernet frame, computing the Internet checksum fast, completing the
 * checksum a guest left out on transmit and judging it on receive.
 * Pure functions on frames in memory; the device does the DMA and keeps
 * the counters.
 */
#ifndef HW_NET_LLAN_OFFLOAD_H
#define HW_NET_LLAN_OFFLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LLAN_ETH_HLEN       14
#define LLAN_ETHERTYPE_IPV4 0x0800
#define LLAN_ETHERTYPE_IPV6 0x86DD
#define LLAN_IPV4_MIN_HLEN  20
#define LLAN_IPV6_HLEN      40
#define LLAN_IPPROTO_TCP    6
#define LLAN_IPPROTO_UDP    17

/* Why a frame the guest asked the device to complete went out as it was. */
typedef enum LlanOffloadError {
    LLAN_OFFLOAD_NOT_IP,        /* neither IPv4 nor IPv6 */
    LLAN_OFFLOAD_NOT_TCP_UDP,   /* another protocol, or an IPv6 extension */
    LLAN_OFFLOAD_TRUNCATED,     /* the headers do not fit in the frame */
    LLAN_OFFLOAD_BAD_LENGTH,    /* an IP length that lies */
    LLAN_OFFLOAD_BAD_IHL,       /* IPv4 header length below 20 bytes */
    LLAN_OFFLOAD_FRAGMENT,      /* an IPv4 fragment */
    LLAN_OFFLOAD_MSS_ZERO,      /* a large send without an MSS */
    LLAN_OFFLOAD_NOT_TCP,       /* a large send of something else */
    LLAN_OFFLOAD_ERROR__MAX,
} LlanOffloadError;

/* "not-ip", ...: the names the monitor shows. */
const char *llan_offload_error_name(LlanOffloadError e);

/* Where the layers of a TCP or UDP frame are. */
typedef struct LlanL4 {
    uint8_t ip_version;         /* 4 or 6 */
    uint8_t proto;              /* LLAN_IPPROTO_TCP or _UDP */
    uint16_t l4;                /* offset of the TCP or UDP header */
    uint32_t l4_len;            /* header and payload, from the IP length */
    uint16_t csum_at;           /* offset of the L4 checksum field */
} LlanL4;

/* Finds the TCP or UDP header of the Ethernet frame @f of @len bytes;
 * false with *why set when there is none it can trust. */
bool llan_find_l4(const uint8_t *f, uint32_t len, LlanL4 *l4,
                  LlanOffloadError *why);

/* The ones' complement sum of @len bytes as big-endian 16-bit words
 * (an odd last byte padded with zero), folded to 16 bits, not inverted. */
uint16_t llan_csum(const void *p, size_t len);
/* Adds two folded sums in ones' complement. */
uint16_t llan_csum_add(uint16_t a, uint16_t b);
/* The folded sum of the pseudo-header of @l4 in @f. */
uint16_t llan_pseudo_sum(const uint8_t *f, const LlanL4 *l4);
/* The IPv4 header checksum of the header at @ip, written in place. */
void llan_ipv4_fill_csum(uint8_t *ip);

/* Writes the full TCP or UDP checksum of @l4 into @f. */
void llan_fill_l4_csum(uint8_t *f, const LlanL4 *l4);

/* What the checksum field of a received frame holds. */
typedef enum LlanRxCsum {
    LLAN_RX_CSUM_GOOD,          /* a checksum that verifies */
    LLAN_RX_CSUM_PARTIAL,       /* only the pseudo-header sum: a local
                                   sender left the rest to hardware */
    LLAN_RX_CSUM_BAD,
} LlanRxCsum;

/* Judges the checksum of @l4 in the received frame @f; for a partial
 * one, *completed is the full checksum the field should hold. */
LlanRxCsum llan_rx_csum(const uint8_t *f, const LlanL4 *l4,
                        uint16_t *completed);

/* Whether the checksum field of @l4 in the received frame @f holds the
 * pseudo-header sum: the checksum is then partial or, for one good
 * checksum in 65536, good, never bad; a few header bytes read. */
bool llan_rx_csum_field_is_pseudo(const uint8_t *f, const LlanL4 *l4);
/* Whether the checksum of @l4 in the received frame @f is partial, with
 * *completed the full checksum; sums the segment only when the field
 * holds the pseudo-header sum, so a frame that is not partial costs a
 * few header bytes. */
bool llan_rx_csum_partial(const uint8_t *f, const LlanL4 *l4,
                          uint16_t *completed);

#endif
