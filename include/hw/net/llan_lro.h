/*
 * Receive coalescing for the logical LAN ("software LRO"): consecutive
 * in-order TCP segments of one flow become one large frame, which the
 * device hands to the guest as a large packet with its MSS, so a TCP
 * stream costs the guest one queue entry and one wake-up per 64 KiB
 * rather than per segment.  Pure functions on frames in memory.
 */
#ifndef HW_NET_LLAN_LRO_H
#define HW_NET_LLAN_LRO_H

#include "hw/net/llan_offload.h"

/* Ethernet, an IPv6 header (IPv4 with options never merges) and the
 * largest TCP header. */
#define LLAN_LRO_MAX_HDR    (LLAN_ETH_HLEN + 40 + 60)

/* A TCP segment that may take part in a merge. */
typedef struct LlanLroSeg {
    LlanL4 l4;
    uint32_t hdr_len;       /* Ethernet, IP and TCP headers */
    uint32_t payload;
    uint32_t seq, ack;
    uint8_t flags;
} LlanLroSeg;

/*
 * True when the frame @f of @len bytes, with layers @l4 and a checksum
 * already verified good, may join a merge: TCP carrying data, with only
 * ACK or ACK and PSH set, no IPv4 options, a good IPv4 header checksum,
 * and nothing after the IP packet.
 */
bool llan_lro_segment(const uint8_t *f, uint32_t len, const LlanL4 *l4,
                      LlanLroSeg *seg);

/*
 * True when @next (frame @nf) may follow @prev in a run that @first
 * (frame @ff) starts: the same Ethernet header, addresses, ports, IP
 * class and hop limit and TCP options; its sequence number where @prev's
 * data ends; its ACK not going back; its payload no larger than the
 * first's; and @prev neither pushed (PSH) nor shorter than the first.
 */
bool llan_lro_continues(const uint8_t *ff, const LlanLroSeg *first,
                        const LlanLroSeg *prev, const uint8_t *nf,
                        const LlanLroSeg *next);

/*
 * The headers of the merged frame of @payload data bytes, in @hdr
 * (first->hdr_len bytes): the first segment's, with the last's (@lf)
 * ACK, window and PSH, the IP length for @payload, a fresh IPv4 header
 * checksum, and the TCP checksum field 0: the guest is told (NO_CSUM)
 * that the data was verified and the field holds nothing.
 */
void llan_lro_header(uint8_t *hdr, const uint8_t *ff,
                     const LlanLroSeg *first, const uint8_t *lf,
                     const LlanLroSeg *last, uint32_t payload);

#endif
