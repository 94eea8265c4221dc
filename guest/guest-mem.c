/*
 * The built-in guests' memory (guest/guest-mem.h): first fit in a list of
 * free ranges kept sorted and merged, since a guest frees what its driver
 * held whenever it closes, and allocates again when it opens.
 */
#include "guest/guest-mem.h"

#include <glib.h>
#include <stdbool.h>

#define DMA_WINDOW_SIZE     0x10000000ULL

typedef struct FreeRange {
    uint64_t start, end;
} FreeRange;

struct GuestMemState {
    GArray *free;           /* FreeRange, ascending, none adjacent */
    uint64_t in_use, peak;
    uint64_t refused_frees;
};

static uint64_t mem_end;
static GuestMemState mem;

static FreeRange *range_at(guint i)
{
    return &g_array_index(mem.free, FreeRange, i);
}

void guest_mem_init(uint64_t ram_size)
{
    mem_end = MIN(ram_size, DMA_WINDOW_SIZE);
    if (!mem.free) {
        mem.free = g_array_new(false, false, sizeof(FreeRange));
    }
    mem.peak = 0;
    mem.refused_frees = 0;
    guest_mem_reset();
}

void guest_mem_reset(void)
{
    g_array_set_size(mem.free, 0);
    if (mem_end > GUEST_MEM_BASE) {
        FreeRange all = { GUEST_MEM_BASE, mem_end };

        g_array_append_val(mem.free, all);
    }
    mem.in_use = 0;
}

static void take(uint64_t size)
{
    mem.in_use += size;
    mem.peak = MAX(mem.peak, mem.in_use);
}

uint64_t guest_mem_alloc(uint64_t size, uint64_t align)
{
    for (guint i = 0; i < mem.free->len; i++) {
        FreeRange r = *range_at(i);
        uint64_t addr = (r.start + align - 1) & ~(align - 1);

        if (addr < r.start || addr > r.end || size > r.end - addr) {
            continue;
        }
        g_array_remove_index(mem.free, i);
        if (addr + size < r.end) {
            FreeRange after = { addr + size, r.end };

            g_array_insert_val(mem.free, i, after);
        }
        if (r.start < addr) {
            FreeRange before = { r.start, addr };

            g_array_insert_val(mem.free, i, before);
        }
        take(size);
        return addr;
    }
    return 0;
}

/* [@start, @end) lies in guest memory and overlaps no free range; @i is
 * the first free range that starts at or after @start. */
static bool handed_out(uint64_t start, uint64_t end, guint i)
{
    return start >= GUEST_MEM_BASE && end <= mem_end &&
           end - start <= mem.in_use &&
           (i == 0 || range_at(i - 1)->end <= start) &&
           (i == mem.free->len || end <= range_at(i)->start);
}

void guest_mem_free(uint64_t addr, uint64_t size)
{
    FreeRange r = { addr, addr + size };
    guint i = 0;

    while (i < mem.free->len && range_at(i)->start < r.start) {
        i++;
    }
    if (r.end < r.start || !handed_out(r.start, r.end, i)) {
        mem.refused_frees++;
        return;
    }
    mem.in_use -= size;
    if (i < mem.free->len && range_at(i)->start == r.end) {
        r.end = range_at(i)->end;
        g_array_remove_index(mem.free, i);
    }
    if (i > 0 && range_at(i - 1)->end == r.start) {
        range_at(i - 1)->end = r.end;
        return;
    }
    g_array_insert_val(mem.free, i, r);
}

uint64_t guest_mem_in_use(void)
{
    return mem.in_use;
}

uint64_t guest_mem_peak(void)
{
    return mem.peak;
}

uint64_t guest_mem_refused_frees(void)
{
    return mem.refused_frees;
}

uint64_t guest_mem_size(void)
{
    return mem_end > GUEST_MEM_BASE ? mem_end - GUEST_MEM_BASE : 0;
}

GuestMemState *guest_mem_save(void)
{
    GuestMemState *s = g_new(GuestMemState, 1);

    *s = mem;
    s->free = g_array_copy(mem.free);
    return s;
}

void guest_mem_restore(GuestMemState *s)
{
    g_array_unref(mem.free);
    mem = *s;
    g_free(s);
}

uint64_t guest_mem_cursor(void)
{
    const FreeRange *top = mem.free->len ? range_at(mem.free->len - 1) :
                           NULL;

    return top && top->end == mem_end ? top->start : mem_end;
}

uint64_t guest_mem_limit(void)
{
    return mem_end;
}

void guest_mem_adopt_cursor(uint64_t next)
{
    while (mem.free->len && range_at(0)->start < next) {
        FreeRange *r = range_at(0);

        if (r->end > next) {
            take(next - r->start);
            r->start = next;
            return;
        }
        take(r->end - r->start);
        g_array_remove_index(mem.free, 0);
    }
}
