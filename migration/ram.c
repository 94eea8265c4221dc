/*
 * RAM pages.  Everything is sent in one pass while the machine is
 * stopped; a page is checked for zero before it is sent, so untouched
 * guest memory costs 9 bytes a page.  On load every address and flag is
 * checked against the one block this machine has.
 */
#include "migration/ram.h"
#include "qemu/option.h"

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

static bool page_is_zero(const uint8_t *p)
{
    const uint64_t *w = (const uint64_t *)p;

    for (size_t i = 0; i < MIGRATION_PAGE_SIZE / sizeof(*w); i++) {
        if (w[i]) {
            return false;
        }
    }
    return true;
}

/* Counts are read by QMP on the main thread while a migration thread
 * writes; one writer, so a relaxed load and store make an increment. */
static void count(uint64_t *counter)
{
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
}

void ram_save_pages(QEMUFile *f, GuestRam *ram, RamStats *stats)
{
    uint64_t size = guest_ram_size(ram);
    const uint8_t *base = guest_ram_ptr(ram, 0, size);

    __atomic_store_n(&stats->total, size, __ATOMIC_RELAXED);
    for (uint64_t addr = 0; addr < size; addr += MIGRATION_PAGE_SIZE) {
        const uint8_t *page = base + addr;
        /* The first page names the block; the rest continue in it. */
        uint64_t cont = addr ? RAM_SAVE_FLAG_CONTINUE : 0;

        if (page_is_zero(page)) {
            qemu_put_be64(f, addr | RAM_SAVE_FLAG_ZERO | cont);
        } else {
            qemu_put_be64(f, addr | RAM_SAVE_FLAG_PAGE | cont);
        }
        if (!cont) {
            qemu_put_counted_string(f, RAM_BLOCK_NAME);
        }
        if (page_is_zero(page)) {
            qemu_put_byte(f, 0);
            count(&stats->duplicate);
        } else {
            qemu_put_buffer(f, page, MIGRATION_PAGE_SIZE);
            count(&stats->normal);
        }
    }
    qemu_put_be64(f, RAM_SAVE_FLAG_EOS);
}

void ram_save_complete(QEMUFile *f)
{
    qemu_put_be64(f, RAM_SAVE_FLAG_EOS);
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
                    G_GINT64_MODIFIER "x here: start the destination with "
                    "the same -m", name, len, guest_ram_size(ram));
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
