/*
 * Our XDP program: each frame goes to the AF_XDP socket of its rx queue
 * through the XSK map; a queue without a socket lets the frame go on to
 * the kernel's stack.  In front of each frame it may write struct
 * illan_xdp_meta (include/net/xdp-meta.h): the receive timestamp and the
 * rx hash.  Compiled by clang with BTF at build time; the loader
 * (net/xdp-prog.c) goes through the skeleton bpftool makes of it.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "net/xdp-meta.h"

/* One slot per queue libxdp's API can bind, as its own program. */
#define XSK_MAP_ENTRIES 64

/* meta_mode: set by the loader before the load, so the verifier drops
 * the branches not taken. */
#define META_OFF 0
#define META_ON 1
#define META_FOREIGN 2          /* tests: a struct the reader must refuse */

const volatile __u32 meta_mode = META_OFF;

/* Queues whose frames land in guest buffers (receive zero copy): the
 * metadata would be written in front of the buffer, into guest memory
 * that is not the device's, so they get none.  Bit N: queue N; set by
 * illan at run time. */
volatile __u64 lending_queues;

/* Queues whose socket is being replaced (a reclaim of lent buffers):
 * their frames are dropped and counted here, rather than passed to the
 * stack unseen. */
volatile __u64 gap_queues;
__u64 gap_drops[XSK_MAP_ENTRIES];

static __always_inline int may_write_meta(struct xdp_md *ctx)
{
    return !(lending_queues & (1ull << (ctx->rx_queue_index & 63)));
}

static __always_inline int in_gap(struct xdp_md *ctx)
{
    __u32 q = ctx->rx_queue_index & 63;

    if (!(gap_queues & (1ull << q))) {
        return 0;
    }
    __sync_fetch_and_add(&gap_drops[q], 1);
    return 1;
}

struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, XSK_MAP_ENTRIES);
    __type(key, __u32);
    __type(value, __u32);
} illan_xsks SEC(".maps");

/* The kernel's, from its BTF; the name is what matches. */
enum xdp_rss_hash_type { XDP_RSS_TYPE_NONE = 0 };

/* XDP rx-metadata kfuncs (Linux 6.3; the hash's type argument 6.5), only
 * for a device-bound program; weak so that the object loads without. */
extern int bpf_xdp_metadata_rx_timestamp(const struct xdp_md *ctx,
                                         __u64 *timestamp) __ksym __weak;
extern int bpf_xdp_metadata_rx_hash(const struct xdp_md *ctx, __u32 *hash,
                                    enum xdp_rss_hash_type *type)
    __ksym __weak;

static __always_inline int redirect(struct xdp_md *ctx)
{
    return bpf_redirect_map(&illan_xsks, ctx->rx_queue_index, XDP_PASS);
}

/* The metadata area, @len bytes, or NULL when the driver has none. */
static __always_inline void *meta_area(struct xdp_md *ctx, int len)
{
    void *meta, *data;

    if (bpf_xdp_adjust_meta(ctx, -len)) {
        return NULL;
    }
    meta = (void *)(long)ctx->data_meta;
    data = (void *)(long)ctx->data;
    return meta + len > data ? NULL : meta;
}

static __always_inline void write_foreign(struct xdp_md *ctx)
{
    struct illan_xdp_meta_foreign *m = meta_area(ctx, sizeof(*m));

    if (m) {
        m->rx_timestamp = bpf_ktime_get_ns();
        m->pad = 0;
        m->btf_id = bpf_core_type_id_local(struct illan_xdp_meta_foreign);
    }
}

static __always_inline struct illan_xdp_meta *start_meta(struct xdp_md *ctx)
{
    struct illan_xdp_meta *m = meta_area(ctx, sizeof(*m));

    if (m) {
        m->rx_hash = m->rx_hash_type = m->flags = 0;
        m->btf_id = bpf_core_type_id_local(struct illan_xdp_meta);
    }
    return m;
}

/*
 * "xdp.frags" is not the section: the loader sets BPF_F_XDP_HAS_FRAGS
 * when asked (the program never looks past the first buffer), which the
 * kernel requires before it runs a program on an interface whose MTU
 * exceeds a page in native mode.
 */
SEC("xdp")
int illan_xsk(struct xdp_md *ctx)
{
    struct illan_xdp_meta *m;

    if (in_gap(ctx)) {
        return XDP_DROP;
    }
    if (!may_write_meta(ctx)) {
        return redirect(ctx);
    }
    if (meta_mode == META_FOREIGN) {
        write_foreign(ctx);
    } else if (meta_mode == META_ON && (m = start_meta(ctx))) {
        m->rx_timestamp = bpf_ktime_get_ns();
        m->flags = ILLAN_XDP_META_TS_KTIME;
    }
    return redirect(ctx);
}

/* The same with the driver's timestamp and hash: loaded device-bound,
 * where the kfuncs resolve to the driver's. */
SEC("xdp")
int illan_xsk_dev(struct xdp_md *ctx)
{
    struct illan_xdp_meta *m;
    enum xdp_rss_hash_type type;
    __u64 ts;
    __u32 hash;

    if (in_gap(ctx)) {
        return XDP_DROP;
    }
    if (!may_write_meta(ctx)) {
        return redirect(ctx);
    }
    m = start_meta(ctx);
    if (m) {
        if (!bpf_xdp_metadata_rx_timestamp(ctx, &ts) && ts) {
            m->rx_timestamp = ts;
            m->flags = ILLAN_XDP_META_TS_DEVICE;
        } else {
            m->rx_timestamp = bpf_ktime_get_ns();
            m->flags = ILLAN_XDP_META_TS_KTIME;
        }
        if (!bpf_xdp_metadata_rx_hash(ctx, &hash, &type)) {
            m->rx_hash = hash;
            m->rx_hash_type = type;
            m->flags |= ILLAN_XDP_META_HASH;
        }
    }
    return redirect(ctx);
}

char LICENSE[] SEC("license") = "GPL";
