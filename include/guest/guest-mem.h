/*
 * The built-in guests' memory: guest-physical pieces for the models'
 * rings, buffers and tables, handed out upward from 1 MiB (below is left
 * for a firmware) and below the DMA window, as a guest kernel's allocator
 * would, and given back when the driver closes.  Main thread only: the
 * models allocate when they open their device and free when they close
 * it, at start, on an MTU change and after a machine reset.
 */
#ifndef GUEST_GUEST_MEM_H
#define GUEST_GUEST_MEM_H

#include <stdint.h>

typedef struct GuestMemState GuestMemState;

/* Where the pieces start: below it the models leave memory alone (room
 * for a firmware). */
#define GUEST_MEM_BASE  (1ULL << 20)

/* Starts over, for a machine with @ram_size bytes of RAM. */
void guest_mem_init(uint64_t ram_size);
/* Everything handed out is free again (the machine was reset). */
void guest_mem_reset(void);
/* @size bytes aligned to @align (a power of two); 0 when none is left. */
uint64_t guest_mem_alloc(uint64_t size, uint64_t align);
/* Gives back a piece guest_mem_alloc() handed out.  A range not wholly
 * handed out is left as it is and counted: only a state adopted from a
 * stream could name one, and bad input must not end the run. */
void guest_mem_free(uint64_t addr, uint64_t size);

/* Bytes handed out now, the most ever at once, all there are, and the
 * frees refused. */
uint64_t guest_mem_in_use(void);
uint64_t guest_mem_peak(void);
uint64_t guest_mem_size(void);
uint64_t guest_mem_refused_frees(void);

/* The allocator as it stands, to try allocations on it and put it back
 * (which frees @s). */
GuestMemState *guest_mem_save(void);
void guest_mem_restore(GuestMemState *s);

/* For migration: the end of the highest piece handed out, the end of
 * what may be handed out, and a cursor that came with a stream: all
 * below it counts as handed out (the higher of it and this one's wins,
 * since every guest's section carries it). */
uint64_t guest_mem_cursor(void);
uint64_t guest_mem_limit(void);
void guest_mem_adopt_cursor(uint64_t next);

#endif
