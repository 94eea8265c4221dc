/*
 * XDP programs on an interface: what is attached (libbpf's netlink query)
 * and our redirect program (net/bpf/xdp-redirect.bpf.c), loaded through
 * the skeleton bpftool generates from it at build time.
 */
#include "net/xdp-prog.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include <glib.h>

#include "xdp-redirect.skel.h"

/* Linux 6.3's, for headers that predate it. */
#ifndef BPF_F_XDP_DEV_BOUND_ONLY
#define BPF_F_XDP_DEV_BOUND_ONLY (1U << 6)
#endif

struct XdpRedirect {
    struct xdp_redirect_bpf *skel;  /* the program and its XSK map */
    int link_fd;
    bool frags;
    bool dev_bound;                 /* illan_xsk_dev, not illan_xsk */
    const char *meta;               /* what xdp_redirect_meta_source says */
};

static const char *mode_name(uint8_t mode)
{
    switch (mode) {
    case XDP_ATTACHED_DRV:
        return "native";
    case XDP_ATTACHED_SKB:
        return "skb";
    case XDP_ATTACHED_HW:
        return "hw";
    default:
        return "multi";
    }
}

static void read_name(XdpAttached *out)
{
    struct bpf_prog_info info;
    uint32_t len = sizeof(info);
    int fd = bpf_prog_get_fd_by_id(out->prog_id);

    memset(&info, 0, sizeof(info));
    if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len)) {
        g_strlcpy(out->name, info.name, sizeof(out->name));
    }
    if (fd >= 0) {
        close(fd);
    }
}

bool xdp_prog_query(unsigned ifindex, XdpAttached *out)
{
    struct bpf_xdp_query_opts opts = { .sz = sizeof(opts) };
    int err = bpf_xdp_query(ifindex, 0, &opts);

    memset(out, 0, sizeof(*out));
    if (err) {
        errno = -err;
        return false;
    }
    out->prog_id = opts.prog_id ? opts.prog_id
                 : opts.drv_prog_id ? opts.drv_prog_id
                 : opts.skb_prog_id ? opts.skb_prog_id : opts.hw_prog_id;
    if (out->prog_id) {
        out->mode = mode_name(opts.attach_mode);
        read_name(out);
    }
    return true;
}

/*
 * Opens and loads one of the object's programs: illan_xsk_dev
 * device-bound to @ifindex (the driver's rx-metadata kfuncs), or
 * illan_xsk writing @meta_mode's struct, if any, from bpf_ktime_get_ns().
 * With @frags it declares it handles frames in several buffers
 * (BPF_F_XDP_HAS_FRAGS).  NULL with errno set.
 */
static struct xdp_redirect_bpf *load_program(unsigned ifindex, bool dev,
                                             XdpMeta meta_mode, bool frags)
{
    struct xdp_redirect_bpf *skel = xdp_redirect_bpf__open();
    struct bpf_program *prog;
    uint32_t flags = frags ? BPF_F_XDP_HAS_FRAGS : 0;
    int err;

    if (!skel) {
        return NULL;
    }
    prog = dev ? skel->progs.illan_xsk_dev : skel->progs.illan_xsk;
    bpf_program__set_autoload(dev ? skel->progs.illan_xsk
                                  : skel->progs.illan_xsk_dev, false);
    skel->rodata->meta_mode = meta_mode;
    if (dev) {
        bpf_program__set_ifindex(prog, ifindex);
        flags |= BPF_F_XDP_DEV_BOUND_ONLY;
    }
    bpf_program__set_flags(prog, flags);
    err = xdp_redirect_bpf__load(skel);
    if (err) {
        xdp_redirect_bpf__destroy(skel);
        errno = -err;
        return NULL;
    }
    return skel;
}

static struct bpf_program *loaded_program(const XdpRedirect *r)
{
    return r->dev_bound ? r->skel->progs.illan_xsk_dev
                        : r->skel->progs.illan_xsk;
}

/* Loads and attaches; false with errno set and r->skel NULL. */
static bool load_and_attach(XdpRedirect *r, unsigned ifindex,
                            uint32_t mode_flags, XdpMeta meta_mode)
{
    LIBBPF_OPTS(bpf_link_create_opts, opts, .flags = mode_flags);
    int err;

    r->skel = load_program(ifindex, r->dev_bound, meta_mode, r->frags);
    /* Kernels before 5.18 know no such flag. */
    if (!r->skel && r->frags && errno == EINVAL && !r->dev_bound) {
        r->frags = false;
        r->skel = load_program(ifindex, false, meta_mode, false);
    }
    if (!r->skel) {
        return false;
    }
    r->link_fd = bpf_link_create(bpf_program__fd(loaded_program(r)),
                                 ifindex, BPF_XDP, &opts);
    if (r->link_fd < 0) {
        err = errno;
        xdp_redirect_bpf__destroy(r->skel);
        r->skel = NULL;
        errno = err;
        return false;
    }
    return true;
}

XdpRedirect *xdp_redirect_attach(unsigned ifindex, uint32_t mode_flags)
{
    return xdp_redirect_attach_frags(ifindex, mode_flags, false);
}

XdpRedirect *xdp_redirect_attach_frags(unsigned ifindex, uint32_t mode_flags,
                                       bool frags)
{
    return xdp_redirect_attach_meta(ifindex, mode_flags, frags, XDP_META_OFF);
}

/*
 * With the struct, the device-bound program first: the kernel refuses it
 * where the driver has no rx-metadata kfuncs (or in skb mode), and then
 * the program that takes the time itself is next.
 */
XdpRedirect *xdp_redirect_attach_meta(unsigned ifindex, uint32_t mode_flags,
                                      bool frags, XdpMeta meta)
{
    XdpRedirect *r = g_new0(XdpRedirect, 1);
    int err;

    r->link_fd = -1;
    r->frags = frags;
    r->dev_bound = meta == XDP_META_ON;
    if (!load_and_attach(r, ifindex, mode_flags, meta) && r->dev_bound) {
        r->dev_bound = false;
        load_and_attach(r, ifindex, mode_flags, meta);
    }
    if (!r->skel) {
        err = errno;
        g_free(r);
        errno = err;
        return NULL;
    }
    r->meta = meta == XDP_META_OFF ? "off"
            : meta == XDP_META_FOREIGN ? "foreign"
            : r->dev_bound ? "kfunc" : "ktime";
    return r;
}

const char *xdp_redirect_meta_source(const XdpRedirect *r)
{
    return r->meta;
}

/* Our struct's id in the object's own BTF, which is what the program
 * writes; the object is opened only to read it. */
static uint32_t find_meta_btf_id(void)
{
    struct xdp_redirect_bpf *skel = xdp_redirect_bpf__open();
    int id = -1;

    if (skel) {
        id = btf__find_by_name_kind(bpf_object__btf(skel->obj),
                                    "illan_xdp_meta", BTF_KIND_STRUCT);
        xdp_redirect_bpf__destroy(skel);
    }
    return id > 0 ? (uint32_t)id : 0;
}

uint32_t xdp_meta_btf_id(void)
{
    static gsize id;

    if (g_once_init_enter(&id)) {
        /* 0 is not an id g_once can store: keep it shifted by one. */
        g_once_init_leave(&id, (gsize)find_meta_btf_id() + 1);
    }
    return (uint32_t)(id - 1);
}

bool xdp_redirect_frags(const XdpRedirect *r)
{
    return r->frags;
}

bool xdp_redirect_add_socket(XdpRedirect *r, uint32_t queue, int fd)
{
    return bpf_map__update_elem(r->skel->maps.illan_xsks, &queue,
                                sizeof(queue), &fd, sizeof(fd), BPF_ANY) == 0;
}

/* The program's bit for @queue in @mask, which it reads per frame. */
static void set_queue_bit(__u64 *mask, uint32_t queue, bool on)
{
    uint64_t bit = 1ull << (queue % 64);

    if (on) {
        __atomic_fetch_or(mask, bit, __ATOMIC_SEQ_CST);
    } else {
        __atomic_fetch_and(mask, ~bit, __ATOMIC_SEQ_CST);
    }
}

void xdp_redirect_set_lending(XdpRedirect *r, uint32_t queue, bool on)
{
    set_queue_bit(&r->skel->bss->lending_queues, queue, on);
}

void xdp_redirect_set_gap(XdpRedirect *r, uint32_t queue, bool on)
{
    set_queue_bit(&r->skel->bss->gap_queues, queue, on);
}

uint64_t xdp_redirect_gap_drops(const XdpRedirect *r, uint32_t queue)
{
    return __atomic_load_n(&r->skel->bss->gap_drops[queue % 64],
                           __ATOMIC_RELAXED);
}

void xdp_redirect_detach(XdpRedirect *r)
{
    if (!r) {
        return;
    }
    if (r->link_fd >= 0) {
        close(r->link_fd);
    }
    xdp_redirect_bpf__destroy(r->skel);
    g_free(r);
}
