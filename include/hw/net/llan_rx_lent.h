/*
 * Receive buffers lent to the host kernel (receive zero copy).  The
 * kernel writes a frame straight into a lent buffer and says only where
 * the frame starts; this table gives back the buffer's descriptor for
 * that address.  Open addressing over twice the buffers one pool holds.
 */
#ifndef HW_NET_LLAN_RX_LENT_H
#define HW_NET_LLAN_RX_LENT_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/net/llan_rx_pools.h"

#define LLAN_RX_LENT_MAX LLAN_RX_POOL_MAX_BDS
#define LLAN_RX_LENT_SLOTS (2 * LLAN_RX_LENT_MAX)

typedef struct LlanRxLent {
    uint64_t addr[LLAN_RX_LENT_SLOTS];  /* 0: a free slot */
    uint64_t bd[LLAN_RX_LENT_SLOTS];
    unsigned count;
} LlanRxLent;

/* Forgets every entry. */
void llan_rx_lent_clear(LlanRxLent *t);
/* Records @bd as lent, its frame to start at @addr (nonzero, not in the
 * table); false when LLAN_RX_LENT_MAX are lent. */
bool llan_rx_lent_put(LlanRxLent *t, uint64_t addr, uint64_t bd);
/* The descriptor lent for @addr, out of the table; false when none is. */
bool llan_rx_lent_take(LlanRxLent *t, uint64_t addr, uint64_t *bd);
/* Empties the table, each descriptor handed to @fn. */
void llan_rx_lent_drain(LlanRxLent *t, void (*fn)(void *opaque, uint64_t bd),
                        void *opaque);

#endif
