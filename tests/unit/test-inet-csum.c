/*
 * The Internet checksum over frames: the word-wide sum against a plain
 * 16-bit reference at every length and alignment, and the offload
 * helpers on TCP and UDP over IPv4 and IPv6, well-formed and not.
 */
#include "qemu/inet-csum.h"

#include <glib.h>
#include <string.h>

#define FRAME_MAX   2048

/* RFC 1071 as written: big-endian 16-bit words, the odd byte padded. */
static uint16_t reference_fold(const uint8_t *p, size_t len)
{
    uint64_t sum = 0;

    for (size_t i = 0; i < len; i += 2) {
        sum += (uint32_t)p[i] << 8 | (i + 1 < len ? p[i + 1] : 0);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return (uint16_t)sum;
}

static void test_sum_matches_reference(void)
{
    uint8_t buf[FRAME_MAX + 8];
    GRand *rand = g_rand_new_with_seed(1071);

    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = g_rand_int_range(rand, 0, 256);
    }
    for (size_t off = 0; off < 8; off++) {
        for (size_t len = 0; len <= 300; len++) {
            g_assert_cmphex(inet_csum_fold(inet_csum_add(0, buf + off, len)),
                            ==, reference_fold(buf + off, len));
        }
    }
    memset(buf, 0xff, sizeof(buf));
    g_assert_cmphex(inet_csum_fold(inet_csum_add(0, buf, FRAME_MAX)), ==,
                    reference_fold(buf, FRAME_MAX));
    g_rand_free(rand);
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v & 0xff;
}

/* An Ethernet frame with a TCP (or UDP) segment of @payload bytes. */
static size_t build(uint8_t *f, int version, uint8_t proto, size_t payload)
{
    size_t l3 = version == 4 ? 20 : 40, l4 = proto == 6 ? 20 : 8;
    uint8_t *ip = f + 14, *seg = ip + l3;

    memset(f, 0, FRAME_MAX);
    put16(f + 12, version == 4 ? 0x0800 : 0x86dd);
    if (version == 4) {
        ip[0] = 0x45;
        put16(ip + 2, l3 + l4 + payload);
        ip[8] = 64;
        ip[9] = proto;
        memcpy(ip + 12, (uint8_t[]){ 10, 0, 0, 1, 10, 0, 0, 2 }, 8);
    } else {
        ip[0] = 0x60;
        put16(ip + 4, l4 + payload);
        ip[6] = proto;
        ip[7] = 64;
        for (int i = 0; i < 32; i++) {
            ip[8 + i] = 0x20 + i;
        }
    }
    put16(seg, 40000);
    put16(seg + 2, 5201);
    if (proto == 6) {
        seg[12] = 5 << 4;
        seg[13] = 0x10;
    } else {
        put16(seg + 4, l4 + payload);
    }
    for (size_t i = 0; i < payload; i++) {
        seg[l4 + i] = (uint8_t)(i * 7 + 3);
    }
    return 14 + l3 + l4 + payload;
}

static void check_offloads(int version, uint8_t proto, size_t payload)
{
    uint8_t f[FRAME_MAX];
    size_t len = build(f, version, proto, payload);
    InetFrame p;

    g_assert_true(inet_frame_parse(f, len, &p));
    g_assert_cmpuint(p.ip_version, ==, version);
    g_assert_cmpuint(p.proto, ==, proto);
    inet_l4_csum_complete(f, &p);
    g_assert_true(inet_l4_csum_ok(f, &p));
    g_assert_false(inet_l4_csum_is_partial(f, &p));
    f[len - 1] ^= 0x40;
    g_assert_false(inet_l4_csum_ok(f, &p));
    inet_l4_csum_set_partial(f, &p);
    g_assert_true(inet_l4_csum_is_partial(f, &p));
    inet_l4_csum_complete(f, &p);
    g_assert_true(inet_l4_csum_ok(f, &p));
    inet_ip_csum_update(f, &p);
    if (version == 4) {
        g_assert_cmphex(reference_fold(f + 14, 20), ==, 0xffff);
    }
}

static void test_offloads(void)
{
    static const size_t payloads[] = { 0, 1, 2, 7, 1448, 1459 };

    for (size_t i = 0; i < G_N_ELEMENTS(payloads); i++) {
        check_offloads(4, 6, payloads[i]);
        check_offloads(6, 6, payloads[i]);
        check_offloads(4, 17, payloads[i]);
        check_offloads(6, 17, payloads[i]);
    }
}

static void test_parse_refuses(void)
{
    uint8_t f[FRAME_MAX];
    size_t len = build(f, 4, 6, 100);
    InetFrame p;

    g_assert_false(inet_frame_parse(f, 14 + 19, &p));
    f[14] = 0x44;                       /* IHL 4 */
    g_assert_false(inet_frame_parse(f, len, &p));
    len = build(f, 4, 6, 100);
    put16(f + 16, 2000);                /* total length past the frame */
    g_assert_false(inet_frame_parse(f, len, &p));
    len = build(f, 4, 6, 100);
    put16(f + 20, 0x2000);              /* more fragments */
    g_assert_false(inet_frame_parse(f, len, &p));
    len = build(f, 4, 6, 100);
    f[14 + 20 + 12] = 15 << 4;          /* TCP header past the segment */
    g_assert_false(inet_frame_parse(f, 14 + 20 + 40, &p));
    len = build(f, 6, 6, 100);
    f[14 + 6] = 0;                      /* hop-by-hop extension header */
    g_assert_false(inet_frame_parse(f, len, &p));
    len = build(f, 4, 1, 100);          /* ICMP */
    g_assert_false(inet_frame_parse(f, len, &p));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/inet-csum/sum", test_sum_matches_reference);
    g_test_add_func("/inet-csum/offloads", test_offloads);
    g_test_add_func("/inet-csum/parse-refuses", test_parse_refuses);
    return g_test_run();
}
