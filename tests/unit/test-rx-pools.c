/*
 * The size-sorted RX pools: keyed by exact size, sorted, best fit, LIFO,
 * and the 4096-per-pool and five-size limits; lending to the host kernel
 * (receive zero copy) and the table of lent buffers.
 */
#include "hw/net/llan_rx_lent.h"
#include "hw/net/llan_rx_pools.h"

#include <glib.h>

static uint64_t bd(uint32_t len, uint32_t addr)
{
    return 0x8000000000000000ULL | (uint64_t)len << 32 | addr;
}

static LlanRxPools *new_pools(void)
{
    LlanRxPools *p = g_new(LlanRxPools, 1);

    llan_rx_pools_reset(p);
    return p;
}

static void test_sorted_by_size(void)
{
    g_autofree LlanRxPools *p = new_pools();
    const uint32_t sizes[] = { 65536, 512, 2048, 16384, 1024 };

    for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
        g_assert_cmpint(llan_rx_pools_add(p, bd(sizes[i], i * 0x10000)), ==,
                        LLAN_RX_POOL_ADDED);
    }
    g_assert_cmpint(p->sorted[0]->bufsize, ==, 512);
    g_assert_cmpint(p->sorted[1]->bufsize, ==, 1024);
    g_assert_cmpint(p->sorted[2]->bufsize, ==, 2048);
    g_assert_cmpint(p->sorted[3]->bufsize, ==, 16384);
    g_assert_cmpint(p->sorted[4]->bufsize, ==, 65536);
}

static void test_best_fit_and_lifo(void)
{
    g_autofree LlanRxPools *p = new_pools();
    uint64_t got;
    int pool;

    llan_rx_pools_add(p, bd(65536, 0x100000));
    llan_rx_pools_add(p, bd(2048, 0x1000));
    llan_rx_pools_add(p, bd(2048, 0x2000));
    llan_rx_pools_add(p, bd(512, 0x3000));
    /* 60 + 8 fits 512; 600 + 8 and 1514 + 8 need 2048, last in first.
     * The place is in size order: 512 first. */
    g_assert_true(llan_rx_pool_take_best_fit(p, 68, &got, &pool));
    g_assert_cmphex(got, ==, bd(512, 0x3000));
    g_assert_cmpint(pool, ==, 0);
    g_assert_true(llan_rx_pool_take_best_fit(p, 1522, &got, &pool));
    g_assert_cmphex(got, ==, bd(2048, 0x2000));
    g_assert_cmpint(pool, ==, 1);
    /* The 512 pool is empty now: a small frame takes the next size up. */
    g_assert_true(llan_rx_pool_take_best_fit(p, 68, &got, &pool));
    g_assert_cmphex(got, ==, bd(2048, 0x1000));
    g_assert_cmpint(pool, ==, 1);
    g_assert_true(llan_rx_pool_take_best_fit(p, 608, &got, &pool));
    g_assert_cmphex(got, ==, bd(65536, 0x100000));
    g_assert_cmpint(pool, ==, 2);
    g_assert_false(llan_rx_pool_take_best_fit(p, 68, &got, &pool));
    g_assert_cmpuint(p->sorted[0]->hits + p->sorted[1]->hits +
                     p->sorted[2]->hits, ==, 4);
}

/* The non-empty pools a frame could go to, for "best fit" or "only fit". */
static void test_fitting(void)
{
    g_autofree LlanRxPools *p = new_pools();
    uint64_t got;
    int pool;

    g_assert_cmpuint(llan_rx_pools_fitting(p, 16), ==, 0);
    llan_rx_pools_add(p, bd(65536, 0x100000));
    llan_rx_pools_add(p, bd(2048, 0x1000));
    llan_rx_pools_add(p, bd(512, 0x3000));
    g_assert_cmpuint(llan_rx_pools_fitting(p, 16), ==, 3);
    g_assert_cmpuint(llan_rx_pools_fitting(p, 512), ==, 3);
    g_assert_cmpuint(llan_rx_pools_fitting(p, 513), ==, 2);
    g_assert_cmpuint(llan_rx_pools_fitting(p, 2049), ==, 1);
    g_assert_cmpuint(llan_rx_pools_fitting(p, 65537), ==, 0);
    /* An empty pool does not count. */
    g_assert_true(llan_rx_pool_take_best_fit(p, 16, &got, &pool));
    g_assert_cmpuint(llan_rx_pools_fitting(p, 16), ==, 2);
}

static void test_exact_fit_boundary(void)
{
    g_autofree LlanRxPools *p = new_pools();
    uint64_t got;
    int pool;

    llan_rx_pools_add(p, bd(512, 0x1000));
    g_assert_false(llan_rx_pool_take_best_fit(p, 513, &got, &pool));
    g_assert_true(llan_rx_pool_take_best_fit(p, 512, &got, &pool));
    g_assert_cmpint(pool, ==, 0);
}

static void test_pool_limit(void)
{
    g_autofree LlanRxPools *p = new_pools();

    for (uint32_t i = 0; i < LLAN_RX_POOL_MAX_BDS; i++) {
        g_assert_cmpint(llan_rx_pools_add(p, bd(2048, i * 2048)), ==,
                        LLAN_RX_POOL_ADDED);
    }
    g_assert_cmpint(llan_rx_pools_add(p, bd(2048, 0)), ==, LLAN_RX_POOL_FULL);
    /* Other sizes still have room. */
    g_assert_cmpint(llan_rx_pools_add(p, bd(512, 0)), ==, LLAN_RX_POOL_ADDED);
}

static void test_five_sizes(void)
{
    g_autofree LlanRxPools *p = new_pools();
    uint64_t got;
    int pool;

    for (uint32_t i = 1; i <= 5; i++) {
        g_assert_cmpint(llan_rx_pools_add(p, bd(i * 512, 0)), ==,
                        LLAN_RX_POOL_ADDED);
    }
    g_assert_cmpint(llan_rx_pools_add(p, bd(6 * 512, 0)), ==,
                    LLAN_RX_POOL_NO_FREE_POOL);
    /* Once a pool drains, its slot takes the new size, sorted in place. */
    g_assert_true(llan_rx_pool_take_best_fit(p, 1536, &got, &pool));
    g_assert_cmphex(got, ==, bd(1536, 0));
    g_assert_cmpint(pool, ==, 2);
    g_assert_cmpint(llan_rx_pools_add(p, bd(6 * 512, 0)), ==,
                    LLAN_RX_POOL_ADDED);
    for (int i = 1; i < LLAN_RX_MAX_POOLS; i++) {
        g_assert_cmpint(p->sorted[i - 1]->bufsize, <, p->sorted[i]->bufsize);
    }
    g_assert_cmpint(p->sorted[4]->bufsize, ==, 3072);
}

static void test_unadd(void)
{
    g_autofree LlanRxPools *p = new_pools();
    uint64_t got;
    int pool;

    llan_rx_pools_add(p, bd(512, 0x1000));
    llan_rx_pools_add(p, bd(512, 0x2000));
    llan_rx_pools_unadd(p, bd(512, 0x2000));
    g_assert_cmpint(p->sorted[0]->count, ==, 1);
    /* Only the most recent add can be undone. */
    llan_rx_pools_unadd(p, bd(512, 0x3000));
    g_assert_cmpint(p->sorted[0]->count, ==, 1);
    g_assert_true(llan_rx_pool_take_best_fit(p, 16, &got, &pool));
    g_assert_cmphex(got, ==, bd(512, 0x1000));
}

static void test_reset(void)
{
    g_autofree LlanRxPools *p = new_pools();
    uint64_t got;
    int pool;

    llan_rx_pools_add(p, bd(512, 0x1000));
    llan_rx_pools_reset(p);
    for (int i = 0; i < LLAN_RX_MAX_POOLS; i++) {
        g_assert_cmpint(p->sorted[i]->bufsize, ==, LLAN_RX_POOL_UNUSED);
        g_assert_cmpint(p->sorted[i]->count, ==, 0);
    }
    g_assert_false(llan_rx_pool_take_best_fit(p, 16, &got, &pool));
}

/* Lending takes from the smallest pool of at least the minimum, and only
 * from it: an empty one lends nothing, though bigger pools have some. */
static void test_lend_pool(void)
{
    g_autofree LlanRxPools *p = new_pools();
    uint64_t got;

    llan_rx_pools_add(p, bd(512, 0x1000));
    llan_rx_pools_add(p, bd(65536, 0x100000));
    g_assert_true(llan_rx_pools_lend(p, 2048, 0, &got));
    g_assert_cmphex(got, ==, bd(65536, 0x100000));
    llan_rx_pools_unlend(p, got, false);
    llan_rx_pools_add(p, bd(2048, 0x2000));
    llan_rx_pools_add(p, bd(2048, 0x3000));
    g_assert_cmpuint(llan_rx_pools_lendable(p, 2048), ==, 2);
    g_assert_true(llan_rx_pools_lend(p, 2048, 0, &got));
    g_assert_cmphex(got, ==, bd(2048, 0x3000));
    g_assert_true(llan_rx_pools_lend(p, 2048, 0, &got));
    g_assert_cmphex(got, ==, bd(2048, 0x2000));
    g_assert_false(llan_rx_pools_lend(p, 2048, 0, &got));
    g_assert_cmpint(p->sorted[1]->lent, ==, 2);
    /* An empty pool with lent buffers keeps its size: no new size takes
     * it over. */
    g_assert_cmpint(p->sorted[1]->bufsize, ==, 2048);
    /* Back on top, lent again first; or to the bottom, lent last. */
    llan_rx_pools_unlend(p, bd(2048, 0x2000), false);
    llan_rx_pools_unlend(p, bd(2048, 0x3000), true);
    g_assert_true(llan_rx_pools_lend(p, 2048, 0, &got));
    g_assert_cmphex(got, ==, bd(2048, 0x2000));
    llan_rx_pools_lent_taken(p, got);
    g_assert_cmpint(p->sorted[1]->lent, ==, 0);
    g_assert_cmpuint(p->sorted[1]->hits, ==, 1);
}

/* One buffer stays unlent for each frame the kernel may still put in a
 * buffer of the backend's own. */
static void test_lend_keep(void)
{
    g_autofree LlanRxPools *p = new_pools();
    uint64_t got;

    for (uint32_t i = 0; i < 3; i++) {
        llan_rx_pools_add(p, bd(2048, 0x1000 * (i + 1)));
    }
    g_assert_true(llan_rx_pools_lend(p, 2048, 2, &got));
    g_assert_false(llan_rx_pools_lend(p, 2048, 2, &got));
    g_assert_cmpuint(llan_rx_pools_lendable(p, 2048), ==, 2);
}

/* A pool holds 4096 buffers, lent ones included. */
static void test_lend_counts_against_limit(void)
{
    g_autofree LlanRxPools *p = new_pools();
    uint64_t got;

    for (uint32_t i = 0; i < LLAN_RX_POOL_MAX_BDS; i++) {
        g_assert_cmpint(llan_rx_pools_add(p, bd(2048, i * 0x800)), ==,
                        LLAN_RX_POOL_ADDED);
    }
    g_assert_true(llan_rx_pools_lend(p, 2048, 0, &got));
    g_assert_cmpint(llan_rx_pools_add(p, bd(2048, 0x7ffff000)), ==,
                    LLAN_RX_POOL_FULL);
}

static void test_best_fit_size(void)
{
    g_autofree LlanRxPools *p = new_pools();
    uint64_t got;

    llan_rx_pools_add(p, bd(512, 0x1000));
    llan_rx_pools_add(p, bd(2048, 0x2000));
    g_assert_cmpint(llan_rx_pools_best_fit_size(p, 68), ==, 512);
    g_assert_cmpint(llan_rx_pools_best_fit_size(p, 1000), ==, 2048);
    g_assert_true(llan_rx_pools_lend(p, 2048, 0, &got));
    /* The lent buffer is no longer the pool's to give. */
    g_assert_cmpint(llan_rx_pools_best_fit_size(p, 1000), ==,
                    LLAN_RX_POOL_UNUSED);
}

/* Addresses that collide in the table come back, each with its own
 * descriptor, whatever order they leave in. */
static void test_lent_put_take(void)
{
    g_autofree LlanRxLent *t = g_new0(LlanRxLent, 1);
    enum { N = 3000 };
    uint64_t got;

    for (uint64_t i = 0; i < N; i++) {
        g_assert_true(llan_rx_lent_put(t, 0x10008 + i * 0x800, i + 1));
    }
    g_assert_false(llan_rx_lent_take(t, 0x8, &got));
    for (uint64_t i = 0; i < N; i += 2) {
        g_assert_true(llan_rx_lent_take(t, 0x10008 + i * 0x800, &got));
        g_assert_cmpuint(got, ==, i + 1);
    }
    g_assert_false(llan_rx_lent_take(t, 0x10008, &got));
    for (uint64_t i = 1; i < N; i += 2) {
        g_assert_true(llan_rx_lent_take(t, 0x10008 + i * 0x800, &got));
        g_assert_cmpuint(got, ==, i + 1);
    }
    g_assert_cmpuint(t->count, ==, 0);
}

static void count_bd(void *opaque, uint64_t bd)
{
    *(uint64_t *)opaque += bd;
}

static void test_lent_full_and_drain(void)
{
    g_autofree LlanRxLent *t = g_new0(LlanRxLent, 1);
    uint64_t sum = 0;

    for (uint64_t i = 0; i < LLAN_RX_LENT_MAX; i++) {
        g_assert_true(llan_rx_lent_put(t, 0x1008 + i * 0x1000, 1));
    }
    g_assert_false(llan_rx_lent_put(t, 0x8, 1));
    llan_rx_lent_drain(t, count_bd, &sum);
    g_assert_cmpuint(sum, ==, LLAN_RX_LENT_MAX);
    g_assert_cmpuint(t->count, ==, 0);
    g_assert_true(llan_rx_lent_put(t, 0x8, 1));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/rx-pools/sorted-by-size", test_sorted_by_size);
    g_test_add_func("/rx-pools/fitting", test_fitting);
    g_test_add_func("/rx-pools/best-fit-and-lifo", test_best_fit_and_lifo);
    g_test_add_func("/rx-pools/exact-fit-boundary", test_exact_fit_boundary);
    g_test_add_func("/rx-pools/pool-limit", test_pool_limit);
    g_test_add_func("/rx-pools/five-sizes", test_five_sizes);
    g_test_add_func("/rx-pools/unadd", test_unadd);
    g_test_add_func("/rx-pools/reset", test_reset);
    g_test_add_func("/rx-pools/lend/smallest-pool-over-min", test_lend_pool);
    g_test_add_func("/rx-pools/lend/keep", test_lend_keep);
    g_test_add_func("/rx-pools/lend/counts-against-limit",
                    test_lend_counts_against_limit);
    g_test_add_func("/rx-pools/lend/best-fit-size", test_best_fit_size);
    g_test_add_func("/rx-lent/put-take", test_lent_put_take);
    g_test_add_func("/rx-lent/full-and-drain", test_lent_full_and_drain);
    return g_test_run();
}
