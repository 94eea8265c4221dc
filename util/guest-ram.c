/*
 * Guest RAM.  Anonymous memory, seen by every thread (vCPUs, I/O threads);
 * pages are only touched when the guest (or a test) writes them, so large
 * -m values cost nothing up front.  Private, because transparent huge
 * pages are given to private anonymous memory (shared memory gets them
 * only where the host enabled them for shmem, which it rarely does).
 */
#include "qemu/guest-ram.h"
#include "qemu/bswap.h"
#include "qemu/option.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

struct GuestRam {
    uint8_t *base;
    uint64_t size;
};

GuestRam *guest_ram_new(uint64_t size, GError **errp)
{
    GuestRam *ram;
    void *base;

    if (size == 0) {
        /* A machine without RAM (-M none): every access is out of range. */
        return g_new0(GuestRam, 1);
    }
    base = mmap(NULL, size, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "cannot allocate %" G_GUINT64_FORMAT " bytes of guest RAM: %s",
                    size, g_strerror(errno));
        return NULL;
    }
    /* Receive buffers are spread over megabytes: with 4 KiB pages nearly
     * every frame's copy is a TLB miss.  Best effort. */
    madvise(base, size, MADV_HUGEPAGE);
    ram = g_new0(GuestRam, 1);
    ram->base = base;
    ram->size = size;
    return ram;
}

void guest_ram_free(GuestRam *ram)
{
    if (ram) {
        if (ram->size) {
            munmap(ram->base, ram->size);
        }
        g_free(ram);
    }
}

uint64_t guest_ram_size(const GuestRam *ram)
{
    return ram->size;
}

bool guest_ram_range_ok(const GuestRam *ram, uint64_t gpa, uint64_t len)
{
    /* Nothing is in range of no RAM, not even an empty access. */
    return ram->size && gpa <= ram->size && len <= ram->size - gpa;
}

void *guest_ram_ptr(GuestRam *ram, uint64_t gpa, uint64_t len)
{
    return guest_ram_range_ok(ram, gpa, len) ? ram->base + gpa : NULL;
}

bool guest_ram_read(GuestRam *ram, uint64_t gpa, void *buf, uint64_t len)
{
    void *p = guest_ram_ptr(ram, gpa, len);

    if (p) {
        memcpy(buf, p, len);
    }
    return p != NULL;
}

/* Byte by byte through a volatile pointer, so that no memcpy (which the
 * sanitizer intercepts whatever the attribute says) is made of it. */
__attribute__((no_sanitize_thread))
bool guest_ram_cpu_read(GuestRam *ram, uint64_t gpa, void *buf, uint64_t len)
{
    const volatile uint8_t *p = guest_ram_ptr(ram, gpa, len);
    uint8_t *out = buf;

    if (!p) {
        return false;
    }
    for (uint64_t i = 0; i < len; i++) {
        out[i] = p[i];
    }
    return true;
}

bool guest_ram_write(GuestRam *ram, uint64_t gpa, const void *buf,
                     uint64_t len)
{
    void *p = guest_ram_ptr(ram, gpa, len);

    if (p) {
        memcpy(p, buf, len);
    }
    return p != NULL;
}

bool guest_ram_fill(GuestRam *ram, uint64_t gpa, uint8_t byte, uint64_t len)
{
    void *p = guest_ram_ptr(ram, gpa, len);

    if (p) {
        memset(p, byte, len);
    }
    return p != NULL;
}

bool guest_ram_ld_be(GuestRam *ram, uint64_t gpa, unsigned size,
                     uint64_t *val)
{
    const uint8_t *p = guest_ram_ptr(ram, gpa, size);

    g_assert(size == 1 || size == 2 || size == 4 || size == 8);
    if (!p) {
        return false;
    }
    *val = ldn_be_p(p, size);
    return true;
}

bool guest_ram_st_be(GuestRam *ram, uint64_t gpa, unsigned size, uint64_t val)
{
    uint8_t *p = guest_ram_ptr(ram, gpa, size);

    g_assert(size == 1 || size == 2 || size == 4 || size == 8);
    if (!p) {
        return false;
    }
    stn_be_p(p, size, val);
    return true;
}
