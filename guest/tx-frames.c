/* Frames for fwd=txonly (see guest/tx-frames.h). */
#include "guest/tx-frames.h"
#include "guest/ip-checksum.h"

#include <glib.h>
#include <string.h>

#define ETH_HLEN        14
#define IP_HLEN         20
#define UDP_HLEN        8

/* The simple IMIX: 7 small, 4 medium, 1 large, interleaved. */
static const uint32_t imix_pattern[] = {
    64, 594, 64, 64, 594, 64, 1518, 64, 594, 64, 594, 64,
};

struct TxFrames {
    uint8_t *frames[G_N_ELEMENTS(imix_pattern)];
    uint32_t sizes[G_N_ELEMENTS(imix_pattern)];
    unsigned n, next;
};

static void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v;
}

/* 10.0.2.15 -> 10.0.2.2, UDP port 9 (discard), payload zero. */
static uint8_t *build_frame(uint32_t size, const uint8_t dst[6],
                            const uint8_t src[6])
{
    uint8_t *f = g_malloc0(size);
    uint8_t *ip = f + ETH_HLEN, *udp = ip + IP_HLEN;
    uint32_t ip_len = size - ETH_HLEN;

    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    put_be16(f + 12, 0x0800);
    ip[0] = 0x45;
    put_be16(ip + 2, MIN(ip_len, 65535u));
    ip[8] = 64;
    ip[9] = 17;
    memcpy(ip + 12, (uint8_t[]){ 10, 0, 2, 15, 10, 0, 2, 2 }, 8);
    put_be16(ip + 10, ip_header_checksum(ip, IP_HLEN));
    put_be16(udp, 9);
    put_be16(udp + 2, 9);
    put_be16(udp + 4, MIN(ip_len - IP_HLEN, 65535u));
    return f;
}

TxFrames *tx_frames_new(uint32_t size, const uint8_t dst[6],
                        const uint8_t src[6])
{
    TxFrames *t = g_new0(TxFrames, 1);

    g_assert(size == TX_FRAMES_MIX || (size >= TX_FRAMES_MIN_SIZE &&
                                       size <= TX_FRAMES_MAX_SIZE));
    t->n = size == TX_FRAMES_MIX ? G_N_ELEMENTS(imix_pattern) : 1;
    for (unsigned i = 0; i < t->n; i++) {
        t->sizes[i] = size == TX_FRAMES_MIX ? imix_pattern[i] : size;
        t->frames[i] = build_frame(t->sizes[i], dst, src);
    }
    return t;
}

void tx_frames_free(TxFrames *t)
{
    if (!t) {
        return;
    }
    for (unsigned i = 0; i < t->n; i++) {
        g_free(t->frames[i]);
    }
    g_free(t);
}

const uint8_t *tx_frames_next(TxFrames *t, size_t *len)
{
    unsigned i = t->next;

    t->next = (i + 1) % t->n;
    *len = t->sizes[i];
    return t->frames[i];
}

unsigned tx_frames_position(const TxFrames *t)
{
    return t->next;
}

void tx_frames_seek(TxFrames *t, unsigned position)
{
    t->next = position % t->n;
}
