/*
 * The built-in guests' memory: guest-physical pieces for the models'
 * rings, buffers and tables, handed out upward from 1 MiB (below is left
 * for a firmware) and below the DMA window, as a guest kernel's allocator
 * would.  Main thread only: the models allocate when they open their
 * device, at start and again after a machine reset.
 */
#ifndef GUEST_GUEST_MEM_H
#define GUEST_GUEST_MEM_H

#include <stdint.h>

/* Starts over, for a machine with @ram_size bytes of RAM. */
void guest_mem_init(uint64_t ram_size);
/* Everything handed out is free again (the machine was reset). */
void guest_mem_reset(void);
/* @size bytes aligned to @align (a power of two); 0 when none is left. */
uint64_t guest_mem_alloc(uint64_t size, uint64_t align);

/* For migration: where the next piece would start, the end of what may
 * be handed out, and a cursor that came with a stream (the higher of it
 * and this one's wins, since every guest's section carries it). */
uint64_t guest_mem_cursor(void);
uint64_t guest_mem_limit(void);
void guest_mem_adopt_cursor(uint64_t next);

#endif
