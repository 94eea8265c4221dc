/*
 * Unit tests for trace events (trace/control.c and the code
 * scripts/tracetool.py generates): patterns, -trace's forms, events
 * files, QEMU's warnings and errors, -d trace:, and the log lines of a
 * real TCE translation, with and without -msg timestamp=on.
 */
#include "hw/ppc/spapr_iommu.h"
#include "qemu/log.h"
#include "trace/control.h"
#include "trace/trace-hw_ppc.h"

#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#define LIOBN       0x71000000u

/* Every test starts with every event off. */
static void all_off(void)
{
    for (size_t i = 0; i < trace_event_table_len; i++) {
        trace_event_set_enabled(&trace_event_table[i], false);
    }
}

static bool enabled(const char *name)
{
    const TraceEvent *ev = trace_event_find(name);

    g_assert_nonnull(ev);
    return trace_event_enabled(ev);
}

static void test_patterns(void)
{
    g_assert_true(trace_event_is_pattern("spapr_*"));
    /* As QEMU: only '*' makes a pattern. */
    g_assert_false(trace_event_is_pattern("spapr_iommu_?et"));
    g_assert_false(trace_event_is_pattern("spapr_iommu_get"));
    g_assert_true(trace_pattern_match("*", "spapr_iommu_get"));
    g_assert_true(trace_pattern_match("spapr_iommu_?et", "spapr_iommu_get"));
    g_assert_false(trace_pattern_match("spapr_iommu_?et",
                                       "spapr_iommu_put"));
    g_assert_false(trace_pattern_match("spapr_iommu", "spapr_iommu_get"));
}

/* The table: every event once, with the file and origin it came from. */
static void test_table(void)
{
    const TraceEvent *ev = trace_event_find("spapr_iommu_xlate");
    const TraceEvent *it;
    size_t pos = 0, n = 0;

    g_assert_nonnull(ev);
    g_assert_cmpstr(ev->file, ==, "hw/ppc/trace-events");
    g_assert_cmpstr(ev->origin, ==, "QEMU");
    g_assert_true(trace_event_available(ev));
    g_assert_null(trace_event_find("spapr_iommu"));
    while ((it = trace_event_next("spapr_iommu_*", &pos))) {
        n++;
    }
    g_assert_cmpuint(n, ==, 6);
}

/* A line: a name enables, -NAME disables, patterns too; QEMU's warning
 * for a name that is no event, silence for a pattern matching none. */
static void test_enable_line(void)
{
    g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
    bool help = false;

    all_off();
    trace_enable_events("spapr_iommu_*", "P: ", warnings, &help);
    g_assert_true(enabled("spapr_iommu_put"));
    g_assert_true(trace_event_get_state_spapr_iommu_put());
    trace_enable_events("-spapr_iommu_?ut", "P: ", warnings, &help);
    g_assert_false(enabled("spapr_iommu_put"));
    g_assert_true(enabled("spapr_iommu_get"));
    trace_enable_events("-spapr_iommu_get", "P: ", warnings, &help);
    g_assert_false(trace_event_get_state_spapr_iommu_get());
    trace_enable_events("nosuch_*", "P: ", warnings, &help);
    g_assert_cmpuint(warnings->len, ==, 0);

    /* As QEMU: without '*', only the first event matched changes. */
    all_off();
    trace_enable_events("spapr_iommu_???", "P: ", warnings, &help);
    g_assert_true(enabled("spapr_iommu_put"));
    g_assert_false(enabled("spapr_iommu_get"));
    trace_enable_events("nosuch?", "P: ", warnings, &help);
    g_assert_cmpuint(warnings->len, ==, 1);
    g_assert_cmpstr(g_ptr_array_index(warnings, 0), ==,
                    "P: warning: trace event 'nosuch?' does not exist");
    g_ptr_array_set_size(warnings, 0);
    trace_enable_events("nosuch", "P: ", warnings, &help);
    g_assert_cmpuint(warnings->len, ==, 1);
    g_assert_cmpstr(g_ptr_array_index(warnings, 0), ==,
                    "P: warning: trace event 'nosuch' does not exist");
    g_assert_false(help);
}

static char *write_temp(const char *contents)
{
    g_autoptr(GError) err = NULL;
    char *path = NULL;
    int fd = g_file_open_tmp("test-trace-XXXXXX", &path, &err);

    g_assert_no_error(err);
    close(fd);
    g_assert_true(g_file_set_contents(path, contents, -1, NULL));
    return path;
}

static void test_events_file(void)
{
    g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GError) err = NULL;
    g_autofree char *path = write_temp("# a comment\n"
                                       "\n"
                                       "spapr_iommu_get\n"
                                       "  spapr_iommu_stuff  \n"
                                       "nosuch\n"
                                       "spapr_iommu_xlate\n"
                                       "-spapr_iommu_xlate\n"
                                       "  # not a comment\n"
                                       "spapr_iommu_put");
    /* As QEMU: a line is its text as written, spaces and all. */
    g_autofree char *warning_spaces = g_strdup_printf(
        "illan:%s:4: warning: trace event '  spapr_iommu_stuff  ' does not "
        "exist", path);
    g_autofree char *warning = g_strdup_printf(
        "illan:%s:5: warning: trace event 'nosuch' does not exist", path);
    g_autofree char *warning_hash = g_strdup_printf(
        "illan:%s:8: warning: trace event '  # not a comment' does not "
        "exist", path);
    bool help = false;

    all_off();
    g_assert_true(trace_enable_events_file(path, warnings, &help, &err));
    g_assert_no_error(err);
    g_assert_true(enabled("spapr_iommu_get"));
    g_assert_false(enabled("spapr_iommu_stuff"));
    g_assert_false(enabled("spapr_iommu_xlate"));
    g_assert_true(enabled("spapr_iommu_put"));
    g_assert_cmpuint(warnings->len, ==, 3);
    g_assert_cmpstr(g_ptr_array_index(warnings, 0), ==, warning_spaces);
    g_assert_cmpstr(g_ptr_array_index(warnings, 1), ==, warning);
    g_assert_cmpstr(g_ptr_array_index(warnings, 2), ==, warning_hash);
    g_unlink(path);

    g_assert_false(trace_enable_events_file(path, warnings, &help, &err));
    g_assert_true(g_str_has_prefix(err->message, path));
    g_assert_true(g_str_has_suffix(err->message, ": No such file or "
                                   "directory"));
}

/* -trace ARG: the forms, in QEMU's order within one option (enable,
 * then events, then file), and the errors. */
static void test_opt_parse(void)
{
    g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *events = write_temp("-spapr_iommu_put\n");
    g_autofree char *file = NULL;
    g_autofree char *arg = g_strdup_printf(
        "enable=spapr_iommu_put,events=%s,file=b.log", events);
    g_autofree char *missing = g_strdup_printf("%s: No such file or "
                                               "directory", events);
    GError *err = NULL;
    bool help = false;

    all_off();
    g_assert_true(trace_opt_parse("spapr_iommu_get", &file, warnings, &help,
                                  &err));
    g_assert_true(enabled("spapr_iommu_get"));
    g_assert_null(file);
    g_assert_true(trace_opt_parse("file=a.log", &file, warnings, &help,
                                  &err));
    g_assert_true(trace_opt_parse(arg, &file, warnings, &help, &err));
    g_assert_false(enabled("spapr_iommu_put"));
    g_assert_cmpstr(file, ==, "b.log");
    g_assert_true(trace_opt_parse("nosuch", &file, warnings, &help, &err));
    g_assert_cmpstr(g_ptr_array_index(warnings, 0), ==,
                    "illan: -trace nosuch: warning: trace event 'nosuch' "
                    "does not exist");
    g_assert_null(file);
    g_assert_false(help);
    g_assert_no_error(err);

    g_assert_false(trace_opt_parse("bogus=1", &file, warnings, &help, &err));
    g_assert_cmpstr(err->message, ==, "-trace bogus=1: Invalid parameter "
                    "'bogus'");
    g_clear_error(&err);
    g_unlink(events);
    g_assert_false(trace_opt_parse(arg, &file, warnings, &help, &err));
    /* QEMU's words: the file, then the reason. */
    g_assert_cmpstr(err->message, ==, missing);
    g_clear_error(&err);
}

/* -d trace:PATTERN switches events on once applied (after -trace);
 * "trace:" alone is no item. */
static void test_log_items(void)
{
    GError *err = NULL;
    bool exit_now = true, help = false;

    all_off();
    g_assert_true(qemu_log_parse_items("trace:spapr_iommu_?et", &exit_now,
                                       &err));
    g_assert_false(exit_now);
    g_assert_false(enabled("spapr_iommu_get"));
    qemu_log_enable_trace_items("guest_errors,trace:spapr_iommu_?et", "",
                                NULL, &help);
    g_assert_false(help);
    g_assert_true(enabled("spapr_iommu_get"));
    g_assert_false(enabled("spapr_iommu_put"));
    g_assert_false(qemu_log_parse_items("trace:", &exit_now, &err));
    g_assert_cmpstr(err->message, ==, "-d trace:: unknown log item "
                    "'trace:' (-d help lists them)");
    g_clear_error(&err);
}

typedef struct XlateFixture {
    GuestRam *ram;
    SpaprTceRegistry *reg;
    SpaprTceTable *tcet;
    char *log;
} XlateFixture;

static void xlate_setup(XlateFixture *f)
{
    GError *err = NULL;
    int fd = g_file_open_tmp("test-trace-log-XXXXXX", &f->log, &err);

    g_assert_no_error(err);
    close(fd);
    g_assert_true(qemu_log_set_file(f->log, true, &err));
    f->ram = guest_ram_new(16 * 1024 * 1024, &err);
    g_assert_no_error(err);
    f->reg = spapr_tce_registry_new();
    f->tcet = spapr_tce_table_new(f->reg, LIOBN, SPAPR_VIO_DMA_WINDOW,
                                  f->ram, &err);
    g_assert_no_error(err);
    g_assert_true(spapr_tce_put(f->tcet, 0x5000, 0x200000 | TCE_READ |
                                TCE_WRITE));
}

static char *xlate_teardown(XlateFixture *f)
{
    char *text = NULL;

    g_assert_true(qemu_log_set_file(NULL, false, NULL));
    g_assert_true(g_file_get_contents(f->log, &text, NULL, NULL));
    g_unlink(f->log);
    g_free(f->log);
    spapr_tce_table_free(f->tcet);
    spapr_tce_registry_free(f->reg);
    guest_ram_free(f->ram);
    return text;
}

/* QEMU's xlate line: the address asked, the page, the TCE's permission
 * bits and the page's offset mask; outside the window, no page and an
 * all-ones mask.  Only what is on writes. */
static void test_xlate_lines(void)
{
    XlateFixture f;
    g_autofree char *log = NULL;
    uint64_t gpa, avail;

    all_off();
    xlate_setup(&f);
    g_assert_true(spapr_tce_translate(f.tcet, 0x5123, DMA_DEVICE_READS,
                                      &gpa, &avail));
    trace_enable_events("spapr_iommu_xlate", "", NULL, &(bool){ false });
    g_assert_true(spapr_tce_translate(f.tcet, 0x5123, DMA_DEVICE_READS,
                                      &gpa, &avail));
    g_assert_false(spapr_tce_translate(f.tcet, SPAPR_VIO_DMA_WINDOW,
                                       DMA_DEVICE_READS, &gpa, &avail));
    log = xlate_teardown(&f);
    g_assert_cmpstr(log, ==,
        "spapr_iommu_xlate liobn=0x71000000 0x5123 -> 0x200000 perm=3 "
        "mask=0xfff\n"
        "spapr_iommu_xlate liobn=0x71000000 0x10000000 -> 0x0 perm=0 "
        "mask=0xffffffff\n");
}

/* -msg timestamp=on: "TID@SEC.USEC:" first, the writing thread's id. */
static void test_timestamp_line(void)
{
    XlateFixture f;
    g_autofree char *log = NULL;
    g_autofree char *tid = g_strdup_printf("%d@", (int)gettid());
    uint64_t gpa, avail;

    all_off();
    xlate_setup(&f);
    trace_enable_events("spapr_iommu_xlate", "", NULL, &(bool){ false });
    qemu_log_set_timestamp(true);
    g_assert_true(spapr_tce_translate(f.tcet, 0x5000, DMA_DEVICE_WRITES,
                                      &gpa, &avail));
    qemu_log_set_timestamp(false);
    log = xlate_teardown(&f);
    g_assert_true(g_str_has_prefix(log, tid));
    g_assert_true(g_regex_match_simple(
        "^[0-9]+@[0-9]+\\.[0-9]{6}:spapr_iommu_xlate liobn=0x71000000 "
        "0x5000 -> 0x200000 perm=3 mask=0xfff\n$", log, 0, 0));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/trace/patterns", test_patterns);
    g_test_add_func("/trace/table", test_table);
    g_test_add_func("/trace/enable-line", test_enable_line);
    g_test_add_func("/trace/events-file", test_events_file);
    g_test_add_func("/trace/opt-parse", test_opt_parse);
    g_test_add_func("/trace/log-items", test_log_items);
    g_test_add_func("/trace/xlate-lines", test_xlate_lines);
    g_test_add_func("/trace/timestamp-line", test_timestamp_line);
    return g_test_run();
}
