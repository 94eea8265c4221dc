/*
 * Pre-copy.  Time is cut in windows of 100 ms, as QEMU does: each window
 * may send max-bandwidth / 10 bytes, and at its end the bandwidth, the
 * page rate and the expected downtime are measured again.  The decision
 * to switch over is made only after a sync, when the pages left are
 * known exactly.
 */
#include "migration/precopy.h"
#include "migration/options.h"
#include "qemu/option.h"
#include "trace/trace-migration.h"

#define WINDOW_US       100000
/* Between two looks at the clock and the rate limit. */
#define CHUNK_BYTES     (256u << 10)

typedef struct Precopy {
    QEMUFile *f;
    RamSaver *rs;
    PrecopyStats *st;
    int64_t window_start;           /* us */
    uint64_t window_bytes;          /* transferred when it began */
    uint64_t window_pages;
    uint64_t bandwidth;             /* bytes per second, last window */
    bool measured;                  /* a window has ended */
} Precopy;

static void store(uint64_t *counter, uint64_t v)
{
    __atomic_store_n(counter, v, __ATOMIC_RELAXED);
}

static uint64_t load(const uint64_t *counter)
{
    return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

static uint64_t pages_sent(Precopy *p)
{
    return load(&p->st->ram.normal) + load(&p->st->ram.duplicate);
}

/* The bandwidth the switchover decision uses: what the user says the
 * link has (avail-switchover-bandwidth), or what was measured. */
static uint64_t switchover_bandwidth(Precopy *p)
{
    uint64_t avail = migrate_avail_switchover_bandwidth();

    return avail ? avail : p->bandwidth;
}

static void update_expected_downtime(Precopy *p)
{
    uint64_t left = load(&p->st->ram.remaining);
    uint64_t bw = switchover_bandwidth(p);
    int64_t ms = !left ? 0 : bw ? (int64_t)(left * 1000 / bw) : INT64_MAX;

    __atomic_store_n(&p->st->expected_downtime_ms, ms, __ATOMIC_RELAXED);
}

static void window_begin(Precopy *p, int64_t now)
{
    p->window_start = now;
    p->window_bytes = qemu_file_transferred(p->f);
    p->window_pages = pages_sent(p);
}

/* Measures the window that ends at @now, if it sent anything. */
static void window_end(Precopy *p, int64_t now)
{
    uint64_t bytes = qemu_file_transferred(p->f) - p->window_bytes;
    int64_t us = MAX(now - p->window_start, 1);

    if (bytes) {
        p->measured = true;
        p->bandwidth = bytes * G_USEC_PER_SEC / us;
        store(&p->st->ram.bandwidth, p->bandwidth);
        store(&p->st->ram.pages_per_second,
              (pages_sent(p) - p->window_pages) * G_USEC_PER_SEC / us);
    }
    update_expected_downtime(p);
    window_begin(p, now);
}

/* How many more bytes this window may send (max-bandwidth 0: any). */
static uint64_t window_budget(Precopy *p)
{
    uint64_t max = migrate_max_bandwidth();
    uint64_t per_window = max / (G_USEC_PER_SEC / WINDOW_US);
    uint64_t used = qemu_file_transferred(p->f) - p->window_bytes;

    if (!max) {
        return UINT64_MAX;
    }
    return used < per_window ? per_window - used : 0;
}

/* One pass over the pages the last sync found; false if the stream
 * failed (or was cancelled). */
static bool send_pass(Precopy *p)
{
    for (;;) {
        uint64_t budget = window_budget(p);
        bool done = budget && ram_saver_send(p->rs, MIN(budget, CHUNK_BYTES));
        int64_t now = g_get_monotonic_time();

        if (!qemu_file_check(p->f, NULL)) {
            return false;
        }
        if (!budget && !qemu_file_sleep(p->f, p->window_start + WINDOW_US -
                                              now)) {
            return false;
        }
        now = g_get_monotonic_time();
        if (now - p->window_start >= WINDOW_US) {
            window_end(p, now);
        }
        if (done) {
            return true;
        }
    }
}

/* Passes until what is left fits the downtime limit; false if the
 * stream failed. */
static bool iterate(Precopy *p, SaveVMStream *s, const PrecopyHooks *hooks)
{
    for (;;) {
        int64_t start = g_get_monotonic_time();
        uint64_t pending;
        bool ok;

        trace_savevm_state_iterate();
        qemu_savevm_ram_part_open(s, false);
        ram_saver_begin_part(p->rs);
        ok = send_pass(p);
        qemu_savevm_ram_part_close(s);
        if (!ok) {
            return false;
        }
        /* A window cut short would measure the burst its budget allows
         * at its start, not the rate: only passes shorter than any
         * window are measured so. */
        if (!p->measured) {
            window_end(p, g_get_monotonic_time());
        }
        pending = ram_saver_sync(p->rs);
        trace_migration_precopy_pass(load(&p->st->ram.dirty_sync_count),
                                     pending, qemu_file_transferred(p->f));
        hooks->pass(load(&p->st->ram.dirty_sync_count), hooks->opaque);
        store(&p->st->ram.dirty_pages_rate, pending * G_USEC_PER_SEC /
              MAX(g_get_monotonic_time() - start, 1));
        update_expected_downtime(p);
        if (__atomic_load_n(&p->st->expected_downtime_ms, __ATOMIC_RELAXED)
            <= migrate_downtime_limit_ms()) {
            return true;
        }
    }
}

/* Stopped: the last pages, at full speed, and the devices. */
static bool complete(Precopy *p, SaveVMStream *s, SaveVMImages *images,
                     const PrecopyHooks *hooks, GError **errp)
{
    uint64_t before = qemu_file_transferred(p->f);
    bool ok;

    trace_savevm_state_complete_precopy();
    ram_saver_sync(p->rs);
    hooks->pass(load(&p->st->ram.dirty_sync_count), hooks->opaque);
    qemu_savevm_ram_part_open(s, true);
    ram_saver_begin_part(p->rs);
    ram_saver_send(p->rs, UINT64_MAX);
    qemu_savevm_ram_part_close(s);
    ok = qemu_savevm_finish(s, images, errp);
    store(&p->st->ram.downtime_bytes, qemu_file_transferred(p->f) - before);
    return ok;
}

bool precopy_save(QEMUFile *f, const char *machine_type, GuestRam *ram,
                  const PrecopyHooks *hooks, PrecopyStats *stats,
                  GError **errp)
{
    Precopy p = { .f = f, .st = stats };
    SaveVMStream *s = qemu_savevm_begin(f, machine_type, ram);
    SaveVMImages *images = NULL;
    bool ok;

    /* Until a window has measured the link, QEMU's guess: the limit. */
    __atomic_store_n(&stats->expected_downtime_ms,
                     migrate_downtime_limit_ms(), __ATOMIC_RELAXED);
    p.rs = ram_saver_new(f, ram, &stats->ram);
    ram_saver_sync(p.rs);
    hooks->active(hooks->opaque);
    hooks->pass(load(&stats->ram.dirty_sync_count), hooks->opaque);
    window_begin(&p, g_get_monotonic_time());
    ok = iterate(&p, s, hooks);
    store(&stats->ram.precopy_bytes, qemu_file_transferred(f));
    if (ok) {
        images = hooks->switchover(hooks->opaque);
        ok = images != NULL;
    }
    if (ok) {
        ok = complete(&p, s, images, hooks, errp);
    } else {
        qemu_savevm_abandon(s);
        qemu_file_check(f, errp);
        if (errp && !*errp) {
            g_set_error(errp, ILLAN_ERROR, 0, "cancelled");
        }
    }
    qemu_savevm_images_free(images);
    ram_saver_free(p.rs);
    return ok;
}
