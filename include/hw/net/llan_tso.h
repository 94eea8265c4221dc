/*
 * Software TCP segmentation for the logical LAN: a large send the guest
 * handed over in one piece goes to the wire as frames of one MSS each.
 */
#ifndef HW_NET_LLAN_TSO_H
#define HW_NET_LLAN_TSO_H

#include "hw/net/llan_offload.h"

typedef void LlanSendFn(void *opaque, const uint8_t *frame, uint32_t len);

/*
 * Sends the TCP frame @f, whose layers are @l4, as segments of at most
 * @mss (> 0) payload bytes through @send, each a valid frame: IPv4 total
 * length, id (counting up from the original's) and header checksum, or
 * IPv6 payload length; TCP sequence number, FIN and PSH on the last
 * segment only, CWR on the first only, and the full TCP checksum.  A
 * frame within one MSS goes as one segment with its checksums filled.
 * Each segment's headers are built in @f just before its payload, over
 * data already sent, so nothing is copied but headers.  Returns the
 * number of segments.
 */
unsigned llan_tso(uint8_t *f, const LlanL4 *l4, uint32_t mss,
                  LlanSendFn *send, void *opaque);

#endif
