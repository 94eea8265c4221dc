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

typedef struct RamStats {
    uint64_t total;             /* bytes of guest RAM */
    uint64_t normal;            /* pages sent in full */
    uint64_t duplicate;         /* zero pages, sent as one byte */
} RamStats;

/* Setup (block list), every page, completion: each ends with EOS. */
void ram_save_setup(QEMUFile *f, GuestRam *ram);
void ram_save_pages(QEMUFile *f, GuestRam *ram, RamStats *stats);
void ram_save_complete(QEMUFile *f);

/* Reads one part up to its EOS; @setup for the START part. */
bool ram_load(QEMUFile *f, GuestRam *ram, bool setup, GError **errp);

#endif
