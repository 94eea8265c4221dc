/*
 * The built-in guests' memory allocator: first fit from 1 MiB, pieces
 * given back merge with their free neighbours, so that a driver that
 * closes and opens again finds the same memory; a saved state put back
 * undoes trial allocations; a migrated cursor counts all below it as
 * handed out; a free of what is not handed out is refused and counted.
 */
#include "guest/guest-mem.h"

#include <glib.h>

#define MiB     (1ULL << 20)
#define KiB     (1ULL << 10)

static void test_first_fit_and_merge(void)
{
    uint64_t a, b, c;

    guest_mem_init(64 * MiB);
    g_assert_cmpuint(guest_mem_size(), ==, 63 * MiB);
    g_assert_cmpuint(guest_mem_cursor(), ==, 1 * MiB);
    a = guest_mem_alloc(4 * KiB, 4 * KiB);
    b = guest_mem_alloc(8 * KiB, 4 * KiB);
    c = guest_mem_alloc(4 * KiB, 4 * KiB);
    g_assert_cmphex(a, ==, 1 * MiB);
    g_assert_cmphex(b, ==, 1 * MiB + 4 * KiB);
    g_assert_cmphex(c, ==, 1 * MiB + 12 * KiB);
    g_assert_cmpuint(guest_mem_in_use(), ==, 16 * KiB);
    g_assert_cmphex(guest_mem_cursor(), ==, 1 * MiB + 16 * KiB);

    /* b's hole takes a piece that fits, not one that does not. */
    guest_mem_free(b, 8 * KiB);
    g_assert_cmpuint(guest_mem_in_use(), ==, 8 * KiB);
    g_assert_cmphex(guest_mem_alloc(4 * KiB, 4 * KiB), ==, b);
    g_assert_cmphex(guest_mem_alloc(8 * KiB, 4 * KiB), ==, 1 * MiB + 16 * KiB);
    g_assert_cmpuint(guest_mem_peak(), ==, 20 * KiB);

    /* Given back in any order, it all merges into one range again. */
    guest_mem_free(c, 4 * KiB);
    guest_mem_free(a, 4 * KiB);
    guest_mem_free(1 * MiB + 16 * KiB, 8 * KiB);
    guest_mem_free(b, 4 * KiB);
    g_assert_cmpuint(guest_mem_in_use(), ==, 0);
    g_assert_cmphex(guest_mem_cursor(), ==, 1 * MiB);
    g_assert_cmphex(guest_mem_alloc(63 * MiB, 4 * KiB), ==, 1 * MiB);
    g_assert_cmphex(guest_mem_alloc(1, 1), ==, 0);
    g_assert_cmphex(guest_mem_cursor(), ==, 64 * MiB);
    g_assert_cmpuint(guest_mem_peak(), ==, 63 * MiB);
}

static void test_alignment_and_limits(void)
{
    guest_mem_init(1ULL << 40);
    /* Only below the 256 MiB DMA window, whatever the RAM. */
    g_assert_cmpuint(guest_mem_size(), ==, 255 * MiB);
    g_assert_cmphex(guest_mem_alloc(100, 1), ==, 1 * MiB);
    g_assert_cmphex(guest_mem_alloc(4 * KiB, 64 * KiB), ==,
                    1 * MiB + 64 * KiB);
    /* The gap the alignment left is still free. */
    g_assert_cmphex(guest_mem_alloc(1 * KiB, 1), ==, 1 * MiB + 100);
    g_assert_cmphex(guest_mem_alloc(256 * MiB, 1), ==, 0);

    guest_mem_init(512 * KiB);
    g_assert_cmpuint(guest_mem_size(), ==, 0);
    g_assert_cmphex(guest_mem_alloc(1, 1), ==, 0);
}

/* Allocations tried on the allocator and undone: the next ones land as
 * if they had never been made. */
static void test_save_restore(void)
{
    GuestMemState *saved;
    uint64_t a;

    guest_mem_init(64 * MiB);
    a = guest_mem_alloc(1 * MiB, 4 * KiB);
    saved = guest_mem_save();
    guest_mem_free(a, 1 * MiB);
    g_assert_cmphex(guest_mem_alloc(2 * MiB, 4 * KiB), ==, a);
    g_assert_cmphex(guest_mem_alloc(70 * MiB, 4 * KiB), ==, 0);
    guest_mem_restore(saved);
    g_assert_cmpuint(guest_mem_in_use(), ==, 1 * MiB);
    g_assert_cmpuint(guest_mem_peak(), ==, 1 * MiB);
    g_assert_cmphex(guest_mem_alloc(4 * KiB, 4 * KiB), ==, a + 1 * MiB);
}

/* A destination adopts the source's cursor: all below it is handed out,
 * and a migrated driver's pieces can be given back. */
static void test_adopt_cursor(void)
{
    guest_mem_init(64 * MiB);
    guest_mem_adopt_cursor(3 * MiB);
    g_assert_cmpuint(guest_mem_in_use(), ==, 2 * MiB);
    g_assert_cmphex(guest_mem_cursor(), ==, 3 * MiB);
    /* A second guest's section carries the same cursor, or a lower one. */
    guest_mem_adopt_cursor(2 * MiB);
    g_assert_cmpuint(guest_mem_in_use(), ==, 2 * MiB);
    g_assert_cmphex(guest_mem_alloc(4 * KiB, 4 * KiB), ==, 3 * MiB);
    guest_mem_free(2 * MiB, 1 * MiB);
    g_assert_cmphex(guest_mem_alloc(8 * KiB, 4 * KiB), ==, 2 * MiB);
    guest_mem_reset();
    g_assert_cmpuint(guest_mem_in_use(), ==, 0);
    g_assert_cmphex(guest_mem_alloc(4 * KiB, 4 * KiB), ==, 1 * MiB);
}

/* A range not wholly handed out, which only an inconsistent adopted state
 * could name, is refused and counted, the allocator left as it was. */
static void test_bad_free_refused(void)
{
    uint64_t a;

    guest_mem_init(64 * MiB);
    a = guest_mem_alloc(8 * KiB, 4 * KiB);
    guest_mem_free(512 * KiB, 4 * KiB);             /* below 1 MiB */
    guest_mem_free(a + 8 * KiB, 4 * KiB);           /* free already */
    guest_mem_free(a + 4 * KiB, 8 * KiB);           /* half free */
    guest_mem_free(64 * MiB - 4 * KiB, 8 * KiB);    /* past the end */
    guest_mem_free(a, UINT64_MAX);                  /* wraps */
    g_assert_cmpuint(guest_mem_refused_frees(), ==, 5);
    g_assert_cmpuint(guest_mem_in_use(), ==, 8 * KiB);
    guest_mem_free(a, 8 * KiB);
    g_assert_cmpuint(guest_mem_in_use(), ==, 0);
    /* Nothing in use at all, as after adopting a cursor of 1 MiB. */
    guest_mem_free(a, 4 * KiB);
    g_assert_cmpuint(guest_mem_refused_frees(), ==, 6);
    g_assert_cmphex(guest_mem_alloc(63 * MiB, 4 * KiB), ==, 1 * MiB);
    guest_mem_init(64 * MiB);
    g_assert_cmpuint(guest_mem_refused_frees(), ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/guest-mem/first-fit-and-merge",
                    test_first_fit_and_merge);
    g_test_add_func("/guest-mem/alignment-and-limits",
                    test_alignment_and_limits);
    g_test_add_func("/guest-mem/save-restore", test_save_restore);
    g_test_add_func("/guest-mem/adopt-cursor", test_adopt_cursor);
    g_test_add_func("/guest-mem/bad-free-refused", test_bad_free_refused);
    return g_test_run();
}
