/*
 * xsk-rxdrop: how fast one AF_XDP socket receives on this machine, the
 * limit the benchmarks hold illan against.  It is set up as the af-xdp
 * netdev is with its defaults, so that the difference is illan's own work:
 * our redirect program (net/xdp-prog.c), one socket on queue 0, 2048-entry
 * rings, as many 4 KiB receive frames (all in the fill ring when idle),
 * need-wakeup, batches of 64.  Every frame goes straight back to the fill
 * ring.
 *
 * With --fwd copy each frame is also copied out of the UMEM into the
 * next of COPY_SLOTS buffers of COPY_SLOT bytes, as a guest's buffer pool
 * takes them: the least work any device model does with a frame (the
 * plain receiver never reads the frame's bytes, which the kernel wrote on
 * another CPU).  It is the floor for illan's I/O thread when it copies.
 *
 * With --fwd sum each frame is read where the kernel wrote it, summed by
 * the device's own checksum code (llan_csum), and copied nowhere: the
 * floor for illan's I/O thread when zero copy leaves a frame in the
 * guest's buffer and the device verifies its checksum.
 *
 * With --fwd macswap it is the limit of a forwarding loop instead: each
 * frame goes out again through the same socket with its MACs swapped
 * (same UMEM frame, no copy), and back to the fill ring once the kernel
 * completes it; the benchmark counts what arrives at the generator's end,
 * as it does for illan's macswap.
 *
 * With --fwd txonly it is the limit of a sender: no program and no
 * receive ring, every UMEM frame holds one IPv4/UDP frame of --size bytes
 * to --dst, and the loop puts up to a batch of them (--batch, 64 unless
 * told) on the tx ring and kicks the kernel with sendto() every batch
 * (copy mode sends in that call), taking completed frames back as it
 * goes.  --batch 1 is what a sender that may not batch pays: a kick, and
 * so one run of the peer's receive, for every frame.  It counts completed
 * frames; the benchmark counts what arrives at the generator's end, as it
 * does for illan's txonly.
 *
 * It counts for --duration seconds from the first frame and prints,
 * key=value: "ready" once bound, "first" at the first frame and "done"
 * with the frames, bytes, rate and XDP_STATISTICS of that window (frames
 * received; with macswap also tx_frames, those sent; with txonly frames
 * are those the kernel completed; with sum also csum, every frame's sum
 * added up, which keeps the reads from being optimised away).
 */
#include <arpa/inet.h>
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

#include "hw/net/llan_offload.h"
#include "net/xdp-prog.h"

#define RING 2048
#define FRAME 4096
#define BATCH 64
/* --fwd copy: as many buffers as Linux's ibmveth posts in its 2048-byte
 * pool (512), each with room for the largest frame here. */
#define COPY_SLOTS 512
#define COPY_SLOT FRAME
/* Without traffic by then, the generator is not coming. */
#define FIRST_FRAME_TIMEOUT_S 10
#define POLL_TIMEOUT_MS 100

typedef struct Options {
    char *ifname, *mode, *wait, *fwd, *dst;
    int secs, cpu, size, batch;
} Options;

typedef struct Rx {
    int fd;
    bool spin, macswap, txonly, sum;
    void *area;
    /* --fwd copy: where frames are copied to, and the next slot. */
    uint8_t *copy_area;
    unsigned copy_next;
    struct xsk_umem *umem;
    struct xsk_socket *xsk;
    struct xsk_ring_prod fill;
    struct xsk_ring_cons comp;
    struct xsk_ring_cons rx;
    struct xsk_ring_prod tx;
    XdpRedirect *prog;
    uint64_t frames, bytes, tx_frames;
    uint16_t csum;
    /* txonly: the UMEM frames not on the tx ring, and the frame length. */
    uint64_t free_frames[RING];
    uint32_t nfree, size, batch;
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
    if (strcmp(o->fwd, "drop")) {
        scfg.tx_size = RING;
    }
    if (!strcmp(o->fwd, "txonly")) {
        scfg.rx_size = 0;
    }
    err = xsk_socket__create(&r->xsk, o->ifname, 0, r->umem,
                             scfg.rx_size ? &r->rx : NULL,
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

static uint16_t ip_checksum(const uint8_t *h, size_t len)
{
    uint32_t sum = 0;

    for (size_t i = 0; i < len; i += 2) {
        sum += (uint32_t)h[i] << 8 | h[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)~sum;
}

/* An IPv4/UDP frame of r->size bytes to @dst from the benchmarking range
 * (UDP checksum 0: none, as IPv4 allows), copied into every UMEM frame:
 * the sender never writes a frame again. */
static void write_frames(Rx *r, const char *dst)
{
    uint8_t f[FRAME] = { 0 };
    uint16_t ip_len = htons(r->size - 14), udp_len = htons(r->size - 34);
    uint16_t port = htons(9), sum;

    if (sscanf(dst, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &f[0], &f[1], &f[2],
               &f[3], &f[4], &f[5]) != 6) {
        die("--dst is not a MAC address", EINVAL);
    }
    memcpy(f + 6, (uint8_t[]){ 0x02, 0, 0, 0, 0, 0x01 }, 6);
    f[12] = 0x08;                                   /* IPv4 */
    f[14] = 0x45;
    memcpy(f + 16, &ip_len, 2);
    f[22] = 64;                                     /* TTL */
    f[23] = 17;                                     /* UDP */
    memcpy(f + 26, (uint8_t[]){ 198, 18, 0, 2, 198, 18, 0, 1 }, 8);
    sum = htons(ip_checksum(f + 14, 20));
    memcpy(f + 24, &sum, 2);
    memcpy(f + 34, &port, 2);
    memcpy(f + 36, &port, 2);
    memcpy(f + 38, &udp_len, 2);
    for (uint32_t i = 0; i < RING; i++) {
        memcpy((uint8_t *)r->area + (size_t)i * FRAME, f, r->size);
        r->free_frames[i] = (uint64_t)i * FRAME;
    }
    r->nfree = RING;
}

static void setup_sender(Rx *r, const Options *o)
{
    r->txonly = true;
    r->size = o->size;
    r->batch = o->batch;
    open_socket(r, o);
    write_frames(r, o->dst);
}

static void setup(Rx *r, const Options *o)
{
    unsigned ifindex = if_nametoindex(o->ifname);
    uint32_t mode = !strcmp(o->mode, "skb") ? XDP_FLAGS_SKB_MODE
                                            : XDP_FLAGS_DRV_MODE;

    if (!ifindex) {
        die(o->ifname, errno);
    }
    if (!strcmp(o->fwd, "txonly")) {
        setup_sender(r, o);
        return;
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
    r->sum = !strcmp(o->fwd, "sum");
    if (!strcmp(o->fwd, "copy")) {
        r->copy_area = g_malloc0((size_t)COPY_SLOTS * COPY_SLOT);
    }
}

static void copy_out(Rx *r, const struct xdp_desc *d)
{
    memcpy(r->copy_area + (size_t)r->copy_next * COPY_SLOT,
           xsk_umem__get_data(r->area, d->addr), MIN(d->len, COPY_SLOT));
    r->copy_next = (r->copy_next + 1) % COPY_SLOTS;
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

/*
 * txonly: completed frames back to the free list, a batch onto the tx
 * ring, and a kick, which in copy mode is the kernel sending them (up to
 * its own budget a call); how many frames completed.
 */
static uint32_t send_batch(Rx *r)
{
    uint32_t idx_comp = 0, idx_tx = 0;
    uint32_t done = xsk_ring_cons__peek(&r->comp, RING, &idx_comp);
    uint32_t n;

    for (uint32_t i = 0; i < done; i++) {
        r->free_frames[r->nfree++] =
            *xsk_ring_cons__comp_addr(&r->comp, idx_comp + i);
    }
    xsk_ring_cons__release(&r->comp, done);
    n = xsk_ring_prod__reserve(&r->tx, MIN(r->batch, r->nfree), &idx_tx);
    for (uint32_t i = 0; i < n; i++) {
        struct xdp_desc *t = xsk_ring_prod__tx_desc(&r->tx, idx_tx + i);

        t->addr = r->free_frames[--r->nfree];
        t->len = r->size;
        t->options = 0;
    }
    xsk_ring_prod__submit(&r->tx, n);
    if (xsk_ring_prod__needs_wakeup(&r->tx)) {
        sendto(r->fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
    }
    r->frames += done;
    r->tx_frames += done;
    r->bytes += (uint64_t)done * r->size;
    return done;
}

/* One batch from the rx ring back to the fill ring; how many frames. */
static uint32_t take_batch(Rx *r)
{
    uint32_t idx_rx = 0, idx_fill = 0;
    uint32_t n;

    if (r->txonly) {
        return send_batch(r);
    }
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

        if (r->copy_area) {
            copy_out(r, d);
        } else if (r->sum) {
            r->csum = llan_csum_add(r->csum,
                llan_csum(xsk_umem__get_data(r->area, d->addr), d->len));
        }
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

    if (r->txonly) {
        return;                 /* the next batch's kick is the wait */
    } else if (r->macswap && xsk_prod_nb_free(&r->tx, RING) < RING) {
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
           "rx_fill_ring_empty_descs=%llu tx_frames=%llu csum=%u\n", t,
           (unsigned long long)r->frames, (unsigned long long)r->bytes,
           r->frames / t / 1e6, r->bytes * 8 / t / 1e9,
           (unsigned long long)(s1.rx_dropped - s0.rx_dropped),
           (unsigned long long)(s1.rx_invalid_descs - s0.rx_invalid_descs),
           (unsigned long long)(s1.rx_ring_full - s0.rx_ring_full),
           (unsigned long long)(s1.rx_fill_ring_empty_descs -
                                s0.rx_fill_ring_empty_descs),
           (unsigned long long)r->tx_frames, r->csum);
}

static void teardown(Rx *r)
{
    xsk_socket__delete(r->xsk);
    xsk_umem__delete(r->umem);
    xdp_redirect_detach(r->prog);
    munmap(r->area, (size_t)RING * FRAME);
    g_free(r->copy_area);
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
          "drop (default), copy (drop after copying each frame out), "
          "sum (drop after summing each frame's bytes), macswap (send "
          "each frame back) or txonly",
          "FWD" },
        { "duration", 't', 0, G_OPTION_ARG_INT, &o->secs,
          "seconds from the first frame, default 10", "SECS" },
        { "cpu", 'c', 0, G_OPTION_ARG_INT, &o->cpu,
          "CPU to run on, default 1", "CPU" },
        { "size", 's', 0, G_OPTION_ARG_INT, &o->size,
          "txonly: frame length in bytes, 60 to 1514, default 64", "BYTES" },
        { "dst", 'd', 0, G_OPTION_ARG_STRING, &o->dst,
          "txonly: destination MAC (required)", "MAC" },
        { "batch", 'b', 0, G_OPTION_ARG_INT, &o->batch,
          "txonly: frames a kick, 1 to 64, default 64", "N" },
        { 0 },
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
        (strcmp(o->fwd, "drop") && strcmp(o->fwd, "copy") &&
         strcmp(o->fwd, "sum") && strcmp(o->fwd, "macswap") &&
         strcmp(o->fwd, "txonly")) ||
        (!strcmp(o->fwd, "txonly") &&
         (!o->dst || o->size < 60 || o->size > 1514 || o->batch < 1 ||
          o->batch > BATCH))) {
        fprintf(stderr, "xsk-rxdrop: needs --ifname, a positive --duration, "
                "--mode native|skb, --wait poll|spin, --fwd "
                "drop|copy|sum|macswap|txonly, and for txonly --dst, a "
                "--size of 60 to 1514 and a --batch of 1 to 64\n");
        return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    Options o = { .mode = "native", .wait = "poll", .fwd = "drop",
                  .secs = 10, .cpu = 1, .size = 64, .batch = BATCH };
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
