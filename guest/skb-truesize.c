/*
 * ibmveth's receive truesize, from the allocation path netdev_alloc_skb()
 * takes in Linux 6.1 (net/core/skbuff.c) with POWER's cache line.
 */
#include "guest/skb-truesize.h"

#define CACHE_LINE          128u    /* L1_CACHE_BYTES on 64-bit POWER */
#define NET_SKB_PAD         CACHE_LINE
#define SHINFO_ALIGNED      384u    /* skb_shared_info: 304 or 320 bytes */
#define SKB_ALIGNED         256u    /* struct sk_buff: about 230 bytes */
#define RX_COPYBREAK        128u    /* ibmveth's module parameter default */
/* Heads this small come from kmalloc too, so that tiny frames do not pin
 * page fragments their truesize does not show (Linux 5.11 and later). */
#define SMALL_HEAD          1024u

static uint64_t data_align(uint64_t n)
{
    return (n + CACHE_LINE - 1) & ~(uint64_t)(CACHE_LINE - 1);
}

/* kmalloc's size classes from 256 bytes up, and the page allocator's
 * orders above them, are all powers of two. */
static uint64_t kmalloc_size(uint64_t n)
{
    uint64_t size = 256;

    while (size < n) {
        size <<= 1;
    }
    return size;
}

uint32_t ibmveth_rx_truesize(uint32_t frame_len, uint32_t buf_size,
                             uint32_t page_size)
{
    uint64_t len = (frame_len < RX_COPYBREAK ? frame_len : buf_size) +
                   (uint64_t)NET_SKB_PAD;
    uint64_t head = data_align(len) + SHINFO_ALIGNED;

    if (len <= SMALL_HEAD - SHINFO_ALIGNED ||
        len + SHINFO_ALIGNED > page_size) {
        head = kmalloc_size(head);
    }
    return (uint32_t)(head + SKB_ALIGNED);
}
