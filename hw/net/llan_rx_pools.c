/*
 * Size-sorted RX buffer pools.  Pools are found by size, never by scanning
 * buffers: at most five comparisons per frame, then a LIFO pop.
 */
#include "hw/net/llan_rx_pools.h"
#include "hw/net/llan_bd.h"
#include "trace/trace-hw_net.h"

#include <string.h>


void llan_rx_pools_reset(LlanRxPools *pools)
{
    for (int i = 0; i < LLAN_RX_MAX_POOLS; i++) {
        LlanRxPool *p = &pools->storage[i];

        p->bufsize = LLAN_RX_POOL_UNUSED;
        p->count = 0;
        p->hits = 0;
        p->lent = 0;
        memset(p->bds, 0, sizeof(p->bds));
        pools->sorted[i] = p;
    }
}

/* Insertion sort: five entries, and stable, so equal sizes keep order. */
void llan_rx_pools_sort(LlanRxPools *pools)
{
    for (int i = 1; i < LLAN_RX_MAX_POOLS; i++) {
        LlanRxPool *p = pools->sorted[i];
        int j = i;

        for (; j > 0 && pools->sorted[j - 1]->bufsize > p->bufsize; j--) {
            pools->sorted[j] = pools->sorted[j - 1];
        }
        pools->sorted[j] = p;
    }
}

static LlanRxPool *pool_of_size(LlanRxPools *pools, int32_t size)
{
    for (int i = 0; i < LLAN_RX_MAX_POOLS; i++) {
        if (pools->sorted[i]->bufsize == size) {
            return pools->sorted[i];
        }
    }
    return NULL;
}

/* @p's place in size order: the pool number the trace events give. */
static int pool_number(const LlanRxPools *pools, const LlanRxPool *p)
{
    for (int i = 0; i < LLAN_RX_MAX_POOLS; i++) {
        if (pools->sorted[i] == p) {
            return i;
        }
    }
    g_assert_not_reached();
}

static LlanRxPool *claim_empty_pool(LlanRxPools *pools, int32_t size)
{
    for (int i = LLAN_RX_MAX_POOLS - 1; i >= 0; i--) {
        LlanRxPool *p = pools->sorted[i];

        if (p->count == 0 && p->lent == 0) {
            p->bufsize = size;
            llan_rx_pools_sort(pools);
            if (trace_event_get_state_spapr_vlan_add_rxbuf_to_pool_create()) {
                trace_spapr_vlan_add_rxbuf_to_pool_create(
                    pool_number(pools, p), size);
            }
            return p;
        }
    }
    return NULL;
}

LlanRxPoolAdd llan_rx_pools_add(LlanRxPools *pools, uint64_t bd)
{
    int32_t size = LLAN_BD_LEN(bd);
    LlanRxPool *p = pool_of_size(pools, size);

    if (!p) {
        p = claim_empty_pool(pools, size);
        if (!p) {
            return LLAN_RX_POOL_NO_FREE_POOL;
        }
    }
    if (p->count + p->lent >= LLAN_RX_POOL_MAX_BDS) {
        return LLAN_RX_POOL_FULL;
    }
    /* QEMU's count: the buffers in the pool before this one. */
    if (trace_event_get_state_spapr_vlan_add_rxbuf_to_pool()) {
        trace_spapr_vlan_add_rxbuf_to_pool(pool_number(pools, p), size,
                                           p->count);
    }
    p->bds[p->count++] = bd;
    return LLAN_RX_POOL_ADDED;
}

void llan_rx_pools_unadd(LlanRxPools *pools, uint64_t bd)
{
    LlanRxPool *p = pool_of_size(pools, LLAN_BD_LEN(bd));

    if (p && p->count > 0 && p->bds[p->count - 1] == bd) {
        p->bds[--p->count] = 0;
    }
}

bool llan_rx_pool_take_best_fit(LlanRxPools *pools, uint32_t need,
                                uint64_t *bd, int *pool)
{
    for (int i = 0; i < LLAN_RX_MAX_POOLS; i++) {
        LlanRxPool *p = pools->sorted[i];

        if (p->count > 0 && (uint32_t)p->bufsize >= need) {
            *bd = p->bds[--p->count];
            p->bds[p->count] = 0;
            p->hits++;
            *pool = i;
            return true;
        }
    }
    return false;
}

unsigned llan_rx_pools_fitting(const LlanRxPools *pools, uint32_t need)
{
    unsigned n = 0;

    for (int i = 0; i < LLAN_RX_MAX_POOLS; i++) {
        n += pools->sorted[i]->count > 0 &&
             (uint32_t)pools->sorted[i]->bufsize >= need;
    }
    return n;
}

/* The pool lending takes from, or NULL. */
static LlanRxPool *lending_pool(const LlanRxPools *pools, uint32_t min)
{
    for (int i = 0; i < LLAN_RX_MAX_POOLS; i++) {
        LlanRxPool *p = pools->sorted[i];

        if (p->bufsize != LLAN_RX_POOL_UNUSED &&
            (uint32_t)p->bufsize >= min) {
            return p;
        }
    }
    return NULL;
}

bool llan_rx_pools_lend(LlanRxPools *pools, uint32_t min, unsigned keep,
                        uint64_t *bd)
{
    LlanRxPool *p = lending_pool(pools, min);

    if (!p || (unsigned)p->count <= keep) {
        return false;
    }
    *bd = p->bds[--p->count];
    p->bds[p->count] = 0;
    p->lent++;
    return true;
}

unsigned llan_rx_pools_lendable(const LlanRxPools *pools, uint32_t min)
{
    const LlanRxPool *p = lending_pool(pools, min);

    return p ? p->count : 0;
}

void llan_rx_pools_unlend(LlanRxPools *pools, uint64_t bd, bool bottom)
{
    LlanRxPool *p = pool_of_size(pools, LLAN_BD_LEN(bd));

    g_assert(p && p->lent > 0);
    p->lent--;
    if (bottom) {
        memmove(&p->bds[1], &p->bds[0], p->count * sizeof(p->bds[0]));
        p->bds[0] = bd;
        p->count++;
    } else {
        p->bds[p->count++] = bd;
    }
}

void llan_rx_pools_lent_taken(LlanRxPools *pools, uint64_t bd)
{
    LlanRxPool *p = pool_of_size(pools, LLAN_BD_LEN(bd));

    g_assert(p && p->lent > 0);
    p->lent--;
    p->hits++;
}

int32_t llan_rx_pools_best_fit_size(const LlanRxPools *pools, uint32_t need)
{
    for (int i = 0; i < LLAN_RX_MAX_POOLS; i++) {
        const LlanRxPool *p = pools->sorted[i];

        if (p->count > 0 && (uint32_t)p->bufsize >= need) {
            return p->bufsize;
        }
    }
    return LLAN_RX_POOL_UNUSED;
}
