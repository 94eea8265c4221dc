/*
 * The guest stack's software segmentation of a TCP packet larger than
 * its MSS (tcp_gso_segment() over skb_segment()), for a packet the driver
 * cannot hand to the device whole.
 */
#ifndef GUEST_TCP_GSO_H
#define GUEST_TCP_GSO_H

#include <stdint.h>

#include "guest/inet-l4.h"

typedef void TcpGsoSendFn(void *opaque, const uint8_t *frame, uint32_t len);

/*
 * Sends the TCP packet @l4 in @f as segments of at most @mss (> 0)
 * payload bytes through @send: each with the packet's headers, its own
 * IPv4 total length, id (the packet's plus the segment's index) and
 * header checksum, or IPv6 payload length, its sequence number, FIN and
 * PSH on the last segment only, CWR on the first only, and its full TCP
 * checksum.  Each segment's headers are written in @f just before its
 * payload, over bytes already sent.  Returns the number of segments.
 */
unsigned tcp_gso_segment(uint8_t *f, const InetL4 *l4, uint32_t mss,
                         TcpGsoSendFn *send, void *opaque);

#endif
