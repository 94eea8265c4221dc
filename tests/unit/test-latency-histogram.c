/*
 * Delay histograms: bucket edges, quantiles and their a{sv} form.
 */
#include "qemu/latency-histogram.h"

#include <glib.h>

/* Every delay lies in its bucket, each bucket is at most a quarter of
 * its start wide, and the buckets follow each other without a gap. */
static void test_buckets(void)
{
    g_assert_cmpuint(latency_bucket(0), ==, 0);
    g_assert_cmpuint(latency_bucket(3), ==, 3);
    g_assert_cmpuint(latency_bucket(4), ==, 4);
    g_assert_cmpuint(latency_bucket(1000), ==, latency_bucket(1023));
    g_assert_cmpuint(latency_bucket(UINT64_MAX), ==, LATENCY_BUCKETS - 1);
    for (unsigned b = 1; b < LATENCY_BUCKETS - 1; b++) {
        uint64_t start = latency_bucket_end(b - 1), end = latency_bucket_end(b);

        g_assert_cmpuint(latency_bucket(start), ==, b);
        g_assert_cmpuint(latency_bucket(end - 1), ==, b);
        g_assert_cmpuint(end - start, <=, MAX(start / 4, 1));
    }
}

/* A quantile is its bucket's end, but never past the largest delay. */
static void test_quantiles(void)
{
    LatencyHistogram h = { 0 };

    g_assert_cmpuint(latency_histogram_quantile(&h, 0.5), ==, 0);
    for (unsigned i = 0; i < 90; i++) {
        latency_histogram_add(&h, 1000, 1000 + 2000);
    }
    for (unsigned i = 0; i < 10; i++) {
        latency_histogram_add(&h, 1000, 1000 + 50000);
    }
    /* A stamp after the moment it is measured to counts as 0. */
    latency_histogram_add(&h, 5000, 4000);
    g_assert_cmpuint(h.bucket[0], ==, 1);
    g_assert_cmpuint(latency_histogram_quantile(&h, 0.5), ==,
                     latency_bucket_end(latency_bucket(2000)));
    g_assert_cmpuint(latency_histogram_quantile(&h, 0.99), ==, 50000);
    g_assert_cmpuint(h.max_ns, ==, 50000);
}

static void test_variant(void)
{
    LatencyHistogram h = { 0 }, copy;
    g_autoptr(GVariant) empty = NULL, full = NULL;
    guint64 n, p50, max;

    empty = g_variant_ref_sink(latency_histogram_variant(&h));
    g_assert_true(g_variant_lookup(empty, "samples", "t", &n));
    g_assert_cmpuint(n, ==, 0);
    g_assert_false(g_variant_lookup(empty, "p50-ns", "t", &p50));
    latency_histogram_add(&h, 0, 700);
    latency_histogram_snapshot(&h, &copy);
    full = g_variant_ref_sink(latency_histogram_variant(&copy));
    g_assert_true(g_variant_lookup(full, "samples", "t", &n));
    g_assert_true(g_variant_lookup(full, "p50-ns", "t", &p50));
    g_assert_true(g_variant_lookup(full, "max-ns", "t", &max));
    g_assert_cmpuint(n, ==, 1);
    g_assert_cmpuint(p50, ==, 700);
    g_assert_cmpuint(max, ==, 700);
    g_assert_true(g_variant_lookup(full, "p99.9-ns", "t", &p50));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/latency-histogram/buckets", test_buckets);
    g_test_add_func("/latency-histogram/quantiles", test_quantiles);
    g_test_add_func("/latency-histogram/variant", test_variant);
    return g_test_run();
}
