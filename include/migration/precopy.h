/*
 * The source's side of a live migration, on the migration thread: guest
 * RAM goes out in passes while the machine runs, each pass sending what
 * the dirty log found written since the last, until what is left would
 * go within downtime-limit at the bandwidth measured.  Then the one
 * pause (the switchover, made by the main thread): the rest of RAM and
 * the devices.  max-bandwidth holds the passes to a byte rate; what is
 * sent at the switchover goes at full speed, as in QEMU.
 */
#ifndef MIGRATION_PRECOPY_H
#define MIGRATION_PRECOPY_H

#include "migration/ram.h"
#include "migration/savevm.h"

typedef struct PrecopyHooks {
    /* The setup part is written: the migration is active. */
    void (*active)(void *opaque);
    /* A dirty-log sync: pass @pass begins (1 is the first, all RAM; the
     * last is the switchover's). */
    void (*pass)(uint64_t pass, void *opaque);
    /* Waits for the main thread to stop the machine and capture every
     * device; NULL when the migration was cancelled meanwhile. */
    SaveVMImages *(*switchover)(void *opaque);
    void *opaque;
} PrecopyHooks;

/* What query-migrate shows while it runs; written by the migration
 * thread, each field read with an atomic load. */
typedef struct PrecopyStats {
    RamStats ram;
    int64_t expected_downtime_ms;
} PrecopyStats;

/* The whole stream into @f; the dirty log of @ram must be on. */
bool precopy_save(QEMUFile *f, const char *machine_type, GuestRam *ram,
                  const PrecopyHooks *hooks, PrecopyStats *stats,
                  GError **errp);

#endif
