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

#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))

/* The host area is handed out in units of this many bytes. */
#define HOST_AREA_UNIT (1ull << 20)
#define HOST_AREA_UNITS (GUEST_RAM_HOST_AREA_MAX / HOST_AREA_UNIT)

struct GuestRam {
    uint8_t *base;
    uint64_t size;
    /* The dirty log: a bit per page, set by writers with an atomic OR and
     * taken by the migration with an exchange.  @logging is switched by
     * the main thread under the pause, so writers read it relaxed. */
    uint64_t *dirty;
    size_t dirty_words;
    bool logging;
    /* The host area's units in use, a bit each, under host_lock. */
    GMutex host_lock;
    uint64_t host_used[HOST_AREA_UNITS / 64];
};

GuestRam *guest_ram_new(uint64_t size, GError **errp)
{
    GuestRam *ram;
    void *base;

    if (size == 0) {
        /* A machine without RAM (-M none): every access is out of range. */
        return g_new0(GuestRam, 1);
    }
    /* The host area after RAM costs address space only until used. */
    base = mmap(NULL, size + GUEST_RAM_HOST_AREA_MAX, PROT_READ | PROT_WRITE,
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
    /* A child (an exec: migration) never needs guest RAM, and once RAM is
     * pinned as an AF_XDP UMEM the kernel would copy all of it at fork. */
    if (madvise(base, size + GUEST_RAM_HOST_AREA_MAX, MADV_DONTFORK) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0,
                    "cannot keep guest RAM out of child processes: %s",
                    g_strerror(errno));
        munmap(base, size + GUEST_RAM_HOST_AREA_MAX);
        return NULL;
    }
    ram = g_new0(GuestRam, 1);
    ram->base = base;
    ram->size = size;
    ram->dirty_words = DIV_ROUND_UP(size, GUEST_RAM_DIRTY_PAGE_SIZE * 64ull);
    ram->dirty = g_new0(uint64_t, ram->dirty_words);
    g_mutex_init(&ram->host_lock);
    return ram;
}

void guest_ram_free(GuestRam *ram)
{
    if (ram) {
        if (ram->size) {
            munmap(ram->base, ram->size + GUEST_RAM_HOST_AREA_MAX);
            g_mutex_clear(&ram->host_lock);
        }
        g_free(ram->dirty);
        g_free(ram);
    }
}

uint64_t guest_ram_size(const GuestRam *ram)
{
    return ram->size;
}

void *guest_ram_base(GuestRam *ram)
{
    return ram->base;
}

static bool host_unit_used(const GuestRam *ram, unsigned i)
{
    return ram->host_used[i / 64] & (1ull << (i % 64));
}

static void host_units_mark(GuestRam *ram, unsigned first, unsigned n,
                            bool used)
{
    for (unsigned i = first; i < first + n; i++) {
        if (used) {
            ram->host_used[i / 64] |= 1ull << (i % 64);
        } else {
            ram->host_used[i / 64] &= ~(1ull << (i % 64));
        }
    }
}

/* The first run of @n free units, or HOST_AREA_UNITS. */
static unsigned host_units_find(const GuestRam *ram, unsigned n)
{
    unsigned run = 0;

    for (unsigned i = 0; i < HOST_AREA_UNITS; i++) {
        run = host_unit_used(ram, i) ? 0 : run + 1;
        if (run == n) {
            return i + 1 - n;
        }
    }
    return HOST_AREA_UNITS;
}

void *guest_ram_host_area_take(GuestRam *ram, uint64_t size,
                               uint64_t *offset)
{
    uint64_t n = DIV_ROUND_UP(size, HOST_AREA_UNIT);
    unsigned first;

    if (!ram->size || n == 0 || n > HOST_AREA_UNITS) {
        return NULL;
    }
    g_mutex_lock(&ram->host_lock);
    first = host_units_find(ram, n);
    if (first < HOST_AREA_UNITS) {
        host_units_mark(ram, first, n, true);
    }
    g_mutex_unlock(&ram->host_lock);
    if (first == HOST_AREA_UNITS) {
        return NULL;
    }
    *offset = ram->size + first * HOST_AREA_UNIT;
    return ram->base + *offset;
}

void guest_ram_host_area_give(GuestRam *ram, uint64_t offset, uint64_t size)
{
    uint64_t n = DIV_ROUND_UP(size, HOST_AREA_UNIT);

    /* Its pages go back to the host, and read as zeros next time. */
    madvise(ram->base + offset, n * HOST_AREA_UNIT, MADV_DONTNEED);
    g_mutex_lock(&ram->host_lock);
    host_units_mark(ram, (offset - ram->size) / HOST_AREA_UNIT, n, false);
    g_mutex_unlock(&ram->host_lock);
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

__attribute__((no_sanitize_thread))
bool guest_ram_cpu_write(GuestRam *ram, uint64_t gpa, const void *buf,
                         uint64_t len)
{
    volatile uint8_t *p = guest_ram_ptr(ram, gpa, len);
    const uint8_t *in = buf;

    if (!p) {
        return false;
    }
    for (uint64_t i = 0; i < len; i++) {
        p[i] = in[i];
    }
    guest_ram_mark_dirty(ram, gpa, len);
    return true;
}

__attribute__((no_sanitize_thread))
bool guest_ram_cpu_fill(GuestRam *ram, uint64_t gpa, uint8_t byte,
                        uint64_t len)
{
    volatile uint8_t *p = guest_ram_ptr(ram, gpa, len);

    if (!p) {
        return false;
    }
    for (uint64_t i = 0; i < len; i++) {
        p[i] = byte;
    }
    guest_ram_mark_dirty(ram, gpa, len);
    return true;
}

bool guest_ram_write(GuestRam *ram, uint64_t gpa, const void *buf,
                     uint64_t len)
{
    void *p = guest_ram_ptr(ram, gpa, len);

    if (p) {
        memcpy(p, buf, len);
        guest_ram_mark_dirty(ram, gpa, len);
    }
    return p != NULL;
}

bool guest_ram_fill(GuestRam *ram, uint64_t gpa, uint8_t byte, uint64_t len)
{
    void *p = guest_ram_ptr(ram, gpa, len);

    if (p) {
        memset(p, byte, len);
        guest_ram_mark_dirty(ram, gpa, len);
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
    guest_ram_mark_dirty(ram, gpa, size);
    return true;
}

void guest_ram_mark_dirty(GuestRam *ram, uint64_t gpa, uint64_t len)
{
    uint64_t first = gpa / GUEST_RAM_DIRTY_PAGE_SIZE;
    uint64_t last = (gpa + len - 1) / GUEST_RAM_DIRTY_PAGE_SIZE;

    if (!len || !__atomic_load_n(&ram->logging, __ATOMIC_RELAXED)) {
        return;
    }
    /* Release: whoever takes the bit sees the bytes written before it. */
    for (uint64_t page = first; page <= last; page++) {
        __atomic_fetch_or(&ram->dirty[page / 64], 1ull << (page % 64),
                          __ATOMIC_RELEASE);
    }
}

void guest_ram_dirty_log_start(GuestRam *ram)
{
    uint64_t pages = DIV_ROUND_UP(ram->size, GUEST_RAM_DIRTY_PAGE_SIZE);

    for (size_t i = 0; i < ram->dirty_words; i++) {
        uint64_t bits = i < pages / 64 ? ~0ull : (1ull << (pages % 64)) - 1;

        __atomic_store_n(&ram->dirty[i], bits, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&ram->logging, true, __ATOMIC_RELAXED);
}

void guest_ram_dirty_log_stop(GuestRam *ram)
{
    __atomic_store_n(&ram->logging, false, __ATOMIC_RELAXED);
}

size_t guest_ram_dirty_words(const GuestRam *ram)
{
    return ram->dirty_words;
}

uint64_t guest_ram_dirty_sync(GuestRam *ram, uint64_t *bitmap,
                              uint64_t *added)
{
    uint64_t pending = 0;

    *added = 0;
    for (size_t i = 0; i < ram->dirty_words; i++) {
        if (__atomic_load_n(&ram->dirty[i], __ATOMIC_RELAXED)) {
            uint64_t marked = __atomic_exchange_n(&ram->dirty[i], 0,
                                                  __ATOMIC_ACQUIRE);

            *added += __builtin_popcountll(marked & ~bitmap[i]);
            bitmap[i] |= marked;
        }
        pending += __builtin_popcountll(bitmap[i]);
    }
    return pending;
}

/* Word by word through a volatile pointer: no memcpy (which the
 * sanitizer intercepts whatever the attribute says) is made of it. */
__attribute__((no_sanitize_thread))
void guest_ram_copy_page_racy(GuestRam *ram, uint64_t gpa, void *page)
{
    const volatile uint64_t *src = guest_ram_ptr(ram, gpa,
                                                 GUEST_RAM_DIRTY_PAGE_SIZE);
    uint64_t *dst = page;

    g_assert(src && gpa % GUEST_RAM_DIRTY_PAGE_SIZE == 0);
    for (size_t i = 0; i < GUEST_RAM_DIRTY_PAGE_SIZE / sizeof(*dst); i++) {
        dst[i] = src[i];
    }
}
