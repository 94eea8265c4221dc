/*
 * -netdev af-xdp: frames from a host interface through AF_XDP sockets,
 * one socket, UMEM and I/O thread per queue (net/xsk-queue.c).
 *
 * This file is the netdev around the queues: its options, the checks that
 * turn the kernel's errnos into advice (no such interface, queue out of
 * range, missing capability, memlock, native mode refused, a foreign XDP
 * program), the choice of XDP mode, and the interface's life: link down
 * and up, removed and back, reported on stderr and as QMP events.
 *
 * The guest's frames leave through queue 0: spapr-vlan has one queue, and
 * one queue keeps them in order.  A frame longer than the interface's MTU
 * allows is refused here, counted, rather than handed to the kernel to
 * fail.
 *
 * Multi-buffer (frames longer than a UMEM frame, in chains of them) takes
 * a program loaded with frags support and sockets bound with XDP_USE_SG;
 * multi-buffer=auto uses it where the kernel offers both and says once
 * when it does not, =on refuses to start without it.
 */
#include "net/net.h"
#include "net/link-watch.h"
#include "net/xdp-prog.h"
#include "net/xsk-map.h"
#include "net/xsk-queue.h"
#include "qemu/module.h"
#include "qemu/option.h"
#include "qemu/passed-fds.h"
#include "qemu/runstate.h"
#include "qemu/thread.h"
#include "trace/trace-net.h"

#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

/* libxdp's redirect program has a 64-entry XSK map. */
#define AF_XDP_MAX_QUEUES 64
#define DEFAULT_RX_RING 2048
#define DEFAULT_TX_RING 512
/* A frame's Ethernet header, and the 802.1Q tag a frame may add to it. */
#define ETH_HEADER_BYTES 14
#define VLAN_TAG_BYTES 4
/* F5: a queue closed a moment ago stays busy until a deferred release. */
#define BIND_RETRIES 20
#define BIND_RETRY_US 10000

typedef enum AfXdpLink {
    AF_XDP_LINK_UP,
    AF_XDP_LINK_DOWN,
    AF_XDP_LINK_REMOVED,
} AfXdpLink;

typedef enum AfXdpOnOffAuto {
    AF_XDP_AUTO,
    AF_XDP_ON,
    AF_XDP_OFF,
} AfXdpOnOffAuto;

typedef struct AfXdpOptions {
    char *ifname;
    uint32_t mode_flags;        /* 0: native, falling back to skb */
    bool force_copy;
    unsigned queues, start_queue;
    bool queues_all;            /* queues=all: counted when it opens */
    bool inhibit;
    int sock_fds[AF_XDP_MAX_QUEUES];
    unsigned n_sock_fds;
    char *map_path;             /* a pinned XSK map, with inhibit=on */
    unsigned map_start_index;
    bool has_map_start_index;
    bool spin;
    bool io_sched_batch;        /* io-sched=batch */
    unsigned busy_poll_usecs;
    unsigned batch;
    uint32_t rx_ring_size, tx_ring_size;
    AfXdpOnOffAuto multi_buffer;
    AfXdpOnOffAuto guest_umem;
    bool tx_in_place;           /* send from guest RAM while it is the
                                   UMEM */
    bool rx_metadata;           /* look for struct illan_xdp_meta */
    bool rx_metadata_given;     /* rx-metadata= was on the command line */
} AfXdpOptions;

typedef struct AfXdpState {
    NetClientState *nc;
    char *id;
    AfXdpOptions o;
    unsigned ifindex;
    const char *mode;           /* "native", "skb", or "external" */
    /* Replaced by the main thread when the interface goes and comes
     * back, under the write lock and with atomic stores.  Read by hcall
     * threads under the read lock (rx_ready), but by a send with an
     * atomic load alone: a queue is closed only while the NIC's sends
     * are held (net_backend_hold_sends). */
    QemuRWLock queues_lock;
    XskQueue *queues[AF_XDP_MAX_QUEUES];
    XdpRedirect *redirect;      /* NULL with inhibit=on */
    LinkWatch *watch;
    AfXdpLink link;
    uint64_t link_changes, reopens, link_overruns;
    bool multi_buffer;          /* the queues are bound with XDP_USE_SG */
    bool mb_reported;           /* its absence was said on stderr */
    bool sock_fds_taken;        /* o.sock_fds are the netdev's to close */
    const char *rx_metadata;    /* "kfunc", "ktime", "external" or "off" */
    /* Where the NIC lends from (NULL: nothing now), for the queues of
     * an interface that returns.  Main thread only. */
    GuestRam *lend_ram;
    /* The interface's MTU, set by the main thread, read by senders. */
    uint32_t mtu;               /* atomic */
    uint64_t tx_over_mtu;       /* atomic */
} AfXdpState;

static const char *const af_xdp_keys[] = {
    "type", "id", "ifname", "mode", "force-copy", "queues", "start-queue",
    "inhibit", "sock-fds", "map-path", "map-start-index", "spin",
    "busy-poll", "batch", "rx-ring-size", "tx-ring-size", "multi-buffer",
    "rx-metadata", "guest-umem", "tx-in-place", "io-sched", NULL
};

/* Options. */

static bool parse_uint_opt(const QemuOpts *opts, const char *key,
                           unsigned min, unsigned max, unsigned *out,
                           GError **errp)
{
    const char *v = qemu_opt_get(opts, key);
    uint64_t n;

    if (!v) {
        return true;
    }
    if (!qemu_parse_uint64(key, v, &n, errp)) {
        return false;
    }
    if (n < min || n > max) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter '%s' expects a value from %u to %u", key, min,
                    max);
        return false;
    }
    *out = n;
    return true;
}

static bool parse_bool_opt(const QemuOpts *opts, const char *key, bool *out,
                           GError **errp)
{
    const char *v = qemu_opt_get(opts, key);

    return !v || qemu_parse_bool(key, v, out, errp);
}

/* On by default with our own program; with someone else's (inhibit=on),
 * only when asked: theirs must be ours, built from the same source. */
static bool parse_rx_metadata(const QemuOpts *opts, AfXdpOptions *o,
                              GError **errp)
{
    o->rx_metadata = !o->inhibit;
    o->rx_metadata_given = qemu_opt_get(opts, "rx-metadata") != NULL;
    return parse_bool_opt(opts, "rx-metadata", &o->rx_metadata, errp);
}

static bool parse_ring_opt(const QemuOpts *opts, const char *key,
                           uint32_t *out, GError **errp)
{
    unsigned n = *out;

    if (!parse_uint_opt(opts, key, 64, 16384, &n, errp)) {
        return false;
    }
    if (n & (n - 1)) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter '%s' must be a power of two (got %u)", key, n);
        return false;
    }
    *out = n;
    return true;
}

static bool parse_mode(const QemuOpts *opts, uint32_t *flags, GError **errp)
{
    const char *v = qemu_opt_get(opts, "mode");

    if (!v) {
        *flags = 0;
    } else if (!strcmp(v, "native")) {
        *flags = XDP_FLAGS_DRV_MODE;
    } else if (!strcmp(v, "skb")) {
        *flags = XDP_FLAGS_SKB_MODE;
    } else {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter 'mode' does not accept value '%s' "
                    "(native or skb)", v);
        return false;
    }
    return true;
}

static bool parse_io_sched(const QemuOpts *opts, bool *batch,
                           GError **errp)
{
    const char *v = qemu_opt_get(opts, "io-sched");

    *batch = v && !strcmp(v, "batch");
    if (v && !*batch && strcmp(v, "other")) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter 'io-sched' does not accept value '%s' "
                    "(batch or other)", v);
        return false;
    }
    return true;
}

static bool parse_on_off_auto(const QemuOpts *opts, const char *key,
                              AfXdpOnOffAuto *out, GError **errp)
{
    const char *v = qemu_opt_get(opts, key);
    bool on;

    if (!v || !strcmp(v, "auto")) {
        *out = AF_XDP_AUTO;
        return true;
    }
    if (!qemu_parse_bool(key, v, &on, NULL)) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter '%s' does not accept value '%s' "
                    "(on, off or auto)", key, v);
        return false;
    }
    *out = on ? AF_XDP_ON : AF_XDP_OFF;
    return true;
}

/* sock-fds=a:b:...: open AF_XDP sockets, one per queue, each given once
 * (which of them illan may take is known only when it creates the
 * netdev; see take_sock_fds). */
static bool parse_sock_fds(const char *v, AfXdpOptions *o, GError **errp)
{
    g_auto(GStrv) parts = g_strsplit(v, ":", -1);

    for (guint i = 0; parts[i]; i++) {
        uint64_t fd;
        int domain = 0;
        socklen_t len = sizeof(domain);

        if (i == AF_XDP_MAX_QUEUES) {
            g_set_error(errp, ILLAN_ERROR, 0, "Parameter 'sock-fds' takes "
                        "at most %d descriptors", AF_XDP_MAX_QUEUES);
            return false;
        }
        if (!qemu_parse_uint64("sock-fds", parts[i], &fd, errp)) {
            return false;
        }
        if (fd > INT32_MAX) {
            g_set_error(errp, ILLAN_ERROR, 0, "sock-fds: %s is not a file "
                        "descriptor number", parts[i]);
            return false;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) ||
            domain != AF_XDP) {
            g_set_error(errp, ILLAN_ERROR, 0,
                        "sock-fds: descriptor %s is not an open AF_XDP "
                        "socket", parts[i]);
            return false;
        }
        for (unsigned j = 0; j < o->n_sock_fds; j++) {
            if (o->sock_fds[j] == (int)fd) {
                g_set_error(errp, ILLAN_ERROR, 0, "sock-fds: descriptor %s "
                            "is given twice: each queue needs a socket of "
                            "its own", parts[i]);
                return false;
            }
        }
        o->sock_fds[o->n_sock_fds++] = fd;
    }
    return true;
}

/* queues=N or queues=all. */
static bool parse_queues(const QemuOpts *opts, AfXdpOptions *o,
                         GError **errp)
{
    const char *v = qemu_opt_get(opts, "queues");

    if (v && !strcmp(v, "all")) {
        o->queues_all = true;
        return true;
    }
    return parse_uint_opt(opts, "queues", 1, AF_XDP_MAX_QUEUES, &o->queues,
                          errp);
}

/* The options that only make sense together: QEMU's rules for inhibit,
 * sock-fds, map-path and map-start-index. */
static bool check_combination(const AfXdpOptions *o, GError **errp)
{
    if (o->inhibit && !o->n_sock_fds && !o->map_path) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "inhibit=on needs sock-fds=FD[:FD...] or map-path=PATH: "
                    "the AF_XDP sockets, or the pinned XSK map to put them "
                    "in, of the program a privileged helper attached");
        return false;
    }
    if (o->n_sock_fds && !o->inhibit) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "sock-fds needs inhibit=on: the sockets belong to a "
                    "program someone else attached");
        return false;
    }
    if (o->map_path && !o->inhibit) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "map-path needs inhibit=on: the pinned map belongs to a "
                    "program someone else attached, and illan loads none");
        return false;
    }
    if (o->guest_umem == AF_XDP_ON && o->rx_metadata_given &&
        o->rx_metadata) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "guest-umem=on and rx-metadata=on exclude each other: "
                    "the metadata would be written in front of the guest's "
                    "buffer; drop rx-metadata=on, or use guest-umem=auto "
                    "(then the metadata wins) or off");
        return false;
    }
    if (o->guest_umem == AF_XDP_ON && (o->n_sock_fds || o->map_path)) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "guest-umem=on needs a socket and a program of illan's "
                    "own: with %s another process made them, so frames "
                    "are copied; use guest-umem=auto or off",
                    o->n_sock_fds ? "sock-fds" : "map-path");
        return false;
    }
    if (o->tx_in_place && o->guest_umem == AF_XDP_OFF) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "tx-in-place=on needs guest-umem=on or auto: frames go "
                    "out from guest RAM only while it is the UMEM");
        return false;
    }
    if (o->map_path && o->n_sock_fds) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "map-path and sock-fds exclude each other: give the "
                    "sockets (sock-fds) or the map illan puts sockets of "
                    "its own in (map-path)");
        return false;
    }
    if (o->has_map_start_index && !o->map_path) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "map-start-index needs map-path: it is the slot of the "
                    "pinned XSK map that takes the first queue's socket");
        return false;
    }
    return true;
}

/* Once the number of queues is known (queues=all counts them when the
 * netdev opens). */
static bool check_queue_count(const AfXdpOptions *o, GError **errp)
{
    if (o->n_sock_fds && o->n_sock_fds != o->queues) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "sock-fds has %u descriptor(s) but the %u queue(s) need "
                    "one each", o->n_sock_fds, o->queues);
        return false;
    }
    if (o->start_queue + o->queues > AF_XDP_MAX_QUEUES) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "start-queue=%u,queues=%u goes past queue %d, the last "
                    "the XSK map holds", o->start_queue, o->queues,
                    AF_XDP_MAX_QUEUES - 1);
        return false;
    }
    return true;
}

static bool parse_options(const QemuOpts *opts, AfXdpOptions *o,
                          GError **errp)
{
    const char *ifname = qemu_opt_get(opts, "ifname");
    const char *fds = qemu_opt_get(opts, "sock-fds");
    const char *map_path = qemu_opt_get(opts, "map-path");

    *o = (AfXdpOptions){ .queues = 1, .batch = NET_BATCH_MAX,
                         .rx_ring_size = DEFAULT_RX_RING,
                         .tx_ring_size = DEFAULT_TX_RING };
    if (!qemu_opts_check_keys(opts, af_xdp_keys, errp)) {
        return false;
    }
    if (!ifname || !*ifname) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "Parameter 'ifname' is missing (the host interface, "
                    "e.g. ifname=veth0)");
        return false;
    }
    o->ifname = g_strdup(ifname);
    o->map_path = g_strdup(map_path);
    o->has_map_start_index = qemu_opt_get(opts, "map-start-index") != NULL;
    return parse_mode(opts, &o->mode_flags, errp) &&
           parse_bool_opt(opts, "force-copy", &o->force_copy, errp) &&
           parse_queues(opts, o, errp) &&
           parse_uint_opt(opts, "start-queue", 0, AF_XDP_MAX_QUEUES - 1,
                          &o->start_queue, errp) &&
           parse_bool_opt(opts, "inhibit", &o->inhibit, errp) &&
           parse_uint_opt(opts, "map-start-index", 0, INT32_MAX,
                          &o->map_start_index, errp) &&
           parse_bool_opt(opts, "spin", &o->spin, errp) &&
           parse_io_sched(opts, &o->io_sched_batch, errp) &&
           parse_uint_opt(opts, "busy-poll", 0, 1000000, &o->busy_poll_usecs,
                          errp) &&
           parse_uint_opt(opts, "batch", 1, NET_BATCH_MAX, &o->batch,
                          errp) &&
           parse_ring_opt(opts, "rx-ring-size", &o->rx_ring_size, errp) &&
           parse_ring_opt(opts, "tx-ring-size", &o->tx_ring_size, errp) &&
           parse_on_off_auto(opts, "multi-buffer", &o->multi_buffer, errp) &&
           parse_on_off_auto(opts, "guest-umem", &o->guest_umem, errp) &&
           parse_bool_opt(opts, "tx-in-place", &o->tx_in_place, errp) &&
           parse_rx_metadata(opts, o, errp) &&
           (!fds || parse_sock_fds(fds, o, errp)) &&
           check_combination(o, errp);
}

/* What the host allows, checked before anything is created so that each
 * refusal says what to do. */

/* The effective capabilities, read once for all the checks. */
typedef struct HostCaps {
    bool known;         /* false: capget failed, the kernel will decide */
    struct __user_cap_data_struct data[2];
} HostCaps;

static void read_caps(HostCaps *caps)
{
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };

    memset(caps, 0, sizeof(*caps));
    caps->known = syscall(SYS_capget, &hdr, caps->data) == 0;
}

static bool has_cap(const HostCaps *caps, int cap)
{
    return !caps->known ||
           (caps->data[cap / 32].effective & (1u << (cap % 32)));
}

static bool check_capabilities(const AfXdpOptions *o, const HostCaps *caps,
                               GError **errp)
{
    g_autoptr(GPtrArray) missing = g_ptr_array_new();
    g_autofree char *list = NULL;
    bool no_raw = !o->n_sock_fds && !has_cap(caps, CAP_NET_RAW);

    if (no_raw) {
        g_ptr_array_add(missing, "CAP_NET_RAW (AF_XDP sockets)");
    }
    if (!o->inhibit && !has_cap(caps, CAP_NET_ADMIN)) {
        g_ptr_array_add(missing, "CAP_NET_ADMIN (attaching XDP)");
    }
    if (!o->inhibit && !has_cap(caps, CAP_BPF) &&
        !has_cap(caps, CAP_SYS_ADMIN)) {
        g_ptr_array_add(missing, "CAP_BPF (loading the XDP program)");
    }
    if (missing->len == 0) {
        return true;
    }
    g_ptr_array_add(missing, NULL);
    list = g_strjoinv(", ", (char **)missing->pdata);
    /* Sockets of illan's own need CAP_NET_RAW, map-path or not. */
    g_set_error(errp, ILLAN_ERROR, 0,
                "no permission: af-xdp needs %s; run as root, grant the "
                "capabilities, or let a privileged helper attach the program "
                "and pass inhibit=on with %s", list,
                no_raw ? "the sockets it made (sock-fds=...)"
                       : "sock-fds=... or map-path=...");
    return false;
}

static bool check_memlock(const AfXdpOptions *o, const HostCaps *caps,
                          size_t umem_per_queue, GError **errp)
{
    size_t need = umem_per_queue * o->queues;
    struct rlimit rl;

    if ((caps->known && has_cap(caps, CAP_IPC_LOCK)) ||
        getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= need) {
        return true;
    }
    g_set_error(errp, ILLAN_ERROR, 0,
                "RLIMIT_MEMLOCK too low: the UMEM needs %zu KiB of locked "
                "memory (%u queue(s) x %u frames x %d bytes) but the limit "
                "is %llu KiB; raise it (ulimit -l %zu), grant CAP_IPC_LOCK, "
                "or use smaller rings (rx-ring-size, tx-ring-size)",
                need / 1024, o->queues, o->rx_ring_size + o->tx_ring_size,
                XSK_FRAME_SIZE, (unsigned long long)rl.rlim_cur / 1024,
                need / 1024);
    return false;
}

/* The interface's channels (ethtool -l); 0, or the errno. */
static int read_channels(const char *ifname, struct ethtool_channels *ch)
{
    struct ifreq ifr = { 0 };
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int err = 0;

    *ch = (struct ethtool_channels){ .cmd = ETHTOOL_GCHANNELS };
    g_strlcpy(ifr.ifr_name, ifname, sizeof(ifr.ifr_name));
    ifr.ifr_data = (char *)ch;
    if (fd < 0 || ioctl(fd, SIOCETHTOOL, &ifr) != 0) {
        err = errno;
    }
    if (fd >= 0) {
        close(fd);
    }
    return err;
}

/* The interface's queue count; 0 if unknown. */
static unsigned interface_queues(const char *ifname)
{
    struct ethtool_channels ch;

    if (read_channels(ifname, &ch)) {
        return 0;
    }
    return MAX(ch.rx_count, ch.tx_count) + ch.combined_count;
}

/*
 * queues=all: a socket on every queue from start-queue on that has both
 * directions, as an AF_XDP socket needs: the combined channels, and as
 * many more as there are both rx-only and tx-only ones (veth reports only
 * those).
 */
static bool count_all_queues(AfXdpOptions *o, GError **errp)
{
    struct ethtool_channels ch;
    int err = read_channels(o->ifname, &ch);
    unsigned have = ch.combined_count + MIN(ch.rx_count, ch.tx_count);

    if (err) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "queues=all: %s does not report its channels (ethtool "
                    "-l: %s); give queues=N", o->ifname, g_strerror(err));
        return false;
    }
    if (have <= o->start_queue) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "queues=all: %s has %u queue(s), none from "
                    "start-queue=%u on; lower start-queue", o->ifname, have,
                    o->start_queue);
        return false;
    }
    if (have - o->start_queue > AF_XDP_MAX_QUEUES) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "queues=all: %s has %u queue(s) from start-queue=%u on, "
                    "more than the %d af-xdp opens; give queues=N or use "
                    "fewer channels (ethtool -L %s combined N, or rx N tx N)",
                    o->ifname, have - o->start_queue, o->start_queue,
                    AF_XDP_MAX_QUEUES, o->ifname);
        return false;
    }
    o->queues = have - o->start_queue;
    return true;
}

static bool check_queues(const AfXdpOptions *o, GError **errp)
{
    unsigned have = interface_queues(o->ifname);
    unsigned last = o->start_queue + o->queues - 1;

    if (have && last >= have) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "queue %u out of range: %s has %u queue(s), "
                    "start-queue=%u,queues=%u needs %u; lower them or add "
                    "queues (ethtool -L %s rx %u tx %u, or combined %u)",
                    last, o->ifname, have, o->start_queue, o->queues,
                    last + 1, o->ifname, last + 1, last + 1, last + 1);
        return false;
    }
    return true;
}

/* Whatever is attached is someone else's: illan never replaces it. */
static bool check_attached_program(AfXdpState *s, GError **errp)
{
    XdpAttached a;

    if (!xdp_prog_query(s->ifindex, &a) || !a.prog_id) {
        return true;
    }
    g_set_error(errp, ILLAN_ERROR, 0,
                "an XDP program is already attached to %s (id %u, \"%s\", "
                "%s mode) and illan does not replace it: remove it (ip link "
                "set dev %s xdp off) or redirect to sockets of your own and "
                "pass inhibit=on,sock-fds=...",
                s->o.ifname, a.prog_id, a.name, a.mode, s->o.ifname);
    return false;
}

/* Attaching the program: native, else skb unless a mode was asked for. */

/* Why the program would not attach in @flags' mode, as advice. */
static void attach_error(AfXdpState *s, uint32_t flags, int err,
                         GError **errp)
{
    const char *ifn = s->o.ifname;

    if ((err == EBUSY || err == EEXIST) && !check_attached_program(s, errp)) {
        return;
    }
    if (err == EPERM || err == EACCES) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "no permission to load or attach XDP on %s (%s): "
                    "af-xdp needs CAP_BPF and CAP_NET_ADMIN, or "
                    "inhibit=on,sock-fds=...", ifn, g_strerror(err));
    } else if (flags == XDP_FLAGS_DRV_MODE && err == ERANGE &&
               s->o.multi_buffer == AF_XDP_OFF) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "native XDP mode refused by %s (%s): its MTU is too "
                    "large for a program without multi-buffer; use "
                    "multi-buffer=auto or mode=skb", ifn, g_strerror(err));
    } else if (flags == XDP_FLAGS_DRV_MODE) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "native XDP mode refused by %s (%s): the driver cannot "
                    "run XDP natively here (no support, or an MTU too large "
                    "for it); use mode=skb", ifn, g_strerror(err));
    } else {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "cannot attach XDP to %s in skb mode: %s", ifn,
                    g_strerror(err));
    }
}

/* 0, or the errno of the failed attach. */
static int attach_in_mode(AfXdpState *s, uint32_t flags)
{
    s->redirect = xdp_redirect_attach_meta(s->ifindex, flags,
                                           s->o.multi_buffer != AF_XDP_OFF,
                                           s->o.rx_metadata ? XDP_META_ON
                                                            : XDP_META_OFF);
    if (!s->redirect) {
        return errno;
    }
    s->rx_metadata = xdp_redirect_meta_source(s->redirect);
    s->mode = flags == XDP_FLAGS_SKB_MODE ? "skb" : "native";
    return 0;
}

/* Once per netdev, whatever the reason and however often it reopens. */
static void report_single_buffer(AfXdpState *s, const char *why)
{
    if (!s->mb_reported) {
        s->mb_reported = true;
        fprintf(stderr, "illan: af-xdp netdev '%s': %s; without "
                "multi-buffer, frames longer than %d bytes are dropped\n",
                s->id, why, XSK_RX_DATA_SIZE);
    }
}

/* A program the kernel would not load with frags: multi-buffer=on fails,
 * auto goes on without. */
static bool check_program_frags(AfXdpState *s, GError **errp)
{
    if (s->o.multi_buffer == AF_XDP_OFF ||
        xdp_redirect_frags(s->redirect)) {
        return true;
    }
    if (s->o.multi_buffer == AF_XDP_AUTO) {
        report_single_buffer(s, "the kernel refuses an XDP program with "
                             "frags support");
        return true;
    }
    g_set_error(errp, ILLAN_ERROR, 0,
                "multi-buffer=on, but the kernel refuses an XDP program with "
                "frags support (BPF_F_XDP_HAS_FRAGS needs Linux 5.18, "
                "multi-buffer AF_XDP 6.6): upgrade, or use "
                "multi-buffer=auto or off");
    xdp_redirect_detach(s->redirect);
    s->redirect = NULL;
    return false;
}

static bool attach_program(AfXdpState *s, GError **errp)
{
    uint32_t first = s->o.mode_flags ? s->o.mode_flags : XDP_FLAGS_DRV_MODE;
    int err = attach_in_mode(s, first), skb_err;

    if (!err) {
        return check_program_frags(s, errp);
    }
    /* Only a mode the driver refuses is worth another try in skb mode. */
    if (s->o.mode_flags || err == EPERM || err == EACCES || err == EBUSY ||
        err == EEXIST) {
        attach_error(s, first, err, errp);
        return false;
    }
    skb_err = attach_in_mode(s, XDP_FLAGS_SKB_MODE);
    if (skb_err) {
        attach_error(s, XDP_FLAGS_SKB_MODE, skb_err, errp);
        return false;
    }
    fprintf(stderr, "illan: af-xdp netdev '%s': native mode refused by %s "
            "(%s); using skb mode\n", s->id, s->o.ifname, g_strerror(err));
    return check_program_frags(s, errp);
}

/* The advice for a queue that would not open. */
static void explain_open_error(AfXdpState *s, int err, GError **errp)
{
    const char *ifn = s->o.ifname;
    g_autofree char *what = g_strdup((*errp)->message);

    g_clear_error(errp);
    if (err == EPERM || err == EACCES) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "no permission on %s %s: AF_XDP sockets need CAP_NET_RAW, "
                    "or inhibit=on,sock-fds=...", ifn, what);
    } else if (err == ENOBUFS || err == ENOMEM) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "%s %s: the UMEM could not be locked; raise "
                    "RLIMIT_MEMLOCK (ulimit -l), grant CAP_IPC_LOCK, or use "
                    "smaller rings (rx-ring-size, tx-ring-size)", ifn, what);
    } else if (err == EBUSY) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "%s %s: another AF_XDP socket holds this queue", ifn,
                    what);
    } else {
        g_set_error(errp, ILLAN_ERROR, 0, "cannot open AF_XDP on %s %s", ifn,
                    what);
    }
}

/* Why a queue's frames are always copied, or XSK_COPY_NOT_LENDING. */
static XskCopyReason copy_reason(const AfXdpOptions *o)
{
    return o->guest_umem == AF_XDP_OFF ? XSK_COPY_OFF
         : o->n_sock_fds ? XSK_COPY_SOCK_FDS
         : o->map_path ? XSK_COPY_MAP_PATH
         : o->rx_metadata_given && o->rx_metadata ? XSK_COPY_RX_METADATA
         : XSK_COPY_NOT_LENDING;
}

/* A queue's socket is replaced (receive zero copy): while it has none
 * the program drops its frames and counts them, and it writes no
 * metadata in front of a lent buffer's frame. */
static bool socket_changed(void *opaque, uint32_t queue_id, int fd,
                           bool lending)
{
    AfXdpState *s = opaque;
    bool ok;

    if (fd < 0) {
        xdp_redirect_set_gap(s->redirect, queue_id, true);
        return true;
    }
    xdp_redirect_set_lending(s->redirect, queue_id, lending);
    ok = xdp_redirect_add_socket(s->redirect, queue_id, fd);
    xdp_redirect_set_gap(s->redirect, queue_id, false);
    return ok;
}

static XskQueue *open_queue(AfXdpState *s, unsigned i, int *err,
                            GError **errp)
{
    XskQueueConfig cfg = {
        .ifname = s->o.ifname, .ifindex = s->ifindex,
        .queue_id = s->o.start_queue + i,
        .force_copy = s->o.force_copy,
        .sock_fd = s->o.n_sock_fds ? s->o.sock_fds[i] : -1,
        .rx_ring_size = s->o.rx_ring_size, .tx_ring_size = s->o.tx_ring_size,
        .batch = s->o.batch, .spin = s->o.spin,
        .sched_batch = s->o.io_sched_batch,
        .busy_poll_usecs = s->o.busy_poll_usecs,
        /* A program without frags never hands a socket a chain. */
        .multi_buffer = s->o.multi_buffer != AF_XDP_OFF &&
                        (!s->redirect || xdp_redirect_frags(s->redirect)),
        .meta_btf_id = s->o.rx_metadata ? xdp_meta_btf_id() : 0,
        .copy_reason = copy_reason(&s->o),
        .socket_changed = socket_changed, .opaque = s,
    };
    XskQueue *q = NULL;

    for (int tries = 0; !q && tries < BIND_RETRIES; tries++) {
        g_clear_error(errp);
        q = xsk_queue_open(&cfg, s->nc, err, errp);
        if (!q && *err != EBUSY) {
            break;
        }
        if (!q) {
            g_usleep(BIND_RETRY_US);
        }
    }
    return q;
}

/* Without a client (a create that failed) no NIC can be sending. */
static void hold_sends(AfXdpState *s, bool hold)
{
    if (s->nc) {
        net_backend_hold_sends(s->nc, hold);
    }
}

/* Sockets first: with the program gone first, frames for a queue whose
 * socket is still open would reach the stack instead. */
static void close_queues(AfXdpState *s)
{
    for (unsigned i = 0; i < s->o.queues; i++) {
        XskQueue *q;

        hold_sends(s, true);
        qemu_rwlock_wrlock(&s->queues_lock);
        q = s->queues[i];
        __atomic_store_n(&s->queues[i], NULL, __ATOMIC_RELAXED);
        qemu_rwlock_unlock(&s->queues_lock);
        hold_sends(s, false);
        xsk_queue_close(q);
    }
    xdp_redirect_detach(s->redirect);
    s->redirect = NULL;
}

/*
 * Whether the queues got multi-buffer: the kernel may refuse XDP_USE_SG
 * (before Linux 6.6), and the queue then runs without it.
 * multi-buffer=on fails there; auto says so once.
 */
static bool check_multi_buffer(AfXdpState *s, XskQueue *q, GError **errp)
{
    int refused = xsk_queue_sg_refused(q);
    g_autofree char *why = NULL;

    s->multi_buffer = xsk_queue_multi_buffer(q);
    if (!refused) {
        return true;
    }
    if (s->o.multi_buffer == AF_XDP_ON) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "multi-buffer=on, but the kernel refused XDP_USE_SG on %s "
                    "(%s): multi-buffer AF_XDP sockets need Linux 6.6; "
                    "upgrade, or use multi-buffer=auto or off",
                    s->o.ifname, g_strerror(refused));
        return false;
    }
    why = g_strdup_printf("the kernel refused XDP_USE_SG on %s (%s)",
                          s->o.ifname, g_strerror(refused));
    report_single_buffer(s, why);
    return true;
}

/* Queue @i's socket into the XSK map its program redirects to: the
 * pinned one of map-path, or ours. */
static bool add_to_map(AfXdpState *s, int pinned_fd, unsigned i, XskQueue *q,
                       GError **errp)
{
    if (pinned_fd >= 0) {
        return xsk_map_insert(pinned_fd, s->o.map_path,
                              s->o.map_start_index + i, xsk_queue_fd(q),
                              errp);
    }
    if (s->redirect &&
        !xdp_redirect_add_socket(s->redirect, s->o.start_queue + i,
                                 xsk_queue_fd(q))) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "cannot add the socket of queue %u to the XSK map: %s",
                    s->o.start_queue + i, g_strerror(errno));
        return false;
    }
    return true;
}

static bool open_queue_sockets(AfXdpState *s, int pinned_fd, GError **errp)
{
    int err = 0;

    for (unsigned i = 0; i < s->o.queues; i++) {
        XskQueue *q = open_queue(s, i, &err, errp);

        qemu_rwlock_wrlock(&s->queues_lock);
        __atomic_store_n(&s->queues[i], q, __ATOMIC_RELEASE);
        qemu_rwlock_unlock(&s->queues_lock);
        if (!q) {
            explain_open_error(s, err, errp);
            return false;
        }
        if (!check_multi_buffer(s, q, errp) ||
            !add_to_map(s, pinned_fd, i, q, errp)) {
            return false;
        }
    }
    return true;
}

/* The program (unless inhibit=on), then a socket per queue.  The pinned
 * map of map-path is held only while the sockets go in: the kernel takes
 * each out of it when it closes. */
static bool open_queues(AfXdpState *s, GError **errp)
{
    int pinned_fd = -1;
    bool ok;

    if (s->o.map_path) {
        pinned_fd = xsk_map_open_pinned(s->o.map_path, s->o.map_start_index,
                                        s->o.queues, errp);
        if (pinned_fd < 0) {
            return false;
        }
    }
    if (s->o.inhibit) {
        s->mode = "external";
        s->rx_metadata = s->o.rx_metadata ? "external" : "off";
    } else if (!attach_program(s, errp)) {
        return false;
    }
    ok = open_queue_sockets(s, pinned_fd, errp);
    if (pinned_fd >= 0) {
        close(pinned_fd);
    }
    if (!ok) {
        close_queues(s);
    }
    return ok;
}

/* Once the machine has migrated away its guest is gone for good: frames
 * still arriving are taken from the rings by the main thread and counted
 * as the NIC drops them (xsk_queue_drain_parked()).  The run state parks
 * the I/O threads in every state but running, and announces each change
 * with them parked. */
static void drain_if_migrated(AfXdpState *s)
{
    bool left = runstate_get() == RUN_STATE_POSTMIGRATE;

    for (unsigned i = 0; i < s->o.queues; i++) {
        if (s->queues[i]) {
            xsk_queue_drain_parked(s->queues[i], left);
        }
    }
}

static void runstate_changed(RunstateEvent event, const char *reason,
                             void *opaque)
{
    (void)reason;
    if (event == RUNSTATE_EVENT_CHANGED) {
        drain_if_migrated(opaque);
    }
}

static void start_queues(AfXdpState *s)
{
    for (unsigned i = 0; i < s->o.queues; i++) {
        xsk_queue_start(s->queues[i]);
    }
    drain_if_migrated(s);
}

/* The interface's MTU, which bounds what the guest may send. */

static void read_mtu(AfXdpState *s)
{
    unsigned mtu = xsk_interface_mtu(s->o.ifname);

    if (mtu) {
        __atomic_store_n(&s->mtu, mtu, __ATOMIC_RELAXED);
    }
}

/* The longest frame the interface carries: its MTU, the Ethernet header,
 * and the tag of a frame that has one (802.1Q or 802.1ad).  An MTU that
 * could not be read (0) bounds nothing: the kernel still decides. */
static size_t frame_limit(AfXdpState *s, const uint8_t *data, size_t len)
{
    uint32_t mtu = __atomic_load_n(&s->mtu, __ATOMIC_RELAXED);
    uint16_t type = len >= ETH_HEADER_BYTES ? data[12] << 8 | data[13] : 0;

    if (mtu == 0) {
        return SIZE_MAX;
    }
    return mtu + ETH_HEADER_BYTES +
           (type == 0x8100 || type == 0x88a8 ? VLAN_TAG_BYTES : 0);
}

/* The interface's life. */

static void report_link(AfXdpState *s, const char *state, const char *fmt,
                        ...) G_GNUC_PRINTF(3, 4);

static void report_link(AfXdpState *s, const char *state, const char *fmt,
                        ...)
{
    g_autofree char *detail = NULL;
    va_list ap;

    va_start(ap, fmt);
    detail = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    s->link_changes++;
    trace_af_xdp_link(s->id, state);
    fprintf(stderr, "illan: af-xdp netdev '%s': %s\n", s->id, detail);
    net_backend_link_event(s->nc, state, detail);
}

static void interface_removed(AfXdpState *s)
{
    close_queues(s);
    /* The sockets' fill rings died with them. */
    net_backend_rx_lent_lost(s->nc);
    s->link = AF_XDP_LINK_REMOVED;
    net_client_set_link(s->nc, false);
    report_link(s, "removed", "%s was removed; its AF_XDP sockets are "
                "closed until an interface of that name returns",
                s->o.ifname);
}

static void interface_returned(AfXdpState *s, unsigned ifindex)
{
    g_autoptr(GError) err = NULL;

    if (s->o.n_sock_fds) {
        report_link(s, "failed", "%s is back, but the sockets passed with "
                    "sock-fds died with the old one: restart with new ones",
                    s->o.ifname);
        return;
    }
    s->ifindex = ifindex;
    if ((!s->o.inhibit && !check_attached_program(s, &err)) ||
        !open_queues(s, &err)) {
        report_link(s, "failed", "%s is back but cannot be reopened: %s "
                    "(retried when it changes again)", s->o.ifname,
                    err->message);
        return;
    }
    start_queues(s);
    if (s->lend_ram) {
        for (unsigned i = 0; i < s->o.queues; i++) {
            xsk_queue_lendable(s->queues[i], s->lend_ram);
        }
    }
    s->reopens++;
    s->link = link_is_up(s->o.ifname) ? AF_XDP_LINK_UP : AF_XDP_LINK_DOWN;
    net_client_set_link(s->nc, s->link == AF_XDP_LINK_UP);
    report_link(s, "reopened", "%s is back (ifindex %u), %s mode, %u "
                "queue(s) reopened; link %s", s->o.ifname, ifindex, s->mode,
                s->o.queues, s->link == AF_XDP_LINK_UP ? "up" : "down");
}

static void link_change(AfXdpState *s, const LinkEvent *ev)
{
    bool ours = s->link == AF_XDP_LINK_REMOVED
        ? ev->ifname && !strcmp(ev->ifname, s->o.ifname) && !ev->removed
        : ev->ifindex == s->ifindex;

    if (!ours) {
        return;
    }
    if (!ev->removed) {
        read_mtu(s);
    }
    if (s->link == AF_XDP_LINK_REMOVED) {
        interface_returned(s, ev->ifindex);
    } else if (ev->removed) {
        interface_removed(s);
    } else if (ev->up != (s->link == AF_XDP_LINK_UP)) {
        s->link = ev->up ? AF_XDP_LINK_UP : AF_XDP_LINK_DOWN;
        net_client_set_link(s->nc, ev->up);
        report_link(s, ev->up ? "up" : "down", "link %s is %s", s->o.ifname,
                    ev->up ? "up again" : "down");
    }
}

/* rtnetlink dropped events: what they would have said is read from the
 * interface as it is now and fed through the same path, so that a missed
 * down, removal or re-creation is not missed for good. */
static void link_overrun(AfXdpState *s)
{
    unsigned ifindex = if_nametoindex(s->o.ifname);

    s->link_overruns++;
    fprintf(stderr, "illan: af-xdp netdev '%s': rtnetlink dropped link "
            "events; the state of %s is read again\n", s->id, s->o.ifname);
    if (s->link != AF_XDP_LINK_REMOVED && ifindex != s->ifindex) {
        link_change(s, &(LinkEvent){ .removed = true,
                                     .ifindex = s->ifindex });
    }
    if (ifindex) {
        link_change(s, &(LinkEvent){ .ifindex = ifindex,
                                     .ifname = s->o.ifname,
                                     .up = link_is_up(s->o.ifname) });
    }
}

static void link_event(void *opaque, const LinkEvent *ev)
{
    if (ev->overrun) {
        link_overrun(opaque);
    } else {
        link_change(opaque, ev);
    }
}

/* Backend ops. */

/* No lock: the queue cannot be closed under a send (see queues_lock). */
static bool af_xdp_send(void *opaque, const uint8_t *data, size_t len)
{
    AfXdpState *s = opaque;
    XskQueue *q;

    if (len > frame_limit(s, data, len)) {
        __atomic_fetch_add(&s->tx_over_mtu, 1, __ATOMIC_RELAXED);
        return false;
    }
    q = __atomic_load_n(&s->queues[0], __ATOMIC_ACQUIRE);
    return q && xsk_queue_send(q, data, len);
}

/* Transmit zero copy, on the queue that sends (see af_xdp_send). */
static bool af_xdp_send_in_place(void *opaque, const uint8_t *data,
                                 size_t len)
{
    AfXdpState *s = opaque;
    XskQueue *q;

    /* The copy path counts what the interface cannot carry. */
    if (len > frame_limit(s, data, len)) {
        return false;
    }
    q = __atomic_load_n(&s->queues[0], __ATOMIC_ACQUIRE);
    return q && xsk_queue_send_in_place(q, data, len);
}

static void af_xdp_rx_ready(void *opaque)
{
    AfXdpState *s = opaque;

    qemu_rwlock_rdlock(&s->queues_lock);
    for (unsigned i = 0; i < s->o.queues; i++) {
        if (s->queues[i]) {
            xsk_queue_rx_ready(s->queues[i]);
        }
    }
    qemu_rwlock_unlock(&s->queues_lock);
}

static void af_xdp_rx_lendable(void *opaque, GuestRam *ram)
{
    AfXdpState *s = opaque;
    bool leaving = !ram && runstate_get() == RUN_STATE_FINISH_MIGRATE;

    s->lend_ram = ram;

    qemu_rwlock_rdlock(&s->queues_lock);
    for (unsigned i = 0; i < s->o.queues; i++) {
        if (!s->queues[i]) {
            continue;
        }
        if (leaving) {
            xsk_queue_unlend_leaving(s->queues[i]);
        } else {
            xsk_queue_lendable(s->queues[i], ram);
        }
    }
    qemu_rwlock_unlock(&s->queues_lock);
}

static void af_xdp_rx_reclaim(void *opaque)
{
    AfXdpState *s = opaque;

    qemu_rwlock_rdlock(&s->queues_lock);
    for (unsigned i = 0; i < s->o.queues; i++) {
        if (s->queues[i]) {
            xsk_queue_reclaim(s->queues[i]);
        }
    }
    qemu_rwlock_unlock(&s->queues_lock);
}

static void af_xdp_free(void *opaque)
{
    AfXdpState *s = opaque;

    runstate_remove_notifier(runstate_changed, s);
    link_watch_free(s->watch);
    close_queues(s);
    for (unsigned i = 0; s->sock_fds_taken && i < s->o.n_sock_fds; i++) {
        close(s->o.sock_fds[i]);
    }
    qemu_rwlock_destroy(&s->queues_lock);
    g_free(s->o.ifname);
    g_free(s->o.map_path);
    g_free(s->id);
    g_free(s);
}

static const char *link_name(AfXdpLink link)
{
    return link == AF_XDP_LINK_UP ? "up"
         : link == AF_XDP_LINK_DOWN ? "down" : "removed";
}

static GVariant *copied_variant(const XskQueueStats *st)
{
    GVariantDict d;

    g_variant_dict_init(&d, NULL);
    for (unsigned i = 0; i < XSK_COPY__MAX; i++) {
        g_variant_dict_insert(&d, xsk_copy_reason_name(i), "t",
                              (guint64)st->rx_copied[i]);
    }
    return g_variant_dict_end(&d);
}

static const char *policy_name(int policy)
{
    switch (policy) {
    case SCHED_OTHER:
        return "other";
    case SCHED_BATCH:
        return "batch";
    case SCHED_IDLE:
        return "idle";
    case SCHED_FIFO:
        return "fifo";
    case SCHED_RR:
        return "rr";
    default:
        return policy < 0 ? "not-started" : "other-policy";
    }
}

static GVariant *queue_stats(AfXdpState *s, XskQueue *q)
{
    GVariantDict d;
    XskQueueStats st;

    xsk_queue_get_stats(q, &st);
    g_variant_dict_init(&d, NULL);
#define PUT(key, field) \
    g_variant_dict_insert(&d, key, "t", (guint64)st.field)
    g_variant_dict_insert(&d, "queue", "u", xsk_queue_id(q));
    PUT("rx-frames", rx_frames);
    PUT("rx-batches", rx_batches);
    PUT("rx-wakeups", rx_wakeups);
    PUT("rx-chains", rx_chains);
    PUT("rx-too-long", rx_too_long);
    PUT("rx-truncated", rx_truncated);
    PUT("sleeps", sleeps);
    PUT("load-sleeps", load_sleeps);
    PUT("tx-frames", tx_frames);
    PUT("tx-kicks", tx_kicks);
    PUT("tx-kick-errors", tx_kick_errors);
    PUT("tx-ring-full", tx_ring_full);
    PUT("tx-oversize", tx_oversize);
    PUT("tx-no-socket", tx_no_socket);
    g_variant_dict_insert(&d, "failed", "b", st.failed);
    g_variant_dict_insert(&d, "io-sched", "s", policy_name(st.io_policy));
    PUT("tx-chains", tx_chains);
    PUT("tx-in-place", tx_in_place);
    PUT("tx-in-place-waits", tx_in_place_waits);
    PUT("tx-in-place-moved", tx_in_place_moved);
    PUT("tx-in-place-late", tx_in_place_late);
    PUT("rx-meta-frames", rx_meta_frames);
    PUT("rx-meta-foreign", rx_meta_foreign);
    PUT("rx-meta-timestamp", rx_meta_timestamp);
    PUT("rx-meta-flags", rx_meta_flags);
    PUT("rx-meta-hash", rx_meta_hash);
    g_variant_dict_insert(&d, "rx-latency", "@a{sv}",
                          latency_histogram_variant(&st.rx_latency));
    PUT("rx_dropped", xdp_rx_dropped);
    PUT("rx_invalid_descs", xdp_rx_invalid_descs);
    PUT("rx_ring_full", xdp_rx_ring_full);
    PUT("rx_fill_ring_empty_descs", xdp_rx_fill_ring_empty_descs);
    PUT("tx_invalid_descs", xdp_tx_invalid_descs);
    PUT("tx_ring_empty_descs", xdp_tx_ring_empty_descs);
    g_variant_dict_insert(&d, "guest-umem-active", "b", st.lending);
    g_variant_dict_insert(&d, "rx-reclaim-drops", "t",
                          (guint64)st.reclaim_dropped +
                          (s->redirect ? xdp_redirect_gap_drops(
                               s->redirect, xsk_queue_id(q)) : 0));
    g_variant_dict_insert(&d, "rx-host-frames", "u", st.host_frames);
    PUT("rx-lent-frames", rx_lent_frames);
    PUT("guest-umem-switches", lend_switches);
    PUT("guest-umem-reclaims", lend_reclaims);
    if (st.lend_error) {
        g_variant_dict_insert(&d, "guest-umem-error", "s",
                              g_strerror(st.lend_error));
    }
    g_variant_dict_insert(&d, "rx-copied", "@a{sv}", copied_variant(&st));
#undef PUT
    return g_variant_dict_end(&d);
}

static GVariant *af_xdp_query(void *opaque)
{
    AfXdpState *s = opaque;
    GVariantBuilder queues;
    GVariantDict d;

    g_variant_builder_init(&queues, G_VARIANT_TYPE("aa{sv}"));
    for (unsigned i = 0; i < s->o.queues && s->queues[i]; i++) {
        g_variant_builder_add_value(&queues, queue_stats(s, s->queues[i]));
    }
    g_variant_dict_init(&d, NULL);
    g_variant_dict_insert(&d, "ifname", "s", s->o.ifname);
    g_variant_dict_insert(&d, "ifindex", "u", s->ifindex);
    g_variant_dict_insert(&d, "mode", "s", s->mode);
    g_variant_dict_insert(&d, "zero-copy", "b",
                          s->queues[0] && xsk_queue_zero_copy(s->queues[0]));
    g_variant_dict_insert(&d, "multi-buffer", "b", s->multi_buffer);
    g_variant_dict_insert(&d, "rx-metadata", "s", s->rx_metadata);
    g_variant_dict_insert(&d, "mtu", "u",
                          __atomic_load_n(&s->mtu, __ATOMIC_RELAXED));
    g_variant_dict_insert(&d, "tx-over-mtu", "t",
                          (guint64)__atomic_load_n(&s->tx_over_mtu,
                                                   __ATOMIC_RELAXED));
    g_variant_dict_insert(&d, "link", "s", link_name(s->link));
    g_variant_dict_insert(&d, "link-changes", "t", (guint64)s->link_changes);
    g_variant_dict_insert(&d, "reopens", "t", (guint64)s->reopens);
    g_variant_dict_insert(&d, "link-overruns", "t",
                          (guint64)s->link_overruns);
    g_variant_dict_insert(&d, "queues", "@aa{sv}",
                          g_variant_builder_end(&queues));
    return g_variant_dict_end(&d);
}

static const NetBackendOps af_xdp_ops = {
    .send = af_xdp_send,
    .rx_ready = af_xdp_rx_ready,
    .rx_lendable = af_xdp_rx_lendable,
    .rx_reclaim = af_xdp_rx_reclaim,
    .cleanup = af_xdp_free,
    .query = af_xdp_query,
};

/* With tx-in-place=on, the same and send_in_place: the NIC asks before
 * it copies.  Filled in at registration. */
static NetBackendOps af_xdp_ops_in_place;

/* Creation. */

static bool af_xdp_checks(AfXdpState *s, GError **errp)
{
    XskQueueConfig sizes = { .rx_ring_size = s->o.rx_ring_size,
                             .tx_ring_size = s->o.tx_ring_size };
    HostCaps caps;

    read_caps(&caps);
    s->ifindex = if_nametoindex(s->o.ifname);
    if (!s->ifindex) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "interface '%s' not found (ip link show lists them)",
                    s->o.ifname);
        return false;
    }
    return (!s->o.queues_all || count_all_queues(&s->o, errp)) &&
           check_queue_count(&s->o, errp) &&
           check_queues(&s->o, errp) &&
           check_capabilities(&s->o, &caps, errp) &&
           check_memlock(&s->o, &caps, xsk_queue_umem_size(&sizes), errp) &&
           (s->o.inhibit || check_attached_program(s, errp));
}

/* guest-umem=on needs frames that fit a lent 2048-byte buffer. */
static bool check_guest_umem_mtu(AfXdpState *s, GError **errp)
{
    uint32_t mtu = __atomic_load_n(&s->mtu, __ATOMIC_RELAXED);

    if (s->o.guest_umem != AF_XDP_ON || mtu <= XSK_LEND_MTU_MAX) {
        return true;
    }
    g_set_error(errp, ILLAN_ERROR, 0,
                "guest-umem=on, but the MTU of %s (%u) makes frames longer "
                "than the %d bytes the kernel may write into a lent guest "
                "buffer; lower the MTU to %d or use guest-umem=auto",
                s->o.ifname, mtu, NET_LEND_DATA_ROOM, XSK_LEND_MTU_MAX);
    return false;
}

/*
 * The passed sockets become the netdev's, to close with it, once every
 * other check has passed: only sockets illan inherited and nothing took
 * (not its own, not another netdev's), so that a mistaken sock-fds
 * neither closes a socket in use nor takes one a corrected netdev_add
 * could still use.
 */
static bool take_sock_fds(AfXdpState *s, GError **errp)
{
    for (unsigned i = 0; i < s->o.n_sock_fds; i++) {
        const char *why = passed_fds_xsk_refusal(s->o.sock_fds[i]);

        if (why) {
            g_set_error(errp, ILLAN_ERROR, 0, "sock-fds: descriptor %d was "
                        "not handed to illan for this: %s (only an AF_XDP "
                        "socket inherited at start and not taken by another "
                        "netdev is accepted)", s->o.sock_fds[i], why);
            return false;
        }
    }
    for (unsigned i = 0; i < s->o.n_sock_fds; i++) {
        passed_fds_take(s->o.sock_fds[i]);
    }
    s->sock_fds_taken = true;
    return true;
}

static bool af_xdp_create(const char *id, const QemuOpts *opts,
                          GError **errp)
{
    AfXdpState *s = g_new0(AfXdpState, 1);
    bool ok;

    qemu_rwlock_init(&s->queues_lock);
    s->id = g_strdup(id);
    s->rx_metadata = "off";
    ok = parse_options(opts, &s->o, errp) && af_xdp_checks(s, errp) &&
         take_sock_fds(s, errp) &&
         (s->watch = link_watch_new(link_event, s, errp)) != NULL;
    /* The queues deliver to the client, so it exists before they do. */
    if (ok) {
        read_mtu(s);
        ok = check_guest_umem_mtu(s, errp);
    }
    if (ok) {
        s->nc = net_backend_new(id, s->o.tx_in_place ? &af_xdp_ops_in_place
                                                     : &af_xdp_ops, s);
        net_client_set_info_str(s->nc, "af-xdp to %s", s->o.ifname);
        ok = open_queues(s, errp);
    }
    if (!ok) {
        if (s->nc) {
            net_netdev_del(id, NULL);
        } else {
            af_xdp_free(s);
        }
        return false;
    }
    s->link = link_is_up(s->o.ifname) ? AF_XDP_LINK_UP : AF_XDP_LINK_DOWN;
    net_client_set_link(s->nc, s->link == AF_XDP_LINK_UP);
    start_queues(s);
    runstate_add_notifier(runstate_changed, s);
    return true;
}

static bool af_xdp_check(const QemuOpts *opts, GError **errp)
{
    AfXdpOptions o;
    bool ok = parse_options(opts, &o, errp);

    g_free(o.ifname);
    g_free(o.map_path);
    return ok;
}

static const NetdevType af_xdp_type = {
    .name = "af-xdp",
    .desc = "AF_XDP sockets on a host interface, an I/O thread per queue",
    .help =
        "ifname=NAME        host interface (required)\n"
        "mode=native|skb    XDP attach mode (default: native, else skb)\n"
        "force-copy=on|off  never use zero-copy (default off)\n"
        "queues=N|all       sockets on N queues, or on every queue from "
        "start-queue\n"
        "                   (default 1)\n"
        "start-queue=M      first queue (default 0)\n"
        "inhibit=on|off     load no XDP program; needs sock-fds or map-path\n"
        "sock-fds=A[:B...]  AF_XDP sockets made by a privileged helper\n"
        "map-path=PATH      an XSK map pinned by a privileged helper, for "
        "sockets\n"
        "                   of illan's own\n"
        "map-start-index=K  its slot for the first queue's socket "
        "(default 0)\n"
        "spin=on|off        I/O threads spin instead of poll(2) (default off)\n"
        "io-sched=batch|other  batch: I/O threads move from SCHED_OTHER to "
        "SCHED_BATCH:\n"
        "                   their wake-ups preempt no vCPU on their CPU, "
        "for more\n"
        "                   frames a second but a later frame now and then"
        " (default\n"
        "                   other: they keep the policy illan has)\n"
        "busy-poll=USECS    SO_PREFER_BUSY_POLL with SO_BUSY_POLL=USECS\n"
        "batch=N            frames per batch, 1-64 (default 64)\n"
        "rx-ring-size=N     rx and fill ring entries (default 2048)\n"
        "tx-ring-size=N     tx and completion ring entries (default 512)\n"
        "multi-buffer=on|off|auto  frames over 3840 bytes as chains of "
        "UMEM frames\n"
        "                   (default auto: if the kernel can)\n"
        "rx-metadata=on|off the program writes the receive timestamp and "
        "hash in\n"
        "                   front of each frame (default on; with inhibit=on, "
        "off;\n"
        "                   on a queue lending guest buffers, off)\n"
        "guest-umem=on|off|auto  guest RAM is the UMEM: the kernel writes "
        "frames into\n"
        "                   the guest's buffers (default auto: where it can,"
        " then no\n"
        "                   metadata unless rx-metadata=on is given; guest RAM"
        " is\n"
        "                   pinned once per queue; off: frames are copied)\n"
        "tx-in-place=on|off a frame the guest sends in one buffer goes out"
        " from guest\n"
        "                   RAM while it is the UMEM, each in its own"
        " sendto(2)\n"
        "                   (default off: slower than the copy on veth)\n",
    .create = af_xdp_create,
    .check = af_xdp_check,
};

/* libxdp and libbpf narrate their fallbacks on stderr; the netdev reports
 * what matters in its own words. */
static void af_xdp_register(void)
{
    libxdp_set_print(NULL);
    libbpf_set_print(NULL);
    af_xdp_ops_in_place = af_xdp_ops;
    af_xdp_ops_in_place.send_in_place = af_xdp_send_in_place;
    netdev_type_register(&af_xdp_type);
}
illan_init(af_xdp_register)
