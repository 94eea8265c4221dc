/*
 * Guest RAM: one block of shared anonymous memory at guest-physical 0.
 * Every accessor checks the whole range and fails rather than touch memory
 * outside it; multi-byte loads and stores are big-endian, as the guest is.
 */
#ifndef QEMU_GUEST_RAM_H
#define QEMU_GUEST_RAM_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct GuestRam GuestRam;

GuestRam *guest_ram_new(uint64_t size, GError **errp);
void guest_ram_free(GuestRam *ram);
uint64_t guest_ram_size(const GuestRam *ram);

/*
 * Host memory right after guest RAM, in the same mapping: an AF_XDP UMEM
 * is one range of addresses, and one over guest RAM (receive zero copy)
 * needs the host's own frames (transmit) in it too.  No guest access
 * reaches it.  It costs address space only until it is taken.  Any
 * thread.
 */
#define GUEST_RAM_HOST_AREA_MAX (256ull << 20)
/* RAM's first byte: the start of such a UMEM. */
void *guest_ram_base(GuestRam *ram);
/* @size bytes (rounded up to 1 MiB) of the host area, at *@offset from
 * RAM's base; NULL when no run of that size is free. */
void *guest_ram_host_area_take(GuestRam *ram, uint64_t size,
                               uint64_t *offset);
/* Gives back what a take returned, its pages freed. */
void guest_ram_host_area_give(GuestRam *ram, uint64_t offset, uint64_t size);

/* True when [gpa, gpa + len) lies inside RAM (overflow-safe). */
bool guest_ram_range_ok(const GuestRam *ram, uint64_t gpa, uint64_t len);
/* Host pointer to a checked range, or NULL. */
void *guest_ram_ptr(GuestRam *ram, uint64_t gpa, uint64_t len);

bool guest_ram_read(GuestRam *ram, uint64_t gpa, void *buf, uint64_t len);
bool guest_ram_write(GuestRam *ram, uint64_t gpa, const void *buf,
                     uint64_t len);
bool guest_ram_fill(GuestRam *ram, uint64_t gpa, uint8_t byte, uint64_t len);
/*
 * A read as the guest's CPU makes it (qtest's memory verbs): it may race
 * with a device writing the same bytes, which is the guest's own business,
 * as on real hardware.  ThreadSanitizer is not asked to watch it.
 */
bool guest_ram_cpu_read(GuestRam *ram, uint64_t gpa, void *buf, uint64_t len);
/* Writes as the guest's CPU makes them, for the same reason. */
bool guest_ram_cpu_write(GuestRam *ram, uint64_t gpa, const void *buf,
                         uint64_t len);
bool guest_ram_cpu_fill(GuestRam *ram, uint64_t gpa, uint8_t byte,
                        uint64_t len);

bool guest_ram_ld_be(GuestRam *ram, uint64_t gpa, unsigned size,
                     uint64_t *val);
bool guest_ram_st_be(GuestRam *ram, uint64_t gpa, unsigned size,
                     uint64_t val);

/*
 * The dirty log, for live migration: while it is on, every write marks
 * its pages.  The accessors above mark what they write; whoever writes
 * through guest_ram_ptr() calls guest_ram_mark_dirty() after the write,
 * from any thread.  Starting and stopping is the migration's; a sync
 * hands it the pages written since the last one.
 */
#define GUEST_RAM_DIRTY_PAGE_SIZE 4096u

void guest_ram_mark_dirty(GuestRam *ram, uint64_t gpa, uint64_t len);
/* Logging on, with every page dirty: a first pass sends them all. */
void guest_ram_dirty_log_start(GuestRam *ram);
void guest_ram_dirty_log_stop(GuestRam *ram);
/* Moves the pages marked since the last sync into @bitmap (one bit per
 * page, guest_ram_dirty_words() words, bits ORed in) and returns how
 * many bits @bitmap has set; *@added is how many were not set before. */
uint64_t guest_ram_dirty_sync(GuestRam *ram, uint64_t *bitmap,
                              uint64_t *added);
size_t guest_ram_dirty_words(const GuestRam *ram);
/*
 * Copies one page while other threads may be writing it (a migration
 * pass runs beside the devices' DMA).  The copy may mix old and new
 * bytes; such a page was marked dirty again and is sent again.  Not
 * watched by ThreadSanitizer, for that reason.
 */
void guest_ram_copy_page_racy(GuestRam *ram, uint64_t gpa, void *page);

#endif
