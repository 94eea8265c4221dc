/*
 * The built-in guests' memory (guest/guest-mem.h): a bump allocator, since
 * guests only ever give all of it back at once, at a machine reset.
 */
#include "guest/guest-mem.h"

#include <glib.h>

/* Below this the models leave memory alone (room for a firmware). */
#define GUEST_MEM_BASE      (1ULL << 20)
#define DMA_WINDOW_SIZE     0x10000000ULL

static uint64_t mem_next, mem_end;

void guest_mem_init(uint64_t ram_size)
{
    mem_next = GUEST_MEM_BASE;
    mem_end = MIN(ram_size, DMA_WINDOW_SIZE);
}

void guest_mem_reset(void)
{
    mem_next = GUEST_MEM_BASE;
}

uint64_t guest_mem_alloc(uint64_t size, uint64_t align)
{
    uint64_t addr = (mem_next + align - 1) & ~(align - 1);

    if (addr < mem_next || size > mem_end || addr > mem_end - size) {
        return 0;
    }
    mem_next = addr + size;
    return addr;
}

uint64_t guest_mem_cursor(void)
{
    return mem_next;
}

uint64_t guest_mem_limit(void)
{
    return mem_end;
}

void guest_mem_adopt_cursor(uint64_t next)
{
    mem_next = MAX(mem_next, next);
}
