/*
 * spapr-vlan checksum offload and large send, driven as Linux's ibmveth
 * drives them: the H_ILLAN_ATTRIBUTES probe, H_SEND_LOGICAL_LAN with the
 * descriptor flags and the MSS in r12, and the receive queue's flags.
 * Frames are built and checked here with a checksum of the test's own,
 * on a unix dgram socket as the peer.
 */
#include "libqtest.h"
#include "libqos/ibmveth.h"
#include "libqos/rig.h"
#include "migration-helpers.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define ATTR_IPV4_CSUM      0x2ULL
#define ATTR_IPV6_CSUM      0x4ULL
#define ATTR_PADDED_CSUM    0x2000ULL
#define ATTR_LRG_SND        0x8000ULL
#define ATTR_LRG_SR         0x10000ULL
#define ATTR_MULTI_BUFF     0x40000ULL
#define ATTR_FIXED          (ATTR_MULTI_BUFF | ATTR_PADDED_CSUM | ATTR_LRG_SND)

#define BD_LRG_SND          0x0400000000000000ULL
#define BD_NO_CSUM          0x0200000000000000ULL
#define BD_CSUM_GOOD        0x0100000000000000ULL
#define RXQ_NO_CSUM         0x02
#define RXQ_CSUM_GOOD       0x01
#define RXQ_FLAGS           0x07

#define TCP_FIN             0x01
#define TCP_PSH             0x08
#define TCP_ACK             0x10
#define TCP_CWR             0x80

#define ATTR_SUB            "spapr_llan/illan_attributes"

static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };

/* The test's own checksum: 16-bit words, one at a time. */
static uint32_t sum_words(const uint8_t *p, size_t n, uint32_t acc)
{
    for (size_t i = 0; i + 1 < n; i += 2) {
        acc += p[i] << 8 | p[i + 1];
    }
    if (n & 1) {
        acc += p[n - 1] << 8;
    }
    return acc;
}

static uint16_t fold16(uint32_t acc)
{
    while (acc >> 16) {
        acc = (acc & 0xFFFF) + (acc >> 16);
    }
    return acc;
}

static uint16_t be16(const uint8_t *p)
{
    return p[0] << 8 | p[1];
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)be16(p) << 16 | be16(p + 2);
}

/* Where the L4 header of a test frame is, and how long it is. */
typedef struct Layers {
    bool v6;
    size_t l4, l4_len;
    uint8_t proto;
} Layers;

static Layers layers(const uint8_t *f)
{
    Layers l = { .v6 = be16(f + 12) == 0x86DD };

    if (l.v6) {
        l.l4 = 54;
        l.l4_len = be16(f + 18);
        l.proto = f[20];
    } else {
        l.l4 = 14 + (f[14] & 0xF) * 4;
        l.l4_len = be16(f + 16) - (f[14] & 0xF) * 4;
        l.proto = f[23];
    }
    return l;
}

static uint16_t pseudo(const uint8_t *f, const Layers *l)
{
    uint32_t acc = l->v6 ? sum_words(f + 22, 32, 0)
                         : sum_words(f + 26, 8, 0);

    return fold16(acc + l->proto + l->l4_len);
}

static bool l4_verifies(const uint8_t *f)
{
    Layers l = layers(f);

    return fold16(sum_words(f + l.l4, l.l4_len, pseudo(f, &l))) == 0xFFFF;
}

static uint16_t csum_field(const uint8_t *f)
{
    Layers l = layers(f);

    return be16(f + l.l4 + (l.proto == 6 ? 16 : 6));
}

static void set_csum_field(uint8_t *f, uint16_t v)
{
    Layers l = layers(f);

    put16(f + l.l4 + (l.proto == 6 ? 16 : 6), v);
}

static void fill_l4_csum(uint8_t *f)
{
    Layers l = layers(f);
    uint16_t c;

    set_csum_field(f, 0);
    c = ~fold16(sum_words(f + l.l4, l.l4_len, pseudo(f, &l)));
    set_csum_field(f, c);
}

static bool ip_verifies(const uint8_t *f)
{
    return fold16(sum_words(f + 14, (f[14] & 0xF) * 4, 0)) == 0xFFFF;
}

static uint8_t payload_byte(size_t i)
{
    return i * 13 + 7;
}

typedef struct FrameSpec {
    bool v6;
    bool udp;
    unsigned ip_opts;       /* IPv4 option bytes, a multiple of 4 */
    uint8_t flags;          /* TCP */
    size_t payload;
    size_t payload_off;     /* of the first byte in the stream */
    uint16_t sport;         /* 0: 40000 */
    bool partial;           /* the checksum left to an offload, as a local
                               sender on a veth leaves it */
    bool to_guest;          /* from the peer to the guest */
} FrameSpec;

/* A TCP (12 bytes of options) or UDP frame from us to the peer, with
 * correct IP and L4 checksums; returns its length. */
static size_t build(uint8_t *f, const FrameSpec *s)
{
    size_t l3 = s->v6 ? 40 : 20 + s->ip_opts;
    size_t l4h = s->udp ? 8 : 32;
    size_t len = 14 + l3 + l4h + s->payload;
    uint8_t *ip = f + 14, *l4 = f + 14 + l3;

    memset(f, 0, 14 + l3 + l4h);
    memcpy(f, s->to_guest ? qrig_mac : peer_mac, 6);
    memcpy(f + 6, s->to_guest ? peer_mac : qrig_mac, 6);
    if (s->v6) {
        put16(f + 12, 0x86DD);
        ip[0] = 0x60;
        put16(ip + 4, l4h + s->payload);
        ip[6] = s->udp ? 17 : 6;
        ip[7] = 64;
        ip[8] = 0xfe, ip[9] = 0x80, ip[23] = 1;
        ip[24] = 0xfe, ip[25] = 0x80, ip[39] = 2;
    } else {
        put16(f + 12, 0x0800);
        ip[0] = 0x40 | l3 / 4;
        put16(ip + 2, l3 + l4h + s->payload);
        put16(ip + 4, 0x1234);
        put16(ip + 6, 0x4000);
        ip[8] = 64;
        ip[9] = s->udp ? 17 : 6;
        ip[12] = 10, ip[15] = 1, ip[16] = 10, ip[19] = 2;
        memset(ip + 20, 1, s->ip_opts);     /* NOPs */
        put16(ip + 10, ~fold16(sum_words(ip, l3, 0)));
    }
    put16(l4, s->sport ? s->sport : 40000);
    put16(l4 + 2, 5001);
    if (s->udp) {
        put16(l4 + 4, l4h + s->payload);
    } else {
        uint32_t seq = 0x10203040 + s->payload_off;

        l4[4] = seq >> 24, l4[5] = seq >> 16, l4[6] = seq >> 8, l4[7] = seq;
        memset(l4 + 8, 0x11, 4);
        l4[12] = (l4h / 4) << 4;
        l4[13] = s->flags;
        put16(l4 + 14, 0xFFFF);
        /* NOP, NOP, timestamps */
        l4[20] = 1, l4[21] = 1, l4[22] = 8, l4[23] = 10;
        memset(l4 + 24, 0x5a, 8);
    }
    for (size_t i = 0; i < s->payload; i++) {
        f[14 + l3 + l4h + i] = payload_byte(s->payload_off + i);
    }
    fill_l4_csum(f);
    if (s->partial) {
        Layers l = layers(f);

        set_csum_field(f, pseudo(f, &l));
    }
    return len;
}

/* @f as the peer sends it to the guest: the device delivers only unicast
 * to the guest's MAC. */
static void address_to_guest(uint8_t *f)
{
    memcpy(f, qrig_mac, 6);
    memcpy(f + 6, peer_mac, 6);
}

static void rig_up(QRig *r, const char *nic)
{
    qrig_init(r);
    qrig_bind_peer(r);
    qrig_start(r, &(QRigOpts){ .mem = "512M", .nic = nic });
    qrig_open_guest(r, NULL);
}

/*
 * The same on a stream netdev, whose writes wait for room, so that a
 * large send's burst of segments all arrive: a unix dgram socket queues
 * only ten.  A frame from the test and its arrival in the guest say the
 * connection is up.
 */
static void rig_up_stream(QRig *r, const char *nic)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    struct timeval tv = { .tv_sec = QTEST_WAIT_S };
    g_autofree char *netdev = NULL;
    uint8_t hello[4 + 60] = { 0, 0, 0, 60 }, got[2048];

    qrig_init(r);
    netdev = g_strdup_printf("stream,id=n0,server=on,addr.type=unix,"
                             "addr.path=%s", r->dev_path);
    qrig_start(r, &(QRigOpts){ .mem = "512M", .netdev = netdev,
                               .nic = nic });
    qrig_open_guest(r, NULL);
    g_strlcpy(addr.sun_path, r->dev_path, sizeof(addr.sun_path));
    r->peer = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(connect(r->peer, (struct sockaddr *)&addr, sizeof(addr)),
                    ==, 0);
    setsockopt(r->peer, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    memcpy(hello + 4, qrig_mac, 6);
    g_assert_cmpint(write(r->peer, hello, sizeof(hello)), ==, sizeof(hello));
    qibmveth_wait_rx(r->guest, got, sizeof(got));
    qibmveth_replenish(r->guest);
}

static int64_t attributes(QTestState *qts, uint64_t reset, uint64_t set,
                          uint64_t *out)
{
    return qtest_hcall(qts, H_ILLAN_ATTRIBUTES, 3,
                       (uint64_t[]){ QRIG_UNIT, reset, set }, out, 1);
}

static uint64_t attrs_now(QTestState *qts)
{
    uint64_t a;

    g_assert_cmpint(attributes(qts, 0, 0, &a), ==, H_SUCCESS);
    return a;
}

/* Exactly Linux's ibmveth_probe, then its ibmveth_set_features, all on:
 * ibmveth_set_csum_offload and ibmveth_set_tso each read the attributes
 * again before they set theirs. */
static void linux_probe(QTestState *qts)
{
    uint64_t a;

    g_assert_cmphex(attrs_now(qts), ==, ATTR_FIXED);
    g_assert_cmphex(attrs_now(qts), ==, ATTR_FIXED);
    g_assert_cmpint(attributes(qts, 0, ATTR_IPV4_CSUM, &a), ==, H_SUCCESS);
    g_assert_cmphex(a, ==, ATTR_FIXED | ATTR_IPV4_CSUM);
    g_assert_cmpint(attributes(qts, 0, ATTR_IPV6_CSUM, &a), ==, H_SUCCESS);
    g_assert_cmphex(a, ==, ATTR_FIXED | ATTR_IPV4_CSUM | ATTR_IPV6_CSUM);
    g_assert_cmphex(attrs_now(qts), ==,
                    ATTR_FIXED | ATTR_IPV4_CSUM | ATTR_IPV6_CSUM);
    g_assert_cmpint(attributes(qts, 0, ATTR_LRG_SR, &a), ==, H_SUCCESS);
    g_assert_cmphex(a, ==, ATTR_FIXED | ATTR_IPV4_CSUM | ATTR_IPV6_CSUM |
                    ATTR_LRG_SR);
}

#define ALL_ON (ATTR_FIXED | ATTR_IPV4_CSUM | ATTR_IPV6_CSUM | ATTR_LRG_SR)

static void test_attributes(void)
{
    uint64_t a;
    QRig r;

    rig_up(&r, NULL);
    linux_probe(r.qts);
    /* ethtool -K tx off: the same bits in the reset mask. */
    g_assert_cmpint(attributes(r.qts, ATTR_IPV6_CSUM, 0, &a), ==, H_SUCCESS);
    g_assert_cmphex(a, ==, ALL_ON & ~ATTR_IPV6_CSUM);
    g_assert_cmpint(attributes(r.qts, 0, ATTR_IPV6_CSUM, &a), ==, H_SUCCESS);
    /* What the device has or lacks for good cannot change; nothing does. */
    g_assert_cmpint(attributes(r.qts, 0, 0x1, &a), ==, H_CONSTRAINED);
    g_assert_cmphex(a, ==, ALL_ON);
    g_assert_cmpint(attributes(r.qts, ATTR_PADDED_CSUM | ATTR_IPV4_CSUM, 0,
                               &a), ==, H_CONSTRAINED);
    g_assert_cmphex(a, ==, ALL_ON);
    g_assert_cmpint(attributes(r.qts, ATTR_MULTI_BUFF, 0, &a), ==,
                    H_CONSTRAINED);
    /* Setting what is already set is no change. */
    g_assert_cmpint(attributes(r.qts, 0, ATTR_LRG_SND, &a), ==, H_SUCCESS);
    g_assert_cmphex(a, ==, ALL_ON);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.attributes"), ==, ALL_ON);

    /* They outlive H_FREE_LOGICAL_LAN and a new H_REGISTER. */
    g_assert_cmpint(qibmveth_close(r.guest), ==, H_SUCCESS);
    r.guest = NULL;
    g_assert_cmphex(attrs_now(r.qts), ==, ALL_ON);
    qrig_open_guest(&r, NULL);
    g_assert_cmphex(attrs_now(r.qts), ==, ALL_ON);

    /* A system reset clears them. */
    g_assert_cmpint(qibmveth_close(r.guest), ==, H_SUCCESS);
    r.guest = NULL;
    json_object_unref(qmp_ok(r.qts, "{'execute': 'system_reset'}"));
    g_assert_cmphex(attrs_now(r.qts), ==, ATTR_FIXED);
    qrig_stop(&r);

    /* offloads=off: QEMU's answer, no such hcall. */
    rig_up(&r, ",offloads=off");
    g_assert_cmpint(attributes(r.qts, 0, 0, &a), ==, H_FUNCTION);
    g_assert_cmpint(attributes(r.qts, 0, ATTR_IPV4_CSUM, &a), ==,
                    H_FUNCTION);
    qrig_stop(&r);
}

static void read_exact(int fd, void *buf, size_t len)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = read(fd, (uint8_t *)buf + done, len - done);

        g_assert_cmpint(n, >, 0);
        done += n;
    }
}

/* The next frame the device sent, from the stream netdev. */
static size_t recv_frame(QRig *r, uint8_t *buf)
{
    uint8_t len_be[4];
    size_t len;

    read_exact(r->peer, len_be, 4);
    len = be32(len_be);
    g_assert_cmpuint(len, <=, 65536);
    read_exact(r->peer, buf, len);
    return len;
}

/* Sends @f as Linux sends a CHECKSUM_PARTIAL skb: the checksum field
 * zeroed, NO_CSUM | CSUM_GOOD; it must arrive whole with the checksum
 * filled. */
static void send_partial_and_check(QRig *r, const FrameSpec *spec)
{
    static uint8_t f[2048], got[65536];
    size_t len = build(f, spec);
    uint16_t want = csum_field(f);

    set_csum_field(f, 0);
    g_assert_cmpint(qrig_send_flagged(r, f, len, BD_NO_CSUM | BD_CSUM_GOOD, 0),
                    ==, H_SUCCESS);
    g_assert_cmpuint(recv_frame(r, got), ==, len);
    g_assert_true(l4_verifies(got));
    g_assert_cmphex(csum_field(got), ==, want);
    set_csum_field(got, 0);
    g_assert_cmpmem(got, len, f, len);
}

static void test_tx_csum(void)
{
    QRig r;

    rig_up_stream(&r, NULL);
    linux_probe(r.qts);
    send_partial_and_check(&r, &(FrameSpec){ .flags = TCP_ACK | TCP_PSH,
                                             .payload = 1000 });
    send_partial_and_check(&r, &(FrameSpec){ .ip_opts = 8, .flags = TCP_ACK,
                                             .payload = 333 });
    send_partial_and_check(&r, &(FrameSpec){ .v6 = true, .flags = TCP_ACK,
                                             .payload = 1201 });
    send_partial_and_check(&r, &(FrameSpec){ .udp = true, .payload = 77 });
    send_partial_and_check(&r, &(FrameSpec){ .v6 = true, .udp = true,
                                             .payload = 0 });
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.tx-csum-completed"), ==, 5);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.tx-frames"), ==, 5);
    qrig_stop(&r);
}

/* A large send must arrive as @nseg segments of @mss, each a valid frame
 * carrying its part of the payload. */
static void check_segments(QRig *r, const uint8_t *orig, const FrameSpec *s,
                           size_t mss, unsigned nseg)
{
    static uint8_t got[65536];
    Layers ol = layers(orig);
    size_t hdr = ol.l4 + 32, off = 0;
    uint32_t seq0 = be32(orig + ol.l4 + 4);

    for (unsigned i = 0; i < nseg; i++) {
        size_t len = recv_frame(r, got), seglen = MIN(mss, s->payload - off);
        bool last = i == nseg - 1;
        Layers l = layers(got);
        uint8_t flags = s->flags;

        g_assert_cmpuint(len, ==, hdr + seglen);
        g_assert_cmpuint(l.l4_len, ==, 32 + seglen);
        g_assert_true(l4_verifies(got));
        if (!s->v6) {
            g_assert_true(ip_verifies(got));
            g_assert_cmpuint(be16(got + 18), ==, be16(orig + 18) + i);
        }
        g_assert_cmpuint(be32(got + l.l4 + 4), ==, seq0 + off);
        flags &= last ? 0xFF : ~(TCP_FIN | TCP_PSH);
        flags &= i ? ~TCP_CWR : 0xFF;
        g_assert_cmphex(got[l.l4 + 13], ==, flags);
        /* Everything else in the headers is the original's. */
        g_assert_cmpmem(got, 14, orig, 14);
        g_assert_cmpmem(got + l.l4 + 20, 12, orig + ol.l4 + 20, 12);
        for (size_t j = 0; j < seglen; j++) {
            if (got[hdr + j] != payload_byte(off + j)) {
                g_error("segment %u byte %zu: %#x", i, j, got[hdr + j]);
            }
        }
        off += seglen;
    }
    g_assert_cmpuint(off, ==, s->payload);
}

static void test_tso(void)
{
    static uint8_t f[65536];
    FrameSpec v4 = { .flags = TCP_ACK | TCP_PSH | TCP_FIN | TCP_CWR,
                     .payload = 20000 };
    FrameSpec v6 = { .v6 = true, .flags = TCP_ACK | TCP_PSH,
                     .payload = 30000 };
    size_t len;
    QRig r;

    rig_up_stream(&r, NULL);
    linux_probe(r.qts);
    /* LRG_SND with the MSS in r12: 20,000 bytes are 14 segments. */
    len = build(f, &v4);
    set_csum_field(f, 0);
    g_assert_cmpint(qrig_send_flagged(&r, f, len, BD_LRG_SND | BD_NO_CSUM |
                                      BD_CSUM_GOOD, 1448), ==, H_SUCCESS);
    check_segments(&r, f, &v4, 1448, 14);
    len = build(f, &v6);
    set_csum_field(f, 0);
    g_assert_cmpint(qrig_send_flagged(&r, f, len, BD_LRG_SND | BD_NO_CSUM |
                                      BD_CSUM_GOOD, 1428), ==, H_SUCCESS);
    check_segments(&r, f, &v6, 1428, 22);
    /* Old large send: 0xFFFF in the IP checksum, the MSS in TCP's. */
    len = build(f, &v4);
    put16(f + 24, 0xFFFF);
    set_csum_field(f, 1448);
    g_assert_cmpint(qrig_send_flagged(&r, f, len, BD_NO_CSUM | BD_CSUM_GOOD, 0),
                    ==, H_SUCCESS);
    put16(f + 24, 0);
    check_segments(&r, f, &v4, 1448, 14);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.tx-segmented"), ==, 3);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.tx-segments"), ==, 50);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.tx-frames"), ==, 50);
    qrig_stop(&r);
}

/* The old large-send marking with no MSS: sent whole, but with a real
 * IP header checksum and a complete TCP one. */
static void send_old_marking_without_mss(QRig *r)
{
    static uint8_t f[4096], got[65536];
    size_t len = build(f, &(FrameSpec){ .flags = TCP_ACK, .payload = 2000 });

    put16(f + 24, 0xFFFF);
    set_csum_field(f, 0);
    g_assert_cmpint(qrig_send_flagged(r, f, len, BD_NO_CSUM, 0), ==, H_SUCCESS);
    g_assert_cmpuint(recv_frame(r, got), ==, len);
    g_assert_true(ip_verifies(got));
    g_assert_true(l4_verifies(got));
}

/* Frames the device cannot complete go out exactly as given, counted. */
static void test_tx_malformed(void)
{
    static uint8_t f[4096], got[65536];
    struct {
        const char *reason;
        size_t len;
        uint64_t flags, mss;
        void (*spoil)(uint8_t *f);
    } cases[] = {
        { "truncated", 30, BD_NO_CSUM, 0, NULL },
        { "bad-ihl", 200, BD_NO_CSUM, 0, NULL },
        { "bad-length", 200, BD_NO_CSUM, 0, NULL },
        { "not-ip", 200, BD_NO_CSUM, 0, NULL },
        { "fragment", 200, BD_NO_CSUM, 0, NULL },
        { "mss-zero", 3000, BD_NO_CSUM | BD_LRG_SND, 0, NULL },
        { "not-tcp", 3000, BD_NO_CSUM | BD_LRG_SND, 1000, NULL },
        { "not-tcp-udp", 200, BD_NO_CSUM, 0, NULL },
    };
    QRig r;

    rig_up_stream(&r, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        const char *why = cases[i].reason;
        bool udp = !strcmp(why, "not-tcp");
        size_t len = build(f, &(FrameSpec){ .udp = udp, .flags = TCP_ACK,
            .payload = cases[i].len > 66 ? cases[i].len - 66 : 0 });
        g_autofree char *path = g_strdup_printf(
            "nic.device.tx-offload-errors.%s", why);

        len = MIN(len, cases[i].len);
        if (!strcmp(why, "bad-ihl")) {
            f[14] = 0x44;
        } else if (!strcmp(why, "bad-length")) {
            put16(f + 16, 0xFFF0);
        } else if (!strcmp(why, "not-ip")) {
            put16(f + 12, 0x0806);
        } else if (!strcmp(why, "fragment")) {
            put16(f + 20, 0x2000);
        } else if (!strcmp(why, "not-tcp-udp")) {
            f[23] = 1;
        }
        g_assert_cmpint(qrig_send_flagged(&r, f, len, cases[i].flags,
                                          cases[i].mss), ==, H_SUCCESS);
        g_assert_cmpuint(recv_frame(&r, got), ==, len);
        g_assert_cmpmem(got, len, f, len);
        g_assert_cmpint(qrig_stat(r.qts, path), ==, 1);
    }
    send_old_marking_without_mss(&r);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.tx-offload-errors.mss-zero"),
                    ==, 2);
    /* TCP headers that lie about their own length. */
    build(f, &(FrameSpec){ .flags = TCP_ACK, .payload = 10 });
    f[46] = 0x10;   /* data offset 4 */
    g_assert_cmpint(qrig_send_flagged(&r, f, 76, BD_NO_CSUM, 0), ==, H_SUCCESS);
    g_assert_cmpuint(recv_frame(&r, got), ==, 76);
    f[46] = 0xF0;   /* 60 bytes, in a 42-byte segment */
    g_assert_cmpint(qrig_send_flagged(&r, f, 76, BD_NO_CSUM | BD_LRG_SND, 8),
                    ==, H_SUCCESS);
    g_assert_cmpuint(recv_frame(&r, got), ==, 76);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.tx-offload-errors."
                              "bad-length"), ==, 3);
    /* The three large sends that could not be split still got their
     * checksums. */
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.tx-csum-completed"), ==, 3);
    qrig_stop(&r);
}

/* Injects @f and returns the control byte's checksum flags of its entry;
 * the frame as the guest sees it is in @got. */
static uint8_t rx_flags(QRig *r, uint8_t *f, size_t len, uint8_t *got)
{
    IbmvethRxEntry e;

    address_to_guest(f);
    qrig_send(r, f, len);
    e = qibmveth_wait_rx(r->guest, got, 65536);
    g_assert_cmpuint(e.len, ==, len);
    qibmveth_replenish(r->guest);
    return e.control & RXQ_FLAGS;
}

static void test_rx_csum(void)
{
    static uint8_t f[2048], got[65536];
    FrameSpec tcp4 = { .flags = TCP_ACK, .payload = 999 };
    FrameSpec tcp6 = { .v6 = true, .flags = TCP_ACK, .payload = 1000 };
    FrameSpec udp4 = { .udp = true, .payload = 100 };
    size_t len;
    uint16_t want;
    QRig r;

    rig_up(&r, NULL);
    /* Off: no flags, nothing looked at. */
    len = build(f, &tcp4);
    g_assert_cmphex(rx_flags(&r, f, len, got), ==, 0);
    linux_probe(r.qts);
    g_assert_cmphex(rx_flags(&r, f, len, got), ==, RXQ_CSUM_GOOD);
    g_assert_cmpmem(got, len, f, len);
    len = build(f, &tcp6);
    g_assert_cmphex(rx_flags(&r, f, len, got), ==, RXQ_CSUM_GOOD);
    /* Bad: no flag, for the guest's stack to drop it. */
    f[len - 1] ^= 0x40;
    g_assert_cmphex(rx_flags(&r, f, len, got), ==, 0);
    /* Partial TCP, as a local Linux sender leaves it: NO_CSUM and the
     * field 0, so that Linux marks it CHECKSUM_PARTIAL. */
    len = build(f, &tcp4);
    set_csum_field(f, pseudo(f, &(Layers){ .l4_len = 32 + 999,
                                           .proto = 6 }));
    g_assert_cmphex(rx_flags(&r, f, len, got), ==,
                    RXQ_NO_CSUM | RXQ_CSUM_GOOD);
    g_assert_cmphex(csum_field(got), ==, 0);
    /* Partial UDP: completed. */
    len = build(f, &udp4);
    want = csum_field(f);
    set_csum_field(f, pseudo(f, &(Layers){ .l4_len = 108, .proto = 17 }));
    g_assert_cmphex(rx_flags(&r, f, len, got), ==, RXQ_CSUM_GOOD);
    g_assert_cmphex(csum_field(got), ==, want);
    g_assert_true(l4_verifies(got));
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-csum-good"), ==, 2);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-csum-partial"), ==, 2);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-csum-bad"), ==, 1);
    /* IPv6 off, IPv4 on: an IPv6 frame gets no flag. */
    g_assert_cmpint(attributes(r.qts, ATTR_IPV6_CSUM, 0, NULL), ==,
                    H_SUCCESS);
    len = build(f, &tcp6);
    g_assert_cmphex(rx_flags(&r, f, len, got), ==, 0);
    qrig_stop(&r);
}

/*
 * A partial checksum (only the pseudo-header sum, as a veth peer with tx
 * offload leaves it) reaching a guest that has no checksum offload for
 * the frame's IP version: Linux would drop every such segment, so the
 * device completes it, as PowerVM does, and flags nothing.  @f is a
 * frame of @spec; the guest's copy must verify and hold @want.
 */
static void expect_completed(QRig *r, uint8_t *f, const FrameSpec *spec)
{
    static uint8_t got[65536];
    FrameSpec partial = *spec;
    size_t len = build(f, &partial);
    uint16_t want = csum_field(f);

    partial.partial = true;
    g_assert_cmpuint(build(f, &partial), ==, len);
    g_assert_cmphex(csum_field(f), !=, want);
    g_assert_cmphex(rx_flags(r, f, len, got), ==, 0);
    g_assert_true(l4_verifies(got));
    g_assert_cmphex(csum_field(got), ==, want);
}

static void test_rx_partial_without_offload(void)
{
    static uint8_t f[2048], got[65536];
    FrameSpec tcp4 = { .flags = TCP_ACK, .payload = 999 };
    FrameSpec tcp6 = { .v6 = true, .flags = TCP_ACK, .payload = 1000 };
    FrameSpec udp4 = { .udp = true, .payload = 100 };
    FrameSpec udp6 = { .v6 = true, .udp = true, .payload = 101 };
    size_t len;
    QRig r;

    /* The guest never turned checksum offload on. */
    rig_up(&r, NULL);
    expect_completed(&r, f, &tcp4);
    expect_completed(&r, f, &tcp6);
    expect_completed(&r, f, &udp4);
    expect_completed(&r, f, &udp6);
    /* Good and bad checksums go as they are. */
    len = build(f, &tcp4);
    g_assert_cmphex(rx_flags(&r, f, len, got), ==, 0);
    g_assert_cmpmem(got, len, f, len);
    f[100] ^= 0x40;                     /* in the payload */
    g_assert_cmphex(rx_flags(&r, f, len, got), ==, 0);
    g_assert_cmpmem(got, len, f, len);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-csum-completed"), ==, 4);
    /* IPv4 on, IPv6 off (ethtool on one of them): IPv6 is completed. */
    linux_probe(r.qts);
    g_assert_cmpint(attributes(r.qts, ATTR_IPV6_CSUM, 0, NULL), ==,
                    H_SUCCESS);
    expect_completed(&r, f, &tcp6);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-csum-completed"), ==, 5);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-csum-partial"), ==, 0);
    qrig_stop(&r);

    /* offloads=off (QEMU's device, pseries-2.5): the same. */
    rig_up(&r, ",offloads=off");
    expect_completed(&r, f, &tcp4);
    expect_completed(&r, f, &udp6);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-csum-completed"), ==, 2);
    qrig_stop(&r);
}

/* Frames written to the stream netdev in one write: one receive batch. */
typedef struct Burst {
    uint8_t buf[32 * (4 + 1600)];
    size_t len;
    unsigned frames;
} Burst;

static void burst_add(Burst *b, const FrameSpec *spec)
{
    size_t len = build(b->buf + b->len + 4, spec);

    address_to_guest(b->buf + b->len + 4);

    b->buf[b->len] = len >> 24;
    b->buf[b->len + 1] = len >> 16;
    b->buf[b->len + 2] = len >> 8;
    b->buf[b->len + 3] = len;
    b->len += 4 + len;
    b->frames++;
}

static void burst_send(QRig *r, Burst *b)
{
    g_assert_cmpint(write(r->peer, b->buf, b->len), ==, b->len);
    b->len = 0;
    b->frames = 0;
}

/* @n segments of @mss from stream offset @from, flow @sport. */
static void burst_segments_partial(Burst *b, size_t from, unsigned n,
                                   size_t mss, uint16_t sport, bool partial)
{
    for (unsigned i = 0; i < n; i++) {
        burst_add(b, &(FrameSpec){ .flags = TCP_ACK, .payload = mss,
                                   .payload_off = from + i * mss,
                                   .sport = sport, .partial = partial });
    }
}

static void burst_segments(Burst *b, size_t from, unsigned n, size_t mss,
                           uint16_t sport)
{
    burst_segments_partial(b, from, n, mss, sport, false);
}

/* The next entry: its flags, length and, for a large packet, its MSS;
 * the frame goes to @got. */
static IbmvethRxEntry next_entry(QRig *r, uint8_t *got, uint64_t *mss)
{
    IbmvethRxEntry e = qibmveth_wait_rx(r->guest, got, 65536);

    *mss = (e.control & 0x04)
           ? qtest_readq(r->qts, qibmveth_rx_buffer_addr(r->guest, &e) + 8)
           : 0;
    return e;
}

/* A merged frame of @payload bytes from stream offset @from, whose first
 * segment carried @mss. */
static void expect_merged(QRig *r, size_t from, size_t payload, size_t mss)
{
    static uint8_t got[65536];
    uint64_t got_mss;
    IbmvethRxEntry e = next_entry(r, got, &got_mss);
    Layers l = layers(got);

    g_assert_cmphex(e.control & RXQ_FLAGS, ==, 0x04 | RXQ_NO_CSUM |
                    RXQ_CSUM_GOOD);
    g_assert_cmpuint(e.offset, ==, 16);
    g_assert_cmpuint(got_mss, ==, mss);
    g_assert_cmpuint(e.len, ==, 66 + payload);
    g_assert_cmpuint(l.l4_len, ==, 32 + payload);
    g_assert_true(ip_verifies(got));
    g_assert_cmpuint(be32(got + l.l4 + 4), ==, 0x10203040 + from);
    /* NO_CSUM: the field holds nothing, and Linux makes the packet
     * CHECKSUM_PARTIAL over it. */
    g_assert_cmphex(csum_field(got), ==, 0);
    for (size_t i = 0; i < payload; i++) {
        if (got[66 + i] != payload_byte(from + i)) {
            g_error("merged byte %zu: %#x", i, got[66 + i]);
        }
    }
    qibmveth_replenish(r->guest);
}

/* A segment delivered on its own, checksum verified. */
static void expect_single(QRig *r, size_t len)
{
    static uint8_t got[65536];
    uint64_t mss;
    IbmvethRxEntry e = next_entry(r, got, &mss);

    g_assert_cmphex(e.control & RXQ_FLAGS, ==, RXQ_CSUM_GOOD);
    g_assert_cmpuint(e.offset, ==, 8);
    g_assert_cmpuint(e.len, ==, len);
    qibmveth_replenish(r->guest);
}

/* Sends @f to the guest and returns its entry, the frame in @got and a
 * large packet's MSS in @mss. */
static IbmvethRxEntry rx_one(QRig *r, uint8_t *f, size_t len, uint8_t *got,
                             uint64_t *mss)
{
    IbmvethRxEntry e;

    address_to_guest(f);
    qrig_send(r, f, len);
    e = next_entry(r, got, mss);
    qibmveth_replenish(r->guest);
    g_assert_cmpuint(e.len, ==, len);
    return e;
}

/*
 * A TCP frame over 1514 bytes that LRO did not make: Linux takes any
 * frame over its MTU + 14 for a large packet and, without LRG_PKT, reads
 * the MSS from the TCP checksum field.  With large receive on it goes
 * marked, its own payload as the MSS (one segment); with it off it is
 * dropped as jumbo-tcp.  Frames of 1514 bytes, and long frames that are
 * not TCP, go as they are.
 */
static void test_rx_long_tcp(void)
{
    static uint8_t f[4096], got[65536];
    FrameSpec tcp4 = { .flags = TCP_ACK, .payload = 3000 };
    FrameSpec tcp6 = { .v6 = true, .flags = TCP_ACK, .payload = 3000 };
    FrameSpec full = { .flags = TCP_ACK, .payload = 1514 - 66 };
    FrameSpec udp4 = { .udp = true, .payload = 3000 };
    IbmvethRxEntry e;
    uint64_t mss;
    size_t len;
    QRig r;

    rig_up(&r, NULL);
    linux_probe(r.qts);
    len = build(f, &tcp4);
    e = rx_one(&r, f, len, got, &mss);
    g_assert_cmpuint(e.offset, ==, 16);
    g_assert_cmphex(e.control & RXQ_FLAGS, ==, 0x04 | RXQ_CSUM_GOOD);
    g_assert_cmpuint(mss, ==, 3000);
    g_assert_cmpmem(got, len, f, len);
    len = build(f, &tcp6);
    e = rx_one(&r, f, len, got, &mss);
    g_assert_cmphex(e.control & RXQ_FLAGS, ==, 0x04 | RXQ_CSUM_GOOD);
    g_assert_cmpuint(mss, ==, 3000);
    /* A partial checksum: NO_CSUM and the field 0, as for LRO. */
    tcp4.partial = true;
    len = build(f, &tcp4);
    e = rx_one(&r, f, len, got, &mss);
    g_assert_cmphex(e.control & RXQ_FLAGS, ==,
                    0x04 | RXQ_NO_CSUM | RXQ_CSUM_GOOD);
    g_assert_cmphex(csum_field(got), ==, 0);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-long-tcp"), ==, 3);
    tcp4.partial = false;
    len = build(f, &full);
    e = rx_one(&r, f, len, got, &mss);
    g_assert_cmpuint(e.offset, ==, 8);
    g_assert_cmphex(e.control & RXQ_FLAGS, ==, RXQ_CSUM_GOOD);
    /* Large receive off (ethtool -K tso off): dropped, and counted. */
    g_assert_cmpint(attributes(r.qts, ATTR_LRG_SR, 0, NULL), ==, H_SUCCESS);
    len = build(f, &tcp4);
    address_to_guest(f);
    qrig_send(&r, f, len);
    len = build(f, &udp4);
    e = rx_one(&r, f, len, got, &mss);
    g_assert_cmpuint(e.offset, ==, 8);
    g_assert_cmphex(e.control & RXQ_FLAGS, ==, RXQ_CSUM_GOOD);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-dropped.jumbo-tcp"),
                    ==, 1);
    /* A fragment Linux still takes for TCP: it cannot go marked. */
    g_assert_cmpint(attributes(r.qts, 0, ATTR_LRG_SR, NULL), ==, H_SUCCESS);
    len = build(f, &tcp4);
    put16(f + 20, 0x2001);
    address_to_guest(f);
    qrig_send(&r, f, len);
    qrig_wait_stat(r.qts, "nic.device.rx-dropped.jumbo-tcp", 2);
    qrig_stop(&r);
}

static void lro_merges(const char *nic, bool partial)
{
    static Burst b;
    QRig r;

    rig_up_stream(&r, nic);
    linux_probe(r.qts);
    burst_segments_partial(&b, 0, 10, 1448, 0, partial);
    burst_send(&r, &b);
    expect_merged(&r, 0, 10 * 1448, 1448);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-lro-frames"), ==, 1);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-lro-segments"), ==, 10);
    g_assert_cmpint(qrig_stat(r.qts, "nic.rx.delivered"), ==, 11);
    qrig_stop(&r);
}

/* Ten in-order segments in one batch: one entry. */
static void test_lro_merges(void)
{
    lro_merges(NULL, false);
}

/* Segments a local sender left partial merge as well: their data is as
 * trusted, and the merged packet goes up partial anyway. */
static void test_lro_partial(void)
{
    lro_merges(NULL, true);
}

/* The same in page mode, from the page's buffers. */
static void test_lro_page_mode(void)
{
    lro_merges(",use-rx-buffer-pools=off", false);
}

/* What ends a merge: a gap, PSH (which joins, then ends it), another
 * flow in between, FIN (which never joins), a size change. */
static void test_lro_breaks(void)
{
    static Burst b;
    QRig r;

    rig_up_stream(&r, NULL);
    linux_probe(r.qts);
    burst_segments(&b, 0, 3, 1000, 0);
    burst_segments(&b, 4000, 1, 1000, 0);               /* a gap */
    burst_send(&r, &b);
    expect_merged(&r, 0, 3000, 1000);
    expect_single(&r, 1066);

    burst_segments(&b, 0, 1, 1000, 0);
    burst_add(&b, &(FrameSpec){ .flags = TCP_ACK | TCP_PSH, .payload = 1000,
                                .payload_off = 1000 });
    burst_segments(&b, 2000, 1, 1000, 0);
    burst_send(&r, &b);
    expect_merged(&r, 0, 2000, 1000);
    expect_single(&r, 1066);

    burst_segments(&b, 0, 1, 1000, 0);
    burst_segments(&b, 0, 1, 1000, 1234);               /* another flow */
    burst_segments(&b, 1000, 1, 1000, 0);
    burst_add(&b, &(FrameSpec){ .flags = TCP_ACK | TCP_FIN, .payload = 1000,
                                .payload_off = 2000 });
    burst_send(&r, &b);
    for (int i = 0; i < 4; i++) {
        expect_single(&r, 1066);
    }

    burst_segments(&b, 0, 2, 500, 0);
    burst_segments(&b, 1000, 2, 400, 0);                /* shorter: ends */
    burst_send(&r, &b);
    expect_merged(&r, 0, 1400, 500);   /* the first 400 joins and ends it */
    expect_single(&r, 466);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-lro-frames"), ==, 3);
    qrig_stop(&r);
}

/* Without LRG_SR_ENABLED nothing merges. */
static void test_lro_off(void)
{
    static Burst b;
    QRig r;

    rig_up_stream(&r, NULL);
    linux_probe(r.qts);
    g_assert_cmpint(attributes(r.qts, ATTR_LRG_SR, 0, NULL), ==, H_SUCCESS);
    burst_segments(&b, 0, 10, 1448, 0);
    burst_send(&r, &b);
    for (int i = 0; i < 10; i++) {
        expect_single(&r, 66 + 1448);
    }
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-lro-frames"), ==, 0);
    qrig_stop(&r);
}

/* lro=off: the guest still has large send, but segments arrive one by
 * one, each with its own checksum, for guests that mishandle field 0. */
static void test_lro_property_off(void)
{
    static Burst b;
    uint64_t a;
    QRig r;

    rig_up_stream(&r, ",lro=off");
    linux_probe(r.qts);
    g_assert_cmpint(attributes(r.qts, 0, 0, &a), ==, H_SUCCESS);
    g_assert_cmphex(a & ATTR_LRG_SR, ==, ATTR_LRG_SR);
    burst_segments(&b, 0, 10, 1448, 0);
    burst_send(&r, &b);
    for (int i = 0; i < 10; i++) {
        expect_single(&r, 66 + 1448);
    }
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-lro-frames"), ==, 0);
    g_assert_cmpint(qrig_stat(r.qts, "nic.rx.delivered"), ==, 11);
    qrig_stop(&r);
}

/* Received frames whose headers lie are delivered as they are, with no
 * flag and no merge, in one batch with good ones. */
static void test_rx_malformed(void)
{
    static Burst b;
    static uint8_t got[65536];
    QRig r;

    rig_up_stream(&r, NULL);
    linux_probe(r.qts);
    for (int i = 0; i < 5; i++) {
        uint8_t *f = b.buf + b.len + 4;

        burst_segments(&b, i * 1000, 1, 1000, 0);
        switch (i) {
        case 0:
            f[14] = 0x44;                   /* IHL 4 */
            break;
        case 1:
            put16(f + 16, 0xFFF0);          /* longer than the frame */
            break;
        case 2:
            f[46] = 0xF0;                   /* TCP header past the data */
            put16(f + 16, 20 + 40);
            break;
        case 3:
            put16(f + 20, 0x2001);          /* a fragment */
            break;
        case 4:
            put16(f + 12, 0x86DD);          /* IPv6 with an IPv4 header */
            break;
        }
    }
    burst_segments(&b, 5000, 2, 1000, 0);
    burst_send(&r, &b);
    for (int i = 0; i < 5; i++) {
        uint64_t mss;
        IbmvethRxEntry e = next_entry(&r, got, &mss);

        g_assert_cmphex(e.control & RXQ_FLAGS, ==, 0);
        g_assert_cmpuint(e.len, ==, 1066);
        qibmveth_replenish(r.guest);
    }
    expect_merged(&r, 5000, 2000, 1000);
    g_assert_cmpint(qrig_stat(r.qts, "nic.device.rx-csum-bad"), ==, 0);
    qrig_stop(&r);
}

/* A stream of a machine whose guest turned the offloads on or not, in
 * @r's directory; returns its URI. */
static char *make_stream(Rig *r, const char *machine, const char *nic,
                         bool on, bool *has_sub)
{
    g_autofree char *file = NULL, *data = NULL;
    char *uri;
    gsize len;

    rig_init(r);
    file = rig_path(r, "stream");
    uri = g_strdup_printf("file:%s", file);
    r->src = rig_start(r, r->src_dev, machine, nic, NULL);
    if (on) {
        linux_probe(r->src);
    }
    migrate(r->src, uri);
    qtest_quit(r->src);
    g_assert_true(g_file_get_contents(file, &data, &len, NULL));
    *has_sub = memmem(data, len, ATTR_SUB, strlen(ATTR_SUB)) != NULL;
    return uri;
}

/* ---- The built-in guest forwarding what the device left unfinished ---- */

/*
 * illan on a stream netdev with the built-in guest forwarding by macswap
 * (@guest_opts appended), the test's end connected; a frame that comes
 * back says the connection is up.
 */
static void rig_up_macswap(QRig *r, const char *guest_opts)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    struct timeval tv = { .tv_sec = QTEST_WAIT_S };
    g_autofree char *netdev = NULL, *guest = NULL;
    static uint8_t hello[4 + 60] = { 0, 0, 0, 60 }, got[65536];

    qrig_init(r);
    netdev = g_strdup_printf("stream,id=n0,server=on,addr.type=unix,"
                             "addr.path=%s", r->dev_path);
    guest = g_strdup_printf("-guest ibmveth,id=g0,dev=net0,fwd=macswap%s",
                            guest_opts);
    qrig_start(r, &(QRigOpts){ .mem = "512M", .netdev = netdev,
                               .nic = ",id=net0", .extra = guest });
    g_strlcpy(addr.sun_path, r->dev_path, sizeof(addr.sun_path));
    r->peer = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(connect(r->peer, (struct sockaddr *)&addr, sizeof(addr)),
                    ==, 0);
    setsockopt(r->peer, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    memcpy(hello + 4, qrig_mac, 6);
    memcpy(hello + 10, peer_mac, 6);
    g_assert_cmpint(write(r->peer, hello, sizeof(hello)), ==, sizeof(hello));
    g_assert_cmpuint(recv_frame(r, got), ==, 60);
}

/*
 * Ten segments merged by the device into one large packet, and a segment
 * whose checksum a local sender left partial: Linux forwards both as
 * CHECKSUM_PARTIAL skbs, the large one as GSO of the device's MSS, so
 * the peer must get back ten valid segments and one valid frame, their
 * MACs swapped.  @offloaded: by the device (LRG_SND with the MSS in r12,
 * NO_CSUM), or else in software by the guest.
 */
static void macswap_unfinished(QRig *r, bool offloaded)
{
    static Burst b;
    static uint8_t orig[65536], got[65536];
    FrameSpec whole = { .flags = TCP_ACK, .payload = 10 * 1448 };
    FrameSpec partial = { .flags = TCP_ACK, .payload = 1000,
                          .partial = true, .to_guest = true };
    size_t len;

    for (unsigned i = 0; i < 10; i++) {
        burst_add(&b, &(FrameSpec){ .flags = TCP_ACK, .payload = 1448,
                                    .payload_off = i * 1448,
                                    .to_guest = true });
    }
    burst_send(r, &b);
    build(orig, &whole);
    check_segments(r, orig, &whole, 1448, 10);
    g_assert_cmpint(qrig_stat(r->qts, "nic.device.rx-lro-frames"), ==, 1);
    g_assert_cmpint(qrig_stat(r->qts, "guest.offloads.rx-large"), ==, 1);

    burst_add(&b, &partial);
    burst_send(r, &b);
    partial.partial = partial.to_guest = false;
    len = build(orig, &partial);
    g_assert_cmpuint(recv_frame(r, got), ==, len);
    g_assert_cmpmem(got, len, orig, len);

    /* The hello, ten segments (or one large send) and the partial one. */
    qrig_wait_stat(r->qts, "guest.tx-frames", offloaded ? 3 : 12);
    g_assert_cmpint(qrig_stat(r->qts, "guest.offloads.tx-large-sends"), ==,
                    offloaded ? 1 : 0);
    g_assert_cmpint(qrig_stat(r->qts, "nic.device.tx-segmented"), ==,
                    offloaded ? 1 : 0);
    g_assert_cmpint(qrig_stat(r->qts, "guest.offloads.tx-csum-offloaded"),
                    ==, offloaded ? 2 : 0);
}

/* With the offloads the guest negotiated: large send and checksum
 * offload on the way out. */
static void test_guest_macswap_offloaded(void)
{
    QRig r;

    rig_up_macswap(&r, "");
    macswap_unfinished(&r, true);
    qrig_stop(&r);
}

/* A guest that asked for nothing ("ethtool -K eth0 rx off tso off")
 * while the device merges and flags anyway (here the test turns them on
 * behind its back): the guest's stack segments and checksums in
 * software, as validate_xmit_skb() does. */
static void test_guest_macswap_software(void)
{
    QRig r;

    rig_up_macswap(&r, ",offloads=off");
    g_assert_cmpint(attributes(r.qts, 0, ATTR_IPV4_CSUM | ATTR_LRG_SR, NULL),
                    ==, H_SUCCESS);
    macswap_unfinished(&r, false);
    qrig_stop(&r);
}

/*
 * A TCP frame longer than the MTU + 14 that the device did not mark
 * LRG_PKT: Linux's ibmveth_rx_mss_helper() takes the MSS from the TCP
 * checksum field and zeroes it, and makes the skb GSO of that MSS, so
 * the peer gets it back in segments of that "MSS".  The flow's port is
 * picked so that its valid checksum, read as an MSS, makes a few
 * segments.  @large_sends: the guest's large sends the segmenting takes.
 */
static void macswap_over_mtu(QRig *r, int64_t large_sends)
{
    static Burst b;
    static uint8_t orig[2048];
    FrameSpec spec = { .flags = TCP_ACK, .payload = 1300, .sport = 40000 };
    uint16_t mss;

    json_object_unref(qmp_ok(r->qts, "{'execute': 'x-guest-set-mtu', "
                             "'arguments': {'id': 'g0', 'mtu': 1000}}"));
    for (;; spec.sport++) {
        g_assert_cmpuint(build(orig, &spec), ==, 1366);
        mss = csum_field(orig);
        if (mss >= 300 && mss < 650) {
            break;
        }
    }
    spec.to_guest = true;
    burst_add(&b, &spec);
    burst_send(r, &b);
    spec.to_guest = false;
    check_segments(r, orig, &spec, mss, (spec.payload + mss - 1) / mss);
    g_assert_cmpint(qrig_stat(r->qts, "guest.offloads.rx-large"), ==, 1);
    g_assert_cmpint(qrig_stat(r->qts, "guest.offloads.tx-large-sends"), ==,
                    large_sends);
}

/* With CSUM_GOOD the skb is CHECKSUM_PARTIAL, so the forwarding stack
 * sends it as a large send. */
static void test_guest_macswap_over_mtu(void)
{
    QRig r;

    rig_up_macswap(&r, "");
    macswap_over_mtu(&r, 1);
    qrig_stop(&r);
}

/* Without CSUM_GOOD the skb is CHECKSUM_NONE: validate_xmit_skb()
 * segments it in software whatever the offloads, and tcp4_gso_segment()
 * gives each segment a checksum of its own. */
static void test_guest_macswap_over_mtu_no_csum(void)
{
    QRig r;

    rig_up_macswap(&r, ",offloads=off");
    macswap_over_mtu(&r, 0);
    g_assert_cmpint(qrig_stat(r.qts, "guest.offloads.rx-csum-good"), ==, 0);
    qrig_stop(&r);
}

/* The attributes migrate, in a subsection only when some are on; a
 * destination that offers no offloads refuses them. */
static void test_migration(void)
{
    g_autofree char *cmd = NULL;
    g_autoptr(JsonObject) info = NULL;
    bool has_sub;
    Rig r;

    for (int on = 0; on < 2; on++) {
        g_autofree char *uri = make_stream(&r, "pseries", NULL, on, &has_sub);
        g_autofree char *incoming = g_strdup_printf("-incoming %s", uri);

        g_assert_true(has_sub == on);
        r.dst = rig_start(&r, r.dst_dev, "pseries", NULL, incoming);
        assert_completed(r.dst);
        g_assert_cmphex(attrs_now(r.dst), ==, on ? ALL_ON : ATTR_FIXED);
        qtest_quit(r.dst);
        rig_free(&r);
    }

    /* pseries-2.5 pins offloads=off and x-illan-subsections=off; a source
     * that overrode both. */
    g_autofree char *uri = make_stream(&r, "pseries-2.5",
                                       "off,offloads=on,x-illan-subsections=on",
                                       true, &has_sub);
    g_assert_true(has_sub);
    r.dst = rig_start(&r, r.dst_dev, "pseries-2.5", NULL, "-incoming defer");
    cmd = g_strdup_printf("{'execute': 'migrate-incoming', 'arguments': "
                          "{'uri': '%s'}}", uri);
    json_object_unref(qmp_ok(r.dst, cmd));
    info = wait_migration(r.dst);
    g_assert_cmpstr(json_object_get_string_member(info, "status"), ==,
                    "failed");
    g_assert_nonnull(strstr(json_object_get_string_member(info, "error-desc"),
                            "offloads=off"));
    qtest_quit(r.dst);
    rig_free(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/llan-offload/attributes", test_attributes);
    g_test_add_func("/llan-offload/tx-csum", test_tx_csum);
    g_test_add_func("/llan-offload/tso", test_tso);
    g_test_add_func("/llan-offload/tx-malformed", test_tx_malformed);
    g_test_add_func("/llan-offload/rx-csum", test_rx_csum);
    g_test_add_func("/llan-offload/rx-partial-without-offload",
                    test_rx_partial_without_offload);
    g_test_add_func("/llan-offload/rx-long-tcp", test_rx_long_tcp);
    g_test_add_func("/llan-offload/rx-malformed", test_rx_malformed);
    g_test_add_func("/llan-offload/lro/merges", test_lro_merges);
    g_test_add_func("/llan-offload/lro/partial", test_lro_partial);
    g_test_add_func("/llan-offload/lro/page-mode", test_lro_page_mode);
    g_test_add_func("/llan-offload/lro/property-off", test_lro_property_off);
    g_test_add_func("/llan-offload/lro/breaks", test_lro_breaks);
    g_test_add_func("/llan-offload/lro/off", test_lro_off);
    g_test_add_func("/llan-offload/migration", test_migration);
    g_test_add_func("/llan-offload/guest-macswap/offloaded",
                    test_guest_macswap_offloaded);
    g_test_add_func("/llan-offload/guest-macswap/over-mtu",
                    test_guest_macswap_over_mtu);
    g_test_add_func("/llan-offload/guest-macswap/over-mtu-no-csum",
                    test_guest_macswap_over_mtu_no_csum);
    g_test_add_func("/llan-offload/guest-macswap/software",
                    test_guest_macswap_software);
    return g_test_run();
}
