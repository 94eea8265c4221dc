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
#include <bpf/libbpf.h>

#include <glib.h>

#include "xdp-redirect.skel.h"

struct XdpRedirect {
    struct xdp_redirect_bpf *skel;  /* the program and its XSK map */
    int link_fd;
    bool frags;
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
 * Opens and loads our program; with @frags it declares it handles frames
 * in several buffers (BPF_F_XDP_HAS_FRAGS).  NULL with errno set.
 */
static struct xdp_redirect_bpf *load_program(bool frags)
{
    struct xdp_redirect_bpf *skel = xdp_redirect_bpf__open();
    int err;

    if (!skel) {
        return NULL;
    }
    if (frags) {
        bpf_program__set_flags(skel->progs.illan_xsk, BPF_F_XDP_HAS_FRAGS);
    }
    err = xdp_redirect_bpf__load(skel);
    if (err) {
        xdp_redirect_bpf__destroy(skel);
        errno = -err;
        return NULL;
    }
    return skel;
}

XdpRedirect *xdp_redirect_attach(unsigned ifindex, uint32_t mode_flags)
{
    return xdp_redirect_attach_frags(ifindex, mode_flags, false);
}

XdpRedirect *xdp_redirect_attach_frags(unsigned ifindex, uint32_t mode_flags,
                                       bool frags)
{
    LIBBPF_OPTS(bpf_link_create_opts, opts, .flags = mode_flags);
    XdpRedirect *r = g_new(XdpRedirect, 1);
    int err;

    r->link_fd = -1;
    r->frags = frags;
    r->skel = load_program(frags);
    /* Kernels before 5.18 know no such flag. */
    if (!r->skel && frags && errno == EINVAL) {
        r->frags = false;
        r->skel = load_program(false);
    }
    if (r->skel) {
        r->link_fd = bpf_link_create(bpf_program__fd(r->skel->progs.illan_xsk),
                                     ifindex, BPF_XDP, &opts);
    }
    if (r->link_fd < 0) {
        err = errno;
        xdp_redirect_detach(r);
        errno = err;
        return NULL;
    }
    return r;
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
