/*
 * The guest stack's generic receive offload, as Linux's napi_gro_receive()
 * does it for TCP: consecutive in-order segments of one flow, with the
 * same headers but sequence and length, become one large segment that the
 * stack takes in one go.  The built-in guest hands it to a TAP with a
 * virtio-net header (a GSO packet whose checksum is already trusted), so
 * the guest namespace's kernel pays for one packet where the wire carried
 * many, as it would inside a Linux guest.
 *
 * Segments are not copied: the large segment is an iovec of the first
 * segment's headers (copied, then rewritten) and every segment's payload
 * where it lies, so the caller keeps the frames untouched until the next
 * gro_flush().
 */
#ifndef GUEST_GRO_H
#define GUEST_GRO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

/* Up to this many segments, or 64 KiB of IP datagram, make one packet. */
#define GRO_MAX_SEGS    64

typedef struct Gro Gro;

/* How far the frame's TCP/UDP checksum is known, as skb->ip_summed. */
typedef enum GroCsum {
    GRO_CSUM_NONE,          /* unchecked: GRO checks it, as Linux does */
    GRO_CSUM_UNNECESSARY,   /* the NIC found it good */
    GRO_CSUM_PARTIAL,       /* the sender left it to an offload */
} GroCsum;

/* Receives each packet: @iov[0] is its struct virtio_net_hdr. */
typedef void GroOutputFn(void *opaque, const struct iovec *iov, int iovcnt);

typedef struct GroStats {
    uint64_t packets;       /* handed to the output */
    uint64_t merged;        /* segments that went into another's packet */
    uint64_t csum_checked;  /* checksums GRO verified itself */
    uint64_t csum_bad;      /* ... and found wrong (passed up unmerged) */
} GroStats;

Gro *gro_new(GroOutputFn *output, void *opaque);
void gro_free(Gro *gro);

/*
 * Takes a frame for the stack: a TCP segment is merged or held, a TCP or
 * UDP frame whose checksum is trusted goes out marked so, and true is
 * returned; anything else is left to the caller (false) after what is
 * held went out, so that order is kept.  @gso_size, when not 0, says the
 * frame is already a large segment (the NIC's large receive): it goes out
 * at once as one.
 */
bool gro_receive(Gro *gro, const uint8_t *frame, uint32_t len, GroCsum csum,
                 uint16_t gso_size);
/* Sends what is held: at the end of each NAPI poll. */
void gro_flush(Gro *gro);
void gro_get_stats(const Gro *gro, GroStats *st);

#endif
