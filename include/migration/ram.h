/*
 * Guest RAM in the stream, as QEMU's "ram" section (version 4): the setup
 * part names the one block and its size; pages follow as an address with
 * flags, a zero page as one fill byte and any other page in full.
 */
#ifndef MIGRATION_RAM_H
#define MIGRATION_RAM_H

#include "migration/qemu-file.h"
#include "qemu/guest-ram.h"

#define RAM_SECTION_NAME    "ram"
#define RAM_SECTION_VERSION 4
/* QEMU's name for the pseries machine's RAM block. */
#define RAM_BLOCK_NAME      "ppc_spapr.ram"
/* The target page size: pages in the stream, and the description's
 * "page_size". */
#define MIGRATION_PAGE_SIZE 4096

/* The RAM counts query-migrate shows.  One writer, the migration
 * thread; others read each with an atomic load. */
typedef struct RamStats {
    uint64_t total;             /* bytes of guest RAM */
    uint64_t normal;            /* pages sent in full */
    uint64_t duplicate;         /* zero pages, sent as one byte */
    uint64_t remaining;         /* bytes of dirty pages not sent yet */
    uint64_t dirty_sync_count;  /* dirty-log syncs: passes begun */
    uint64_t dirty_pages_rate;  /* pages dirtied per second, last pass */
    uint64_t pages_per_second;  /* pages sent per second, last window */
    uint64_t bandwidth;         /* bytes per second, last window */
    uint64_t precopy_bytes;     /* sent while the machine ran */
    uint64_t downtime_bytes;    /* sent at the switchover */
} RamStats;

/* Setup (the block list), ending with EOS. */
void ram_save_setup(QEMUFile *f, GuestRam *ram);
/* The end of a part of the section. */
void ram_save_eos(QEMUFile *f);

/*
 * Dirty pages into the stream.  A saver keeps the pages still to send;
 * a sync adds those written since the last one (guest RAM's dirty log),
 * and sending takes them in address order, each page copied once, a
 * zero page as one fill byte.
 */
typedef struct RamSaver RamSaver;

RamSaver *ram_saver_new(QEMUFile *f, GuestRam *ram, RamStats *stats);
void ram_saver_free(RamSaver *rs);
/* Every page to send, for a stream written with the machine stopped
 * (nothing writes RAM meanwhile). */
void ram_saver_mark_all(RamSaver *rs);
/* Takes the pages logged since the last sync; returns how many pages
 * are now to send, and counts a sync. */
uint64_t ram_saver_sync(RamSaver *rs);
/* A new part of the section begins: its first page names the block. */
void ram_saver_begin_part(RamSaver *rs);
/* Sends pages until about @max_bytes have gone out or none is left;
 * true when none is left. */
bool ram_saver_send(RamSaver *rs, uint64_t max_bytes);

/* Reads one part up to its EOS; @setup for the START part. */
bool ram_load(QEMUFile *f, GuestRam *ram, bool setup, GError **errp);

#endif
