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

#endif
