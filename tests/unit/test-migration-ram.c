/*
 * Guest RAM through a real stream: a page is sent as one fill byte only
 * when every byte of it is zero, and the loader leaves the destination
 * with exactly the source's bytes, zero pages included.
 */
#include "migration/qemu-file.h"
#include "migration/ram.h"
#include "qemu/log.h"
#include "trace/control.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/wait.h>
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

/* QEMU's migration_bitmap_sync_end gives the pages a sync found newly
 * dirty, not those still waiting to be sent. */
static void test_sync_traces_new_pages(void)
{
    const TraceEvent *ev = trace_event_find("migration_bitmap_sync_end");
    g_autoptr(GError) err = NULL;
    g_autofree char *path = NULL, *log = NULL;
    GuestRam *ram;
    RamStats st = { 0 };
    QEMUFile *f;
    RamSaver *rs;
    int fd;

    if (!trace_event_available(ev)) {
        g_test_skip("trace events compiled out");
        return;
    }
    fd = g_file_open_tmp("test-migration-ram-XXXXXX", &path, &err);
    g_assert_no_error(err);
    g_assert_true(qemu_log_set_file(path, false, &err));
    trace_event_set_enabled(ev, true);
    ram = new_ram();
    f = qemu_file_new_output(dup(fd));
    rs = ram_saver_new(f, ram, &st);
    guest_ram_dirty_log_start(ram);
    g_assert_cmpuint(ram_saver_sync(rs), ==, PAGES);
    g_assert_true(ram_saver_send(rs, UINT64_MAX));
    g_assert_true(guest_ram_fill(ram, 0, 0x5A, 1));
    g_assert_cmpuint(ram_saver_sync(rs), ==, 1);
    /* Written again before it was sent: still one page, none new. */
    g_assert_true(guest_ram_fill(ram, 0, 0xA5, 1));
    g_assert_cmpuint(ram_saver_sync(rs), ==, 1);
    guest_ram_dirty_log_stop(ram);
    trace_event_set_enabled(ev, false);
    g_assert_true(qemu_log_set_file(NULL, false, &err));
    g_assert_true(g_file_get_contents(path, &log, NULL, &err));
    g_assert_cmpstr(log, ==, "migration_bitmap_sync_end dirty_pages 16\n"
                             "migration_bitmap_sync_end dirty_pages 1\n"
                             "migration_bitmap_sync_end dirty_pages 0\n");
    ram_saver_free(rs);
    g_assert_true(qemu_file_close(f, NULL));
    guest_ram_free(ram);
    close(fd);
    g_unlink(path);
}

/*
 * An exec: migration forks.  Guest RAM registered as a UMEM is pinned, and
 * the kernel copies pinned private pages into the child at fork (seconds
 * per GiB), so the child must not inherit the mapping at all: mincore()
 * in the child then fails with ENOMEM.
 */
static void test_fork_leaves_ram_behind(void)
{
    GuestRam *ram = new_ram();
    unsigned char resident;
    void *base = guest_ram_ptr(ram, 0, 4096);
    int status;
    pid_t pid;

    g_assert_true(guest_ram_write(ram, 0, "x", 1));
    pid = fork();
    g_assert_cmpint(pid, >=, 0);
    if (pid == 0) {
        _exit(mincore(base, 4096, &resident) < 0 && errno == ENOMEM ? 0 : 1);
    }
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 0);
    guest_ram_free(ram);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/migration-ram/zero-pages", test_zero_pages);
    g_test_add_func("/migration-ram/sync-traces-new-pages",
                    test_sync_traces_new_pages);
    g_test_add_func("/migration-ram/fork-leaves-ram-behind",
                    test_fork_leaves_ram_behind);
    return g_test_run();
}
