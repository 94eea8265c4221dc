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

bool guest_ram_ld_be(GuestRam *ram, uint64_t gpa, unsigned size,
                     uint64_t *val);
bool guest_ram_st_be(GuestRam *ram, uint64_t gpa, unsigned size,
                     uint64_t val);

#endif
