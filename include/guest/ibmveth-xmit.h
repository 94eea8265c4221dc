/*
 * What Linux's ibmveth_start_xmit() does with a packet its stack left
 * unfinished, the offload request coming as a virtio-net header (from a
 * TAP): a TCP checksum left to the NIC is zeroed and flagged NO_CSUM |
 * CSUM_GOOD, any other checksum is completed in software
 * (skb_checksum_help()), and a TCP segment larger than the MSS is flagged
 * LRG_SND with its MSS for r12 when large send is in force.
 */
#ifndef GUEST_IBMVETH_XMIT_H
#define GUEST_IBMVETH_XMIT_H

#include <linux/virtio_net.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest/tcp-gso.h"

typedef struct IbmvethXmit {
    uint64_t bd_flags;      /* IBMVETH_BD_NO_CSUM, ... */
    uint64_t mss;           /* r12; 0 unless LRG_SND */
} IbmvethXmit;

typedef enum IbmvethXmitResult {
    IBMVETH_XMIT_OK,
    IBMVETH_XMIT_BAD_HEADER,    /* offsets outside the frame, an unknown
                                   GSO type: the skb Linux would refuse */
    IBMVETH_XMIT_NO_TSO,        /* a large segment without large send in
                                   force (the stack was told not to) */
} IbmvethXmitResult;

/* Rewrites @frame in place as the driver does; @rx_csum and @large_send
 * are the offloads in force. */
IbmvethXmitResult ibmveth_xmit_prepare(const struct virtio_net_hdr *vnet,
                                       uint8_t *frame, size_t len,
                                       bool rx_csum, bool large_send,
                                       IbmvethXmit *out);

/*
 * What ibmveth_poll() makes of a received frame the device left
 * unfinished, as the virtio-net header of the skb a forwarding stack
 * passes on: with CSUM_GOOD in @rx_control, a TCP checksum field of 0
 * gets the pseudo-header's sum back and the skb is CHECKSUM_PARTIAL
 * (ibmveth_rx_csum_helper()); it is also GSO of @gso_size when that is
 * not 0: the MSS ibmveth_rx_mss_helper() gave a frame it took as large
 * (ibmveth_rx_large()'s gso_size), the device's for one marked LRG_PKT,
 * otherwise the one it read from the checksum field it then zeroed.
 * False, with @frame untouched, for a frame that needs nothing more.
 */
bool ibmveth_rx_partial(uint8_t *frame, size_t len, uint8_t rx_control,
                        uint16_t gso_size, struct virtio_net_hdr *vnet);
/*
 * The stack's software GSO (validate_xmit_skb()) of a TCP packet the
 * driver cannot send whole: segments of @mss payload bytes, each with
 * its checksums complete, built in @frame and handed to @send.  Returns
 * how many; 0 (nothing sent) for a frame that is no TCP segment.
 */
unsigned ibmveth_xmit_segment(uint8_t *frame, size_t len, uint16_t mss,
                              TcpGsoSendFn *send, void *opaque);

#endif
