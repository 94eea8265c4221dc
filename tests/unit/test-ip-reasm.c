/*
 * The guest's IPv4 reassembly model: the loss measured with ping -s 65507
 * when every frame lands in a 64 KiB buffer and none with pools; Linux's
 * rules for order, duplicates, overlaps and lengths; expiry; hostile
 * frames; and the truesize ibmveth charges.
 */
#include "guest/ip-checksum.h"
#include "guest/ip-reasm.h"
#include "guest/skb-truesize.h"
#include "qemu/bswap.h"

#include <glib.h>
#include <stdbool.h>
#include <string.h>

#define ETH_HLEN        14
#define IP_HLEN         20
#define MS              1000000ull
#define SEC             1000000000ull
#define PAGE_64K        65536
#define FRAG_PAYLOAD    1480    /* a 1500-byte MTU less the IP header */
#define PING_IP_LEN     65535   /* ping -s 65507: 20 + 8 + 65507 */
#define PINGS           50
#define PING_FRAGMENTS  45
#define BIG_TRUESIZE    131328  /* any frame in a 64 KiB buffer */
#define IP_DF           0x4000
#define IP_MF           0x2000

static uint16_t checksum(const uint8_t *p, size_t len)
{
    uint32_t sum = 0;

    for (size_t i = 0; i + 1 < len; i += 2) {
        sum += ldn_be_p(p + i, 2);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum & 0xffff;
}

static void set_checksum(uint8_t *ip, size_t hlen)
{
    stn_be_p(ip + 10, 2, 0);
    stn_be_p(ip + 10, 2, checksum(ip, hlen));
}

/* An Ethernet frame holding an ICMP echo request of @ip_len bytes whose
 * payload differs with @id.  Lengths above 65535 only serve as a source
 * of fragments: the length field keeps the low 16 bits. */
static GByteArray *datagram(uint16_t id, uint32_t ip_len, uint16_t frag_off)
{
    static const uint8_t macs[12] = {
        0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef,
    };
    GByteArray *d = g_byte_array_new();
    uint8_t *ip;

    g_byte_array_set_size(d, ETH_HLEN + ip_len);
    memset(d->data, 0, d->len);
    memcpy(d->data, macs, sizeof(macs));
    stn_be_p(d->data + 12, 2, 0x0800);
    ip = d->data + ETH_HLEN;
    ip[0] = 0x45;
    stn_be_p(ip + 2, 2, ip_len);
    stn_be_p(ip + 4, 2, id);
    stn_be_p(ip + 6, 2, frag_off);
    ip[8] = 64;
    ip[9] = 1;
    stn_be_p(ip + 12, 4, 0x0a000001);
    stn_be_p(ip + 16, 4, 0x0a000002);
    set_checksum(ip, IP_HLEN);
    ip[IP_HLEN] = 8;
    for (uint32_t i = IP_HLEN + 8; i < ip_len; i++) {
        ip[i] = (i * 7 + id) & 0xff;
    }
    return d;
}

/* The fragment of @dg carrying its payload bytes [@off, @off + @n). */
static GByteArray *make_frag(const GByteArray *dg, uint32_t off, uint32_t n,
                             bool more)
{
    GByteArray *f = g_byte_array_new();
    uint8_t *ip;

    g_byte_array_append(f, dg->data, ETH_HLEN + IP_HLEN);
    g_byte_array_append(f, dg->data + ETH_HLEN + IP_HLEN + off, n);
    ip = f->data + ETH_HLEN;
    stn_be_p(ip + 2, 2, IP_HLEN + n);
    stn_be_p(ip + 6, 2, (ldn_be_p(ip + 6, 2) & IP_DF) |
                        (more ? IP_MF : 0) | off / 8);
    set_checksum(ip, IP_HLEN);
    return f;
}

/* @dg cut as Linux's ip_fragment() cuts it, @chunk payload bytes each. */
static GPtrArray *fragment(const GByteArray *dg, uint32_t chunk)
{
    uint32_t payload = dg->len - ETH_HLEN - IP_HLEN;
    GPtrArray *frames =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_byte_array_unref);

    for (uint32_t off = 0; off < payload; off += chunk) {
        uint32_t n = MIN(chunk, payload - off);

        g_ptr_array_add(frames, make_frag(dg, off, n, off + n < payload));
    }
    return frames;
}

/* Hands in an exact-size copy, so that ASan sees any read past the end
 * (an empty frame is NULL). */
static IpReasmResult input(IpReasm *r, const GByteArray *f, uint32_t truesize,
                           uint64_t now)
{
    g_autofree uint8_t *copy = f->len ? g_malloc(f->len) : NULL;

    if (copy) {
        memcpy(copy, f->data, f->len);
    }
    return ip_reasm_input(r, copy, f->len, truesize, now);
}

static IpReasmResult input_nth(IpReasm *r, GPtrArray *frames, guint i,
                               uint64_t now)
{
    return input(r, g_ptr_array_index(frames, i), 2816, now);
}

static void assert_datagram(IpReasm *r, const GByteArray *dg)
{
    size_t len;
    const uint8_t *got = ip_reasm_datagram(r, &len);

    g_assert_nonnull(got);
    g_assert_cmpmem(got, len, dg->data, dg->len);
    g_assert_cmphex(checksum(got + ETH_HLEN, IP_HLEN), ==, 0);
}

static IpReasmStats stats_of(IpReasm *r)
{
    IpReasmStats s;

    ip_reasm_stats(r, &s);
    return s;
}

/* RFC 1071 a byte pair at a time, as ip_header_checksum once was. */
static uint16_t bytewise_checksum(const uint8_t *p, size_t len)
{
    uint32_t sum = 0;

    for (size_t i = 0; i + 1 < len; i += 2) {
        sum += (uint32_t)p[i] << 8 | p[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum & 0xffff;
}

/* Every even length an IPv4 header (or a caller) may have, at every
 * alignment, random and extreme bytes; a filled-in header then checks
 * as 0. */
static void test_header_checksum(void)
{
    uint8_t buf[64 + 8];
    GRand *rand = g_rand_new_with_seed(1071);

    for (unsigned round = 0; round < 200; round++) {
        for (size_t i = 0; i < sizeof(buf); i++) {
            buf[i] = round == 0 ? 0 : round == 1 ? 0xff : g_rand_int(rand);
        }
        for (size_t off = 0; off < 8; off++) {
            for (size_t len = 0; len <= 60; len += 2) {
                g_assert_cmphex(ip_header_checksum(buf + off, len), ==,
                                bytewise_checksum(buf + off, len));
            }
        }
        buf[1 + 10] = buf[1 + 11] = 0;
        stn_be_p(buf + 1 + 10, 2, ip_header_checksum(buf + 1, 20));
        g_assert_cmphex(ip_header_checksum(buf + 1, 20), ==, 0);
    }
    g_rand_free(rand);
}

static void test_truesize(void)
{
    const uint32_t pages[] = { 4096, PAGE_64K };

    for (size_t i = 0; i < G_N_ELEMENTS(pages); i++) {
        /* Copied out below rx_copybreak: a kmalloc-1k head, any buffer. */
        g_assert_cmpuint(ibmveth_rx_truesize(64, 512, pages[i]), ==, 1280);
        g_assert_cmpuint(ibmveth_rx_truesize(64, 2048, pages[i]), ==, 1280);
        g_assert_cmpuint(ibmveth_rx_truesize(64, 65536, pages[i]), ==, 1280);
        g_assert_cmpuint(ibmveth_rx_truesize(127, 65536, pages[i]), ==, 1280);
        g_assert_cmpuint(ibmveth_rx_truesize(128, 65536, pages[i]), ==,
                         BIG_TRUESIZE);
        /* 2048 + 128 + 384 from the page-fragment cache. */
        g_assert_cmpuint(ibmveth_rx_truesize(1514, 2048, pages[i]), ==, 2816);
        /* 65536 + 128 + 384 is kmalloc'd: 128 KiB. */
        g_assert_cmpuint(ibmveth_rx_truesize(1514, 65536, pages[i]), ==,
                         BIG_TRUESIZE);
        /* 512 + 128 is still a small head, 513 + 128 is not. */
        g_assert_cmpuint(ibmveth_rx_truesize(429, 512, pages[i]), ==, 1280);
        g_assert_cmpuint(ibmveth_rx_truesize(429, 513, pages[i]), ==, 1408);
    }
    /* Where the page size matters: a 16 KiB buffer fits a 64 KiB page. */
    g_assert_cmpuint(ibmveth_rx_truesize(1514, 16384, PAGE_64K), ==, 17152);
    g_assert_cmpuint(ibmveth_rx_truesize(1514, 16384, 4096), ==, 33024);
}

/* The measurement: pools off, 50 pings 0.2 s apart, every fragment in a
 * 64 KiB buffer.  The 32nd fragment takes memory over 4 MiB; from then on
 * every fragment is refused until the one queue expires. */
static void test_reference_pools_off(void)
{
    IpReasm *r = ip_reasm_new(IP_REASM_HIGH_THRESH, IP_REASM_TIMEOUT_NS);
    IpReasmStats s;

    for (int ping = 0; ping < PINGS; ping++) {
        g_autoptr(GByteArray) dg = datagram(ping + 1, PING_IP_LEN, 0);
        g_autoptr(GPtrArray) frames = fragment(dg, FRAG_PAYLOAD);

        g_assert_cmpuint(frames->len, ==, PING_FRAGMENTS);
        for (guint i = 0; i < frames->len; i++) {
            GByteArray *f = g_ptr_array_index(frames, i);
            uint32_t ts = ibmveth_rx_truesize(f->len, 65536, PAGE_64K);
            bool accepted = ping == 0 && i < 32;

            g_assert_cmpuint(ts, ==, BIG_TRUESIZE);
            g_assert_cmpint(input(r, f, ts, ping * 200 * MS), ==,
                            accepted ? IP_REASM_HELD : IP_REASM_REFUSED);
        }
    }
    s = stats_of(r);
    g_assert_cmpuint(s.fragments, ==, PINGS * PING_FRAGMENTS);
    g_assert_cmpuint(s.fragments_refused, ==, 2218);
    g_assert_cmpuint(s.fragments - s.fragments_refused, ==, 32);
    g_assert_cmpuint(s.datagrams_ok, ==, 0);
    g_assert_cmpuint(s.datagrams_failed, ==, 0);
    g_assert_cmpuint(s.mem_bytes, ==, 32 * BIG_TRUESIZE +
                                      IP_REASM_QUEUE_CHARGE);
    g_assert_cmpuint(s.mem_bytes, >, IP_REASM_HIGH_THRESH);
    g_assert_cmpuint(s.mem_peak_bytes, ==, s.mem_bytes);
    g_assert_cmpuint(ip_reasm_next_expiry(r), ==, 30 * SEC);

    ip_reasm_expire(r, 30 * SEC - 1);
    g_assert_cmpuint(stats_of(r).mem_bytes, >, IP_REASM_HIGH_THRESH);
    ip_reasm_expire(r, 30 * SEC);
    s = stats_of(r);
    g_assert_cmpuint(s.mem_bytes, ==, 0);
    g_assert_cmpuint(s.timeouts, ==, 1);
    g_assert_cmpuint(s.datagrams_failed, ==, 1);
    g_assert_cmpuint(s.fragments_dropped, ==, 32);
    g_assert_cmpuint(ip_reasm_next_expiry(r), ==, UINT64_MAX);
    ip_reasm_free(r);
}

/* Pools on: 2 KiB buffers, and a 512-byte one for the 429-byte tail. */
static void test_reference_pools_on(void)
{
    IpReasm *r = ip_reasm_new(IP_REASM_HIGH_THRESH, IP_REASM_TIMEOUT_NS);
    IpReasmStats s;

    for (int ping = 0; ping < PINGS; ping++) {
        g_autoptr(GByteArray) dg = datagram(ping + 1, PING_IP_LEN, 0);
        g_autoptr(GPtrArray) frames = fragment(dg, FRAG_PAYLOAD);

        for (guint i = 0; i < frames->len; i++) {
            GByteArray *f = g_ptr_array_index(frames, i);
            uint32_t buf = f->len <= 512 - 8 ? 512 : 2048;
            bool last = i + 1 == frames->len;

            g_assert_cmpint(input(r, f, ibmveth_rx_truesize(f->len, buf,
                                                            PAGE_64K),
                                  ping * 200 * MS), ==,
                            last ? IP_REASM_COMPLETE : IP_REASM_HELD);
        }
        assert_datagram(r, dg);
        g_assert_cmpuint(stats_of(r).mem_bytes, ==, 0);
    }
    s = stats_of(r);
    g_assert_cmpuint(s.datagrams_ok, ==, PINGS);
    g_assert_cmpuint(s.fragments_refused, ==, 0);
    g_assert_cmpuint(s.fragments_reassembled, ==, PINGS * PING_FRAGMENTS);
    g_assert_cmpuint(s.mem_peak_bytes, ==,
                     IP_REASM_QUEUE_CHARGE + 44 * 2816 + 1280);
    g_assert_cmpuint(ip_reasm_next_expiry(r), ==, UINT64_MAX);
    ip_reasm_free(r);
}

static void test_out_of_order(void)
{
    IpReasm *r = ip_reasm_new(IP_REASM_HIGH_THRESH, IP_REASM_TIMEOUT_NS);
    g_autoptr(GByteArray) dg = datagram(7, PING_IP_LEN, 0);
    g_autoptr(GPtrArray) frames = fragment(dg, FRAG_PAYLOAD);
    g_autoptr(GByteArray) small = datagram(8, IP_HLEN + 64, 0);
    g_autoptr(GPtrArray) pieces = fragment(small, 16);
    const guint order[] = { 3, 1, 0, 2 };

    for (guint i = frames->len; i-- > 1;) {
        g_assert_cmpint(input_nth(r, frames, i, 0), ==, IP_REASM_HELD);
    }
    g_assert_cmpint(input_nth(r, frames, 0, 0), ==, IP_REASM_COMPLETE);
    assert_datagram(r, dg);
    for (guint i = 0; i < G_N_ELEMENTS(order); i++) {
        g_assert_cmpint(input_nth(r, pieces, order[i], 0), ==,
                        i == 3 ? IP_REASM_COMPLETE : IP_REASM_HELD);
    }
    assert_datagram(r, small);
    g_assert_cmpuint(stats_of(r).mem_bytes, ==, 0);
    ip_reasm_free(r);
}

/* Datagrams apart only by source, protocol or id share nothing. */
static void test_interleaved(void)
{
    IpReasm *r = ip_reasm_new(IP_REASM_HIGH_THRESH, IP_REASM_TIMEOUT_NS);
    g_autoptr(GPtrArray) dgs =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_byte_array_unref);
    g_autoptr(GPtrArray) sets =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);

    for (int i = 0; i < 4; i++) {
        GByteArray *dg = datagram(i == 3 ? 2 : 1, IP_HLEN + 4000, 0);

        dg->data[ETH_HLEN + 15] += i == 1;  /* another source */
        dg->data[ETH_HLEN + 9] += i == 2;   /* another protocol */
        set_checksum(dg->data + ETH_HLEN, IP_HLEN);
        g_ptr_array_add(dgs, dg);
        g_ptr_array_add(sets, fragment(dg, FRAG_PAYLOAD));
    }
    for (guint n = 0; n < 3; n++) {
        for (guint i = 0; i < dgs->len; i++) {
            GPtrArray *frames = g_ptr_array_index(sets, i);

            g_assert_cmpint(input_nth(r, frames, n, n * MS), ==,
                            n == 2 ? IP_REASM_COMPLETE : IP_REASM_HELD);
            if (n == 2) {
                assert_datagram(r, g_ptr_array_index(dgs, i));
            }
        }
    }
    g_assert_cmpuint(stats_of(r).datagrams_ok, ==, 4);
    g_assert_cmpuint(stats_of(r).mem_bytes, ==, 0);
    ip_reasm_free(r);
}

/* A duplicate is dropped alone, and so is a fragment inside a run of
 * fragments that came in order, even one no single fragment holds. */
static void test_duplicate(void)
{
    IpReasm *r = ip_reasm_new(IP_REASM_HIGH_THRESH, IP_REASM_TIMEOUT_NS);
    g_autoptr(GByteArray) dg = datagram(9, IP_HLEN + 64, 0);
    g_autoptr(GPtrArray) pieces = fragment(dg, 16);
    g_autoptr(GByteArray) inside = make_frag(dg, 8, 16, true);
    IpReasmStats s;

    g_assert_cmpint(input_nth(r, pieces, 0, 0), ==, IP_REASM_HELD);
    g_assert_cmpint(input_nth(r, pieces, 0, 0), ==, IP_REASM_DROPPED);
    g_assert_cmpint(input_nth(r, pieces, 1, 0), ==, IP_REASM_HELD);
    g_assert_cmpint(input(r, inside, 2816, 0), ==, IP_REASM_DROPPED);
    s = stats_of(r);
    g_assert_cmpuint(s.fragments_dropped, ==, 2);
    g_assert_cmpuint(s.datagrams_failed, ==, 0);
    g_assert_cmpuint(s.mem_bytes, ==, IP_REASM_QUEUE_CHARGE + 2 * 2816);
    g_assert_cmpint(input_nth(r, pieces, 2, 0), ==, IP_REASM_HELD);
    g_assert_cmpint(input_nth(r, pieces, 3, 0), ==, IP_REASM_COMPLETE);
    assert_datagram(r, dg);
    ip_reasm_free(r);
}

/* Any other overlap fails the datagram, including a fragment spanning two
 * fragments that arrived out of order (two runs). */
static void test_overlap(void)
{
    IpReasm *r = ip_reasm_new(IP_REASM_HIGH_THRESH, IP_REASM_TIMEOUT_NS);
    g_autoptr(GByteArray) dg = datagram(10, IP_HLEN + 64, 0);
    g_autoptr(GPtrArray) pieces = fragment(dg, 16);
    g_autoptr(GByteArray) across = make_frag(dg, 8, 16, true);
    g_autoptr(GByteArray) past_tail = make_frag(dg, 8, 24, true);
    IpReasmStats s;

    g_assert_cmpint(input_nth(r, pieces, 0, 0), ==, IP_REASM_HELD);
    g_assert_cmpint(input(r, past_tail, 2816, 0), ==, IP_REASM_DROPPED);
    s = stats_of(r);
    g_assert_cmpuint(s.datagrams_failed, ==, 1);
    g_assert_cmpuint(s.fragments_dropped, ==, 2);
    g_assert_cmpuint(s.mem_bytes, ==, 0);

    g_assert_cmpint(input_nth(r, pieces, 1, 0), ==, IP_REASM_HELD);
    g_assert_cmpint(input_nth(r, pieces, 0, 0), ==, IP_REASM_HELD);
    g_assert_cmpint(input_nth(r, pieces, 3, 0), ==, IP_REASM_HELD);
    g_assert_cmpint(input(r, across, 2816, 0), ==, IP_REASM_DROPPED);
    s = stats_of(r);
    g_assert_cmpuint(s.datagrams_failed, ==, 2);
    g_assert_cmpuint(s.fragments_dropped, ==, 6);
    g_assert_cmpuint(s.mem_bytes, ==, 0);
    g_assert_cmpuint(ip_reasm_next_expiry(r), ==, UINT64_MAX);
    ip_reasm_free(r);
}

/* A datagram past 65535 bytes fails when it completes, as in Linux; 395
 * bytes in the last fragment is the most that fits. */
static void test_oversize(void)
{
    IpReasm *r = ip_reasm_new(IP_REASM_HIGH_THRESH, IP_REASM_TIMEOUT_NS);
    g_autoptr(GByteArray) src = datagram(11, PING_IP_LEN + 8, 0);
    g_autoptr(GPtrArray) frames = fragment(src, FRAG_PAYLOAD);
    IpReasmStats s;

    g_assert_cmpuint(frames->len, ==, PING_FRAGMENTS);
    for (guint i = 0; i + 1 < frames->len; i++) {
        g_assert_cmpint(input_nth(r, frames, i, 0), ==, IP_REASM_HELD);
    }
    g_assert_cmpint(input_nth(r, frames, frames->len - 1, 0), ==,
                    IP_REASM_DROPPED);
    s = stats_of(r);
    g_assert_cmpuint(s.datagrams_failed, ==, 1);
    g_assert_cmpuint(s.datagrams_ok, ==, 0);
    g_assert_cmpuint(s.fragments_dropped, ==, PING_FRAGMENTS);
    g_assert_cmpuint(s.mem_bytes, ==, 0);
    ip_reasm_free(r);
}

/* A second end, data past the end, and an MF fragment under 8 bytes each
 * fail the datagram. */
static void test_length_rules(void)
{
    IpReasm *r = ip_reasm_new(IP_REASM_HIGH_THRESH, IP_REASM_TIMEOUT_NS);
    g_autoptr(GByteArray) dg = datagram(12, IP_HLEN + 64, 0);
    g_autoptr(GByteArray) end_48 = make_frag(dg, 32, 16, false);
    g_autoptr(GByteArray) end_64 = make_frag(dg, 48, 16, false);
    g_autoptr(GByteArray) past = make_frag(dg, 48, 16, true);
    g_autoptr(GByteArray) tiny = make_frag(dg, 0, 7, true);
    g_autoptr(GByteArray) dup_end = make_frag(dg, 32, 16, false);

    g_assert_cmpint(input(r, end_48, 2816, 0), ==, IP_REASM_HELD);
    g_assert_cmpint(input(r, end_64, 2816, 0), ==, IP_REASM_DROPPED);
    g_assert_cmpint(input(r, end_48, 2816, 0), ==, IP_REASM_HELD);
    g_assert_cmpint(input(r, past, 2816, 0), ==, IP_REASM_DROPPED);
    g_assert_cmpint(input(r, end_48, 2816, 0), ==, IP_REASM_HELD);
    g_assert_cmpint(input(r, dup_end, 2816, 0), ==, IP_REASM_DROPPED);
    g_assert_cmpuint(stats_of(r).datagrams_failed, ==, 2);
    g_assert_cmpint(input(r, tiny, 2816, 0), ==, IP_REASM_DROPPED);
    g_assert_cmpuint(stats_of(r).datagrams_failed, ==, 3);
    g_assert_cmpuint(stats_of(r).fragments_dropped, ==, 7);
    g_assert_cmpuint(stats_of(r).mem_bytes, ==, 0);
    ip_reasm_free(r);
}

/* Non-IPv4 and unfragmented frames pass, padding and all; headers that
 * ip_rcv() rejects are bad. */
static void test_pass_and_bad(void)
{
    IpReasm *r = ip_reasm_new(IP_REASM_HIGH_THRESH, IP_REASM_TIMEOUT_NS);
    g_autoptr(GByteArray) plain = datagram(13, IP_HLEN + 8, IP_DF);
    g_autoptr(GByteArray) arp = datagram(13, IP_HLEN + 28, 0);
    g_autoptr(GByteArray) frag = make_frag(plain, 0, 8, true);
    size_t len;

    stn_be_p(arp->data + 12, 2, 0x0806);
    g_assert_cmpint(input(r, arp, 1280, 0), ==, IP_REASM_PASS);
    g_byte_array_set_size(plain, 60);
    memset(plain->data + ETH_HLEN + IP_HLEN + 8, 0, 60 - 42);
    g_assert_cmpint(input(r, plain, 1280, 0), ==, IP_REASM_PASS);
    g_assert_null(ip_reasm_datagram(r, &len));
    g_assert_cmpuint(len, ==, 0);

    frag->data[ETH_HLEN + 11] ^= 1;     /* checksum */
    g_assert_cmpint(input(r, frag, 1280, 0), ==, IP_REASM_BAD);
    frag->data[ETH_HLEN + 11] ^= 1;
    g_byte_array_set_size(frag, frag->len - 1);     /* truncated */
    g_assert_cmpint(input(r, frag, 1280, 0), ==, IP_REASM_BAD);
    g_byte_array_set_size(frag, 13);    /* not even Ethernet */
    g_assert_cmpint(input(r, frag, 1280, 0), ==, IP_REASM_BAD);
    g_assert_cmpuint(stats_of(r).bad, ==, 3);
    g_assert_cmpuint(stats_of(r).fragments, ==, 0);
    ip_reasm_free(r);
}

/* Timers run from a queue's first fragment, in creation order, and input
 * runs them; time never goes back. */
static void test_timeouts(void)
{
    IpReasm *r = ip_reasm_new(IP_REASM_HIGH_THRESH, IP_REASM_TIMEOUT_NS);
    g_autoptr(GByteArray) arp = datagram(0, IP_HLEN, 0);
    g_autoptr(GPtrArray) sets =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);

    stn_be_p(arp->data + 12, 2, 0x0806);
    for (int i = 0; i < 4; i++) {
        g_autoptr(GByteArray) dg = datagram(20 + i, IP_HLEN + 64, 0);

        g_ptr_array_add(sets, fragment(dg, 16));
    }
    g_assert_cmpuint(ip_reasm_next_expiry(r), ==, UINT64_MAX);
    for (guint i = 0; i < 3; i++) {
        input_nth(r, g_ptr_array_index(sets, i), 0, i * 5 * SEC);
    }
    g_assert_cmpuint(ip_reasm_next_expiry(r), ==, 30 * SEC);
    ip_reasm_expire(r, 30 * SEC);
    g_assert_cmpuint(ip_reasm_next_expiry(r), ==, 35 * SEC);
    /* More fragments do not restart a timer. */
    input_nth(r, g_ptr_array_index(sets, 1), 1, 20 * SEC);
    g_assert_cmpuint(ip_reasm_next_expiry(r), ==, 35 * SEC);
    g_assert_cmpint(input(r, arp, 1280, 36 * SEC), ==, IP_REASM_PASS);
    g_assert_cmpuint(ip_reasm_next_expiry(r), ==, 40 * SEC);
    /* An earlier time counts as 36 s. */
    input_nth(r, g_ptr_array_index(sets, 3), 0, 1 * SEC);
    ip_reasm_expire(r, 40 * SEC);
    g_assert_cmpuint(ip_reasm_next_expiry(r), ==, 66 * SEC);
    ip_reasm_expire(r, 66 * SEC);
    g_assert_cmpuint(stats_of(r).timeouts, ==, 4);
    g_assert_cmpuint(stats_of(r).datagrams_failed, ==, 4);
    g_assert_cmpuint(stats_of(r).fragments_dropped, ==, 5);
    g_assert_cmpuint(stats_of(r).mem_bytes, ==, 0);
    ip_reasm_free(r);
}

/* Without the memory limit in the way, the queue cap refuses new
 * datagrams but not more of the ones held; a truesize below the frame's
 * length is charged the length. */
static void test_queue_cap(void)
{
    IpReasm *r = ip_reasm_new(UINT64_MAX, IP_REASM_TIMEOUT_NS);
    g_autoptr(GByteArray) dg = datagram(0, IP_HLEN + 64, 0);
    g_autoptr(GByteArray) more = NULL;
    IpReasmStats s;

    for (uint32_t i = 0; i <= IP_REASM_MAX_QUEUES; i++) {
        g_autoptr(GByteArray) f = NULL;

        stn_be_p(dg->data + ETH_HLEN + 4, 2, i);
        f = make_frag(dg, 0, 16, true);
        g_assert_cmpint(input(r, f, 0, 0), ==, i < IP_REASM_MAX_QUEUES ?
                        IP_REASM_HELD : IP_REASM_REFUSED);
    }
    more = make_frag(dg, 16, 16, true);
    stn_be_p(more->data + ETH_HLEN + 4, 2, 5);
    set_checksum(more->data + ETH_HLEN, IP_HLEN);
    g_assert_cmpint(input(r, more, 0, 0), ==, IP_REASM_HELD);
    s = stats_of(r);
    g_assert_cmpuint(s.fragments_refused, ==, 1);
    g_assert_cmpuint(s.mem_bytes, ==, IP_REASM_MAX_QUEUES *
                     (IP_REASM_QUEUE_CHARGE + ETH_HLEN + IP_HLEN + 16) +
                     ETH_HLEN + IP_HLEN + 16);
    ip_reasm_free(r);
}

/* Memory exactly at the limit still admits a fragment; 0 admits none. */
static void test_threshold(void)
{
    IpReasm *r = ip_reasm_new(IP_REASM_QUEUE_CHARGE + 2 * 1000,
                              IP_REASM_TIMEOUT_NS);
    IpReasm *off = ip_reasm_new(0, IP_REASM_TIMEOUT_NS);
    g_autoptr(GByteArray) dg = datagram(1, IP_HLEN + 64, 0);
    g_autoptr(GPtrArray) pieces = fragment(dg, 16);

    for (guint i = 0; i < 3; i++) {
        g_assert_cmpint(input(r, g_ptr_array_index(pieces, i), 1000, 0), ==,
                        IP_REASM_HELD);
    }
    g_assert_cmpint(input(r, g_ptr_array_index(pieces, 3), 1000, 0), ==,
                    IP_REASM_REFUSED);
    g_assert_cmpint(input_nth(off, pieces, 0, 0), ==, IP_REASM_REFUSED);
    g_assert_cmpuint(stats_of(off).mem_bytes, ==, 0);
    ip_reasm_free(r);
    ip_reasm_free(off);
}

/* ORs @bits into IP header byte @at of frame @f, keeping it valid. */
static void or_ip_byte(GByteArray *f, guint at, uint8_t bits)
{
    f->data[ETH_HLEN + at] |= bits;
    set_checksum(f->data + ETH_HLEN, IP_HLEN);
}

static IpReasmResult input_all(IpReasm *r, GPtrArray *frames)
{
    IpReasmResult last = IP_REASM_PASS;

    for (guint i = 0; i < frames->len; i++) {
        last = input_nth(r, frames, i, 0);
    }
    return last;
}

/* The datagram keeps DF only if its largest fragment had it, and turns CE
 * if any ECN-capable fragment was; ECN-capable and not mixed fail it. */
static void test_ecn_and_df(void)
{
    IpReasm *r = ip_reasm_new(IP_REASM_HIGH_THRESH, IP_REASM_TIMEOUT_NS);
    g_autoptr(GByteArray) df = datagram(40, IP_HLEN + 60, IP_DF);
    g_autoptr(GByteArray) dg = datagram(41, IP_HLEN + 60, 0);
    g_autoptr(GPtrArray) all_df = fragment(df, 16);
    g_autoptr(GPtrArray) small_df = fragment(dg, 16);
    g_autoptr(GPtrArray) ce = fragment(dg, 16);
    g_autoptr(GPtrArray) mixed = fragment(dg, 16);
    size_t len;

    g_assert_cmpint(input_all(r, all_df), ==, IP_REASM_COMPLETE);
    assert_datagram(r, df);
    or_ip_byte(g_ptr_array_index(small_df, 3), 6, IP_DF >> 8);
    g_assert_cmpint(input_all(r, small_df), ==, IP_REASM_COMPLETE);
    assert_datagram(r, dg);

    for (guint i = 0; i < ce->len; i++) {
        or_ip_byte(g_ptr_array_index(ce, i), 1, i == 2 ? 3 : 2);
    }
    g_assert_cmpint(input_all(r, ce), ==, IP_REASM_COMPLETE);
    g_assert_cmphex(ip_reasm_datagram(r, &len)[ETH_HLEN + 1], ==, 3);

    or_ip_byte(g_ptr_array_index(mixed, 1), 1, 2);
    g_assert_cmpint(input_all(r, mixed), ==, IP_REASM_DROPPED);
    g_assert_cmpuint(stats_of(r).datagrams_failed, ==, 1);
    g_assert_cmpuint(stats_of(r).mem_bytes, ==, 0);
    ip_reasm_free(r);
}

/* A valid fragment of one of a few small datagrams, then maybe damaged:
 * a header byte, the length, the header length (each with the checksum
 * made right again, to get past it), a cut, or all random bytes. */
static GByteArray *fuzz_frame(GRand *rng, GPtrArray *dgs)
{
    const GByteArray *dg = g_ptr_array_index(dgs,
                                             g_rand_int_range(rng, 0, 3));
    uint32_t payload = dg->len - ETH_HLEN - IP_HLEN;
    uint32_t off = g_rand_int_range(rng, 0, payload / 8) * 8;
    uint32_t n = g_rand_int_range(rng, 1, payload - off + 1);
    GByteArray *f = make_frag(dg, off, n, g_rand_boolean(rng));
    uint8_t *ip = f->data + ETH_HLEN;

    switch (g_rand_int_range(rng, 0, 6)) {
    case 0:
        ip[g_rand_int_range(rng, 0, IP_HLEN)] = g_rand_int(rng);
        set_checksum(ip, IP_HLEN);
        break;
    case 1:
        stn_be_p(ip + 2, 2, g_rand_int(rng));
        set_checksum(ip, IP_HLEN);
        break;
    case 2:
        ip[0] = 0x40 | g_rand_int_range(rng, 0, 16);
        set_checksum(ip, MIN((ip[0] & 15) * 4u, f->len - ETH_HLEN));
        break;
    case 3:
        g_byte_array_set_size(f, g_rand_int_range(rng, 0, f->len));
        break;
    case 4:
        g_byte_array_set_size(f, g_rand_int_range(rng, 0, 200));
        for (guint i = 0; i < f->len; i++) {
            f->data[i] = g_rand_int(rng);
        }
        break;
    }
    return f;
}

static void test_garbage(void)
{
    IpReasm *r = ip_reasm_new(IP_REASM_HIGH_THRESH, IP_REASM_TIMEOUT_NS);
    g_autoptr(GRand) rng = g_rand_new_with_seed(20230512);
    g_autoptr(GPtrArray) dgs =
        g_ptr_array_new_with_free_func((GDestroyNotify)g_byte_array_unref);
    const uint32_t truesizes[] = { 1280, 2816, BIG_TRUESIZE };
    uint64_t now = 0, complete = 0;
    IpReasmStats s;

    for (int i = 0; i < 3; i++) {
        g_ptr_array_add(dgs, datagram(30 + i % 2, IP_HLEN + 48 + 40 * i, 0));
    }
    for (int i = 0; i < 10000; i++) {
        g_autoptr(GByteArray) f = fuzz_frame(rng, dgs);
        uint32_t ts = truesizes[g_rand_int_range(rng, 0, 3)];
        size_t len;

        now += g_rand_int_range(rng, 0, 20) * MS;
        if (input(r, f, ts, now) == IP_REASM_COMPLETE) {
            const uint8_t *d = ip_reasm_datagram(r, &len);

            g_assert_cmpuint(len, >=, ETH_HLEN + IP_HLEN);
            g_assert_cmphex(checksum(d + ETH_HLEN, (d[ETH_HLEN] & 15) * 4),
                            ==, 0);
            complete++;
        }
        g_assert_cmpuint(stats_of(r).mem_bytes, <=, IP_REASM_HIGH_THRESH +
                         IP_REASM_QUEUE_CHARGE + BIG_TRUESIZE);
    }
    ip_reasm_expire(r, now + IP_REASM_TIMEOUT_NS);
    s = stats_of(r);
    g_assert_cmpuint(s.mem_bytes, ==, 0);
    g_assert_cmpuint(s.datagrams_ok, ==, complete);
    g_assert_cmpuint(s.fragments, ==, s.fragments_refused +
                     s.fragments_dropped + s.fragments_reassembled);
    /* The frames reached every verdict. */
    g_assert_cmpuint(complete, >, 0);
    g_assert_cmpuint(s.bad, >, 0);
    g_assert_cmpuint(s.fragments_refused, >, 0);
    g_assert_cmpuint(s.datagrams_failed, >, s.timeouts);
    g_assert_cmpuint(s.timeouts, >, 0);
    ip_reasm_free(r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ip-reasm/header-checksum", test_header_checksum);
    g_test_add_func("/ip-reasm/truesize", test_truesize);
    g_test_add_func("/ip-reasm/reference-pools-off", test_reference_pools_off);
    g_test_add_func("/ip-reasm/reference-pools-on", test_reference_pools_on);
    g_test_add_func("/ip-reasm/out-of-order", test_out_of_order);
    g_test_add_func("/ip-reasm/interleaved", test_interleaved);
    g_test_add_func("/ip-reasm/duplicate", test_duplicate);
    g_test_add_func("/ip-reasm/overlap", test_overlap);
    g_test_add_func("/ip-reasm/oversize", test_oversize);
    g_test_add_func("/ip-reasm/length-rules", test_length_rules);
    g_test_add_func("/ip-reasm/pass-and-bad", test_pass_and_bad);
    g_test_add_func("/ip-reasm/timeouts", test_timeouts);
    g_test_add_func("/ip-reasm/queue-cap", test_queue_cap);
    g_test_add_func("/ip-reasm/threshold", test_threshold);
    g_test_add_func("/ip-reasm/ecn-and-df", test_ecn_and_df);
    g_test_add_func("/ip-reasm/garbage", test_garbage);
    return g_test_run();
}
