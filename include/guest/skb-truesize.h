/*
 * What a ppc64le Linux 6.1 guest running ibmveth charges for one received
 * frame.  The stack accounts memory by skb truesize, and truesize follows
 * the buffer the frame was received into, not the frame: a 1514-byte
 * frame in a 64 KiB buffer costs 131328 bytes.  IPv4 reassembly limits
 * its memory by that charge, so the buffer sizes the device hands out
 * decide whether large fragmented datagrams survive.
 *
 * ibmveth allocates each receive buffer with netdev_alloc_skb(buf_size)
 * and copies frames shorter than rx_copybreak (128) into a fresh
 * netdev_alloc_skb(frame_len) instead.  For a request of n bytes, with
 * POWER's 128-byte cache line (NET_SKB_PAD and SKB_DATA_ALIGN):
 *
 *   head = SKB_DATA_ALIGN(n + 128) + 384   (skb_shared_info, aligned)
 *   n + 128 <= 1024 - 384 or > page - 384:  kmalloc, which rounds head up
 *       to a power of two; truesize = that + 256 (struct sk_buff, aligned)
 *   otherwise the page-fragment cache:      truesize = head + 256
 */
#ifndef GUEST_SKB_TRUESIZE_H
#define GUEST_SKB_TRUESIZE_H

#include <stdint.h>

/* The truesize of a @frame_len-byte frame received into a @buf_size-byte
 * buffer by a guest with @page_size pages (65536 on ppc64le kernels as
 * distributions build them, 4096 otherwise).  @buf_size is a buffer
 * descriptor's length (below 2^24). */
uint32_t ibmveth_rx_truesize(uint32_t frame_len, uint32_t buf_size,
                             uint32_t page_size);

#endif
