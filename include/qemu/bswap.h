/* Big-endian loads and stores of 1 to 8 bytes: guest memory, descriptors
 * and wire formats are all big-endian. */
#ifndef QEMU_BSWAP_H
#define QEMU_BSWAP_H

#include <glib.h>
#include <stdint.h>
#include <string.h>

/*
 * 2, 4 and 8 bytes, the sizes of almost every call (and constants there,
 * so the switch folds away), are one unaligned load or store and a byte
 * swap: a byte at a time, a receive queue entry alone cost the I/O thread
 * 65 instructions a frame.  Other sizes (a 6-byte MAC) go a byte at a
 * time.
 */
static inline uint64_t ldn_be_p(const void *ptr, unsigned size)
{
    const uint8_t *p = ptr;
    uint16_t v16;
    uint32_t v32;
    uint64_t v = 0;

    switch (size) {
    case 2:
        memcpy(&v16, ptr, 2);
        return GUINT16_FROM_BE(v16);
    case 4:
        memcpy(&v32, ptr, 4);
        return GUINT32_FROM_BE(v32);
    case 8:
        memcpy(&v, ptr, 8);
        return GUINT64_FROM_BE(v);
    }
    for (unsigned i = 0; i < size; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

static inline void stn_be_p(void *ptr, unsigned size, uint64_t v)
{
    uint8_t *p = ptr;
    uint16_t v16;
    uint32_t v32;

    switch (size) {
    case 2:
        v16 = GUINT16_TO_BE((uint16_t)v);
        memcpy(ptr, &v16, 2);
        return;
    case 4:
        v32 = GUINT32_TO_BE((uint32_t)v);
        memcpy(ptr, &v32, 4);
        return;
    case 8:
        v = GUINT64_TO_BE(v);
        memcpy(ptr, &v, 8);
        return;
    }
    for (unsigned i = size; i-- > 0; v >>= 8) {
        p[i] = v & 0xff;
    }
}

#endif
