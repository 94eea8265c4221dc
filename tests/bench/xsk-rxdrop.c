/*
 * xsk-rxdrop: how fast one AF_XDP socket receives on this machine, the
 * limit the benchmarks hold illan against.  It is set up as the af-xdp
 * netdev is with its defaults, so that the difference is illan's own work:
 * our redirect program (net/xdp-prog.c), one socket on queue 0, 2048-entry
 * rings, as many 4 KiB receive frames (all in the fill ring when idle),
 * need-wakeup, batches of 64.  Every frame goes straight back to the fill
 * ring.
 *
 * With --fwd macswap it is the limit of a forwarding loop instead: each
 * frame goes out again through the same socket with its MACs swapped
 * (same UMEM frame, no copy), and back to the fill ring once the kernel
 * completes it; the benchmark counts what arrives at the generator's end,
 * as it does for illan's macswap.
 *
 * It counts for --duration seconds from the first frame and prints,
 * key=value: "ready" once bound, "first" at the first frame and "done"
 * with the frames, bytes, rate and XDP_STATISTICS of that window (frames
 * received; with macswap also tx_frames, those sent).
 */
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <xdp/xsk.h>

#include <glib.h>

#include "net/xdp-prog.h"

#define RING 2048
#define FRAME 4096
#define BATCH 64
/* Without traffic by then, the generator is not coming. */
#define FIRST_FRAME_TIMEOUT_S 10
#define POLL_TIMEOUT_MS 100

typedef struct Options {
    char *ifname, *mode, *wait, *fwd;
    int secs, cpu;
} Options;

typedef struct Rx {
    int fd;
    bool spin, macswap;
    void *area;
    struct xsk_umem *umem;
    struct xsk_socket *xsk;
    struct xsk_ring_prod fill;
    struct xsk_ring_cons comp;
    struct xsk_ring_cons rx;
    struct xsk_ring_prod tx;
    XdpRedirect *prog;
    uint64_t frames, bytes, tx_frames;
} Rx;

static _Noreturn void die(const char *what, int err)
{
    fprintf(stderr, "xsk-rxdrop: %s: %s\n", what, g_strerror(err));
    exit(1);
}

static void open_socket(Rx *r, const Options *o)
{
    struct xsk_umem_config ucfg = {
        .fill_size = RING, .comp_size = RING, .frame_size = FRAME,
    };
    struct xsk_socket_config scfg = {
        .rx_size = RING,
        .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
        .bind_flags = XDP_USE_NEED_WAKEUP,
    };
    int err;

    r->area = mmap(NULL, (size_t)RING * FRAME, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (r->area == MAP_FAILED) {
        die("UMEM", errno);
    }
    err = xsk_umem__create(&r->umem, r->area, (size_t)RING * FRAME,
                           &r->fill, &r->comp, &ucfg);
    if (err) {
        die("xsk_umem__create", -err);
    }
    if (!strcmp(o->fwd, "macswap")) {
        scfg.tx_size = RING;
    }
    err = xsk_socket__create(&r->xsk, o->ifname, 0, r->umem, &r->rx,
                             scfg.tx_size ? &r->tx : NULL, &scfg);
    if (err) {
        die("xsk_socket__create", -err);
    }
    r->fd = xsk_socket__fd(r->xsk);
}

static void fill_all(Rx *r)
{
    uint32_t idx = 0;

    xsk_ring_prod__reserve(&r->fill, RING, &idx);
    for (uint32_t i = 0; i < RING; i++) {
        *xsk_ring_prod__fill_addr(&r->fill, idx + i) = (uint64_t)i * FRAME;
    }
    xsk_ring_prod__submit(&r->fill, RING);
}

static void setup(Rx *r, const Options *o)
{
    unsigned ifindex = if_nametoindex(o->ifname);
    uint32_t mode = !strcmp(o->mode, "skb") ? XDP_FLAGS_SKB_MODE
                                            : XDP_FLAGS_DRV_MODE;

    if (!ifindex) {
        die(o->ifname, errno);
    }
    r->prog = xdp_redirect_attach(ifindex, mode);
    if (!r->prog) {
        die("attaching the redirect program", errno);
    }
    open_socket(r, o);
    if (!xdp_redirect_add_socket(r->prog, 0, r->fd)) {
        die("XSK map", errno);
    }
    fill_all(r);
    r->spin = !strcmp(o->wait, "spin");
    r->macswap = !strcmp(o->fwd, "macswap");
}

/* Completed transmits go back to the fill ring, as many as it has room
 * for; the rest wait in the completion ring. */
static void recycle_completions(Rx *r)
{
    uint32_t idx_comp = 0, idx_fill = 0;
    uint32_t n = xsk_ring_cons__peek(&r->comp, RING, &idx_comp);

    n = MIN(n, xsk_prod_nb_free(&r->fill, n));
    if (!n || xsk_ring_prod__reserve(&r->fill, n, &idx_fill) != n) {
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        *xsk_ring_prod__fill_addr(&r->fill, idx_fill + i) =
            *xsk_ring_cons__comp_addr(&r->comp, idx_comp + i);
    }
    xsk_ring_prod__submit(&r->fill, n);
    xsk_ring_cons__release(&r->comp, n);
}

static void swap_macs(uint8_t *frame)
{
    uint8_t tmp[6];

    memcpy(tmp, frame, 6);
    memcpy(frame, frame + 6, 6);
    memcpy(frame + 6, tmp, 6);
}

/* One batch from the rx ring to the tx ring, MACs swapped in place; how
 * many frames. */
static uint32_t forward_batch(Rx *r)
{
    uint32_t idx_rx = 0, idx_tx = 0, n;

    recycle_completions(r);
    n = xsk_ring_cons__peek(&r->rx, BATCH, &idx_rx);
    n = n ? xsk_ring_prod__reserve(&r->tx, n, &idx_tx) : 0;
    if (!n) {
        return 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct xdp_desc *d = xsk_ring_cons__rx_desc(&r->rx, idx_rx + i);
        struct xdp_desc *t = xsk_ring_prod__tx_desc(&r->tx, idx_tx + i);

        swap_macs(xsk_umem__get_data(r->area, d->addr));
        r->bytes += d->len;
        *t = *d;
    }
    xsk_ring_prod__submit(&r->tx, n);
    xsk_ring_cons__release(&r->rx, n);
    if (xsk_ring_prod__needs_wakeup(&r->tx)) {
        sendto(r->fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
    }
    r->frames += n;
    r->tx_frames += n;
    return n;
}

/* One batch from the rx ring back to the fill ring; how many frames. */
static uint32_t take_batch(Rx *r)
{
    uint32_t idx_rx = 0, idx_fill = 0;
    uint32_t n;

    if (r->macswap) {
        return forward_batch(r);
    }
    n = xsk_ring_cons__peek(&r->rx, BATCH, &idx_rx);

    if (!n) {
        return 0;
    }
    /*
     * Every frame outside the fill ring is in this batch, so there is room
     * once the kernel says so: it fills the rx ring before it publishes
     * what it took from the fill ring, and a consumer on another CPU sees
     * that gap several times a second.
     */
    while (xsk_ring_prod__reserve(&r->fill, n, &idx_fill) != n) {
        ;
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct xdp_desc *d = xsk_ring_cons__rx_desc(&r->rx, idx_rx + i);

        r->bytes += d->len;
        *xsk_ring_prod__fill_addr(&r->fill, idx_fill + i) =
            d->addr & ~(uint64_t)(FRAME - 1);
    }
    xsk_ring_prod__submit(&r->fill, n);
    xsk_ring_cons__release(&r->rx, n);
    r->frames += n;
    return n;
}

static void idle(Rx *r)
{
    struct pollfd p = { .fd = r->fd, .events = POLLIN };

    if (r->macswap && xsk_prod_nb_free(&r->tx, RING) < RING) {
        /* Frames wait for the kernel to send them. */
        sendto(r->fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
    } else if (!r->spin) {
        poll(&p, 1, POLL_TIMEOUT_MS);
    } else if (xsk_ring_prod__needs_wakeup(&r->fill)) {
        recvfrom(r->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
    }
}

static double since(const struct timespec *t0)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - t0->tv_sec) + (now.tv_nsec - t0->tv_nsec) / 1e9;
}

static struct xdp_statistics xdp_stats(const Rx *r)
{
    struct xdp_statistics s = { 0 };
    socklen_t len = sizeof(s);

    getsockopt(r->fd, SOL_XDP, XDP_STATISTICS, &s, &len);
    return s;
}

static bool zero_copy(const Rx *r)
{
    struct xdp_options opts = { 0 };
    socklen_t len = sizeof(opts);

    return !getsockopt(r->fd, SOL_XDP, XDP_OPTIONS, &opts, &len) &&
           (opts.flags & XDP_OPTIONS_ZEROCOPY);
}

static void wait_first(Rx *r)
{
    struct timespec t0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!take_batch(r)) {
        if (since(&t0) > FIRST_FRAME_TIMEOUT_S) {
            fprintf(stderr, "xsk-rxdrop: no frame in %d s\n",
                    FIRST_FRAME_TIMEOUT_S);
            exit(1);
        }
        idle(r);
    }
}

static void receive(Rx *r, int secs)
{
    struct xdp_statistics s0, s1;
    struct timespec t0;
    double t;

    wait_first(r);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    s0 = xdp_stats(r);
    printf("first\n");
    while ((t = since(&t0)) < secs) {
        if (!take_batch(r)) {
            idle(r);
        }
    }
    s1 = xdp_stats(r);
    printf("done secs=%.3f frames=%llu bytes=%llu mpps=%.3f gbps=%.3f "
           "rx_dropped=%llu rx_invalid_descs=%llu rx_ring_full=%llu "
           "rx_fill_ring_empty_descs=%llu tx_frames=%llu\n", t,
           (unsigned long long)r->frames, (unsigned long long)r->bytes,
           r->frames / t / 1e6, r->bytes * 8 / t / 1e9,
           (unsigned long long)(s1.rx_dropped - s0.rx_dropped),
           (unsigned long long)(s1.rx_invalid_descs - s0.rx_invalid_descs),
           (unsigned long long)(s1.rx_ring_full - s0.rx_ring_full),
           (unsigned long long)(s1.rx_fill_ring_empty_descs -
                                s0.rx_fill_ring_empty_descs),
           (unsigned long long)r->tx_frames);
}

static void teardown(Rx *r)
{
    xsk_socket__delete(r->xsk);
    xsk_umem__delete(r->umem);
    xdp_redirect_detach(r->prog);
    munmap(r->area, (size_t)RING * FRAME);
}

static void pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set)) {
        die("pinning to the CPU", errno);
    }
}

static bool parse_args(int argc, char **argv, Options *o)
{
    GOptionEntry entries[] = {
        { "ifname", 'i', 0, G_OPTION_ARG_STRING, &o->ifname,
          "receive on queue 0 of IF (required)", "IF" },
        { "mode", 'm', 0, G_OPTION_ARG_STRING, &o->mode,
          "XDP mode: native (default) or skb", "MODE" },
        { "wait", 'w', 0, G_OPTION_ARG_STRING, &o->wait,
          "when the ring is empty: poll (default) or spin", "WAIT" },
        { "fwd", 'f', 0, G_OPTION_ARG_STRING, &o->fwd,
          "drop (default) or macswap: send each frame back", "FWD" },
        { "duration", 't', 0, G_OPTION_ARG_INT, &o->secs,
          "seconds from the first frame, default 10", "SECS" },
        { "cpu", 'c', 0, G_OPTION_ARG_INT, &o->cpu,
          "CPU to run on, default 1", "CPU" },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- AF_XDP rx-drop receiver");
    g_autoptr(GError) err = NULL;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        fprintf(stderr, "xsk-rxdrop: %s\n", err->message);
        return false;
    }
    if (!o->ifname || o->secs <= 0 ||
        (strcmp(o->mode, "native") && strcmp(o->mode, "skb")) ||
        (strcmp(o->wait, "poll") && strcmp(o->wait, "spin")) ||
        (strcmp(o->fwd, "drop") && strcmp(o->fwd, "macswap"))) {
        fprintf(stderr, "xsk-rxdrop: needs --ifname, a positive --duration, "
                "--mode native|skb, --wait poll|spin and --fwd "
                "drop|macswap\n");
        return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    Options o = { .mode = "native", .wait = "poll", .fwd = "drop",
                  .secs = 10, .cpu = 1 };
    Rx r = { 0 };

    if (!parse_args(argc, argv, &o)) {
        return 2;
    }
    pin(o.cpu);
    setvbuf(stdout, NULL, _IOLBF, 0);
    setup(&r, &o);
    printf("ready ifname=%s mode=%s wait=%s fwd=%s zerocopy=%d\n", o.ifname,
           o.mode, o.wait, o.fwd, zero_copy(&r));
    receive(&r, o.secs);
    teardown(&r);
    return 0;
}
