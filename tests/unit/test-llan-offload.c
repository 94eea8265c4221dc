/*
 * The checksum and segmentation functions of the logical LAN's offloads,
 * against a plain word-by-word checksum, at every length and alignment.
 */
#include "hw/net/llan_lro.h"
#include "hw/net/llan_offload.h"
#include "hw/net/llan_tso.h"
#include "qemu/bswap.h"

#include <glib.h>
#include <string.h>

static uint16_t slow_csum(const uint8_t *p, size_t n)
{
    uint32_t acc = 0;

    for (size_t i = 0; i + 1 < n; i += 2) {
        acc += p[i] << 8 | p[i + 1];
    }
    if (n & 1) {
        acc += p[n - 1] << 8;
    }
    while (acc >> 16) {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    return acc;
}

/* Zero and 0xFFFF are the same sum in ones' complement. */
static bool same_sum(uint16_t a, uint16_t b)
{
    return a == b || (a % 0xFFFF == 0 && b % 0xFFFF == 0);
}

static void test_csum_matches(void)
{
    static uint8_t buf[4096 + 8];
    GRand *rand = g_rand_new_with_seed(16);

    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = g_rand_int(rand);
    }
    for (size_t off = 0; off < 8; off++) {
        for (size_t len = 0; len <= 300; len++) {
            g_assert_true(same_sum(llan_csum(buf + off, len),
                                   slow_csum(buf + off, len)));
        }
        g_assert_true(same_sum(llan_csum(buf + off, 4096),
                               slow_csum(buf + off, 4096)));
    }
    memset(buf, 0xFF, sizeof(buf));
    g_assert_true(same_sum(llan_csum(buf, 4096), slow_csum(buf, 4096)));
    g_rand_free(rand);
}

/* How fast the receive check runs over a 64 KiB frame's worth. */
static void test_csum_speed(void)
{
    static uint8_t buf[65536];
    const unsigned rounds = 4000;
    gint64 t0 = g_get_monotonic_time();
    uint16_t sink = 0;
    double secs;

    memset(buf, 0x5a, sizeof(buf));
    for (unsigned i = 0; i < rounds; i++) {
        buf[i % sizeof(buf)] = i;
        sink ^= llan_csum(buf, sizeof(buf));
    }
    secs = (g_get_monotonic_time() - t0) / 1e6;
    g_test_message("llan_csum: %.1f GB/s (%u)", rounds * 65536.0 / secs / 1e9,
                   sink);
}

/* An IPv4 frame: IHL 5, then @proto, with @l4_len bytes of L4. */
static uint32_t ipv4_frame(uint8_t *f, uint8_t proto, uint32_t l4_len)
{
    memset(f, 0, 34);
    f[12] = 0x08;
    f[14] = 0x45;
    f[16] = (20 + l4_len) >> 8;
    f[17] = 20 + l4_len;
    f[23] = proto;
    f[26] = 10, f[29] = 1, f[30] = 10, f[33] = 2;
    return 34 + l4_len;
}

static void test_find_l4_refuses(void)
{
    uint8_t f[200] = { 0 };
    LlanOffloadError why;
    LlanL4 l4;
    uint32_t len = ipv4_frame(f, 6, 100);

    f[46] = 0x50;
    g_assert_true(llan_find_l4(f, len, &l4, &why));
    g_assert_cmpuint(l4.l4, ==, 34);
    g_assert_cmpuint(l4.l4_len, ==, 100);
    g_assert_cmpuint(l4.csum_at, ==, 50);
    g_assert_false(llan_find_l4(f, 13, &l4, &why));
    g_assert_cmpint(why, ==, LLAN_OFFLOAD_TRUNCATED);
    g_assert_false(llan_find_l4(f, 33, &l4, &why));
    g_assert_cmpint(why, ==, LLAN_OFFLOAD_TRUNCATED);
    g_assert_false(llan_find_l4(f, len - 1, &l4, &why));
    g_assert_cmpint(why, ==, LLAN_OFFLOAD_BAD_LENGTH);
    f[14] = 0x44;
    g_assert_false(llan_find_l4(f, len, &l4, &why));
    g_assert_cmpint(why, ==, LLAN_OFFLOAD_BAD_IHL);
    f[14] = 0x4F;   /* 60 bytes of header in a 120-byte packet: fine... */
    g_assert_false(llan_find_l4(f, len, &l4, &why));
    /* ...but the TCP data offset then lands in the payload's zeros. */
    g_assert_cmpint(why, ==, LLAN_OFFLOAD_BAD_LENGTH);
    f[14] = 0x45;
    f[46] = 0x40;   /* data offset 16 */
    g_assert_false(llan_find_l4(f, len, &l4, &why));
    g_assert_cmpint(why, ==, LLAN_OFFLOAD_BAD_LENGTH);
    len = ipv4_frame(f, 17, 7);
    g_assert_false(llan_find_l4(f, len, &l4, &why));
    g_assert_cmpint(why, ==, LLAN_OFFLOAD_BAD_LENGTH);
}

/*
 * A partial checksum is the pseudo-header sum in the field of a segment
 * that does not verify: completed, it verifies.  A field that holds the
 * pseudo-header sum of a segment that does verify (one in 65536 good
 * checksums) is not partial; nor is any other field.
 */
static void test_rx_csum_partial(void)
{
    static uint8_t f[1514];
    LlanOffloadError why;
    uint16_t completed, good, x;
    uint32_t len = ipv4_frame(f, 17, 1480);
    const unsigned rounds = 200000;
    gint64 t0;
    unsigned hits = 0;
    LlanL4 l4;

    f[35] = 53, f[37] = 53, f[38] = 1480 >> 8, f[39] = 1480 & 0xFF;
    for (uint32_t i = 42; i < len; i++) {
        f[i] = i * 7;
    }
    g_assert_true(llan_find_l4(f, len, &l4, &why));
    llan_fill_l4_csum(f, &l4);
    good = ldn_be_p(f + l4.csum_at, 2);
    g_assert_false(llan_rx_csum_partial(f, &l4, &completed));
    stn_be_p(f + l4.csum_at, 2, llan_pseudo_sum(f, &l4));
    g_assert_true(llan_rx_csum_partial(f, &l4, &completed));
    g_assert_cmphex(completed, ==, good);
    /* The pseudo-header sum that is also a good checksum. */
    stn_be_p(f + 42, 2, 0);
    x = ~llan_csum_add(llan_pseudo_sum(f, &l4), llan_csum(f + 34, 1480));
    stn_be_p(f + 42, 2, x);
    g_assert_false(llan_rx_csum_partial(f, &l4, &completed));
    /* What a frame that is not partial costs the check. */
    stn_be_p(f + 42, 2, x + 1);
    llan_fill_l4_csum(f, &l4);
    t0 = g_get_monotonic_time();
    for (unsigned i = 0; i < rounds; i++) {
        f[60] = i;
        hits += llan_find_l4(f, len, &l4, &why) &&
                llan_rx_csum_partial(f, &l4, &completed);
    }
    g_assert_cmpuint(hits, ==, 0);
    g_test_message("partial check of a 1514-byte frame that is not: %.1f ns",
                   (g_get_monotonic_time() - t0) * 1000.0 / rounds);
}

static void count_segment(void *opaque, const uint8_t *frame, uint32_t len)
{
    (void)frame;
    *(uint32_t *)opaque += len;
}

/* MSS 1 over a frame of 1000 payload bytes: 1000 segments, in place. */
static void test_tso_tiny_mss(void)
{
    static uint8_t f[2000];
    LlanOffloadError why;
    uint32_t bytes = 0;
    LlanL4 l4;
    uint32_t len = ipv4_frame(f, 6, 1020);

    f[46] = 0x50;
    g_assert_true(llan_find_l4(f, len, &l4, &why));
    g_assert_cmpuint(llan_tso(f, &l4, 1, count_segment, &bytes), ==, 1000);
    g_assert_cmpuint(bytes, ==, 1000 * 55);
}

/*
 * A segment whose IPv4 header checksum is wrong never joins a merge: the
 * merged frame would carry a fresh checksum and hide the damage, where
 * the guest's stack drops the segment as it came.
 */
static void test_lro_bad_ipv4_header_csum(void)
{
    uint8_t f[200];
    LlanOffloadError why;
    LlanLroSeg seg;
    LlanL4 l4;
    uint32_t len = ipv4_frame(f, LLAN_IPPROTO_TCP, 120);

    f[22] = 64;                     /* TTL */
    f[46] = 0x50;                   /* data offset 20 */
    f[47] = 0x10;                   /* ACK */
    llan_ipv4_fill_csum(f + LLAN_ETH_HLEN);
    g_assert_true(llan_find_l4(f, len, &l4, &why));
    g_assert_true(llan_lro_segment(f, len, &l4, &seg));
    g_assert_cmpuint(seg.payload, ==, 100);
    f[24] ^= 0x01;
    g_assert_false(llan_lro_segment(f, len, &l4, &seg));
}

/*
 * The device lets a TCP field that holds the pseudo-header sum wait for
 * the sum over its segment, since such a field is never bad: true for a
 * partial field and for one that is also a good checksum (which only the
 * sum tells apart), false for a good or a bad field.
 */
static void test_rx_csum_field_is_pseudo(void)
{
    static uint8_t f[1514];
    LlanOffloadError why;
    uint16_t completed, pseudo, x;
    uint32_t len = ipv4_frame(f, LLAN_IPPROTO_TCP, 1480);
    LlanL4 l4;

    f[46] = 0x50;                   /* data offset 20 */
    f[47] = 0x10;                   /* ACK */
    for (uint32_t i = 54; i < len; i++) {
        f[i] = i * 7;
    }
    g_assert_true(llan_find_l4(f, len, &l4, &why));
    pseudo = llan_pseudo_sum(f, &l4);
    llan_fill_l4_csum(f, &l4);
    g_assert_false(llan_rx_csum_field_is_pseudo(f, &l4));
    stn_be_p(f + l4.csum_at, 2, ldn_be_p(f + l4.csum_at, 2) ^ 0x0100);
    g_assert_cmpint(llan_rx_csum(f, &l4, &completed), ==, LLAN_RX_CSUM_BAD);
    g_assert_false(llan_rx_csum_field_is_pseudo(f, &l4));
    stn_be_p(f + l4.csum_at, 2, pseudo);
    g_assert_true(llan_rx_csum_field_is_pseudo(f, &l4));
    g_assert_cmpint(llan_rx_csum(f, &l4, &completed), ==,
                    LLAN_RX_CSUM_PARTIAL);
    /* The payload's last two bytes chosen so that the pseudo-header sum
     * in the field also verifies. */
    stn_be_p(f + len - 2, 2, 0);
    x = ~llan_csum_add(pseudo, llan_csum(f + l4.l4, l4.l4_len));
    stn_be_p(f + len - 2, 2, x);
    g_assert_true(llan_rx_csum_field_is_pseudo(f, &l4));
    g_assert_cmpint(llan_rx_csum(f, &l4, &completed), ==, LLAN_RX_CSUM_GOOD);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/llan-offload/csum-matches", test_csum_matches);
    g_test_add_func("/llan-offload/csum-speed", test_csum_speed);
    g_test_add_func("/llan-offload/find-l4-refuses", test_find_l4_refuses);
    g_test_add_func("/llan-offload/rx-csum-partial", test_rx_csum_partial);
    g_test_add_func("/llan-offload/rx-csum-field-is-pseudo",
                    test_rx_csum_field_is_pseudo);
    g_test_add_func("/llan-offload/tso-tiny-mss", test_tso_tiny_mss);
    g_test_add_func("/llan-offload/lro-bad-ipv4-header-csum",
                    test_lro_bad_ipv4_header_csum);
    return g_test_run();
}
