/*
 * Our XDP program: each frame goes to the AF_XDP socket of its rx queue
 * through the XSK map; a queue without a socket lets the frame go on to
 * the kernel's stack.  Compiled by clang with BTF at build time; the
 * loader (net/xdp-prog.c) goes through the skeleton bpftool makes of it.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* One slot per queue libxdp's API can bind, as its own program. */
#define XSK_MAP_ENTRIES 64

struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, XSK_MAP_ENTRIES);
    __type(key, __u32);
    __type(value, __u32);
} illan_xsks SEC(".maps");

/*
 * "xdp.frags": the loader may set BPF_F_XDP_HAS_FRAGS (the program never
 * looks past the first buffer), which the kernel requires before it runs
 * a program on an interface whose MTU exceeds a page in native mode.
 */
SEC("xdp")
int illan_xsk(struct xdp_md *ctx)
{
    return bpf_redirect_map(&illan_xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "GPL";
