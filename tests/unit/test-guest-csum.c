/*
 * The built-in guest's checksum code (guest/ip-checksum.c, inet-l4.c,
 * tcp-gso.c) and the device's (hw/net/llan_offload.c, llan_tso.c) are
 * written apart, so that one can catch the other: here they must agree
 * on frames captured from Linux, whose checksums are fixed constants,
 * and on many generated ones.
 */
#include "guest/inet-l4.h"
#include "guest/ip-checksum.h"
#include "guest/tcp-gso.h"
#include "hw/net/llan_offload.h"
#include "hw/net/llan_tso.h"
#include "qemu/bswap.h"

#include <glib.h>
#include <string.h>

#define FRAME_MAX       (14 + 60 + 65535 + 64)

/*
 * Frames captured on this project's machine (Linux 6.18) by
 * tests/unit/capture-csum-frames.py: between two network namespaces over
 * a veth pair, the sender's checksum offload off, so its kernel computed
 * every checksum in software, and the receiver's off too, so its kernel
 * verified them: each payload reached its socket, and nstat counted no
 * UdpInCsumErrors, Udp6InCsumErrors or TcpInCsumErrors.  Read from an
 * AF_PACKET socket on the receiving veth.
 */
typedef struct Captured {
    const char *name;
    const char *hex;
    uint16_t l4_csum;       /* the TCP or UDP checksum in the frame */
    uint16_t ip_csum;       /* IPv4's header checksum; 0 for IPv6 */
} Captured;

static const Captured captured[] = {
    { "udp4",
      "02000000000b02000000000a08004500002c02be4000401123ef0a09"
      "00010a0900020fa10fa000180a92696c6c616e206373756d2034206f6464",
      0x0a92, 0x23ef },
    { "udp4-odd",
      "02000000000b02000000000a08004500001f02bf4000401123fb0a09"
      "00010a0900020fa20fa0000bf81f706164",
      0xf81f, 0x23fb },
    { "udp6",
      "02000000000b02000000000a86dd600dc5ba001c1140fd0000000000"
      "00000000000000000001fd0000000000000000000000000000020fa10fa0001c"
      "3ff7696c6c616e206373756d207369782c206f64643a",
      0x3ff7, 0 },
    { "tcp4-syn",
      "02000000000b02000000000a08004500003c2f9740004006f7100a09"
      "00010a090002138913884ee792a400000000a002faf0d8330000020405b40402"
      "080a4c3a0bed000000000103030a",
      0xd833, 0xf710 },
    { "tcp4-odd",
      "02000000000b02000000000a0800450000492f9940004006f7010a09"
      "00010a090002138913884ee792a5351a20ab8018003f7cc900000101080a4c3a"
      "0bed3f6d3665696c6c616e20746370206f6464207061796c6f6164",
      0x7cc9, 0xf701 },
    { "tcp6-odd",
      "02000000000b02000000000a86dd60058b26002f0640fd0000000000"
      "00000000000000000001fd00000000000000000000000000000213891388a334"
      "c4e7c46b5ebe801800408f3f00000101080a9029fb517cae0a94696c6c616e20"
      "746370362c206f6464",
      0x8f3f, 0 },
};

static size_t from_hex(uint8_t *f, const char *hex)
{
    size_t n = strlen(hex) / 2;

    for (size_t i = 0; i < n; i++) {
        f[i] = g_ascii_xdigit_value(hex[2 * i]) << 4 |
               g_ascii_xdigit_value(hex[2 * i + 1]);
    }
    return n;
}

/* Both find the same segment, or both find none. */
static bool both_find(const uint8_t *f, size_t len, InetL4 *g, LlanL4 *d)
{
    LlanOffloadError why;
    bool found = inet_l4_find(f, len, g);

    g_assert_cmpint(found, ==, llan_find_l4(f, len, d, &why));
    if (found) {
        g_assert_cmpuint(g->ip_version, ==, d->ip_version);
        g_assert_cmpuint(g->proto, ==, d->proto);
        g_assert_cmpuint(g->l4, ==, d->l4);
        g_assert_cmpuint(g->l4_len, ==, d->l4_len);
        g_assert_cmpuint(g->csum_at, ==, d->csum_at);
    }
    return found;
}

/* Each side's verdict on a frame Linux verified, and its checksum
 * computed afresh by each, with and without Ethernet padding. */
static void check_captured(const Captured *c, size_t pad)
{
    uint8_t f[128] = { 0 }, d[128];
    size_t len = from_hex(f, c->hex) + pad;
    uint16_t completed;
    InetL4 gl4;
    LlanL4 dl4;

    g_assert_true(both_find(f, len, &gl4, &dl4));
    g_assert_cmphex(ldn_be_p(f + gl4.csum_at, 2), ==, c->l4_csum);
    g_assert_true(inet_l4_csum_ok(f, &gl4));
    g_assert_cmpint(llan_rx_csum(f, &dl4, &completed), ==,
                    LLAN_RX_CSUM_GOOD);
    if (c->ip_csum) {
        g_assert_cmphex(ip_header_checksum(f + 14, 20), ==, 0);
        stn_be_p(f + 14 + 10, 2, 0);
        g_assert_cmphex(ip_header_checksum(f + 14, 20), ==, c->ip_csum);
        stn_be_p(f + 14 + 10, 2, c->ip_csum);
    }
    memcpy(d, f, len);
    inet_l4_csum_fill(f, &gl4);
    llan_fill_l4_csum(d, &dl4);
    g_assert_cmphex(ldn_be_p(f + gl4.csum_at, 2), ==, c->l4_csum);
    g_assert_cmphex(ldn_be_p(d + dl4.csum_at, 2), ==, c->l4_csum);
}

static void test_captured(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(captured); i++) {
        g_test_message("%s", captured[i].name);
        check_captured(&captured[i], 0);
    }
}

/* The short ones as a wire NIC pads them to 60 bytes: the padding is
 * not part of the segment. */
static void test_captured_padded(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(captured); i++) {
        size_t len = strlen(captured[i].hex) / 2;

        if (len < 60) {
            g_test_message("%s + %zu", captured[i].name, 60 - len);
            check_captured(&captured[i], 60 - len);
        }
    }
}

/* 0 and 0xffff are the same ones' complement number. */
static bool same_sum(uint16_t a, uint16_t b)
{
    return a == b || (a % 0xffff) == (b % 0xffff);
}

/* The raw sums, at every alignment and length up to 600 bytes, and
 * summed in pieces as skb_checksum() does over fragments. */
static void test_sums(void)
{
    static uint8_t buf[4096 + 8];
    g_autoptr(GRand) r = g_rand_new_with_seed(32);

    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = g_rand_int(r);
    }
    for (size_t off = 0; off < 8; off++) {
        for (size_t len = 0; len <= 600; len++) {
            g_assert_true(same_sum(inet_sum_fold(inet_sum(buf + off, len, 0)),
                                   llan_csum(buf + off, len)));
        }
    }
    for (unsigned k = 0; k < 1000; k++) {
        size_t cut = 2 * g_rand_int_range(r, 0, 2048);
        InetSum s = inet_sum(buf + cut, 4096 - cut,
                             inet_sum(buf, cut, 0));

        g_assert_true(same_sum(inet_sum_fold(s), llan_csum(buf, 4096)));
    }
    /* All ones sums to all ones, never to 0. */
    memset(buf, 0xff, 64);
    g_assert_cmphex(inet_sum_fold(inet_sum(buf, 64, 0)), ==, 0xffff);
    g_assert_cmphex(inet_csum(inet_sum(buf, 64, 0)), ==, 0);
}

typedef struct Gen {
    int version;            /* 4 or 6 */
    uint8_t proto;
    uint32_t ip_opts;       /* IPv4 option bytes, a multiple of 4 */
    uint32_t tcp_opts;      /* likewise */
    uint32_t payload;
    uint32_t pad;           /* bytes past the IP length */
    uint8_t tcp_flags;
} Gen;

static void fill_random(GRand *r, uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = g_rand_int(r);
    }
}

/* A frame as @g says, random where it does not, checksum fields 0. */
static size_t gen_frame(GRand *r, uint8_t *f, const Gen *g)
{
    uint32_t th_len = g->proto == INET_IPPROTO_TCP ? 20 + g->tcp_opts : 8;
    uint32_t seg = th_len + g->payload;
    uint8_t *ip = f + 14, *th;
    uint32_t ip_len;

    fill_random(r, f, 12);
    f[0] &= ~1;                 /* unicast */
    if (g->version == 4) {
        uint32_t ihl = 20 + g->ip_opts;

        stn_be_p(f + 12, 2, 0x0800);
        memset(ip, 0, 20);
        ip[0] = 0x40 | ihl / 4;
        stn_be_p(ip + 2, 2, ihl + seg);
        fill_random(r, ip + 4, 2);
        ip[6] = 0x40;           /* DF */
        ip[8] = 64;
        ip[9] = g->proto;
        fill_random(r, ip + 12, 8);
        memset(ip + 20, 1, g->ip_opts);     /* NOPs */
        stn_be_p(ip + 10, 2, ip_header_checksum(ip, ihl));
        ip_len = ihl;
    } else {
        stn_be_p(f + 12, 2, 0x86dd);
        stn_be_p(ip, 4, 0x60000000u | (g_rand_int(r) & 0xfffff));
        stn_be_p(ip + 4, 2, seg);
        ip[6] = g->proto;
        ip[7] = 64;
        fill_random(r, ip + 8, 32);
        ip_len = 40;
    }
    th = ip + ip_len;
    fill_random(r, th, th_len);
    if (g->proto == INET_IPPROTO_TCP) {
        th[12] = (th_len / 4) << 4;
        th[13] = g->tcp_flags;
        th[16] = th[17] = 0;
        memset(th + 20, 1, g->tcp_opts);
    } else {
        stn_be_p(th + 4, 2, seg);
        th[6] = th[7] = 0;
    }
    fill_random(r, th + th_len, g->payload + g->pad);
    return 14 + ip_len + seg + g->pad;
}

static Gen random_gen(GRand *r)
{
    Gen g = {
        .version = g_rand_boolean(r) ? 4 : 6,
        .proto = g_rand_boolean(r) ? INET_IPPROTO_TCP : INET_IPPROTO_UDP,
        .pad = g_rand_int_range(r, 0, 4) ? 0 : g_rand_int_range(r, 1, 47),
        .tcp_flags = g_rand_int(r),
    };
    uint32_t max;

    if (g.version == 4) {
        g.ip_opts = 4 * g_rand_int_range(r, 0, g_rand_int_range(r, 0, 3) ?
                                                1 : 11);
    }
    if (g.proto == INET_IPPROTO_TCP) {
        g.tcp_opts = 4 * g_rand_int_range(r, 0, 11);
    }
    /* The IP datagram, or IPv6's payload, within 65535 bytes. */
    max = 65535 - (g.version == 4 ? 20 + g.ip_opts : 0) -
          (g.proto == INET_IPPROTO_TCP ? 20 + g.tcp_opts : 8);
    g.payload = g_rand_int_range(r, 0, 10) ? g_rand_int_range(r, 0, 1501)
                                           : g_rand_int_range(r, 1501,
                                                              max + 1);
    return g;
}

/* One generated frame through both sides: the same segment found, the
 * same checksum filled, each one's accepted by the other, a partial one
 * completed to it, a corrupted one refused by both. */
static void check_generated(GRand *r, const Gen *gen, uint8_t *f,
                            uint8_t *d)
{
    size_t len = gen_frame(r, f, gen);
    uint16_t completed = 0, field;
    InetL4 gl4;
    LlanL4 dl4;
    size_t at;

    g_assert_true(both_find(f, len, &gl4, &dl4));
    g_assert_cmphex(inet_l4_partial_field(f, &gl4), ==,
                    llan_pseudo_sum(f, &dl4));
    memcpy(d, f, len);
    inet_l4_csum_fill(f, &gl4);
    llan_fill_l4_csum(d, &dl4);
    g_assert_cmpmem(f, len, d, len);
    g_assert_true(inet_l4_csum_ok(f, &gl4));
    g_assert_cmpint(llan_rx_csum(f, &dl4, &completed), ==,
                    LLAN_RX_CSUM_GOOD);

    field = ldn_be_p(f + gl4.csum_at, 2);
    stn_be_p(d + gl4.csum_at, 2, inet_l4_partial_field(f, &gl4));
    g_assert_cmpint(llan_rx_csum(d, &dl4, &completed), ==,
                    LLAN_RX_CSUM_PARTIAL);
    g_assert_true(same_sum(completed, field));

    if (!gen->payload) {
        return;
    }
    at = gl4.l4 + gl4.l4_len - 1 - g_rand_int_range(r, 0, gen->payload);
    f[at] ^= 1 << g_rand_int_range(r, 0, 8);
    g_assert_false(inet_l4_csum_ok(f, &gl4));
    g_assert_cmpint(llan_rx_csum(f, &dl4, &completed), !=,
                    LLAN_RX_CSUM_GOOD);
}

static void test_generated(void)
{
    static uint8_t f[FRAME_MAX], d[FRAME_MAX];
    g_autoptr(GRand) r = g_rand_new_with_seed(6);

    for (unsigned i = 0; i < 4000; i++) {
        Gen gen = random_gen(r);

        check_generated(r, &gen, f, d);
    }
}

/* Every odd and even length of a short segment, both protocols, both
 * IP versions: the odd last byte is where a sum goes wrong. */
static void test_every_short_length(void)
{
    static uint8_t f[FRAME_MAX], d[FRAME_MAX];
    g_autoptr(GRand) r = g_rand_new_with_seed(61);

    for (uint32_t payload = 0; payload < 200; payload++) {
        for (int v = 4; v <= 6; v += 2) {
            Gen tcp = { .version = v, .proto = INET_IPPROTO_TCP,
                        .payload = payload, .tcp_flags = 0x10 };
            Gen udp = { .version = v, .proto = INET_IPPROTO_UDP,
                        .payload = payload };

            check_generated(r, &tcp, f, d);
            check_generated(r, &udp, f, d);
        }
    }
}

/* A UDP/IPv4 checksum of 0 means none was sent; one that computes to 0
 * goes as 0xffff, from either side. */
static void test_udp_zero(void)
{
    static uint8_t f[FRAME_MAX];
    g_autoptr(GRand) r = g_rand_new_with_seed(0);
    Gen gen = { .version = 4, .proto = INET_IPPROTO_UDP, .payload = 20 };
    size_t len = gen_frame(r, f, &gen);
    uint16_t completed;
    uint32_t word;
    InetL4 gl4;
    LlanL4 dl4;

    g_assert_true(both_find(f, len, &gl4, &dl4));
    g_assert_true(inet_l4_csum_ok(f, &gl4));
    g_assert_cmpint(llan_rx_csum(f, &dl4, &completed), ==,
                    LLAN_RX_CSUM_GOOD);
    /* The checksum added into the first payload word: the sum without
     * the field then folds to all ones, and the checksum to 0. */
    inet_l4_csum_fill(f, &gl4);
    word = ldn_be_p(f + gl4.l4 + 8, 2) + ldn_be_p(f + gl4.csum_at, 2);
    stn_be_p(f + gl4.l4 + 8, 2, word > 0xffff ? word - 0xffff : word);
    inet_l4_csum_fill(f, &gl4);
    g_assert_cmphex(ldn_be_p(f + gl4.csum_at, 2), ==, 0xffff);
    llan_fill_l4_csum(f, &dl4);
    g_assert_cmphex(ldn_be_p(f + gl4.csum_at, 2), ==, 0xffff);
    g_assert_true(inet_l4_csum_ok(f, &gl4));
}

/* Frames neither reads a segment from: a VLAN tag (neither side reads
 * one), an IPv4 fragment, an IPv6 extension header, lengths that lie. */
static void test_refused_alike(void)
{
    static uint8_t f[FRAME_MAX];
    g_autoptr(GRand) r = g_rand_new_with_seed(8021);
    Gen gen = { .version = 4, .proto = INET_IPPROTO_TCP, .payload = 100 };
    InetL4 gl4;
    LlanL4 dl4;
    size_t len;

    len = gen_frame(r, f, &gen);
    memmove(f + 16, f + 12, len - 12);
    stn_be_p(f + 12, 2, 0x8100);
    g_assert_false(both_find(f, len + 4, &gl4, &dl4));

    len = gen_frame(r, f, &gen);
    f[14 + 6] |= 0x20;                  /* more fragments */
    g_assert_false(both_find(f, len, &gl4, &dl4));

    gen.version = 6;
    len = gen_frame(r, f, &gen);
    f[14 + 6] = 0;                      /* hop-by-hop options */
    g_assert_false(both_find(f, len, &gl4, &dl4));

    /* Every header byte of IPv4 and TCP, and UDP's length, set to each
     * of a few values: the two parse alike. */
    for (int v = 4; v <= 6; v += 2) {
        for (uint8_t proto = 6; proto <= 17; proto += 11) {
            Gen base = { .version = v, .proto = proto, .payload = 33 };

            for (size_t at = 14; at < 14 + 40 + 20; at++) {
                static const uint8_t values[] = { 0, 1, 0x45, 0x4f, 0x60,
                                                  0xf0, 0xff };

                for (size_t k = 0; k < G_N_ELEMENTS(values); k++) {
                    len = gen_frame(r, f, &base);
                    if (at < len) {
                        f[at] = values[k];
                        both_find(f, len, &gl4, &dl4);
                        both_find(f, at, &gl4, &dl4);
                    }
                }
            }
        }
    }
}

typedef struct Segments {
    GPtrArray *frames;      /* GBytes */
} Segments;

static void collect(void *opaque, const uint8_t *frame, uint32_t len)
{
    Segments *s = opaque;

    g_ptr_array_add(s->frames, g_bytes_new(frame, len));
}

/* Large sends cut by both into the same segments, each of which the
 * other side's check accepts. */
static void test_segmentation(void)
{
    static uint8_t f[FRAME_MAX], d[FRAME_MAX];
    g_autoptr(GRand) r = g_rand_new_with_seed(1624);

    for (unsigned i = 0; i < 200; i++) {
        Gen gen = random_gen(r);
        Segments gs = { g_ptr_array_new_with_free_func(
                            (GDestroyNotify)g_bytes_unref) };
        Segments ds = { g_ptr_array_new_with_free_func(
                            (GDestroyNotify)g_bytes_unref) };
        uint32_t mss = g_rand_int_range(r, 1, 9001);
        size_t len;
        InetL4 gl4;
        LlanL4 dl4;

        gen.proto = INET_IPPROTO_TCP;
        gen.tcp_opts = 0;
        gen.pad = 0;
        gen.payload = g_rand_int_range(r, 1, 60001);
        gen.tcp_flags = 0x10 | (g_rand_int(r) & 0x89);   /* CWR PSH FIN */
        len = gen_frame(r, f, &gen);
        memcpy(d, f, len);
        g_assert_true(both_find(f, len, &gl4, &dl4));
        g_assert_cmpuint(tcp_gso_segment(f, &gl4, mss, collect, &gs), ==,
                         llan_tso(d, &dl4, mss, collect, &ds));
        for (guint k = 0; k < gs.frames->len; k++) {
            gsize glen, dlen;
            const uint8_t *g = g_bytes_get_data(gs.frames->pdata[k], &glen);
            const uint8_t *dd = g_bytes_get_data(ds.frames->pdata[k], &dlen);
            uint16_t completed;
            LlanL4 seg;

            g_assert_cmpmem(g, glen, dd, dlen);
            g_assert_true(both_find(g, glen, &gl4, &seg));
            g_assert_true(inet_l4_csum_ok(g, &gl4));
            g_assert_cmpint(llan_rx_csum(g, &seg, &completed), ==,
                            LLAN_RX_CSUM_GOOD);
            if (gl4.ip_version == 4) {
                g_assert_cmphex(ip_header_checksum(g + 14, gl4.l4 - 14), ==,
                                0);
            }
        }
        g_ptr_array_unref(gs.frames);
        g_ptr_array_unref(ds.frames);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/guest-csum/captured", test_captured);
    g_test_add_func("/guest-csum/captured-padded", test_captured_padded);
    g_test_add_func("/guest-csum/sums", test_sums);
    g_test_add_func("/guest-csum/generated", test_generated);
    g_test_add_func("/guest-csum/every-short-length",
                    test_every_short_length);
    g_test_add_func("/guest-csum/udp-zero", test_udp_zero);
    g_test_add_func("/guest-csum/refused-alike", test_refused_alike);
    g_test_add_func("/guest-csum/segmentation", test_segmentation);
    return g_test_run();
}
