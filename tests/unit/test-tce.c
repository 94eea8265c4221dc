/*
 * Unit tests for TCE tables: entry access, translation, permissions and
 * whole-range DMA (hw/ppc/spapr_iommu.c).
 */
#include "hw/ppc/spapr_iommu.h"
#include "migration/qemu-file.h"
#include "migration/savevm.h"
#include "qemu/option.h"

#include <glib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define RAM_SIZE    (16 * 1024 * 1024ULL)
#define LIOBN       0x71000000u
#define PAGE        SPAPR_TCE_PAGE_SIZE
#define WINDOW      SPAPR_VIO_DMA_WINDOW
#define TCE_RW      (TCE_READ | TCE_WRITE)

typedef struct Fixture {
    GuestRam *ram;
    SpaprTceRegistry *reg;
    SpaprTceTable *tcet;
} Fixture;

static void fixture_init(Fixture *f)
{
    GError *err = NULL;

    f->ram = guest_ram_new(RAM_SIZE, &err);
    g_assert_no_error(err);
    f->reg = spapr_tce_registry_new();
    f->tcet = spapr_tce_table_new(f->reg, LIOBN, WINDOW, f->ram, &err);
    g_assert_no_error(err);
    g_assert_nonnull(f->tcet);
}

static void fixture_free(Fixture *f)
{
    spapr_tce_table_free(f->tcet);
    spapr_tce_registry_free(f->reg);
    guest_ram_free(f->ram);
}

static void map(Fixture *f, uint64_t ioba, uint64_t gpa, uint64_t perm)
{
    g_assert_true(spapr_tce_put(f->tcet, ioba, gpa | perm));
}

/* Fill a real page range with a byte pattern that depends on @seed. */
static void fill_pattern(Fixture *f, uint64_t gpa, uint64_t len, uint8_t seed)
{
    g_autofree uint8_t *buf = g_malloc(len);

    for (uint64_t i = 0; i < len; i++) {
        buf[i] = seed + i * 7;
    }
    g_assert_true(guest_ram_write(f->ram, gpa, buf, len));
}

static void assert_ram(Fixture *f, uint64_t gpa, const void *expected,
                       uint64_t len)
{
    g_autofree uint8_t *buf = g_malloc(len);

    g_assert_true(guest_ram_read(f->ram, gpa, buf, len));
    g_assert_cmpmem(buf, len, expected, len);
}

static void test_table_geometry(void)
{
    Fixture f;

    fixture_init(&f);
    g_assert_cmpuint(spapr_tce_table_entries(f.tcet), ==, 65536);
    g_assert_cmphex(spapr_tce_table_liobn(f.tcet), ==, LIOBN);
    g_assert_true(spapr_tce_find_by_liobn(f.reg, LIOBN) == f.tcet);
    g_assert_null(spapr_tce_find_by_liobn(f.reg, LIOBN + 1));
    fixture_free(&f);
}

static void test_table_new_is_zeroed(void)
{
    Fixture f;
    uint64_t tce = 1;

    fixture_init(&f);
    g_assert_true(spapr_tce_get(f.tcet, 0, &tce));
    g_assert_cmphex(tce, ==, 0);
    tce = 1;
    g_assert_true(spapr_tce_get(f.tcet, WINDOW - PAGE, &tce));
    g_assert_cmphex(tce, ==, 0);
    fixture_free(&f);
}

static void test_duplicate_liobn_rejected(void)
{
    Fixture f;
    GError *err = NULL;

    fixture_init(&f);
    g_assert_null(spapr_tce_table_new(f.reg, LIOBN, WINDOW, f.ram, &err));
    g_assert_error(err, ILLAN_ERROR, 0);
    g_assert_nonnull(strstr(err->message, "0x71000000"));
    g_error_free(err);
    /* The original table is still the registered one. */
    g_assert_true(spapr_tce_find_by_liobn(f.reg, LIOBN) == f.tcet);
    fixture_free(&f);
}

static void test_free_unregisters_liobn(void)
{
    Fixture f;
    GError *err = NULL;

    fixture_init(&f);
    spapr_tce_table_free(f.tcet);
    g_assert_null(spapr_tce_find_by_liobn(f.reg, LIOBN));
    f.tcet = spapr_tce_table_new(f.reg, LIOBN, WINDOW, f.ram, &err);
    g_assert_no_error(err);
    g_assert_true(spapr_tce_find_by_liobn(f.reg, LIOBN) == f.tcet);
    fixture_free(&f);
}

static void test_find_liobn_high_bits(void)
{
    Fixture f;

    fixture_init(&f);
    g_assert_null(spapr_tce_find_by_liobn(f.reg, (1ULL << 32) | LIOBN));
    g_assert_null(spapr_tce_find_by_liobn(f.reg, 0xffffffff00000000ULL |
                                                 LIOBN));
    g_assert_true(spapr_tce_find_by_liobn(f.reg, LIOBN) == f.tcet);
    fixture_free(&f);
}

static void test_put_get_round_trip(void)
{
    Fixture f;
    uint64_t tce = 0;

    fixture_init(&f);
    g_assert_true(spapr_tce_put(f.tcet, 0x5000, 0x123003));
    g_assert_true(spapr_tce_get(f.tcet, 0x5000, &tce));
    g_assert_cmphex(tce, ==, 0x123003);
    /* Any address in the page selects the same entry. */
    tce = 0;
    g_assert_true(spapr_tce_get(f.tcet, 0x5fff, &tce));
    g_assert_cmphex(tce, ==, 0x123003);
    g_assert_true(spapr_tce_get(f.tcet, 0x4fff, &tce));
    g_assert_cmphex(tce, ==, 0);
    g_assert_true(spapr_tce_get(f.tcet, 0x6000, &tce));
    g_assert_cmphex(tce, ==, 0);
    fixture_free(&f);
}

static void test_put_get_window_bounds(void)
{
    Fixture f;
    uint64_t tce = 0xdead;

    fixture_init(&f);
    g_assert_true(spapr_tce_put(f.tcet, WINDOW - 1, 0x7003));
    g_assert_true(spapr_tce_get(f.tcet, WINDOW - PAGE, &tce));
    g_assert_cmphex(tce, ==, 0x7003);

    tce = 0xdead;
    g_assert_false(spapr_tce_put(f.tcet, WINDOW, 0x7003));
    g_assert_false(spapr_tce_get(f.tcet, WINDOW, &tce));
    g_assert_false(spapr_tce_put(f.tcet, UINT64_MAX, 0x7003));
    g_assert_false(spapr_tce_get(f.tcet, UINT64_MAX, &tce));
    g_assert_false(spapr_tce_get(f.tcet, 1ULL << 44, &tce));
    g_assert_cmphex(tce, ==, 0xdead);
    fixture_free(&f);
}

static void test_translate_permissions(void)
{
    static const DmaDirection dirs[] = {
        DMA_DEVICE_READS, DMA_DEVICE_WRITES, DMA_BOTH,
    };
    Fixture f;

    fixture_init(&f);
    for (uint64_t perm = 0; perm <= 3; perm++) {
        map(&f, 0x3000, 0x8000, perm);
        for (size_t i = 0; i < G_N_ELEMENTS(dirs); i++) {
            uint64_t gpa = 0, avail = 0;
            bool expect = (perm & dirs[i]) == (uint64_t)dirs[i];
            bool ok = spapr_tce_translate(f.tcet, 0x3000, dirs[i], &gpa,
                                          &avail);

            g_test_message("tce perm %" G_GUINT64_FORMAT " dir %d",
                           perm, dirs[i]);
            g_assert_cmpint(ok, ==, expect);
            if (ok) {
                g_assert_cmphex(gpa, ==, 0x8000);
                g_assert_cmphex(avail, ==, PAGE);
            }
        }
    }
    fixture_free(&f);
}

static void test_translate_unmapped_page(void)
{
    Fixture f;
    uint64_t gpa, avail;

    fixture_init(&f);
    map(&f, 0x3000, 0x8000, TCE_RW);
    g_assert_false(spapr_tce_translate(f.tcet, 0x4000, DMA_DEVICE_READS,
                                       &gpa, &avail));
    g_assert_false(spapr_tce_translate(f.tcet, WINDOW, DMA_DEVICE_READS,
                                       &gpa, &avail));
    fixture_free(&f);
}

static void test_translate_offset_and_avail(void)
{
    Fixture f;
    uint64_t gpa = 0, avail = 0;

    fixture_init(&f);
    map(&f, 0x7000, 0x3000, TCE_RW);
    g_assert_true(spapr_tce_translate(f.tcet, 0x7123, DMA_BOTH, &gpa,
                                      &avail));
    g_assert_cmphex(gpa, ==, 0x3123);
    g_assert_cmphex(avail, ==, PAGE - 0x123);
    g_assert_true(spapr_tce_translate(f.tcet, 0x7fff, DMA_DEVICE_READS, &gpa,
                                      &avail));
    g_assert_cmphex(gpa, ==, 0x3fff);
    g_assert_cmphex(avail, ==, 1);
    fixture_free(&f);
}

static void test_translate_sees_remap(void)
{
    Fixture f;
    uint64_t gpa = 0, avail = 0;

    fixture_init(&f);
    map(&f, 0x7000, 0x3000, TCE_RW);
    g_assert_true(spapr_tce_translate(f.tcet, 0x7010, DMA_BOTH, &gpa,
                                      &avail));
    map(&f, 0x7000, 0x9000, TCE_READ);
    g_assert_true(spapr_tce_translate(f.tcet, 0x7010, DMA_DEVICE_READS, &gpa,
                                      &avail));
    g_assert_cmphex(gpa, ==, 0x9010);
    g_assert_false(spapr_tce_translate(f.tcet, 0x7010, DMA_DEVICE_WRITES,
                                       &gpa, &avail));
    fixture_free(&f);
}

static void test_translate_beyond_ram(void)
{
    Fixture f;
    uint64_t gpa, avail;

    fixture_init(&f);
    map(&f, 0x1000, RAM_SIZE - PAGE, TCE_RW);
    map(&f, 0x2000, RAM_SIZE, TCE_RW);
    map(&f, 0x3000, 0xfffffffffffff000ULL, TCE_RW);
    g_assert_true(spapr_tce_translate(f.tcet, 0x1fff, DMA_BOTH, &gpa,
                                      &avail));
    g_assert_false(spapr_tce_translate(f.tcet, 0x2000, DMA_BOTH, &gpa,
                                       &avail));
    g_assert_false(spapr_tce_translate(f.tcet, 0x3fff, DMA_BOTH, &gpa,
                                       &avail));
    g_assert_false(spapr_tce_dma_valid(f.tcet, 0x2000, 1, DMA_DEVICE_READS));
    fixture_free(&f);
}

/* I/O pages 0x10000 and 0x11000 map to the non-adjacent real pages 0x5000
 * and 0x2000, in reverse order. */
#define IO_A    0x10000ULL
#define IO_B    0x11000ULL
#define REAL_A  0x5000ULL
#define REAL_B  0x2000ULL

static void test_dma_read_across_pages(void)
{
    Fixture f;
    uint8_t expect[0x200], buf[0x200];

    fixture_init(&f);
    map(&f, IO_A, REAL_A, TCE_READ);
    map(&f, IO_B, REAL_B, TCE_READ);
    fill_pattern(&f, REAL_A + 0xf00, 0x100, 0x11);
    fill_pattern(&f, REAL_B, 0x100, 0x99);
    fill_pattern(&f, REAL_A + PAGE, 0x100, 0x42);   /* the adjacent page */
    g_assert_true(guest_ram_read(f.ram, REAL_A + 0xf00, expect, 0x100));
    g_assert_true(guest_ram_read(f.ram, REAL_B, expect + 0x100, 0x100));

    memset(buf, 0, sizeof(buf));
    g_assert_true(spapr_tce_dma_read(f.tcet, IO_A + 0xf00, buf, sizeof(buf)));
    g_assert_cmpmem(buf, sizeof(buf), expect, sizeof(expect));
    fixture_free(&f);
}

static void test_dma_write_across_pages(void)
{
    Fixture f;
    uint8_t data[0x200], zero[0x100] = { 0 };

    fixture_init(&f);
    map(&f, IO_A, REAL_A, TCE_WRITE);
    map(&f, IO_B, REAL_B, TCE_WRITE);
    for (size_t i = 0; i < sizeof(data); i++) {
        data[i] = i * 13 + 5;
    }
    g_assert_true(spapr_tce_dma_write(f.tcet, IO_A + 0xf00, data,
                                      sizeof(data)));
    assert_ram(&f, REAL_A + 0xf00, data, 0x100);
    assert_ram(&f, REAL_B, data + 0x100, 0x100);
    /* Nothing spilled into the real page adjacent to REAL_A. */
    assert_ram(&f, REAL_A + PAGE, zero, sizeof(zero));
    assert_ram(&f, REAL_B - sizeof(zero), zero, sizeof(zero));
    fixture_free(&f);
}

static void test_dma_write_read_only_page_fails(void)
{
    Fixture f;
    uint8_t data[0x200], before[0x100];

    fixture_init(&f);
    map(&f, IO_A, REAL_A, TCE_RW);
    map(&f, IO_B, REAL_B, TCE_READ);
    fill_pattern(&f, REAL_A + 0xf00, 0x100, 0x21);
    fill_pattern(&f, REAL_B, 0x100, 0x77);
    g_assert_true(guest_ram_read(f.ram, REAL_A + 0xf00, before,
                                 sizeof(before)));
    memset(data, 0xee, sizeof(data));

    g_assert_false(spapr_tce_dma_write(f.tcet, IO_A + 0xf00, data,
                                       sizeof(data)));
    assert_ram(&f, REAL_A + 0xf00, before, sizeof(before));
    fixture_free(&f);
}

static void test_dma_write_unmapped_page_fails(void)
{
    Fixture f;
    uint8_t data[0x200], before[0x100];

    fixture_init(&f);
    map(&f, IO_A, REAL_A, TCE_RW);
    fill_pattern(&f, REAL_A + 0xf00, 0x100, 0x21);
    g_assert_true(guest_ram_read(f.ram, REAL_A + 0xf00, before,
                                 sizeof(before)));
    memset(data, 0xee, sizeof(data));

    g_assert_false(spapr_tce_dma_write(f.tcet, IO_A + 0xf00, data,
                                       sizeof(data)));
    assert_ram(&f, REAL_A + 0xf00, before, sizeof(before));
    fixture_free(&f);
}

static void test_dma_read_write_only_page_fails(void)
{
    Fixture f;
    uint8_t buf[0x200];

    fixture_init(&f);
    map(&f, IO_A, REAL_A, TCE_READ);
    map(&f, IO_B, REAL_B, TCE_WRITE);
    memset(buf, 0xaa, sizeof(buf));
    fill_pattern(&f, REAL_A, 4096, 3);
    g_assert_false(spapr_tce_dma_read(f.tcet, IO_A + 0xf00, buf,
                                      sizeof(buf)));
    /* A failed read leaves the buffer as it was. */
    for (size_t i = 0; i < sizeof(buf); i++) {
        g_assert_cmphex(buf[i], ==, 0xaa);
    }
    g_assert_true(spapr_tce_dma_read(f.tcet, IO_A + 0xf00, buf, 0x100));
    fixture_free(&f);
}

static void test_dma_valid_direction(void)
{
    Fixture f;

    fixture_init(&f);
    map(&f, IO_A, REAL_A, TCE_RW);
    map(&f, IO_B, REAL_B, TCE_READ);
    g_assert_true(spapr_tce_dma_valid(f.tcet, IO_A, 2 * PAGE,
                                      DMA_DEVICE_READS));
    g_assert_false(spapr_tce_dma_valid(f.tcet, IO_A, 2 * PAGE,
                                       DMA_DEVICE_WRITES));
    g_assert_false(spapr_tce_dma_valid(f.tcet, IO_A, PAGE + 1, DMA_BOTH));
    g_assert_true(spapr_tce_dma_valid(f.tcet, IO_A, PAGE, DMA_BOTH));
    fixture_free(&f);
}

static void test_dma_valid_window_overflow(void)
{
    Fixture f;

    fixture_init(&f);
    /* Map the first and last page so that only the bounds check can fail. */
    map(&f, 0, 0x1000, TCE_RW);
    map(&f, WINDOW - PAGE, 0x2000, TCE_RW);
    g_assert_true(spapr_tce_dma_valid(f.tcet, WINDOW - PAGE, PAGE, DMA_BOTH));
    g_assert_false(spapr_tce_dma_valid(f.tcet, WINDOW - PAGE, PAGE + 1,
                                       DMA_BOTH));
    g_assert_false(spapr_tce_dma_valid(f.tcet, WINDOW, 1, DMA_BOTH));
    g_assert_false(spapr_tce_dma_valid(f.tcet, WINDOW + PAGE, PAGE,
                                       DMA_BOTH));
    fixture_free(&f);
}

static void test_dma_valid_wraps_2_64(void)
{
    Fixture f;
    uint64_t ioba = WINDOW - PAGE;

    fixture_init(&f);
    map(&f, 0, 0x1000, TCE_RW);
    map(&f, ioba, 0x2000, TCE_RW);
    /* ioba + len wraps to PAGE, inside the window, if computed naively. */
    g_assert_false(spapr_tce_dma_valid(f.tcet, ioba, 0 - ioba + PAGE,
                                       DMA_BOTH));
    g_assert_false(spapr_tce_dma_valid(f.tcet, ioba, UINT64_MAX, DMA_BOTH));
    g_assert_false(spapr_tce_dma_valid(f.tcet, UINT64_MAX - 0xff, 0x200,
                                       DMA_BOTH));
    g_assert_false(spapr_tce_dma_valid(f.tcet, UINT64_MAX, 1, DMA_BOTH));
    fixture_free(&f);
}

static void test_table_reset_clears_entries(void)
{
    static const uint64_t iobas[] = { 0, 0x8000000, WINDOW - PAGE };
    Fixture f;

    fixture_init(&f);
    for (size_t i = 0; i < G_N_ELEMENTS(iobas); i++) {
        map(&f, iobas[i], 0x4000, TCE_RW);
    }
    spapr_tce_table_reset(f.tcet);
    for (size_t i = 0; i < G_N_ELEMENTS(iobas); i++) {
        uint64_t tce = 1, gpa, avail;

        g_assert_true(spapr_tce_get(f.tcet, iobas[i], &tce));
        g_assert_cmphex(tce, ==, 0);
        g_assert_false(spapr_tce_translate(f.tcet, iobas[i],
                                           DMA_DEVICE_READS, &gpa, &avail));
    }
    g_assert_cmpuint(spapr_tce_table_entries(f.tcet), ==, 65536);
    g_assert_true(spapr_tce_find_by_liobn(f.reg, LIOBN) == f.tcet);
    fixture_free(&f);
}

/* The table's whole state through a stream, as a destination loads it. */
static GByteArray *save_table(Fixture *f)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *path = NULL, *data = NULL;
    int fd = g_file_open_tmp("tce-stream-XXXXXX", &path, &err);
    QEMUFile *qf;
    RamStats stats;
    gsize len;

    g_assert_no_error(err);
    qf = qemu_file_new_output(fd);
    g_assert_true(qemu_savevm_state(qf, "pseries", f->ram, &stats, &err));
    g_assert_true(qemu_file_close(qf, &err));
    close(fd);
    g_assert_true(g_file_get_contents(path, &data, &len, &err));
    unlink(path);
    return g_byte_array_new_take((guint8 *)g_steal_pointer(&data), len);
}

static bool load_table(Fixture *f, GByteArray *stream, GError **errp)
{
    g_autofree char *path = NULL;
    int fd = g_file_open_tmp("tce-stream-XXXXXX", &path, NULL);
    QEMUFile *qf;
    bool ok;

    g_assert_cmpint(fd, >=, 0);
    unlink(path);
    g_assert_cmpint(write(fd, stream->data, stream->len), ==,
                    (ssize_t)stream->len);
    g_assert_cmpint(lseek(fd, 0, SEEK_SET), ==, 0);
    qf = qemu_file_new_input(fd);
    ok = qemu_loadvm_state(qf, "pseries", f->ram, errp);
    qemu_file_close(qf, NULL);
    close(fd);
    return ok;
}

/* A stream whose table is another size is refused with the field and
 * the rule it breaks, each said once; the table keeps its entries. */
static void test_migration_size_refused(void)
{
    static const char idstr[] = "spapr_iommu";
    g_autoptr(GByteArray) stream = NULL;
    g_autoptr(GError) err = NULL;
    Fixture f;
    guint8 *at;
    uint64_t tce;

    fixture_init(&f);
    map(&f, 0, 0x1000, TCE_RW);
    stream = save_table(&f);
    at = memmem(stream->data, stream->len, idstr, strlen(idstr));
    g_assert_nonnull(at);
    /* Past the idstr: instance, version, liobn, then mig_nb_table. */
    at += strlen(idstr) + 4 + 4 + 4;
    at[3] ^= 1;
    g_assert_false(load_table(&f, stream, &err));
    g_assert_cmpstr(err->message, ==, "section 'spapr_iommu' instance "
                    "1895825408: field 'mig_nb_table': input validation "
                    "failed: must equal this table's entry count");
    g_assert_true(spapr_tce_get(f.tcet, 0, &tce));
    g_assert_cmphex(tce, ==, 0x1000 | TCE_RW);
    at[3] ^= 1;
    g_clear_error(&err);
    g_assert_true(load_table(&f, stream, &err));
    g_assert_no_error(err);
    fixture_free(&f);
}

/* Where the table's FULL section starts in @stream: its type byte, then
 * the section id, then the idstr's length and the idstr. */
static gsize iommu_section_start(GByteArray *stream)
{
    static const char idstr[] = "\013spapr_iommu";
    guint8 *at = memmem(stream->data, stream->len, idstr, strlen(idstr));

    g_assert_nonnull(at);
    return at - stream->data - 5;
}

static void put_be32(GByteArray *out, uint32_t v)
{
    guint8 b[4] = { v >> 24, v >> 16, v >> 8, v };

    g_byte_array_append(out, b, sizeof(b));
}

static void put_be64(GByteArray *out, uint64_t v)
{
    put_be32(out, v >> 32);
    put_be32(out, v);
}

/*
 * A stream with this build's header, configuration and RAM, and a
 * spapr_iommu section built field by field as QEMU 7.2 lays out
 * @version: liobn, mig_nb_table, bypass, the table whose first entry is
 * @tce0, and from version 3 on the def_win byte.
 */
static GByteArray *iommu_stream(Fixture *f, uint32_t version, bool def_win,
                                uint64_t tce0)
{
    g_autoptr(GByteArray) saved = save_table(f);
    gsize start = iommu_section_start(saved);
    GByteArray *out = g_byte_array_new();
    const guint8 *id = saved->data + start + 1;
    uint32_t section_id = (uint32_t)id[0] << 24 | id[1] << 16 | id[2] << 8 |
                          id[3];

    g_byte_array_append(out, saved->data, start + 1 + 4 + 1 + 11);
    put_be32(out, LIOBN);
    put_be32(out, version);
    put_be32(out, LIOBN);
    put_be32(out, WINDOW / PAGE);
    g_byte_array_append(out, (const guint8 *)"\0", 1);
    put_be64(out, tce0);
    for (uint32_t i = 1; i < WINDOW / PAGE; i++) {
        put_be64(out, 0);
    }
    if (version >= 3) {
        guint8 b = def_win;

        g_byte_array_append(out, &b, 1);
    }
    g_byte_array_append(out, (const guint8 *)"\x7e", 1);
    put_be32(out, section_id);
    g_byte_array_append(out, (const guint8 *)"\0", 1);
    return out;
}

static void assert_loads(Fixture *f, GByteArray *stream)
{
    g_autoptr(GError) err = NULL;
    bool ok = load_table(f, stream, &err);

    g_assert_no_error(err);
    g_assert_true(ok);
}

/* The section this build writes: version 3, and after the table the
 * def_win byte, then the footer. */
static void assert_saved_v3(Fixture *f, bool def_win)
{
    g_autoptr(GByteArray) stream = save_table(f);
    const guint8 *at = stream->data + iommu_section_start(stream) + 1 + 4 +
                       1 + 11 + 4;
    const guint8 *end_of_table = at + 4 + 4 + 4 + 1 + 8 * (WINDOW / PAGE);

    g_assert_cmpmem(at, 4, "\0\0\0\3", 4);
    g_assert_cmpuint(end_of_table[0], ==, def_win);
    g_assert_cmphex(end_of_table[1], ==, 0x7e);
}

/* QEMU 7.2 writes version 3, with def_win false for a VIO device's table;
 * this build loads it, keeps def_win, and writes version 3 back. */
static void test_migration_v3_round_trip(void)
{
    g_autoptr(GByteArray) v3 = NULL;
    g_autoptr(GByteArray) v3_def_win = NULL;
    Fixture f;
    uint64_t tce;

    fixture_init(&f);
    assert_saved_v3(&f, false);
    v3 = iommu_stream(&f, 3, false, 0x3000 | TCE_RW);
    assert_loads(&f, v3);
    g_assert_true(spapr_tce_get(f.tcet, 0, &tce));
    g_assert_cmphex(tce, ==, 0x3000 | TCE_RW);
    assert_saved_v3(&f, false);

    v3_def_win = iommu_stream(&f, 3, true, 0x5000 | TCE_READ);
    assert_loads(&f, v3_def_win);
    g_assert_true(spapr_tce_get(f.tcet, 0, &tce));
    g_assert_cmphex(tce, ==, 0x5000 | TCE_READ);
    assert_saved_v3(&f, true);
    fixture_free(&f);
}

/* Streams of earlier illan builds are version 2, which QEMU 7.2 loads too. */
static void test_migration_v2_loads(void)
{
    g_autoptr(GByteArray) v2 = NULL;
    Fixture f;
    uint64_t tce;

    fixture_init(&f);
    v2 = iommu_stream(&f, 2, false, 0x4000 | TCE_WRITE);
    assert_loads(&f, v2);
    g_assert_true(spapr_tce_get(f.tcet, 0, &tce));
    g_assert_cmphex(tce, ==, 0x4000 | TCE_WRITE);
    fixture_free(&f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    g_test_add_func("/tce/table/geometry", test_table_geometry);
    g_test_add_func("/tce/table/new-is-zeroed", test_table_new_is_zeroed);
    g_test_add_func("/tce/table/duplicate-liobn-rejected",
                    test_duplicate_liobn_rejected);
    g_test_add_func("/tce/table/free-unregisters-liobn",
                    test_free_unregisters_liobn);
    g_test_add_func("/tce/table/find-liobn-high-bits",
                    test_find_liobn_high_bits);
    g_test_add_func("/tce/table/reset-clears-entries",
                    test_table_reset_clears_entries);
    g_test_add_func("/tce/entry/put-get-round-trip", test_put_get_round_trip);
    g_test_add_func("/tce/entry/window-bounds", test_put_get_window_bounds);
    g_test_add_func("/tce/translate/permissions", test_translate_permissions);
    g_test_add_func("/tce/translate/unmapped-page",
                    test_translate_unmapped_page);
    g_test_add_func("/tce/translate/offset-and-avail",
                    test_translate_offset_and_avail);
    g_test_add_func("/tce/translate/sees-remap", test_translate_sees_remap);
    g_test_add_func("/tce/translate/beyond-ram", test_translate_beyond_ram);
    g_test_add_func("/tce/dma/read-across-pages", test_dma_read_across_pages);
    g_test_add_func("/tce/dma/write-across-pages",
                    test_dma_write_across_pages);
    g_test_add_func("/tce/dma/write-read-only-page-fails",
                    test_dma_write_read_only_page_fails);
    g_test_add_func("/tce/dma/write-unmapped-page-fails",
                    test_dma_write_unmapped_page_fails);
    g_test_add_func("/tce/dma/read-write-only-page-fails",
                    test_dma_read_write_only_page_fails);
    g_test_add_func("/tce/dma/valid-direction", test_dma_valid_direction);
    g_test_add_func("/tce/dma/valid-window-overflow",
                    test_dma_valid_window_overflow);
    g_test_add_func("/tce/dma/valid-wraps-2-64", test_dma_valid_wraps_2_64);
    g_test_add_func("/tce/migration/v3-round-trip",
                    test_migration_v3_round_trip);
    g_test_add_func("/tce/migration/v2-loads", test_migration_v2_loads);
    g_test_add_func("/tce/migration/size-refused",
                    test_migration_size_refused);

    return g_test_run();
}
