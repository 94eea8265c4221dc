/*
 * Reading a fuzz input as a stream of choices.  Past the end every read
 * gives zeros, so each input decodes to something and a shorter input is
 * a prefix of the same run (which is what lets libFuzzer shrink one).
 */
#ifndef FUZZ_INPUT_H
#define FUZZ_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct FuzzInput {
    const uint8_t *data;
    size_t len, pos;
} FuzzInput;

static inline bool fuzz_done(const FuzzInput *in)
{
    return in->pos >= in->len;
}

static inline uint8_t fuzz_u8(FuzzInput *in)
{
    return fuzz_done(in) ? 0 : in->data[in->pos++];
}

/* Big-endian, so that a value in a seed reads as written. */
static inline uint64_t fuzz_bits(FuzzInput *in, unsigned bytes)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < bytes; i++) {
        v = v << 8 | fuzz_u8(in);
    }
    return v;
}

/* Up to @max bytes of the input itself, their number first. */
static inline size_t fuzz_bytes(FuzzInput *in, size_t max, const uint8_t **out)
{
    size_t want = fuzz_bits(in, 2) % (max + 1);
    size_t left = in->len - (in->pos < in->len ? in->pos : in->len);

    if (want > left) {
        want = left;
    }
    *out = in->data + in->pos;
    in->pos += want;
    return want;
}

/*
 * A value where bugs live: one of @edges (the caller's boundaries) picked
 * by the first byte, or a literal of 1, 2, 4 or 8 bytes.
 */
static inline uint64_t fuzz_pick(FuzzInput *in, const uint64_t *edges,
                                 unsigned nedges)
{
    static const unsigned widths[] = { 1, 2, 4, 8 };
    uint8_t k = fuzz_u8(in);

    if (k < nedges) {
        return edges[k];
    }
    return fuzz_bits(in, widths[k % 4]);
}

#endif
