/*
 * The frames fwd=txonly sends: IPv4/UDP with valid header checksums, of
 * one size or the simple IMIX (64, 594 and 1518 bytes, 7:4:1), built once
 * and handed out in turn.  Sizes are Ethernet frame bytes without the FCS.
 */
#ifndef GUEST_TX_FRAMES_H
#define GUEST_TX_FRAMES_H

#include <stddef.h>
#include <stdint.h>

typedef struct TxFrames TxFrames;

#define TX_FRAMES_MIX       0       /* @size: the IMIX */
#define TX_FRAMES_MIN_SIZE  60      /* Ethernet's minimum without FCS */
#define TX_FRAMES_MAX_SIZE  65535

TxFrames *tx_frames_new(uint32_t size, const uint8_t dst[6],
                        const uint8_t src[6]);
void tx_frames_free(TxFrames *t);
/* The next frame to send; valid until tx_frames_free(). */
const uint8_t *tx_frames_next(TxFrames *t, size_t *len);

/* Where the pattern of sizes stands: the index of the next frame.  A
 * position from another pattern is taken modulo this one's length. */
unsigned tx_frames_position(const TxFrames *t);
void tx_frames_seek(TxFrames *t, unsigned position);

#endif
