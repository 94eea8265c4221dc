/*
 * XDP programs on an interface: what is attached (libbpf's netlink query)
 * and our redirect program, built from instructions here rather than
 * compiled from C, so the build needs no BPF toolchain.
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

/* One XSK map slot per queue libxdp's API can bind, as its own program. */
#define XSK_MAP_ENTRIES 64

struct XdpRedirect {
    int map_fd;
    int prog_fd;
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
 * return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
 * The map is referenced by fd in a 64-bit immediate load.  With @frags
 * the program declares it handles frames in several buffers (it never
 * looks past the metadata), which the kernel requires before it runs it
 * on an interface whose MTU exceeds a page in native mode, or hands it
 * such frames whole.
 */
static int load_program(int map_fd, bool frags)
{
    LIBBPF_OPTS(bpf_prog_load_opts, opts,
                .prog_flags = frags ? BPF_F_XDP_HAS_FRAGS : 0);
    struct bpf_insn insns[] = {
        { .code = BPF_LDX | BPF_MEM | BPF_W, .dst_reg = BPF_REG_2,
          .src_reg = BPF_REG_1,
          .off = offsetof(struct xdp_md, rx_queue_index) },
        { .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1,
          .src_reg = BPF_PSEUDO_MAP_FD, .imm = map_fd },
        { 0 },
        { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_3,
          .imm = XDP_PASS },
        { .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_redirect_map },
        { .code = BPF_JMP | BPF_EXIT },
    };

    return bpf_prog_load(BPF_PROG_TYPE_XDP, "illan_xsk", "GPL", insns,
                         G_N_ELEMENTS(insns), &opts);
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

    r->prog_fd = r->link_fd = -1;
    r->frags = frags;
    r->map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "illan_xsks",
                               sizeof(uint32_t), sizeof(uint32_t),
                               XSK_MAP_ENTRIES, NULL);
    if (r->map_fd >= 0) {
        r->prog_fd = load_program(r->map_fd, frags);
    }
    /* Kernels before 5.18 know no such flag. */
    if (r->prog_fd < 0 && frags && errno == EINVAL) {
        r->frags = false;
        r->prog_fd = load_program(r->map_fd, false);
    }
    if (r->prog_fd >= 0) {
        r->link_fd = bpf_link_create(r->prog_fd, ifindex, BPF_XDP, &opts);
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
    return bpf_map_update_elem(r->map_fd, &queue, &fd, BPF_ANY) == 0;
}

void xdp_redirect_detach(XdpRedirect *r)
{
    if (!r) {
        return;
    }
    if (r->link_fd >= 0) {
        close(r->link_fd);
    }
    if (r->prog_fd >= 0) {
        close(r->prog_fd);
    }
    if (r->map_fd >= 0) {
        close(r->map_fd);
    }
    g_free(r);
}
