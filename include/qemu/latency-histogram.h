/*
 * A histogram of delays in nanoseconds with one writer thread and readers
 * on any other: the I/O threads' XDP-to-device delays and the built-in
 * guest's XDP-to-consumption delays are both kept, and shown, this way.
 *
 * Buckets are a quarter octave wide (four to each power of two), so a
 * quantile read from them is at most 25% high: delays of 0-3 ns have a
 * bucket each, then [4, 5), [5, 6), [6, 7), [7, 8), [8, 10) ... ns; the
 * last bucket holds everything from about 2^40 ns (18 min) on.
 */
#ifndef QEMU_LATENCY_HISTOGRAM_H
#define QEMU_LATENCY_HISTOGRAM_H

#include <glib.h>
#include <stdint.h>

#define LATENCY_BUCKETS 160

/* Only uint64_t members: snapshots copy it word by word. */
typedef struct LatencyHistogram {
    uint64_t bucket[LATENCY_BUCKETS];
    uint64_t max_ns;
} LatencyHistogram;

/* The bucket of a delay of @ns, and the end (exclusive) of bucket @b. */
static inline unsigned latency_bucket(uint64_t ns)
{
    unsigned e, b;

    if (ns < 4) {
        return ns;
    }
    e = 63 - __builtin_clzll(ns);
    b = 4 * (e - 1) + ((ns >> (e - 2)) & 3);
    return b < LATENCY_BUCKETS ? b : LATENCY_BUCKETS - 1;
}

static inline uint64_t latency_bucket_end(unsigned b)
{
    return b < 4 ? b + 1 : (uint64_t)(5 + b % 4) << (b / 4 - 1);
}

/* The CLOCK_MONOTONIC time in ns: the clock of bpf_ktime_get_ns(). */
uint64_t latency_now_ns(void);

/* Counts one delay from @from to @to (CLOCK_MONOTONIC ns; 0 if @to is
 * earlier), or from @from to now.  The histogram's one writer only. */
void latency_histogram_add(LatencyHistogram *h, uint64_t from, uint64_t to);
void latency_histogram_add_since(LatencyHistogram *h, uint64_t from);
/* A consistent-enough copy for a reader on another thread: every word
 * loaded whole. */
void latency_histogram_snapshot(const LatencyHistogram *h,
                                LatencyHistogram *out);
/* The upper bound (ns) of the bucket the @q-quantile (0 < @q <= 1) of
 * a snapshot falls in, no more than the largest delay; 0 when empty. */
uint64_t latency_histogram_quantile(const LatencyHistogram *h, double q);
/* A snapshot as an a{sv} dictionary (floating reference): "samples",
 * and with any, "p50-ns", "p90-ns", "p99-ns", "p99.9-ns", "max-ns". */
GVariant *latency_histogram_variant(const LatencyHistogram *h);

#endif
