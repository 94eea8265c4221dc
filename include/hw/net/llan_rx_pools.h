/*
 * Size-sorted RX buffer pools (use-rx-buffer-pools=on).
 *
 * Five pools, each keyed by one exact buffer size and holding up to 4096
 * buffer descriptors, kept sorted by size so that a frame goes to the
 * smallest buffer that holds it.  The layout (bufsize, count, bds[4096])
 * is the one QEMU migrates as spapr_llan/rx_pools.
 */
#ifndef HW_NET_LLAN_RX_POOLS_H
#define HW_NET_LLAN_RX_POOLS_H

#include <stdbool.h>
#include <stdint.h>

#define LLAN_RX_MAX_POOLS       5
#define LLAN_RX_POOL_MAX_BDS    4096
/* An unused pool sorts last. */
#define LLAN_RX_POOL_UNUSED     INT32_MAX

typedef struct LlanRxPool {
    int32_t bufsize;
    int32_t count;
    uint64_t bds[LLAN_RX_POOL_MAX_BDS];
    uint64_t hits;      /* buffers taken from this pool (not migrated) */
    /* Buffers of this size lent to the host kernel, out of bds[] but still
     * posted (not migrated: a stream is written with them back here). */
    int32_t lent;
} LlanRxPool;

typedef struct LlanRxPools {
    LlanRxPool *sorted[LLAN_RX_MAX_POOLS];  /* ascending bufsize */
    LlanRxPool storage[LLAN_RX_MAX_POOLS];
} LlanRxPools;

typedef enum LlanRxPoolAdd {
    LLAN_RX_POOL_ADDED,
    LLAN_RX_POOL_FULL,          /* the pool of that size holds 4096 */
    LLAN_RX_POOL_NO_FREE_POOL,  /* five other sizes are in use */
} LlanRxPoolAdd;

/* Empties every pool. */
void llan_rx_pools_reset(LlanRxPools *pools);
/* Files @bd under its 24-bit length, taking an empty pool for a new size. */
LlanRxPoolAdd llan_rx_pools_add(LlanRxPools *pools, uint64_t bd);
/* Undoes the last successful add of @bd (all-or-nothing bulk adds). */
void llan_rx_pools_unadd(LlanRxPools *pools, uint64_t bd);
/* Takes the most recently added buffer of the smallest non-empty pool
 * whose size is at least @need, with *@pool that pool's place in size
 * order; false when none fits. */
bool llan_rx_pool_take_best_fit(LlanRxPools *pools, uint32_t need,
                                uint64_t *bd, int *pool);
/* How many non-empty pools hold buffers of at least @need bytes. */
unsigned llan_rx_pools_fitting(const LlanRxPools *pools, uint32_t need);
/*
 * Receive zero copy.  Lends the most recently added buffer of the
 * smallest pool in use whose size is at least @min, if that pool holds
 * more than @keep: it leaves bds[] and counts as lent.
 */
bool llan_rx_pools_lend(LlanRxPools *pools, uint32_t min, unsigned keep,
                        uint64_t *bd);
/* How many buffers that pool holds (0 when there is none). */
unsigned llan_rx_pools_lendable(const LlanRxPools *pools, uint32_t min);
/* A lent buffer back into its pool: on top, to lend again, or at the
 * bottom when it could not be lent (it stays for copies). */
void llan_rx_pools_unlend(LlanRxPools *pools, uint64_t bd, bool bottom);
/* A lent buffer the kernel filled is taken, as by a best fit. */
void llan_rx_pools_lent_taken(LlanRxPools *pools, uint64_t bd);
/* The size of the smallest non-empty pool of at least @need bytes, or
 * LLAN_RX_POOL_UNUSED. */
int32_t llan_rx_pools_best_fit_size(const LlanRxPools *pools, uint32_t need);

/* Restores the order after the pool array was changed in place (by a
 * migration load), so the table is sorted whatever it holds. */
void llan_rx_pools_sort(LlanRxPools *pools);

#endif
