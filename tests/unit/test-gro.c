/*
 * The guest's GRO and ibmveth's transmit offloads: in-order segments of
 * a flow become one GSO packet whose payload is theirs byte for byte;
 * what Linux would not merge is not; a checksum GRO computes itself is
 * checked; and the BD flags and MSS a stack's unfinished packet gets.
 */
#include "guest/gro.h"
#include "guest/ibmveth-xmit.h"
#include "guest/ibmveth.h"
#include "hw/net/llan_offload.h"
#include "qemu/bswap.h"

#include <glib.h>
#include <string.h>

#define MSS         1448
#define HDRS        (14 + 20 + 32)  /* TCP with the timestamp option */
#define SEG_MAX     (HDRS + MSS)

typedef struct Captured {
    GPtrArray *packets;     /* GByteArray: the vnet header, then data */
} Captured;

static void capture(void *opaque, const struct iovec *iov, int iovcnt)
{
    Captured *c = opaque;
    GByteArray *b = g_byte_array_new();

    for (int i = 0; i < iovcnt; i++) {
        g_byte_array_append(b, iov[i].iov_base, iov[i].iov_len);
    }
    g_ptr_array_add(c->packets, b);
}

/* Segment @n of a flow: payload bytes are their offset in the stream. */
static uint32_t segment(uint8_t *f, int n, uint32_t payload, uint8_t flags,
                        uint16_t sport)
{
    uint8_t *ip = f + 14, *th = ip + 20;
    LlanOffloadError why;
    LlanL4 l4;

    memset(f, 0, SEG_MAX);
    memcpy(f, "\x52\x54\x00\x12\x34\x56\x02\x00\x00\x00\x00\x01\x08\x00",
           14);
    ip[0] = 0x45;
    stn_be_p(ip + 2, 2, 20 + 32 + payload);
    stn_be_p(ip + 4, 2, 100 + n);
    ip[6] = 0x40;                       /* DF */
    ip[8] = 64;
    ip[9] = 6;
    memcpy(ip + 12, "\x0a\x4d\x00\x01\x0a\x4d\x00\x02", 8);
    llan_ipv4_fill_csum(ip);
    stn_be_p(th, 2, sport);
    stn_be_p(th + 2, 2, 5201);
    stn_be_p(th + 4, 4, 1000 + n * MSS);
    stn_be_p(th + 8, 4, 77);
    th[12] = 8 << 4;
    th[13] = 0x10 | flags;
    stn_be_p(th + 14, 2, 512);
    memcpy(th + 20, "\x01\x01\x08\x0a\x00\x00\x00\x05\x00\x00\x00\x09", 12);
    for (uint32_t i = 0; i < payload; i++) {
        th[32 + i] = (uint8_t)(n * MSS + i);
    }
    g_assert_true(llan_find_l4(f, HDRS + payload, &l4, &why));
    llan_fill_l4_csum(f, &l4);
    return HDRS + payload;
}

static void test_merges_in_order(void)
{
    Captured c = { g_ptr_array_new_with_free_func(
                       (GDestroyNotify)g_byte_array_unref) };
    Gro *gro = gro_new(capture, &c);
    uint8_t f[10][SEG_MAX];
    uint32_t len[10];
    struct virtio_net_hdr vnet;
    GByteArray *p;
    GroStats st;
    LlanOffloadError why;
    LlanL4 l4;

    for (int i = 0; i < 10; i++) {
        len[i] = segment(f[i], i, MSS, 0, 40000);
        g_assert_true(gro_receive(gro, f[i], len[i], GRO_CSUM_NONE, 0));
    }
    g_assert_cmpuint(c.packets->len, ==, 0);
    gro_flush(gro);
    g_assert_cmpuint(c.packets->len, ==, 1);
    p = c.packets->pdata[0];
    memcpy(&vnet, p->data, sizeof(vnet));
    g_assert_cmpuint(vnet.gso_type, ==, VIRTIO_NET_HDR_GSO_TCPV4);
    g_assert_cmpuint(vnet.gso_size, ==, MSS);
    g_assert_cmpuint(vnet.hdr_len, ==, HDRS);
    g_assert_cmpuint(vnet.flags, ==, VIRTIO_NET_HDR_F_NEEDS_CSUM);
    g_assert_cmpuint(vnet.csum_start, ==, 34);
    g_assert_cmpuint(vnet.csum_offset, ==, 16);
    g_assert_cmpuint(p->len, ==, sizeof(vnet) + HDRS + 10 * MSS);
    for (uint32_t i = 0; i < 10 * MSS; i++) {
        g_assert_cmpuint(p->data[sizeof(vnet) + HDRS + i], ==, (uint8_t)i);
    }
    g_assert_true(llan_find_l4(p->data + sizeof(vnet), p->len - sizeof(vnet),
                               &l4, &why));
    g_assert_cmpuint(l4.l4_len, ==, 32 + 10 * MSS);
    g_assert_cmphex(llan_csum(p->data + sizeof(vnet) + 14, 20), ==, 0xffff);
    g_assert_cmphex(ldn_be_p(p->data + sizeof(vnet) + l4.csum_at, 2), ==,
                    llan_pseudo_sum(p->data + sizeof(vnet), &l4));
    gro_get_stats(gro, &st);
    g_assert_cmpuint(st.merged, ==, 9);
    g_assert_cmpuint(st.packets, ==, 1);
    g_assert_cmpuint(st.csum_checked, ==, 10);
    gro_free(gro);
    g_ptr_array_unref(c.packets);
}

/* Each case: the segment after the first that must not join it. */
static void test_breaks(void)
{
    static const struct {
        const char *what;
        int n;
        uint8_t flags;
        uint16_t sport;
        bool corrupt;
        unsigned packets;   /* after both and a flush */
    } cases[] = {
        { "in order", 1, 0, 40000, false, 1 },
        { "sequence gap", 2, 0, 40000, false, 2 },
        { "another flow", 1, 0, 40001, false, 2 },
        { "bad checksum", 1, 0, 40000, true, 1 },
        { "SYN", 1, 0x02, 40000, false, 1 },
    };

    for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
        Captured c = { g_ptr_array_new_with_free_func(
                           (GDestroyNotify)g_byte_array_unref) };
        Gro *gro = gro_new(capture, &c);
        uint8_t a[SEG_MAX], b[SEG_MAX];
        uint32_t alen = segment(a, 0, MSS, 0, 40000);
        uint32_t blen = segment(b, cases[k].n, MSS, cases[k].flags,
                                cases[k].sport);
        bool taken;

        if (cases[k].corrupt) {
            b[blen - 1] ^= 1;
        }
        g_test_message("%s", cases[k].what);
        g_assert_true(gro_receive(gro, a, alen, GRO_CSUM_NONE, 0));
        taken = gro_receive(gro, b, blen, GRO_CSUM_NONE, 0);
        /* What GRO refuses went out behind what it held: order kept. */
        g_assert_cmpuint(taken, ==, !cases[k].corrupt && !cases[k].flags);
        if (!taken) {
            g_assert_cmpuint(c.packets->len, ==, 1);
        }
        gro_flush(gro);
        g_assert_cmpuint(c.packets->len, ==, cases[k].packets);
        gro_free(gro);
        g_ptr_array_unref(c.packets);
    }
}

/* A PSH or a short segment ends the packet at once; a large receive
 * goes out alone with the device's MSS. */
static void test_ends(void)
{
    Captured c = { g_ptr_array_new_with_free_func(
                       (GDestroyNotify)g_byte_array_unref) };
    Gro *gro = gro_new(capture, &c);
    uint8_t f[3][SEG_MAX];
    struct virtio_net_hdr vnet;

    gro_receive(gro, f[0], segment(f[0], 0, MSS, 0, 40000),
                GRO_CSUM_UNNECESSARY, 0);
    gro_receive(gro, f[1], segment(f[1], 1, MSS, 0x08, 40000),
                GRO_CSUM_UNNECESSARY, 0);
    g_assert_cmpuint(c.packets->len, ==, 1);
    gro_receive(gro, f[0], segment(f[0], 2, MSS, 0, 40000),
                GRO_CSUM_UNNECESSARY, 0);
    gro_receive(gro, f[1], segment(f[1], 3, 100, 0, 40000),
                GRO_CSUM_UNNECESSARY, 0);
    g_assert_cmpuint(c.packets->len, ==, 2);
    memcpy(&vnet, ((GByteArray *)c.packets->pdata[1])->data, sizeof(vnet));
    g_assert_cmpuint(vnet.gso_type, ==, VIRTIO_NET_HDR_GSO_TCPV4);
    g_assert_cmpuint(((GByteArray *)c.packets->pdata[1])->len, ==,
                     sizeof(vnet) + HDRS + MSS + 100);
    /* A lone segment is no GSO packet. */
    gro_receive(gro, f[2], segment(f[2], 4, MSS, 0, 40000),
                GRO_CSUM_UNNECESSARY, 0);
    gro_flush(gro);
    memcpy(&vnet, ((GByteArray *)c.packets->pdata[2])->data, sizeof(vnet));
    g_assert_cmpuint(vnet.gso_type, ==, VIRTIO_NET_HDR_GSO_NONE);
    gro_receive(gro, f[0], segment(f[0], 0, MSS, 0, 40000),
                GRO_CSUM_UNNECESSARY, 724);
    g_assert_cmpuint(c.packets->len, ==, 4);
    memcpy(&vnet, ((GByteArray *)c.packets->pdata[3])->data, sizeof(vnet));
    g_assert_cmpuint(vnet.gso_type, ==, VIRTIO_NET_HDR_GSO_TCPV4);
    g_assert_cmpuint(vnet.gso_size, ==, 724);
    g_assert_false(gro_receive(gro, f[0], 30, GRO_CSUM_NONE, 0));
    gro_free(gro);
    g_ptr_array_unref(c.packets);
}

/* A segment GRO does not merge but whose checksum the NIC vouched for
 * (a SYN, a pure ACK whose field the sender left to an offload) goes out
 * alone, still trusted. */
static void test_trusted_alone(void)
{
    Captured c = { g_ptr_array_new_with_free_func(
                       (GDestroyNotify)g_byte_array_unref) };
    Gro *gro = gro_new(capture, &c);
    uint8_t f[SEG_MAX];
    uint32_t len = segment(f, 0, 0, 0x02, 40000);
    struct virtio_net_hdr vnet;
    GByteArray *p;

    stn_be_p(f + 14 + 20 + 16, 2, 0);
    g_assert_true(gro_receive(gro, f, len, GRO_CSUM_UNNECESSARY, 0));
    g_assert_cmpuint(c.packets->len, ==, 1);
    p = c.packets->pdata[0];
    memcpy(&vnet, p->data, sizeof(vnet));
    g_assert_cmpuint(vnet.flags, ==, VIRTIO_NET_HDR_F_NEEDS_CSUM);
    g_assert_cmpuint(vnet.gso_type, ==, VIRTIO_NET_HDR_GSO_NONE);
    g_assert_cmpuint(p->len, ==, sizeof(vnet) + len);
    g_assert_cmphex(ldn_be_p(p->data + sizeof(vnet) + 14 + 20 + 16, 2), !=, 0);
    gro_free(gro);
    g_ptr_array_unref(c.packets);
}

static void test_xmit(void)
{
    uint8_t f[SEG_MAX];
    uint32_t len = segment(f, 0, MSS, 0, 40000);
    struct virtio_net_hdr vnet = {
        .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .csum_start = 34,
        .csum_offset = 16,
    };
    IbmvethXmit x;
    LlanOffloadError why;
    LlanL4 l4;

    g_assert_true(llan_find_l4(f, len, &l4, &why));
    stn_be_p(f + l4.csum_at, 2, llan_pseudo_sum(f, &l4));
    /* Checksum offload in force: zeroed and flagged for the device. */
    g_assert_cmpint(ibmveth_xmit_prepare(&vnet, f, len, true, true, &x), ==,
                    IBMVETH_XMIT_OK);
    g_assert_cmphex(x.bd_flags, ==, IBMVETH_BD_NO_CSUM | IBMVETH_BD_CSUM_GOOD);
    g_assert_cmphex(ldn_be_p(f + l4.csum_at, 2), ==, 0);
    /* Not in force: completed in software. */
    stn_be_p(f + l4.csum_at, 2, llan_pseudo_sum(f, &l4));
    g_assert_cmpint(ibmveth_xmit_prepare(&vnet, f, len, false, false, &x),
                    ==, IBMVETH_XMIT_OK);
    g_assert_cmphex(x.bd_flags, ==, 0);
    g_assert_cmpint(llan_rx_csum(f, &l4, &(uint16_t){ 0 }), ==,
                    LLAN_RX_CSUM_GOOD);
    /* A large segment: LRG_SND and its MSS, only with large send. */
    vnet.gso_type = VIRTIO_NET_HDR_GSO_TCPV4;
    vnet.gso_size = 724;
    g_assert_cmpint(ibmveth_xmit_prepare(&vnet, f, len, true, true, &x), ==,
                    IBMVETH_XMIT_OK);
    g_assert_cmphex(x.bd_flags & IBMVETH_BD_LRG_SND, !=, 0);
    g_assert_cmpuint(x.mss, ==, 724);
    g_assert_cmpint(ibmveth_xmit_prepare(&vnet, f, len, true, false, &x), ==,
                    IBMVETH_XMIT_NO_TSO);
    /* Offsets outside the frame. */
    vnet.csum_start = len;
    g_assert_cmpint(ibmveth_xmit_prepare(&vnet, f, len, true, true, &x), ==,
                    IBMVETH_XMIT_BAD_HEADER);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/gro/merges-in-order", test_merges_in_order);
    g_test_add_func("/gro/breaks", test_breaks);
    g_test_add_func("/gro/ends", test_ends);
    g_test_add_func("/gro/trusted-alone", test_trusted_alone);
    g_test_add_func("/ibmveth-xmit/prepare", test_xmit);
    return g_test_run();
}
