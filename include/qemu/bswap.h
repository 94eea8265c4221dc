/* Big-endian loads and stores of 1 to 8 bytes: guest memory, descriptors
 * and wire formats are all big-endian. */
#ifndef QEMU_BSWAP_H
#define QEMU_BSWAP_H

#include <stdint.h>

static inline uint64_t ldn_be_p(const void *ptr, unsigned size)
{
    const uint8_t *p = ptr;
    uint64_t v = 0;

    for (unsigned i = 0; i < size; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

static inline void stn_be_p(void *ptr, unsigned size, uint64_t v)
{
    uint8_t *p = ptr;

    for (unsigned i = size; i-- > 0; v >>= 8) {
        p[i] = v & 0xff;
    }
}

#endif
