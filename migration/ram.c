/*
 * RAM pages.  A page is checked for zero before it is sent, so untouched
 * guest memory costs 9 bytes a page.  On load every address and flag is
 * checked against the one block this machine has.
 */
#include "migration/ram.h"
#include "qemu/option.h"
#include "trace/trace-migration.h"

#include <string.h>

#define RAM_SAVE_FLAG_ZERO      0x02
#define RAM_SAVE_FLAG_MEM_SIZE  0x04
#define RAM_SAVE_FLAG_PAGE      0x08
#define RAM_SAVE_FLAG_EOS       0x10
#define RAM_SAVE_FLAG_CONTINUE  0x20
#define RAM_PAGE_MASK           ((uint64_t)MIGRATION_PAGE_SIZE - 1)

void ram_save_setup(QEMUFile *f, GuestRam *ram)
{
    qemu_put_be64(f, guest_ram_size(ram) | RAM_SAVE_FLAG_MEM_SIZE);
    qemu_put_counted_string(f, RAM_BLOCK_NAME);
    qemu_put_be64(f, guest_ram_size(ram));
    qemu_put_be64(f, RAM_SAVE_FLAG_EOS);
}

void ram_save_eos(QEMUFile *f)
{
    qemu_put_be64(f, RAM_SAVE_FLAG_EOS);
}

/*
 * Zero when the first word is and every word equals the one after it:
 * one call into the C library's vector compare.  The loader checks every
 * zero page it is sent, and a loop of our own is one branch per word in
 * the fuzzing build, which traces each: 60 % of fuzz-migration's time.
 */
static bool page_is_zero(const uint8_t *p)
{
    static const uint8_t zeros[8];

    return memcmp(p, zeros, 8) == 0 &&
           memcmp(p, p + 8, MIGRATION_PAGE_SIZE - 8) == 0;
}

/* One writer, so a relaxed load and store make an increment that a
 * reader on another thread may load whole. */
static void count(uint64_t *counter, uint64_t n)
{
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + n,
                     __ATOMIC_RELAXED);
}

struct RamSaver {
    QEMUFile *f;
    GuestRam *ram;
    RamStats *stats;
    uint64_t *bitmap;           /* pages to send, a bit each */
    size_t words;
    size_t word;                /* where sending goes on */
    uint64_t pending;           /* bits set in @bitmap */
    bool named;                 /* the block was named in this part */
};

RamSaver *ram_saver_new(QEMUFile *f, GuestRam *ram, RamStats *stats)
{
    RamSaver *rs = g_new0(RamSaver, 1);

    G_STATIC_ASSERT(MIGRATION_PAGE_SIZE == GUEST_RAM_DIRTY_PAGE_SIZE);
    rs->f = f;
    rs->ram = ram;
    rs->stats = stats;
    rs->words = guest_ram_dirty_words(ram);
    rs->bitmap = g_new0(uint64_t, rs->words);
    __atomic_store_n(&stats->total, guest_ram_size(ram), __ATOMIC_RELAXED);
    return rs;
}

void ram_saver_free(RamSaver *rs)
{
    if (rs) {
        g_free(rs->bitmap);
        g_free(rs);
    }
}

static void set_pending(RamSaver *rs, uint64_t pages)
{
    rs->pending = pages;
    __atomic_store_n(&rs->stats->remaining, pages * MIGRATION_PAGE_SIZE,
                     __ATOMIC_RELAXED);
}

/* The dirty log starts with every page marked: one sync takes them. */
void ram_saver_mark_all(RamSaver *rs)
{
    uint64_t added;

    guest_ram_dirty_log_start(rs->ram);
    set_pending(rs, guest_ram_dirty_sync(rs->ram, rs->bitmap, &added));
    guest_ram_dirty_log_stop(rs->ram);
}

uint64_t ram_saver_sync(RamSaver *rs)
{
    uint64_t added;

    set_pending(rs, guest_ram_dirty_sync(rs->ram, rs->bitmap, &added));
    count(&rs->stats->dirty_sync_count, 1);
    /* QEMU's figure: the pages this sync found newly dirty. */
    trace_migration_bitmap_sync_end(added);
    return rs->pending;
}

void ram_saver_begin_part(RamSaver *rs)
{
    rs->named = false;
}

static void save_page(RamSaver *rs, uint64_t addr)
{
    uint64_t page[MIGRATION_PAGE_SIZE / sizeof(uint64_t)];
    bool zero;

    /* A copy: the guest may write the page meanwhile, and what is tested
     * for zero must be what is sent. */
    guest_ram_copy_page_racy(rs->ram, addr, page);
    zero = page_is_zero((const uint8_t *)page);
    qemu_put_be64(rs->f, addr | (zero ? RAM_SAVE_FLAG_ZERO
                                      : RAM_SAVE_FLAG_PAGE) |
                         (rs->named ? RAM_SAVE_FLAG_CONTINUE : 0));
    if (!rs->named) {
        qemu_put_counted_string(rs->f, RAM_BLOCK_NAME);
        rs->named = true;
    }
    if (zero) {
        qemu_put_byte(rs->f, 0);
        count(&rs->stats->duplicate, 1);
    } else {
        qemu_put_buffer(rs->f, page, MIGRATION_PAGE_SIZE);
        count(&rs->stats->normal, 1);
    }
}

bool ram_saver_send(RamSaver *rs, uint64_t max_bytes)
{
    uint64_t start = qemu_file_transferred(rs->f);

    while (rs->pending && qemu_file_transferred(rs->f) - start < max_bytes) {
        uint64_t taken;

        while (!rs->bitmap[rs->word]) {
            rs->word = (rs->word + 1) % rs->words;
        }
        taken = rs->bitmap[rs->word];
        rs->bitmap[rs->word] = 0;
        for (uint64_t bits = taken; bits; bits &= bits - 1) {
            uint64_t page = rs->word * 64 + __builtin_ctzll(bits);

            save_page(rs, page * MIGRATION_PAGE_SIZE);
        }
        set_pending(rs, rs->pending - __builtin_popcountll(taken));
    }
    return rs->pending == 0;
}

static bool load_block_list(QEMUFile *f, GuestRam *ram, uint64_t total,
                            GError **errp)
{
    char name[256];
    uint64_t len;

    qemu_get_counted_string(f, name);
    len = qemu_get_be64(f);
    if (!qemu_file_check(f, errp)) {
        return false;
    }
    if (strcmp(name, RAM_BLOCK_NAME)) {
        g_set_error(errp, ILLAN_ERROR, 0, "unknown RAM block '%s' (this "
                    "machine has only '%s')", name, RAM_BLOCK_NAME);
        return false;
    }
    if (len != guest_ram_size(ram) || total != len) {
        g_set_error(errp, ILLAN_ERROR, 0, "RAM block '%s' is 0x%"
                    G_GINT64_MODIFIER "x bytes in the stream and 0x%"
                    G_GINT64_MODIFIER "x here (-m): start the destination "
                    "with -m %" G_GUINT64_FORMAT "%s, or without -m to take "
                    "the stream's", name, len, guest_ram_size(ram),
                    len % (1 << 20) ? len : len >> 20,
                    len % (1 << 20) ? "B" : "M");
        return false;
    }
    return true;
}

/* A page record after its address word. */
static bool load_page(QEMUFile *f, GuestRam *ram, uint64_t addr,
                      uint64_t flags, GError **errp)
{
    char name[256];

    if (!(flags & RAM_SAVE_FLAG_CONTINUE)) {
        qemu_get_counted_string(f, name);
        if (qemu_file_check(f, NULL) && strcmp(name, RAM_BLOCK_NAME)) {
            g_set_error(errp, ILLAN_ERROR, 0, "page for unknown RAM block "
                        "'%s'", name);
            return false;
        }
    }
    if (!guest_ram_range_ok(ram, addr, MIGRATION_PAGE_SIZE)) {
        g_set_error(errp, ILLAN_ERROR, 0, "page at 0x%" G_GINT64_MODIFIER
                    "x is outside guest RAM", addr);
        return false;
    }
    if (flags & RAM_SAVE_FLAG_ZERO) {
        uint8_t fill = qemu_get_byte(f);
        uint8_t *page = guest_ram_ptr(ram, addr, MIGRATION_PAGE_SIZE);

        /* Leave untouched pages untouched: reading zero costs nothing. */
        if (fill || !page_is_zero(page)) {
            memset(page, fill, MIGRATION_PAGE_SIZE);
        }
    } else {
        qemu_get_buffer(f, guest_ram_ptr(ram, addr, MIGRATION_PAGE_SIZE),
                        MIGRATION_PAGE_SIZE);
    }
    return qemu_file_check(f, errp);
}

bool ram_load(QEMUFile *f, GuestRam *ram, bool setup, GError **errp)
{
    for (;;) {
        uint64_t word = qemu_get_be64(f);
        uint64_t flags = word & RAM_PAGE_MASK, addr = word & ~RAM_PAGE_MASK;

        if (!qemu_file_check(f, errp)) {
            return false;
        }
        if (flags == RAM_SAVE_FLAG_EOS) {
            return true;
        }
        if (setup && flags == RAM_SAVE_FLAG_MEM_SIZE) {
            if (!load_block_list(f, ram, addr, errp)) {
                return false;
            }
            continue;
        }
        if (flags & ~(RAM_SAVE_FLAG_ZERO | RAM_SAVE_FLAG_PAGE |
                      RAM_SAVE_FLAG_CONTINUE) ||
            !(flags & RAM_SAVE_FLAG_ZERO) == !(flags & RAM_SAVE_FLAG_PAGE)) {
            g_set_error(errp, ILLAN_ERROR, 0, "unsupported RAM flags 0x%"
                        G_GINT64_MODIFIER "x at 0x%" G_GINT64_MODIFIER "x",
                        flags, addr);
            return false;
        }
        if (!load_page(f, ram, addr, flags, errp)) {
            return false;
        }
    }
}
