/*
 * xdp-gen: the benchmarks' traffic generator.
 *
 * The kernel's "live frames" test run (BPF_PROG_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES) runs an XDP program on copies of one frame
 * template, in batches, and carries out its verdict.  XDP_TX sends the copy
 * out of the interface named as its ingress, so from one end of a veth pair
 * every frame lands in the peer's receive ring: no socket and no skb on the
 * way, which is why one CPU makes several Mpps on these machines where an
 * AF_PACKET sender stops at about 0.5.
 *
 * Sizes.  The template is the largest frame.  Before a copy leaves, the
 * program cuts it to the size of the next frame of a 12-frame pattern and
 * writes that size's IPv4 and UDP lengths and checksums, computed here.
 * "mix" (64/594/1518 in 7:4:1) thus changes size from frame to frame, as
 * on a wire, instead of in runs of one size.  Sizes are the bytes a frame
 * has on the veth, without an FCS, as the built-in guest's size= counts
 * them; 1518 is the most a veth with MTU 1500 takes from XDP.
 *
 * Pacing.  --rate sends that many frames a second instead, evenly spaced,
 * through an AF_PACKET socket: a live-frames run cannot be paced, and
 * costs its ~30 ms of set-up each time.  The veth hands such a frame to
 * its peer's XDP program the same way (in the peer's NAPI, on the
 * sending CPU), after the skb is made an xdp_buff.  For latency at low
 * rates, where the sender's cost does not matter; one size only.
 *
 * Counting.  --count attaches a second program to the same interface that
 * counts and drops every frame arriving there, i.e. what the device under
 * test sends back; --listen only counts.
 *
 * Output, key=value: "ready", then "mark" on each SIGUSR1 and "done" at the
 * end (duration over, or SIGINT/SIGTERM), with the monotonic time and the
 * counters since the start: runs (frames of finished test runs: offered),
 * tx_packets (what the peer took in), tx_dropped (what its full ring
 * refused), rx_frames and rx_bytes (counted arrivals).  A frame the kernel
 * cannot send at all (a peer with neither XDP nor GRO) is in runs only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <glib.h>

#include "bpf-insn.h"

#define ETH_LEN 14
#define IP_LEN 20
#define UDP_OFF (ETH_LEN + IP_LEN)
#define HEADERS (UDP_OFF + 8)
#define MIN_SIZE 60
#define MAX_SIZE 1518
#define PATTERN_LEN 12
/*
 * Each test run sets up and tears down its own page pool, and sleeps
 * ~30 ms doing so here (one-batch runs: 2 s of wall time for 0.1 s of
 * CPU), a gap in the traffic each time.  So runs are long, and two
 * senders share the CPU: one sends while the other sleeps.  Each sizes its
 * runs to last about RUN_SECS at the rate it last saw, which is also about
 * how long a stop waits.
 */
#define RUN_SECS 0.25
#define RUN_FRAMES_MIN (1 << 16)
#define RUN_FRAMES_MAX (1 << 24)
#define SENDERS 2
#define BATCH 64

/* 64, 594 and 1518 in 7:4:1, spread over the pattern. */
static const unsigned mix[PATTERN_LEN] = {
    64, 594, 64, 64, 594, 64, 1518, 64, 594, 64, 594, 64,
};

/* What the program does to one frame of the pattern: the tail adjustment
 * (<= 0) and the header fields it writes, in network order. */
typedef struct Shape {
    int32_t shrink;
    uint16_t tot_len, ip_csum, udp_len, udp_csum;
} Shape;

/* The sender's only map entry. */
typedef struct Pattern {
    uint32_t next;
    uint32_t pad;
    Shape shape[PATTERN_LEN];
} Pattern;

/* What the counter counts, per CPU. */
typedef struct Count {
    uint64_t frames, bytes;
} Count;

typedef struct Options {
    char *ifname, *size, *dst, *src;
    int secs, cpu, rate;
    gboolean count, listen;
} Options;

typedef struct Gen {
    const char *ifname;
    unsigned ifindex;
    uint8_t frame[MAX_SIZE];
    unsigned frame_len;
    unsigned rate;                  /* paced: frames a second, or 0 */
    int packet_fd;                  /* paced: bound to ifindex */
    int send_prog;
    int count_map;
    uint64_t runs;                  /* atomic: frames of finished runs */
    int stop;                       /* atomic */
    uint64_t tx_packets0, tx_dropped0;
    struct timespec start;
} Gen;

static _Noreturn void die(const char *what)
{
    fprintf(stderr, "xdp-gen: %s: %s\n", what, g_strerror(errno));
    exit(1);
}

static bool parse_mac(const char *s, uint8_t mac[6])
{
    char end;

    return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx%c", &mac[0], &mac[1],
                  &mac[2], &mac[3], &mac[4], &mac[5], &end) == 6;
}

static bool own_mac(const char *ifname, uint8_t mac[6])
{
    struct ifreq ifr = { 0 };
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    bool ok;

    g_strlcpy(ifr.ifr_name, ifname, sizeof(ifr.ifr_name));
    ok = fd >= 0 && ioctl(fd, SIOCGIFHWADDR, &ifr) == 0;
    if (ok) {
        memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
    }
    if (fd >= 0) {
        close(fd);
    }
    return ok;
}

/* "mix", or one size for the whole pattern. */
static bool parse_sizes(const char *s, unsigned sizes[PATTERN_LEN])
{
    char *end;
    unsigned long n;

    if (!strcmp(s, "mix")) {
        memcpy(sizes, mix, sizeof(mix));
        return true;
    }
    n = strtoul(s, &end, 10);
    if (*end || n < MIN_SIZE || n > MAX_SIZE) {
        return false;
    }
    for (unsigned i = 0; i < PATTERN_LEN; i++) {
        sizes[i] = n;
    }
    return true;
}

static void put16(uint8_t *p, unsigned v)
{
    p[0] = v >> 8;
    p[1] = v;
}

/* The Internet checksum's running sum, over big-endian 16-bit words. */
static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i + 1 < len; i += 2) {
        sum += p[i] << 8 | p[i + 1];
    }
    if (len & 1) {
        sum += p[len - 1] << 8;
    }
    return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum & 0xffff;
}

/* Ethernet, IPv4 198.18.0.1 -> 198.18.0.2 (the benchmarking range), UDP
 * to the discard port; lengths and checksums are the program's to write. */
static void build_template(Gen *g, const uint8_t dst[6], const uint8_t src[6])
{
    static const uint8_t ip[IP_LEN] = {
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, IPPROTO_UDP, 0, 0,
        198, 18, 0, 1, 198, 18, 0, 2,
    };
    uint8_t *f = g->frame;

    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    put16(f + 12, 0x0800);
    memcpy(f + ETH_LEN, ip, IP_LEN);
    put16(f + UDP_OFF, 1024);
    put16(f + UDP_OFF + 2, 9);
    for (unsigned i = HEADERS; i < g->frame_len; i++) {
        f[i] = i;
    }
}

/* The header fields of the template cut to @len bytes. */
static void shape_for(const Gen *g, unsigned len, Shape *s)
{
    uint8_t f[MAX_SIZE];
    uint8_t pseudo[12];
    unsigned ip_len = len - ETH_LEN, udp_len = ip_len - IP_LEN;
    uint16_t udp_csum;

    memcpy(f, g->frame, len);
    put16(f + ETH_LEN + 2, ip_len);
    put16(f + ETH_LEN + 10, 0);
    put16(f + UDP_OFF + 4, udp_len);
    put16(f + UDP_OFF + 6, 0);
    memcpy(pseudo, f + ETH_LEN + 12, 8);
    pseudo[8] = 0;
    pseudo[9] = IPPROTO_UDP;
    put16(pseudo + 10, udp_len);
    udp_csum = csum_fold(csum_add(csum_add(0, pseudo, sizeof(pseudo)),
                                  f + UDP_OFF, udp_len));
    s->shrink = (int)len - (int)g->frame_len;
    s->tot_len = htons(ip_len);
    s->ip_csum = htons(csum_fold(csum_add(0, f + ETH_LEN, IP_LEN)));
    s->udp_len = htons(udp_len);
    /* A computed 0 is sent as its other form: 0 means "no checksum". */
    s->udp_csum = htons(udp_csum ? udp_csum : 0xffff);
}

#define SHAPE(field) (offsetof(Pattern, shape) + offsetof(Shape, field))
#define COPY16(from, to) \
    INSN_LOAD(BPF_H, BPF_REG_1, BPF_REG_7, (from)), \
    INSN_STORE(BPF_H, BPF_REG_2, (to), BPF_REG_1)

/*
 * Per frame: take the pattern's next shape (the index kept in bounds the
 * verifier can see), cut the frame, write its fields, return XDP_TX.
 * The numbers on the right are instruction indexes, for the jumps.
 */
static int load_sender(int pattern_fd)
{
    struct bpf_insn insns[] = {
        INSN_MOV_REG(BPF_REG_6, BPF_REG_1),
        INSN_STORE_IMM(BPF_W, BPF_REG_10, -4, 0),
        INSN_LOAD_MAP(BPF_REG_1, pattern_fd),
        INSN_MOV_REG(BPF_REG_2, BPF_REG_10),
        INSN_ALU_IMM(BPF_ADD, BPF_REG_2, -4),
        INSN_CALL(BPF_FUNC_map_lookup_elem),
        INSN_JUMP_IMM(BPF_JEQ, BPF_REG_0, 0, 31),           /* 7: abort */
        INSN_MOV_REG(BPF_REG_7, BPF_REG_0),
        INSN_LOAD(BPF_W, BPF_REG_8, BPF_REG_7, offsetof(Pattern, next)),
        INSN_JUMP_IMM(BPF_JLE, BPF_REG_8, PATTERN_LEN - 1, 1),
        INSN_MOV_IMM(BPF_REG_8, 0),
        INSN_MOV_REG(BPF_REG_2, BPF_REG_8),                 /* 12 */
        INSN_ALU_IMM(BPF_ADD, BPF_REG_2, 1),
        INSN_JUMP_IMM(BPF_JLT, BPF_REG_2, PATTERN_LEN, 1),
        INSN_MOV_IMM(BPF_REG_2, 0),
        INSN_STORE(BPF_W, BPF_REG_7, offsetof(Pattern, next), BPF_REG_2),
        INSN_ALU_IMM(BPF_MUL, BPF_REG_8, sizeof(Shape)),    /* 17 */
        INSN_ALU_REG(BPF_ADD, BPF_REG_7, BPF_REG_8),
        INSN_LOAD(BPF_W, BPF_REG_2, BPF_REG_7, SHAPE(shrink)),
        INSN_JUMP_IMM(BPF_JEQ, BPF_REG_2, 0, 3),            /* 20: to 24 */
        INSN_MOV_REG(BPF_REG_1, BPF_REG_6),
        INSN_CALL(BPF_FUNC_xdp_adjust_tail),
        INSN_JUMP_IMM(BPF_JNE, BPF_REG_0, 0, 15),           /* 23: abort */
        INSN_LOAD(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(struct xdp_md, data)),
        INSN_LOAD(BPF_W, BPF_REG_3, BPF_REG_6,
                  offsetof(struct xdp_md, data_end)),
        INSN_MOV_REG(BPF_REG_4, BPF_REG_2),
        INSN_ALU_IMM(BPF_ADD, BPF_REG_4, HEADERS),
        INSN_JUMP_REG(BPF_JGT, BPF_REG_4, BPF_REG_3, 10),   /* 28: abort */
        COPY16(SHAPE(tot_len), ETH_LEN + 2),
        COPY16(SHAPE(ip_csum), ETH_LEN + 10),
        COPY16(SHAPE(udp_len), UDP_OFF + 4),
        COPY16(SHAPE(udp_csum), UDP_OFF + 6),
        INSN_MOV_IMM(BPF_REG_0, XDP_TX),                    /* 37 */
        INSN_EXIT,
        INSN_MOV_IMM(BPF_REG_0, XDP_ABORTED),               /* 39: abort */
        INSN_EXIT,
    };

    return bpf_prog_load(BPF_PROG_TYPE_XDP, "xdp_gen", "GPL", insns,
                         G_N_ELEMENTS(insns), NULL);
}

/* Per frame: this CPU's count += 1, bytes += its length; XDP_DROP.
 * Loaded with frags support, so that it attaches to an interface with an
 * MTU above a page (make soak's 9000) and counts a multi-buffer frame
 * once; of such a frame's bytes it counts only the first buffer's. */
static int load_counter(int count_map)
{
    LIBBPF_OPTS(bpf_prog_load_opts, load, .prog_flags = BPF_F_XDP_HAS_FRAGS);
    struct bpf_insn insns[] = {
        INSN_MOV_REG(BPF_REG_6, BPF_REG_1),
        INSN_STORE_IMM(BPF_W, BPF_REG_10, -4, 0),
        INSN_LOAD_MAP(BPF_REG_1, count_map),
        INSN_MOV_REG(BPF_REG_2, BPF_REG_10),
        INSN_ALU_IMM(BPF_ADD, BPF_REG_2, -4),
        INSN_CALL(BPF_FUNC_map_lookup_elem),
        INSN_JUMP_IMM(BPF_JEQ, BPF_REG_0, 0, 9),            /* 7: to 17 */
        INSN_LOAD(BPF_W, BPF_REG_2, BPF_REG_6, offsetof(struct xdp_md, data)),
        INSN_LOAD(BPF_W, BPF_REG_3, BPF_REG_6,
                  offsetof(struct xdp_md, data_end)),
        INSN_ALU_REG(BPF_SUB, BPF_REG_3, BPF_REG_2),
        INSN_LOAD(BPF_DW, BPF_REG_1, BPF_REG_0, offsetof(Count, frames)),
        INSN_ALU_IMM(BPF_ADD, BPF_REG_1, 1),
        INSN_STORE(BPF_DW, BPF_REG_0, offsetof(Count, frames), BPF_REG_1),
        INSN_LOAD(BPF_DW, BPF_REG_1, BPF_REG_0, offsetof(Count, bytes)),
        INSN_ALU_REG(BPF_ADD, BPF_REG_1, BPF_REG_3),
        INSN_STORE(BPF_DW, BPF_REG_0, offsetof(Count, bytes), BPF_REG_1),
        INSN_MOV_IMM(BPF_REG_0, XDP_DROP),                  /* 17 */
        INSN_EXIT,
    };

    return bpf_prog_load(BPF_PROG_TYPE_XDP, "xdp_gen_count", "GPL", insns,
                         G_N_ELEMENTS(insns), &load);
}

static void setup_sender(Gen *g, const unsigned sizes[PATTERN_LEN])
{
    Pattern p = { 0 };
    uint32_t key = 0;
    int map = bpf_map_create(BPF_MAP_TYPE_ARRAY, "xdp_gen_pattern",
                             sizeof(key), sizeof(p), 1, NULL);

    for (unsigned i = 0; i < PATTERN_LEN; i++) {
        shape_for(g, sizes[i], &p.shape[i]);
    }
    if (map < 0 || bpf_map_update_elem(map, &key, &p, BPF_ANY)) {
        die("pattern map");
    }
    g->send_prog = load_sender(map);
    if (g->send_prog < 0) {
        die("loading the sender program");
    }
}

/* The link dies with the process, and the program with it. */
static void setup_counter(Gen *g)
{
    LIBBPF_OPTS(bpf_link_create_opts, opts, .flags = XDP_FLAGS_DRV_MODE);
    int prog;

    g->count_map = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "xdp_gen_count",
                                  sizeof(uint32_t), sizeof(Count), 1, NULL);
    if (g->count_map < 0) {
        die("counter map");
    }
    prog = load_counter(g->count_map);
    if (prog < 0) {
        die("loading the counter program");
    }
    if (bpf_link_create(prog, g->ifindex, BPF_XDP, &opts) < 0) {
        die("attaching the counter program");
    }
}

static Count read_count(const Gen *g)
{
    int ncpus = libbpf_num_possible_cpus();
    g_autofree Count *per_cpu = g_new0(Count, ncpus > 0 ? ncpus : 1);
    Count sum = { 0 };
    uint32_t key = 0;

    if (g->count_map < 0 || ncpus <= 0 ||
        bpf_map_lookup_elem(g->count_map, &key, per_cpu)) {
        return sum;
    }
    for (int i = 0; i < ncpus; i++) {
        sum.frames += per_cpu[i].frames;
        sum.bytes += per_cpu[i].bytes;
    }
    return sum;
}

/* veth counts on the sender what the peer took in (tx_packets) and what
 * its full ring refused (tx_dropped). */
static uint64_t read_stat(const Gen *g, const char *name)
{
    g_autofree char *path = g_strdup_printf("/sys/class/net/%s/statistics/%s",
                                            g->ifname, name);
    g_autofree char *text = NULL;

    return g_file_get_contents(path, &text, NULL, NULL)
           ? g_ascii_strtoull(text, NULL, 10) : 0;
}

static double since(const struct timespec *t0, struct timespec *now)
{
    clock_gettime(CLOCK_MONOTONIC, now);
    return (now->tv_sec - t0->tv_sec) + (now->tv_nsec - t0->tv_nsec) / 1e9;
}

static void report(const Gen *g, const char *what)
{
    struct timespec now;
    double secs = since(&g->start, &now);
    uint64_t sent = read_stat(g, "tx_packets") - g->tx_packets0;
    Count c = read_count(g);

    printf("%s ns=%llu secs=%.3f runs=%llu tx_packets=%llu tx_dropped=%llu "
           "rx_frames=%llu rx_bytes=%llu mpps=%.3f\n", what,
           (unsigned long long)now.tv_sec * 1000000000ULL + now.tv_nsec,
           secs,
           (unsigned long long)__atomic_load_n(&g->runs, __ATOMIC_RELAXED),
           (unsigned long long)sent,
           (unsigned long long)(read_stat(g, "tx_dropped") - g->tx_dropped0),
           (unsigned long long)c.frames, (unsigned long long)c.bytes,
           secs > 0 ? sent / secs / 1e6 : 0.0);
    fflush(stdout);
}

static gpointer sender(gpointer opaque)
{
    Gen *g = opaque;
    struct xdp_md ctx = {
        .data_end = g->frame_len, .ingress_ifindex = g->ifindex,
    };
    LIBBPF_OPTS(bpf_test_run_opts, opts,
                .data_in = g->frame, .data_size_in = g->frame_len,
                .ctx_in = &ctx, .ctx_size_in = sizeof(ctx),
                .repeat = RUN_FRAMES_MIN, .batch_size = BATCH,
                .flags = BPF_F_TEST_XDP_LIVE_FRAMES);
    struct timespec t0, now;

    while (!__atomic_load_n(&g->stop, __ATOMIC_RELAXED)) {
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (bpf_prog_test_run_opts(g->send_prog, &opts)) {
            die("BPF_PROG_RUN");
        }
        __atomic_fetch_add(&g->runs, opts.repeat, __ATOMIC_RELAXED);
        opts.repeat = CLAMP(opts.repeat / since(&t0, &now) * RUN_SECS,
                            RUN_FRAMES_MIN, RUN_FRAMES_MAX);
    }
    return NULL;
}

/* The template with its header fields written, for the paced sender:
 * the live-frames program writes them into each copy instead. */
static void finish_template(Gen *g)
{
    Shape s;

    shape_for(g, g->frame_len, &s);
    memcpy(g->frame + ETH_LEN + 2, &s.tot_len, 2);
    memcpy(g->frame + ETH_LEN + 10, &s.ip_csum, 2);
    memcpy(g->frame + UDP_OFF + 4, &s.udp_len, 2);
    memcpy(g->frame + UDP_OFF + 6, &s.udp_csum, 2);
}

static void setup_paced(Gen *g)
{
    struct sockaddr_ll sll = {
        .sll_family = AF_PACKET, .sll_ifindex = g->ifindex,
    };

    finish_template(g);
    g->packet_fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (g->packet_fd < 0 ||
        bind(g->packet_fd, (struct sockaddr *)&sll, sizeof(sll))) {
        die("AF_PACKET socket");
    }
    /* Wake-ups on time, not up to 50 us late. */
    prctl(PR_SET_TIMERSLACK, 1UL);
}

/* One frame every 1/rate s, on a fixed grid; a frame that is late goes
 * at once, and the grid starts again from it rather than catching up
 * with a burst. */
static gpointer paced_sender(gpointer opaque)
{
    Gen *g = opaque;
    const long period = 1000000000L / g->rate;
    struct timespec next, now;

    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!__atomic_load_n(&g->stop, __ATOMIC_RELAXED)) {
        next.tv_nsec += period;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000L;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        if (send(g->packet_fd, g->frame, g->frame_len, 0) ==
            (ssize_t)g->frame_len) {
            __atomic_fetch_add(&g->runs, 1, __ATOMIC_RELAXED);
        }
        if (since(&next, &now) > (double)period / 1e9) {
            next = now;
        }
    }
    return NULL;
}

/*
 * The senders run until the duration is over or SIGINT/SIGTERM; SIGUSR1
 * asks for a mark.  The signals are blocked everywhere and taken here, so
 * that a run is never cut short (its frames would go uncounted).
 */
static void run(Gen *g, const Options *o)
{
    GThread *senders[SENDERS] = { NULL };
    struct timespec now;
    sigset_t set;
    double t;

    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    report(g, "ready");
    for (unsigned i = 0; i < SENDERS && !o->listen; i++) {
        senders[i] = g_thread_new("sender", g->rate ? paced_sender : sender,
                                  g);
        if (g->rate) {
            break;
        }
    }
    while ((t = since(&g->start, &now)) < o->secs) {
        struct timespec wait = { .tv_sec = o->secs - t };
        int sig;

        wait.tv_nsec = (o->secs - t - wait.tv_sec) * 1e9;
        sig = sigtimedwait(&set, NULL, &wait);
        if (sig == SIGUSR1) {
            report(g, "mark");
        } else if (sig > 0) {
            break;
        }
    }
    __atomic_store_n(&g->stop, 1, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < SENDERS; i++) {
        if (senders[i]) {
            g_thread_join(senders[i]);
        }
    }
    report(g, "done");
}

static void pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set)) {
        die("pinning to the CPU");
    }
}

static bool parse_args(int argc, char **argv, Options *o)
{
    GOptionEntry entries[] = {
        { "ifname", 'i', 0, G_OPTION_ARG_STRING, &o->ifname,
          "send out of IF (required)", "IF" },
        { "size", 's', 0, G_OPTION_ARG_STRING, &o->size,
          "frame bytes without FCS, 60-1518, or mix (64/594/1518 7:4:1); "
          "default 64", "SIZE" },
        { "dst", 'd', 0, G_OPTION_ARG_STRING, &o->dst,
          "destination MAC, default 52:54:00:12:34:56", "MAC" },
        { "src", 'S', 0, G_OPTION_ARG_STRING, &o->src,
          "source MAC, default IF's", "MAC" },
        { "duration", 't', 0, G_OPTION_ARG_INT, &o->secs,
          "seconds, default 10", "SECS" },
        { "cpu", 'c', 0, G_OPTION_ARG_INT, &o->cpu,
          "CPU to run on, default 0", "CPU" },
        { "rate", 'r', 0, G_OPTION_ARG_INT, &o->rate,
          "send PPS frames a second, evenly spaced, through an AF_PACKET "
          "socket (one size; default: as fast as live frames go)", "PPS" },
        { "count", 0, 0, G_OPTION_ARG_NONE, &o->count,
          "count (and drop) the frames arriving at IF", NULL },
        { "listen", 0, 0, G_OPTION_ARG_NONE, &o->listen,
          "send nothing, only count", NULL },
        { 0 },
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("- XDP live-frames traffic generator");
    g_autoptr(GError) err = NULL;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        fprintf(stderr, "xdp-gen: %s\n", err->message);
        return false;
    }
    if (!o->ifname || o->secs <= 0) {
        fprintf(stderr, "xdp-gen: needs --ifname and a positive --duration\n");
        return false;
    }
    if (o->rate < 0 || o->rate > 1000000 ||
        (o->rate && !strcmp(o->size, "mix"))) {
        fprintf(stderr, "xdp-gen: --rate is 1 to 1000000 frames a second, "
                "of one size\n");
        return false;
    }
    return true;
}

static void setup(Gen *g, const Options *o)
{
    unsigned sizes[PATTERN_LEN];
    uint8_t dst[6], src[6];

    g->ifname = o->ifname;
    g->ifindex = if_nametoindex(o->ifname);
    if (!g->ifindex) {
        die(o->ifname);
    }
    if (!parse_sizes(o->size, sizes) || !parse_mac(o->dst, dst) ||
        (o->src ? !parse_mac(o->src, src) : !own_mac(o->ifname, src))) {
        fprintf(stderr, "xdp-gen: bad --size, --dst or --src\n");
        exit(1);
    }
    g->frame_len = 0;
    for (unsigned i = 0; i < PATTERN_LEN; i++) {
        g->frame_len = MAX(g->frame_len, sizes[i]);
    }
    build_template(g, dst, src);
    g->rate = o->rate;
    if (!o->listen && g->rate) {
        setup_paced(g);
    } else if (!o->listen) {
        setup_sender(g, sizes);
    }
    g->count_map = -1;
    if (o->count || o->listen) {
        setup_counter(g);
    }
}

int main(int argc, char **argv)
{
    Options o = { .size = "64", .dst = "52:54:00:12:34:56", .secs = 10 };
    Gen g = { 0 };

    if (!parse_args(argc, argv, &o)) {
        return 2;
    }
    pin(o.cpu);
    setup(&g, &o);
    g.tx_packets0 = read_stat(&g, "tx_packets");
    g.tx_dropped0 = read_stat(&g, "tx_dropped");
    clock_gettime(CLOCK_MONOTONIC, &g.start);
    setvbuf(stdout, NULL, _IOLBF, 0);
    run(&g, &o);
    return 0;
}
