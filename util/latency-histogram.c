/*
 * Delay histograms (see include/qemu/latency-histogram.h).
 */
#include "qemu/latency-histogram.h"

#include <time.h>

uint64_t latency_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

void latency_histogram_add(LatencyHistogram *h, uint64_t from, uint64_t to)
{
    uint64_t delay = to > from ? to - from : 0;
    uint64_t *b = &h->bucket[latency_bucket(delay)];

    /* One writer: plain read-modify-write, stored whole for readers. */
    __atomic_store_n(b, *b + 1, __ATOMIC_RELAXED);
    if (delay > h->max_ns) {
        __atomic_store_n(&h->max_ns, delay, __ATOMIC_RELAXED);
    }
}

void latency_histogram_add_since(LatencyHistogram *h, uint64_t from)
{
    latency_histogram_add(h, from, latency_now_ns());
}

void latency_histogram_snapshot(const LatencyHistogram *h,
                                LatencyHistogram *out)
{
    for (unsigned b = 0; b < LATENCY_BUCKETS; b++) {
        out->bucket[b] = __atomic_load_n(&h->bucket[b], __ATOMIC_RELAXED);
    }
    out->max_ns = __atomic_load_n(&h->max_ns, __ATOMIC_RELAXED);
}

static uint64_t samples(const LatencyHistogram *h)
{
    uint64_t n = 0;

    for (unsigned b = 0; b < LATENCY_BUCKETS; b++) {
        n += h->bucket[b];
    }
    return n;
}

uint64_t latency_histogram_quantile(const LatencyHistogram *h, double q)
{
    uint64_t want = (uint64_t)(q * samples(h) + 0.999999), seen = 0;

    if (!want) {
        return 0;
    }
    for (unsigned b = 0; b < LATENCY_BUCKETS; b++) {
        seen += h->bucket[b];
        if (seen >= want) {
            return MIN(latency_bucket_end(b), h->max_ns);
        }
    }
    return h->max_ns;
}

GVariant *latency_histogram_variant(const LatencyHistogram *h)
{
    static const struct {
        const char *key;
        double q;
    } quantiles[] = {
        { "p50-ns", 0.5 }, { "p90-ns", 0.9 }, { "p99-ns", 0.99 },
        { "p99.9-ns", 0.999 },
    };
    uint64_t n = samples(h);
    GVariantDict d;

    g_variant_dict_init(&d, NULL);
    g_variant_dict_insert(&d, "samples", "t", (guint64)n);
    if (n) {
        for (unsigned i = 0; i < G_N_ELEMENTS(quantiles); i++) {
            g_variant_dict_insert(&d, quantiles[i].key, "t", (guint64)
                                  latency_histogram_quantile(h,
                                                             quantiles[i].q));
        }
        g_variant_dict_insert(&d, "max-ns", "t", (guint64)h->max_ns);
    }
    return g_variant_dict_end(&d);
}
