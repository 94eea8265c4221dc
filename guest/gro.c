/*
 * The guest stack's TCP receive offload (see guest/gro.h), after the rules
 * of Linux's tcp_gro_receive(): a segment joins the packet held when it
 * continues its sequence with the same Ethernet and IP header, the same
 * ports, ACK, window and options, and no more payload than the first
 * segment had; a short segment or a PSH ends the packet.
 */
#include "guest/gro.h"

#include <glib.h>
#include <linux/virtio_net.h>
#include <string.h>

#include "guest/inet-l4.h"

#define TCP_FLAG_PSH        0x08
#define TCP_FLAG_ACK        0x10
#define TCP_FLAGS_OFF       13
#define IPV4_DF             0x40    /* in the flags byte */
#define IP_MAX_LEN          65535
/* Ethernet, IPv6 (or IPv4 with options) and the largest TCP header. */
#define HDR_MAX             (INET_ETH_HLEN + 60 + 60)

struct Gro {
    GroOutputFn *output;
    void *opaque;
    bool held;
    const uint8_t *first;       /* the first segment, as received */
    InetL4 f;                   /* its layers */
    uint32_t hdr_len;           /* Ethernet + IP + TCP */
    uint32_t payload;           /* the payload held */
    uint16_t mss;               /* the first segment's payload */
    uint32_t next_seq;
    uint16_t next_id;           /* IPv4 without DF: the id expected */
    bool ended;                 /* a short segment or a PSH came */
    bool large;                 /* the NIC's large receive, sent alone */
    uint8_t push;
    int nseg;
    struct virtio_net_hdr vnet;
    uint8_t hdr[HDR_MAX];       /* the packet's headers, rewritten */
    struct iovec iov[2 + GRO_MAX_SEGS];
    GroStats st;
};

static uint32_t ld_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static uint16_t ld_be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static void st_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v & 0xff;
}

Gro *gro_new(GroOutputFn *output, void *opaque)
{
    Gro *gro = g_new0(Gro, 1);

    gro->output = output;
    gro->opaque = opaque;
    return gro;
}

void gro_free(Gro *gro)
{
    g_free(gro);
}

void gro_get_stats(const Gro *gro, GroStats *st)
{
    *st = gro->st;
}

static uint32_t tcp_hlen(const uint8_t *frame, const InetL4 *f)
{
    return (frame[f->l4 + 12] >> 4) * 4;
}

/* The headers a segment must share with the first, byte for byte. */
static bool same_flow(const Gro *gro, const uint8_t *frame,
                      const InetL4 *f)
{
    const uint8_t *a = gro->first, *b = frame;
    const uint8_t *ipa = a + INET_ETH_HLEN, *ipb = b + INET_ETH_HLEN;
    const uint8_t *tha = a + gro->f.l4, *thb = b + f->l4;
    uint32_t thlen = tcp_hlen(a, &gro->f);

    if (f->ip_version != gro->f.ip_version || f->l4 != gro->f.l4 ||
        tcp_hlen(b, f) != thlen || memcmp(a, b, INET_ETH_HLEN)) {
        return false;
    }
    if (f->ip_version == 4) {
        /* Version, TOS, flags, TTL, protocol, addresses. */
        if (ipa[1] != ipb[1] || (ipa[6] & IPV4_DF) != (ipb[6] & IPV4_DF) ||
            ipa[8] != ipb[8] || memcmp(ipa + 12, ipb + 12, 8) ||
            (!(ipb[6] & IPV4_DF) && ld_be16(ipb + 4) != gro->next_id)) {
            return false;
        }
    } else if (memcmp(ipa, ipb, 4) || ipa[7] != ipb[7] ||
               memcmp(ipa + 8, ipb + 8, 32)) {
        return false;
    }
    /* Ports, ACK, data offset, flags but PSH, window, options. */
    return !memcmp(tha, thb, 4) && !memcmp(tha + 8, thb + 8, 5) &&
           ((tha[13] ^ thb[13]) & ~TCP_FLAG_PSH) == 0 &&
           !memcmp(tha + 14, thb + 14, 2) &&
           !memcmp(tha + 20, thb + 20, thlen - 20);
}

/* The TCP header's length, or UDP's. */
static uint32_t l4_hlen(const uint8_t *frame, const InetL4 *f)
{
    return f->proto == INET_IPPROTO_TCP ? tcp_hlen(frame, f) : 8;
}

static void hold_first(Gro *gro, const uint8_t *frame, const InetL4 *f,
                       uint16_t gso_size)
{
    uint32_t hlen = l4_hlen(frame, f);
    bool tcp = f->proto == INET_IPPROTO_TCP;

    gro->held = true;
    gro->first = frame;
    gro->f = *f;
    gro->hdr_len = f->l4 + hlen;
    gro->payload = f->l4_len - hlen;
    gro->mss = gso_size ? gso_size : gro->payload;
    gro->large = gso_size != 0;
    gro->next_seq = tcp ? ld_be32(frame + f->l4 + 4) + gro->payload : 0;
    gro->next_id = f->ip_version == 4 ?
                   ld_be16(frame + INET_ETH_HLEN + 4) + 1 : 0;
    gro->push = tcp ? frame[f->l4 + TCP_FLAGS_OFF] & TCP_FLAG_PSH : 0;
    gro->ended = gro->push != 0;
    memcpy(gro->hdr, frame, gro->hdr_len);
    gro->iov[2] = (struct iovec) {
        .iov_base = (void *)(frame + gro->hdr_len), .iov_len = gro->payload,
    };
    gro->nseg = 1;
}

/* Appends @frame's payload; false when it must start a packet of its
 * own. */
static bool merge(Gro *gro, const uint8_t *frame, const InetL4 *f)
{
    uint32_t thlen = tcp_hlen(frame, f);
    uint32_t payload = f->l4_len - thlen;

    if (gro->ended || gro->large || gro->nseg == GRO_MAX_SEGS ||
        payload > gro->mss ||
        gro->hdr_len - INET_ETH_HLEN + gro->payload + payload > IP_MAX_LEN ||
        ld_be32(frame + f->l4 + 4) != gro->next_seq ||
        !same_flow(gro, frame, f)) {
        return false;
    }
    gro->iov[2 + gro->nseg++] = (struct iovec) {
        .iov_base = (void *)(frame + f->l4 + thlen), .iov_len = payload,
    };
    gro->payload += payload;
    gro->next_seq += payload;
    gro->next_id++;
    gro->push |= frame[f->l4 + TCP_FLAGS_OFF] & TCP_FLAG_PSH;
    gro->ended = payload < gro->mss || gro->push;
    gro->st.merged++;
    return true;
}

void gro_flush(Gro *gro)
{
    InetL4 f = gro->f;
    if (!gro->held) {
        return;
    }
    gro->held = false;
    f.l4_len = gro->hdr_len - f.l4 + gro->payload;
    if (f.ip_version == 4) {
        st_be16(gro->hdr + INET_ETH_HLEN + 2, f.l4 - INET_ETH_HLEN + f.l4_len);
        st_be16(gro->hdr + INET_ETH_HLEN + 10, 0);
        st_be16(gro->hdr + INET_ETH_HLEN + 10,
                ip_header_checksum(gro->hdr + INET_ETH_HLEN,
                                   f.l4 - INET_ETH_HLEN));
    } else {
        st_be16(gro->hdr + INET_ETH_HLEN + 4, f.l4_len);
    }
    if (f.proto == INET_IPPROTO_TCP) {
        gro->hdr[f.l4 + TCP_FLAGS_OFF] |= gro->push;
    }
    /* Trusted: the stack takes it as checksummed by an offload. */
    st_be16(gro->hdr + f.csum_at, inet_l4_partial_field(gro->hdr, &f));
    gro->vnet = (struct virtio_net_hdr) {
        .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
        .gso_type = gro->payload > gro->mss ?
                    (f.ip_version == 4 ? VIRTIO_NET_HDR_GSO_TCPV4 :
                                         VIRTIO_NET_HDR_GSO_TCPV6) :
                    VIRTIO_NET_HDR_GSO_NONE,
        .hdr_len = gro->hdr_len,
        .gso_size = gro->mss,
        .csum_start = f.l4,
        .csum_offset = f.csum_at - f.l4,
    };
    gro->iov[0] = (struct iovec) { &gro->vnet, sizeof(gro->vnet) };
    gro->iov[1] = (struct iovec) { gro->hdr, gro->hdr_len };
    gro->st.packets++;
    gro->output(gro->opaque, gro->iov, 2 + gro->nseg);
}

/* A segment GRO may merge: TCP with ACK (and maybe PSH) only, data, and
 * no IPv4 options (Linux's inet_gro_receive() takes only 0x45). */
static bool mergeable(const uint8_t *frame, const InetL4 *f)
{
    uint8_t flags = frame[f->l4 + TCP_FLAGS_OFF];

    return f->proto == INET_IPPROTO_TCP &&
           (f->ip_version == 6 || f->l4 == INET_ETH_HLEN + 20) &&
           (flags & ~TCP_FLAG_PSH) == TCP_FLAG_ACK &&
           f->l4_len > tcp_hlen(frame, f);
}

bool gro_receive(Gro *gro, const uint8_t *frame, uint32_t len, GroCsum csum,
                 uint16_t gso_size)
{
    InetL4 f;

    if (!inet_l4_find(frame, len, &f)) {
        gro_flush(gro);
        return false;
    }
    if (!mergeable(frame, &f)) {
        gro_flush(gro);
        if (csum == GRO_CSUM_NONE) {
            return false;       /* the stack checks it, as it would */
        }
        /* A checksum the NIC vouched for (or the sender left out) stays
         * trusted on its way into the TAP. */
        hold_first(gro, frame, &f, 0);
        gro_flush(gro);
        return true;
    }
    if (csum == GRO_CSUM_NONE) {
        gro->st.csum_checked++;
        if (!inet_l4_csum_ok(frame, &f)) {
            gro->st.csum_bad++;
            gro_flush(gro);
            return false;
        }
    }
    if (!gso_size && gro->held && merge(gro, frame, &f)) {
        if (gro->ended) {
            gro_flush(gro);
        }
        return true;
    }
    gro_flush(gro);
    hold_first(gro, frame, &f, gso_size);
    if (gro->ended || gro->large) {
        gro_flush(gro);
    }
    return true;
}
