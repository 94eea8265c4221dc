/*
 * Guest RAM through a real stream: a page is sent as one fill byte only
 * when every byte of it is zero, and the loader leaves the destination
 * with exactly the source's bytes, zero pages included.
 */
#include "migration/qemu-file.h"
#include "migration/ram.h"

#include <glib.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGES   16

/* The one byte that is not zero in each of the pages that have one:
 * the first, the last, either side of the middle, and the last of a
 * cache line. */
static const uint64_t marks[] = {
    1 * 4096, 2 * 4096 + 4095, 3 * 4096 + 2047, 4 * 4096 + 2048,
    5 * 4096 + 63, 6 * 4096 + 7, 7 * 4096 + 8,
};

static GuestRam *new_ram(void)
{
    g_autoptr(GError) err = NULL;
    GuestRam *ram = guest_ram_new(PAGES * 4096, &err);

    g_assert_no_error(err);
    return ram;
}

static int save_all(GuestRam *ram, RamStats *st)
{
    int fd = memfd_create("test-migration-ram", MFD_CLOEXEC);
    QEMUFile *f;
    RamSaver *rs;

    g_assert_cmpint(fd, >=, 0);
    f = qemu_file_new_output(dup(fd));
    ram_save_setup(f, ram);
    rs = ram_saver_new(f, ram, st);
    ram_saver_mark_all(rs);
    g_assert_true(ram_saver_send(rs, UINT64_MAX));
    ram_save_eos(f);
    ram_saver_free(rs);
    g_assert_true(qemu_file_close(f, NULL));
    return fd;
}

static void test_zero_pages(void)
{
    GuestRam *src = new_ram(), *dst = new_ram();
    g_autoptr(GError) err = NULL;
    RamStats st = { 0 };
    QEMUFile *f;
    int fd;

    for (size_t i = 0; i < G_N_ELEMENTS(marks); i++) {
        g_assert_true(guest_ram_fill(src, marks[i], 0x5A, 1));
    }
    fd = save_all(src, &st);
    g_assert_cmpuint(st.normal, ==, G_N_ELEMENTS(marks));
    g_assert_cmpuint(st.duplicate, ==, PAGES - G_N_ELEMENTS(marks));
    /* Whatever the destination held is replaced, zero pages too. */
    g_assert_true(guest_ram_fill(dst, 0, 0xEE, PAGES * 4096));
    g_assert_cmpint(lseek(fd, 0, SEEK_SET), ==, 0);
    f = qemu_file_new_input(fd);
    g_assert_true(ram_load(f, dst, true, &err));
    g_assert_no_error(err);
    g_assert_true(ram_load(f, dst, false, &err));
    g_assert_no_error(err);
    qemu_file_close(f, NULL);
    g_assert_cmpmem(guest_ram_ptr(dst, 0, PAGES * 4096), PAGES * 4096,
                    guest_ram_ptr(src, 0, PAGES * 4096), PAGES * 4096);
    guest_ram_free(src);
    guest_ram_free(dst);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/migration-ram/zero-pages", test_zero_pages);
    return g_test_run();
}
