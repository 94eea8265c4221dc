/*
 * The XDP side of the af-xdp netdev: the program an interface already
 * runs (so that a foreign one is refused, never replaced), and our own
 * redirect program with its XSK map, attached through a bpf_link.  The
 * link belongs to this process: closing it detaches the program, and so
 * does the kernel when the process dies, so a crash leaves nothing behind.
 */
#ifndef NET_XDP_PROG_H
#define NET_XDP_PROG_H

#include <stdbool.h>
#include <stdint.h>

typedef struct XdpAttached {
    uint32_t prog_id;       /* 0: nothing attached */
    char name[16];          /* the program's name, "" if unreadable */
    const char *mode;       /* "native", "skb", "hw" or "multi" */
} XdpAttached;

/* Fills @out; false (errno set) when the kernel cannot be asked. */
bool xdp_prog_query(unsigned ifindex, XdpAttached *out);

typedef struct XdpRedirect XdpRedirect;

/* Loads the program that sends each frame to the socket of its rx queue
 * (frames of queues without one go on to the kernel's stack) and attaches
 * it in @mode_flags (XDP_FLAGS_DRV_MODE or _SKB_MODE).  NULL with errno
 * set on failure. */
XdpRedirect *xdp_redirect_attach(unsigned ifindex, uint32_t mode_flags);
/* The same, the program loaded with BPF_F_XDP_HAS_FRAGS if @frags and
 * the kernel knows the flag, without it otherwise. */
XdpRedirect *xdp_redirect_attach_frags(unsigned ifindex, uint32_t mode_flags,
                                       bool frags);
/* What the program writes in front of each frame (include/net/xdp-meta.h):
 * nothing, struct illan_xdp_meta, or (for tests) a struct of another
 * BTF type. */
typedef enum XdpMeta {
    XDP_META_OFF,
    XDP_META_ON,
    XDP_META_FOREIGN,
} XdpMeta;
/* The same, writing @meta: with XDP_META_ON the program is device-bound
 * and reads the driver's timestamp and hash where the kernel allows it,
 * and takes bpf_ktime_get_ns() otherwise. */
XdpRedirect *xdp_redirect_attach_meta(unsigned ifindex, uint32_t mode_flags,
                                      bool frags, XdpMeta meta);
/* "kfunc" (device-bound), "ktime", "off" or "foreign". */
const char *xdp_redirect_meta_source(const XdpRedirect *r);
/* The BTF type id of struct illan_xdp_meta, the last member the program
 * writes; 0 if our object cannot be read.  Any thread. */
uint32_t xdp_meta_btf_id(void);
/* Whether the attached program was loaded with BPF_F_XDP_HAS_FRAGS. */
bool xdp_redirect_frags(const XdpRedirect *r);
/* Frames of rx queue @queue go to AF_XDP socket @fd. */
bool xdp_redirect_add_socket(XdpRedirect *r, uint32_t queue, int fd);
/* Detaches and frees; NULL is fine. */
/* Whether queue @queue's frames land in guest buffers: the program then
 * writes no metadata in front of them (it would land outside the
 * buffer).  Set before such a socket enters the map, cleared after it
 * left. */
void xdp_redirect_set_lending(XdpRedirect *r, uint32_t queue, bool on);
/* While @on, queue @queue has no socket (one replaces another): the
 * program drops its frames and counts them. */
void xdp_redirect_set_gap(XdpRedirect *r, uint32_t queue, bool on);
uint64_t xdp_redirect_gap_drops(const XdpRedirect *r, uint32_t queue);
void xdp_redirect_detach(XdpRedirect *r);

#endif
