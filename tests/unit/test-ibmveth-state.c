/*
 * The ibmveth driver model's migrated state: what ibmveth_get_state()
 * takes from an opened driver passes ibmveth_state_check(), a driver
 * adopted from it holds the same state, and each kind of state the
 * driver could not have reached is refused.  The driver runs on a bus
 * of plain memory whose hcalls all succeed; an open that runs out of
 * memory does so on the built-in guests' allocator.
 */
#include "guest/guest-mem.h"
#include "guest/ibmveth.h"
#include "hw/ppc/hcall.h"

#include <string.h>

#define MEM_SIZE    (32u << 20)
#define MEM_BASE    (1u << 20)
#define UNIT        0x71000000u

typedef struct FakeBus {
    uint8_t *mem;
    uint64_t next;
} FakeBus;

static int64_t fake_hcall(void *opaque, uint64_t opcode, unsigned nargs,
                          uint64_t *args, unsigned nout)
{
    (void)opaque, (void)opcode, (void)nargs, (void)args, (void)nout;
    return H_SUCCESS;
}

static void fake_read(void *opaque, uint64_t gpa, void *buf, size_t len)
{
    g_assert_cmpuint(gpa + len, <=, MEM_SIZE);
    memcpy(buf, ((FakeBus *)opaque)->mem + gpa, len);
}

static void fake_write(void *opaque, uint64_t gpa, const void *buf,
                       size_t len)
{
    g_assert_cmpuint(gpa + len, <=, MEM_SIZE);
    memcpy(((FakeBus *)opaque)->mem + gpa, buf, len);
}

static void fake_fill(void *opaque, uint64_t gpa, uint8_t byte, size_t len)
{
    g_assert_cmpuint(gpa + len, <=, MEM_SIZE);
    memset(((FakeBus *)opaque)->mem + gpa, byte, len);
}

static uint64_t fake_alloc(void *opaque, uint64_t size, uint64_t align)
{
    FakeBus *b = opaque;
    uint64_t addr = (b->next + align - 1) & ~(align - 1);

    if (addr + size > MEM_SIZE) {
        return 0;
    }
    b->next = addr + size;
    return addr;
}

typedef struct Fixture {
    FakeBus fb;
    IbmvethBus bus;
    IbmvethDriver *drv;
    IbmvethState s;
} Fixture;

/* Linux's pools, opened and replenished, with a few buffers consumed so
 * that the free rings have turned. */
static void fixture_init(Fixture *f)
{
    IbmvethConf conf;
    g_autoptr(GError) err = NULL;

    f->fb = (FakeBus){ g_malloc0(MEM_SIZE), MEM_BASE };
    f->bus = (IbmvethBus){ .hcall = fake_hcall, .read = fake_read,
                           .write = fake_write, .fill = fake_fill,
                           .alloc = fake_alloc, .opaque = &f->fb };
    ibmveth_conf_linux_defaults(&conf, UNIT);
    f->drv = ibmveth_open(&f->bus, &conf, NULL, &err);
    g_assert_no_error(err);
    g_assert_nonnull(f->drv);
    for (unsigned i = 0; i < 2; i++) {
        IbmvethRxEntry e = { .valid = true, .pool = 0, .slot = 5 + 4 * i };

        ibmveth_rx_consume(f->drv, &e);
    }
    ibmveth_get_state(f->drv, &f->s);
    g_assert_cmpuint(f->s.pool[0].producer, ==, 2);
    g_assert_cmpuint(f->s.rxq_index, ==, 2);
    g_assert_true(ibmveth_state_check(&f->s, MEM_BASE, f->fb.next, &err));
    g_assert_no_error(err);
}

static void fixture_free(Fixture *f)
{
    ibmveth_close(f->drv);
    g_free(f->fb.mem);
}

static void test_adopt_round_trip(void)
{
    Fixture f;
    IbmvethState *again = g_new0(IbmvethState, 1);
    IbmvethDriver *adopted;

    fixture_init(&f);
    adopted = ibmveth_adopt(&f.bus, &f.s);
    ibmveth_get_state(adopted, again);
    g_assert_cmpmem(again, sizeof(*again), &f.s, sizeof(f.s));
    g_assert_cmpuint(ibmveth_posted(adopted, 0), ==, 254);
    g_assert_cmpuint(ibmveth_replenish(adopted), ==, 0);
    g_assert_cmpuint(ibmveth_pool_size(adopted, 4), ==, 65536);
    ibmveth_close(adopted);
    g_free(again);
    fixture_free(&f);
}

static void expect_refused(Fixture *f, const IbmvethState *s,
                           uint64_t mem_end, const char *msg)
{
    g_autoptr(GError) err = NULL;

    g_assert_false(ibmveth_state_check(s, MEM_BASE, mem_end, &err));
    g_assert_nonnull(err);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, msg));
    (void)f;
}

static void test_refusals(void)
{
    Fixture f;
    IbmvethState *s = g_new(IbmvethState, 1);

    fixture_init(&f);
#define MUTATE(stmt, mem_end, msg) do {                                  \
        *s = f.s;                                                        \
        stmt;                                                            \
        expect_refused(&f, s, (mem_end), (msg));                         \
    } while (0)
    MUTATE(s->pool[1].count = 5000, f.fb.next, "count 5000 is over 4096");
    MUTATE(s->pool[0].stride = 256, f.fb.next, "not a pool the driver");
    MUTATE(s->pool[4].base = f.fb.next, f.fb.next, "not a pool the driver");
    MUTATE(s->pool[0].available--, f.fb.next, "do not match the posted");
    MUTATE(s->pool[0].posted[7] = false, f.fb.next,
           "do not match the posted");
    MUTATE(s->pool[0].free_map[0] = 7, f.fb.next,
           "do not match the posted");
    MUTATE(s->pool[0].free_map[1] = 5, f.fb.next,
           "do not match the posted");
    MUTATE(s->pool[0].free_map[1] = 300, f.fb.next,
           "do not match the posted");
    MUTATE(s->pool[0].producer = 3, f.fb.next, "do not match the posted");
    MUTATE(s->pool[0].consumer = 256, f.fb.next, "do not match the posted");
    MUTATE(s->rxq_index = s->rxq_len / 16, f.fb.next, "rx queue of");
    MUTATE(s->rxq_len += 16, f.fb.next, "rx queue of");
    MUTATE(s->bds_per_add = 3, f.fb.next, "bds_per_add 3");
    /* Buffers mapped one by one lie where Linux's allocators put them,
     * 512-byte ones in kmalloc objects of 1 KiB: the same pool under
     * pools mapped whole is not one the driver makes. */
    MUTATE(s->dma = IBMVETH_DMA_POOL, f.fb.next, "1024 bytes apart");
    /* The pools' I/O ranges take the top of the window (22 MiB for
     * Linux's pools): nothing identity-mapped may lie there. */
    MUTATE(s->tx_buf = 0x10000000 - (4 << 20), 0x10000000, "outside the "
           "guest memory the driver allocates from (0x100000 to "
           "0xea00000)");
    MUTATE(s->dma = 2, f.fb.next, "dma 2 is neither");
    MUTATE(s->rxq_size = s->rxq_len, f.fb.next, "not in whole pages");
    MUTATE(s->rxq_size += 65536, f.fb.next, "not in whole pages");
    MUTATE((void)0, MEM_BASE + 0x3000, "not a pool the driver");
    MUTATE(s->tx_buf = f.fb.next - 4096, f.fb.next, "outside the guest "
           "memory");
    /* Below where the allocator starts, nothing is handed out. */
    MUTATE(s->tce_list = MEM_BASE - 4096, f.fb.next, "outside the guest "
           "memory");
    MUTATE(s->pool[0].base = MEM_BASE - 4096, f.fb.next,
           "not a pool the driver");
    /* The driver gives each piece back at close: no two may overlap. */
    MUTATE(s->tx_buf = s->rxq, f.fb.next, "overlap");
    MUTATE(s->filter_list = s->pool[1].base + 4096, f.fb.next, "overlap");
#undef MUTATE
    g_free(s);
    fixture_free(&f);
}

/* @text with [ibmveth] @key set to @value. */
static char *with_key(const char *text, const char *key, uint64_t value)
{
    g_autoptr(GKeyFile) kf = g_key_file_new();

    g_assert_true(g_key_file_load_from_data(kf, text, -1, 0, NULL));
    g_key_file_set_uint64(kf, "ibmveth", key, value);
    return g_key_file_to_data(kf, NULL, NULL);
}

static void expect_restore_refused(Fixture *f, const char *text,
                                   const char *msg)
{
    g_autoptr(GError) err = NULL;
    IbmvethDriver *v = ibmveth_restore(&f->bus, text, &err);

    g_assert_null(v);
    g_assert_nonnull(err);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, msg));
}

/* A saved driver is refused as ibmveth_state_check() refuses it: a dma
 * no enum value names (2^32 would truncate to per buffer) and a queue
 * not in whole pages. */
static void test_restore_refusals(void)
{
    Fixture f;
    g_autofree char *text = NULL, *dma = NULL, *size = NULL, *len = NULL;
    g_autoptr(GError) err = NULL;
    IbmvethDriver *v;

    fixture_init(&f);
    text = ibmveth_save(f.drv);
    v = ibmveth_restore(&f.bus, text, &err);
    g_assert_no_error(err);
    ibmveth_close(v);
    dma = with_key(text, "dma", 1ull << 32);
    expect_restore_refused(&f, dma, "dma: 4294967296 is neither");
    size = with_key(text, "rxq_size", f.s.rxq_size + 65536);
    expect_restore_refused(&f, size, "not in whole pages");
    len = with_key(text, "rxq_len", f.s.rxq_len + 16);
    expect_restore_refused(&f, len, "the pools make it");
    fixture_free(&f);
}

static uint64_t mem_alloc(void *opaque, uint64_t size, uint64_t align)
{
    (void)opaque;
    return guest_mem_alloc(size, align);
}

static void mem_free(void *opaque, uint64_t gpa, uint64_t size)
{
    (void)opaque;
    guest_mem_free(gpa, size);
}

/* The built-in guests' allocator, full up to the top of the DMA window,
 * where the pools' I/O ranges lie: the block it hands the open there is
 * refused and must go back. */
static void test_open_above_io_floor(void)
{
    IbmvethBus bus = { .hcall = fake_hcall, .alloc = mem_alloc,
                       .free = mem_free };
    uint64_t filler_size = (256u << 20) - GUEST_MEM_BASE - (16u << 10);
    g_autoptr(GError) err = NULL;
    IbmvethConf conf;

    guest_mem_init(256u << 20);
    g_assert_cmphex(guest_mem_alloc(filler_size, 4096), ==, GUEST_MEM_BASE);
    ibmveth_conf_linux_defaults(&conf, UNIT);
    g_assert_null(ibmveth_open(&bus, &conf, NULL, &err));
    g_assert_nonnull(err);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, "no guest memory for 4096 bytes"));
    g_assert_cmpuint(guest_mem_in_use(), ==, filler_size);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ibmveth-state/adopt-round-trip",
                    test_adopt_round_trip);
    g_test_add_func("/ibmveth-state/refusals", test_refusals);
    g_test_add_func("/ibmveth-state/restore-refusals",
                    test_restore_refusals);
    g_test_add_func("/ibmveth-state/open-above-io-floor",
                    test_open_above_io_floor);
    return g_test_run();
}
