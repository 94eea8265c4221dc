/*
 * What our XDP program writes in the metadata area in front of a frame,
 * shared by the program (net/bpf/xdp-redirect.bpf.c) and its reader.  The
 * last member is the struct's BTF type id in the program's object, so the
 * reader tells our struct from any other by the 4 bytes just before the
 * frame, and knows from the id how long it is.
 */
#ifndef NET_XDP_META_H
#define NET_XDP_META_H

#include <linux/types.h>

/* flags: where rx_timestamp comes from, and whether rx_hash is set. */
#define ILLAN_XDP_META_TS_DEVICE  1u    /* the driver's, its own clock */
#define ILLAN_XDP_META_TS_KTIME   2u    /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
#define ILLAN_XDP_META_HASH       4u

struct illan_xdp_meta {
    __u64 rx_timestamp;     /* ns */
    __u32 rx_hash;
    __u32 rx_hash_type;     /* the kernel's enum xdp_rss_hash_type */
    __u32 flags;
    __u32 btf_id;           /* last: read first, from just before the data */
};

/* Written only by the test variant of the program: not ours to read. */
struct illan_xdp_meta_foreign {
    __u64 rx_timestamp;
    __u32 pad;
    __u32 btf_id;
};

#endif
