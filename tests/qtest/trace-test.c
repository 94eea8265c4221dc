/*
 * Trace events through QEMU's interface, on a real illan: -trace (its
 * forms, events files, warnings and errors), the log file, the lines the
 * sPAPR TCE hcalls write, QMP trace-event-get-state/-set-state and HMP
 * info trace-events/trace-event.
 */
#include "hw/ppc/hcall.h"
#include "libqos/trace-log.h"
#include "libqtest.h"

#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

#define LIOBN       0x71000000ULL

typedef struct TraceRun {
    TraceLog log;
    QTestState *s;
} TraceRun;

/* illan with one spapr-vlan and @trace_args, logging to a file of its
 * own (-D, which trace events write to when -trace names no file). */
static void trace_run_start(TraceRun *r, const char *trace_args)
{
    trace_log_init(&r->log);
    r->s = qtest_initf("-nodefaults -device spapr-vlan -m 256M "
                       "-D %s %s", r->log.path, trace_args);
}

/* Every line is flushed before the hcall that wrote it replies. */
static char *trace_run_log(const TraceRun *r)
{
    return trace_log_read(&r->log);
}

static void trace_run_end(TraceRun *r)
{
    qtest_quit(r->s);
    trace_log_free(&r->log);
}

/* QEMU's spapr_iommu_put line: the ioba page-aligned once the table is
 * found, as it came when none is; ret signed. */
static void test_iommu_put_line(void)
{
    TraceRun r;
    g_autofree char *log = NULL;

    trace_run_start(&r, "-trace enable=spapr_iommu_put");
    g_assert_cmpint(qtest_hcallv(r.s, H_PUT_TCE, LIOBN, 0x5abc, 0x200003),
                    ==, H_SUCCESS);
    g_assert_cmpint(qtest_hcallv(r.s, H_PUT_TCE, 0x12345678, 0x6abc, 0x3),
                    ==, H_PARAMETER);
    log = trace_run_log(&r);
    g_assert_cmpstr(log, ==,
        "spapr_iommu_put liobn=0x71000000 ioba=0x5000 tce=0x200003 ret=0\n"
        "spapr_iommu_put liobn=0x12345678 ioba=0x6abc tce=0x3 ret=-4\n");
    trace_run_end(&r);
}

/* -msg timestamp=on from the command line: every line starts with
 * QEMU's "TID@SEC.USEC:", the id of one of illan's threads. */
static void test_timestamp_lines(void)
{
    TraceRun r;
    g_autofree char *log = NULL;
    g_auto(GStrv) lines = NULL;
    g_autoptr(GRegex) re = g_regex_new(
        "^([0-9]+)@[0-9]+\\.[0-9]{6}:spapr_iommu_put ", 0, 0, NULL);

    trace_run_start(&r, "-msg timestamp=on -trace enable=spapr_iommu_put");
    for (uint64_t ioba = 0x1000; ioba <= 0x3000; ioba += 0x1000) {
        g_assert_cmpint(qtest_hcallv(r.s, H_PUT_TCE, LIOBN, ioba, 0x3), ==,
                        H_SUCCESS);
    }
    log = trace_run_log(&r);
    lines = g_strsplit(log, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 4);
    g_assert_cmpstr(lines[3], ==, "");
    for (size_t i = 0; i < 3; i++) {
        g_autoptr(GMatchInfo) m = NULL;
        g_autofree char *tid = NULL, *task = NULL;

        if (!g_regex_match(re, lines[i], 0, &m)) {
            g_error("line %zu not QEMU's timestamped form: '%s'", i,
                    lines[i]);
        }
        tid = g_match_info_fetch(m, 1);
        g_assert_cmpint(atoi(tid), >, 0);
        task = g_strdup_printf("/proc/%d/task/%s", (int)qtest_pid(r.s),
                               tid);
        g_assert_true(g_file_test(task, G_FILE_TEST_IS_DIR));
    }
    trace_run_end(&r);
}

/* An event that is off writes nothing, though its hcall ran. */
static void test_off_writes_nothing(void)
{
    TraceRun r;
    uint64_t tce = 0;
    g_autofree char *log = NULL;

    trace_run_start(&r, "-trace enable=spapr_iommu_get");
    g_assert_cmpint(qtest_hcallv(r.s, H_PUT_TCE, LIOBN, 0x5000, 0x7003),
                    ==, H_SUCCESS);
    log = trace_run_log(&r);
    g_assert_cmpstr(log, ==, "");
    g_assert_cmpint(qtest_hcall(r.s, H_GET_TCE, 2,
                                (uint64_t[]){ LIOBN, 0x5000 }, &tce, 1),
                    ==, H_SUCCESS);
    g_free(log);
    log = trace_run_log(&r);
    g_assert_cmpstr(log, ==,
        "spapr_iommu_get liobn=0x71000000 ioba=0x5000 ret=0 tce=0x7003\n");
    trace_run_end(&r);
}

/* -trace help: every event's name, one a line, and exit status 0. */
static void test_help(void)
{
    g_autofree char *out = NULL, *err = NULL;
    g_auto(GStrv) names = NULL;

    /* As QEMU: the first help ends the run, whatever follows. */
    g_assert_cmpint(illan_run("-trace help -trace bogus=1", &out, &err), ==,
                    0);
    names = g_strsplit(out, "\n", -1);
    g_assert_true(g_strv_contains((const char *const *)names,
                                  "spapr_iommu_put"));
    g_assert_true(g_strv_contains((const char *const *)names,
                                  "spapr_iommu_xlate"));
    g_assert_cmpstr(err, ==, "");
}

/* The other TCE hcalls' lines, with QEMU's arguments: stuff's ioba is
 * where it stopped, indirect's iobaN the index of the last entry put. */
static void test_iommu_hcall_lines(void)
{
    TraceRun r;
    uint64_t list = 0x100000;
    g_autofree char *log = NULL;

    trace_run_start(&r, "-trace 'spapr_iommu_*' "
                    "-trace -spapr_iommu_new_table");
    g_assert_cmpint(qtest_hcallv(r.s, H_STUFF_TCE, LIOBN, 0x10123, 0x9003,
                                 4), ==, H_SUCCESS);
    qtest_writeq(r.s, list, 0x30003);
    qtest_writeq(r.s, list + 8, 0x31003);
    g_assert_cmpint(qtest_hcallv(r.s, H_PUT_TCE_INDIRECT, LIOBN, 0x20000,
                                 list, 2), ==, H_SUCCESS);
    g_assert_cmpint(qtest_hcallv(r.s, H_GET_TCE, 0x12345678, 0x5000), ==,
                    H_PARAMETER);
    log = trace_run_log(&r);
    g_assert_cmpstr(log, ==,
        "spapr_iommu_stuff liobn=0x71000000 ioba=0x14000 tcevalue=0x9003 "
        "npages=4 ret=0\n"
        "spapr_iommu_indirect liobn=0x71000000 ioba=0x20000 "
        "tcelist=0x100000 iobaN=0x1 tceN=0x31003 ret=0\n"
        "spapr_iommu_get liobn=0x12345678 ioba=0x5000 ret=-4 tce=0x0\n");
    trace_run_end(&r);
}

/* An events file: comments, blank lines, -PATTERN, and QEMU's warning
 * naming the file and line for a name that matches nothing; the new
 * table is traced because -trace applies before the machine is built. */
static void test_events_file(void)
{
    g_autofree char *dir = g_dir_make_tmp("trace-test-XXXXXX", NULL);
    g_autofree char *events = g_build_filename(dir, "events", NULL);
    g_autofree char *dtb = g_build_filename(dir, "dtb", NULL);
    g_autofree char *args = g_strdup_printf(
        "-M pseries,dumpdtb=%s -device spapr-vlan -trace events=%s", dtb,
        events);
    g_autofree char *out = NULL, *err = NULL;
    g_autofree char *warning = g_strdup_printf(
        "illan:%s:4: warning: trace event 'nosuch_event' does not exist\n",
        events);

    g_assert_true(g_file_set_contents(events,
        "# the TCE tables\n"
        "\n"
        "spapr_iommu_*\n"
        "nosuch_event\n"
        "nosuch_*\n"
        "-spapr_iommu_?ut\n"
        "-spapr_iommu_xlate\n", -1, NULL));
    g_assert_cmpint(illan_run(args, &out, &err), ==, 0);
    g_assert_true(g_str_has_prefix(err, warning));
    g_assert_true(g_regex_match_simple(
        "^spapr_iommu_new_table liobn=0x71000000 table=0x[0-9a-f]+ fd=-1\n$",
        err + strlen(warning), 0, 0));
    g_unlink(events);
    g_unlink(dtb);
    g_rmdir(dir);
}

/* -trace's errors: one line naming the option, status 1. */
static void test_option_errors(void)
{
    static const struct {
        const char *args;
        const char *err;
    } cases[] = {
        { "-trace events=/nonexistent/events",
          "illan: /nonexistent/events: No such file or directory\n" },
        { "-trace bogus=1",
          "illan: -trace bogus=1: Invalid parameter 'bogus'\n" },
        { "-trace file=/nonexistent/log",
          "illan: -trace file=/nonexistent/log: Error opening logfile "
          "/nonexistent/log: No such file or directory\n" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *out = NULL, *err = NULL;

        g_assert_cmpint(illan_run(cases[i].args, &out, &err), ==, 1);
        g_assert_cmpstr(err, ==, cases[i].err);
    }
}

/* A directory of its own for one illan that dumps its device tree and
 * exits, with its log files. */
typedef struct DumpRun {
    char *dir;
    char *dtb;
    char *a;
    char *b;
} DumpRun;

static DumpRun dump_run_new(void)
{
    DumpRun d = { .dir = g_dir_make_tmp("trace-test-XXXXXX", NULL) };

    g_assert_nonnull(d.dir);
    d.dtb = g_build_filename(d.dir, "dtb", NULL);
    d.a = g_build_filename(d.dir, "a.log", NULL);
    d.b = g_build_filename(d.dir, "b.log", NULL);
    return d;
}

/* illan -M pseries,dumpdtb=... -device spapr-vlan and the options
 * @args_fmt makes of @path (and @path2); its stderr. */
static char *dump_run(const DumpRun *d, const char *args_fmt,
                      const char *path, const char *path2)
{
    g_autofree char *args_tail = g_strdup_printf(args_fmt, path, path2);
    g_autofree char *args = g_strdup_printf(
        "-M pseries,dumpdtb=%s -device spapr-vlan %s", d->dtb, args_tail);
    g_autofree char *out = NULL;
    char *err = NULL;

    g_assert_cmpint(illan_run(args, &out, &err), ==, 0);
    return err;
}

static char *file_text(const char *path)
{
    char *text = NULL;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    return text;
}

static void dump_run_free(DumpRun *d)
{
    g_unlink(d->dtb);
    g_unlink(d->a);
    g_unlink(d->b);
    g_rmdir(d->dir);
    g_free(d->dtb);
    g_free(d->a);
    g_free(d->b);
    g_free(d->dir);
}

#define NEW_TABLE_LINE \
    "spapr_iommu_new_table liobn=0x71000000 table=0x[0-9a-f]+ fd=-1\n"

/* As QEMU: -D empties its file at start, -trace file= appends. */
static void test_log_file_modes(void)
{
    DumpRun d = dump_run_new();
    g_autofree char *err_a = NULL, *err_b = NULL;
    g_autofree char *a = NULL, *b = NULL;

    g_assert_true(g_file_set_contents(d.a, "OLDLINE\n", -1, NULL));
    g_assert_true(g_file_set_contents(d.b, "OLDLINE\n", -1, NULL));
    err_a = dump_run(&d, "-d guest_errors -D %s", d.a, NULL);
    err_b = dump_run(&d, "-trace enable=spapr_iommu_new_table,file=%s",
                     d.b, NULL);
    a = file_text(d.a);
    b = file_text(d.b);
    g_assert_cmpstr(a, ==, "");
    g_assert_true(g_regex_match_simple("^OLDLINE\n" NEW_TABLE_LINE "$", b,
                                       0, 0));
    g_assert_cmpstr(err_a, ==, "");
    g_assert_cmpstr(err_b, ==, "");
    dump_run_free(&d);
}

/* As QEMU: each -trace sets the trace file, none when it has no file=,
 * so the last -trace decides; without one, -D does. */
static void test_log_file_precedence(void)
{
    DumpRun d = dump_run_new();
    g_autofree char *err1 = NULL, *err2 = NULL;
    g_autofree char *a1 = NULL, *a2 = NULL, *b2 = NULL;

    err1 = dump_run(&d, "-D %s -trace enable=spapr_iommu_new_table,file=%s "
                    "-trace enable=spapr_iommu_put", d.a, d.b);
    g_assert_false(g_file_test(d.b, G_FILE_TEST_EXISTS));
    a1 = file_text(d.a);
    g_assert_true(g_regex_match_simple("^" NEW_TABLE_LINE "$", a1, 0, 0));
    err2 = dump_run(&d, "-D %s -trace enable=spapr_iommu_new_table,file=%s",
                    d.a, d.b);
    a2 = file_text(d.a);
    b2 = file_text(d.b);
    g_assert_cmpstr(a2, ==, "");
    g_assert_true(g_regex_match_simple("^" NEW_TABLE_LINE "$", b2, 0, 0));
    g_assert_cmpstr(err1, ==, "");
    g_assert_cmpstr(err2, ==, "");
    dump_run_free(&d);
}

/* As QEMU: -d's trace: items apply after every -trace, so they win. */
static void test_log_trace_after_trace(void)
{
    DumpRun d = dump_run_new();
    g_autofree char *err = dump_run(&d, "-d trace:spapr_iommu_new_table "
                                    "-trace -spapr_iommu_new_table",
                                    NULL, NULL);

    g_assert_true(g_regex_match_simple("^" NEW_TABLE_LINE "$", err, 0, 0));
    dump_run_free(&d);
}

/* Takes @rsp; its return as compact JSON. */
static char *return_text(JsonObject *rsp)
{
    char *text = json_to_string(qtest_qmp_return(rsp), false);

    json_object_unref(rsp);
    return text;
}

/* Takes @rsp; a GenericError with @desc. */
static void assert_error(JsonObject *rsp, const char *desc)
{
    JsonObject *err;

    g_assert_true(json_object_has_member(rsp, "error"));
    err = json_object_get_object_member(rsp, "error");
    g_assert_cmpstr(json_object_get_string_member(err, "class"), ==,
                    "GenericError");
    g_assert_cmpstr(json_object_get_string_member(err, "desc"), ==, desc);
    json_object_unref(rsp);
}

static char *get_state(QTestState *s, const char *name)
{
    return return_text(qtest_qmp(s, "{'execute': 'trace-event-get-state', "
                                 "'arguments': {'name': '%s'}}", name));
}

/* QMP: the states, QEMU's order (last match first), switching an event
 * on and off for real, and QEMU's errors. */
static void test_qmp(void)
{
    TraceRun r;
    g_autofree char *log = NULL;
    g_autofree char *put = NULL, *all = NULL, *none = NULL, *on = NULL;

    trace_run_start(&r, "-trace spapr_iommu_get");
    put = get_state(r.s, "spapr_iommu_put");
    g_assert_cmpstr(put, ==, "[{\"name\":\"spapr_iommu_put\","
                    "\"state\":\"disabled\",\"vcpu\":false}]");
    all = get_state(r.s, "spapr_iommu_?e*");
    g_assert_cmpstr(all, ==,
        "[{\"name\":\"spapr_iommu_new_table\",\"state\":\"disabled\","
        "\"vcpu\":false},"
        "{\"name\":\"spapr_iommu_get\",\"state\":\"enabled\","
        "\"vcpu\":false}]");
    none = get_state(r.s, "nosuch*");
    g_assert_cmpstr(none, ==, "[]");
    assert_error(qtest_qmp(r.s, "{'execute': 'trace-event-get-state', "
                           "'arguments': {'name': 'nosuch'}}"),
                 "unknown event \"nosuch\"");
    /* As QEMU: '?' alone makes no pattern. */
    assert_error(qtest_qmp(r.s, "{'execute': 'trace-event-get-state', "
                           "'arguments': {'name': 'spapr_iommu_pu?'}}"),
                 "unknown event \"spapr_iommu_pu?\"");
    assert_error(qtest_qmp(r.s, "{'execute': 'trace-event-get-state', "
                           "'arguments': {'name': '*', 'vcpu': 0}}"),
                 "invalid vCPU index 0");
    assert_error(qtest_qmp(r.s, "{'execute': 'trace-event-set-state', "
                           "'arguments': {'name': 'nosuch', "
                           "'enable': true}}"),
                 "unknown event \"nosuch\"");

    g_free(return_text(qtest_qmp(r.s, "{'execute': 'trace-event-set-state',"
                                 " 'arguments': {'name': 'spapr_iommu_put',"
                                 " 'enable': true}}")));
    on = get_state(r.s, "spapr_iommu_put");
    g_assert_cmpstr(on, ==, "[{\"name\":\"spapr_iommu_put\","
                    "\"state\":\"enabled\",\"vcpu\":false}]");
    g_assert_cmpint(qtest_hcallv(r.s, H_PUT_TCE, LIOBN, 0x1000, 0x3), ==,
                    H_SUCCESS);
    g_free(return_text(qtest_qmp(r.s, "{'execute': 'trace-event-set-state',"
                                 " 'arguments': {'name': 'spapr_iommu_*',"
                                 " 'enable': false}}")));
    g_assert_cmpint(qtest_hcallv(r.s, H_PUT_TCE, LIOBN, 0x2000, 0x3), ==,
                    H_SUCCESS);
    g_assert_cmpint(qtest_hcallv(r.s, H_GET_TCE, LIOBN, 0x2000), ==,
                    H_SUCCESS);
    log = trace_run_log(&r);
    g_assert_cmpstr(log, ==,
        "spapr_iommu_put liobn=0x71000000 ioba=0x1000 tce=0x3 ret=0\n");
    trace_run_end(&r);
}

static char *hmp(QTestState *s, const char *line)
{
    return return_text(qtest_qmp(s, "{'execute': 'human-monitor-command', "
                                 "'arguments': {'command-line': '%s'}}",
                                 line));
}

/* HMP: QEMU's "NAME : state N" lines and its error texts. */
static void test_hmp(void)
{
    static const struct {
        const char *line;
        const char *reply;
    } steps[] = {
        { "info trace-events spapr_iommu_p*",
          "\"spapr_iommu_put : state 0\\r\\n\"" },
        { "trace-event spapr_iommu_put on", "\"\"" },
        { "info trace-events spapr_iommu_*u*",
          "\"spapr_iommu_stuff : state 0\\r\\n"
          "spapr_iommu_put : state 1\\r\\n\"" },
        { "trace-event spapr_iommu_put off", "\"\"" },
        { "info trace-events spapr_iommu_put",
          "\"spapr_iommu_put : state 0\\r\\n\"" },
        { "info trace-events nosuch",
          "\"unknown event \\\"nosuch\\\"\\r\\n\"" },
        { "trace-event nosuch on",
          "\"unknown event \\\"nosuch\\\"\\r\\n\"" },
        { "trace-event spapr_iommu_??? on",
          "\"unknown event \\\"spapr_iommu_???\\\"\\r\\n\"" },
        { "trace-event spapr_iommu_put maybe",
          "\"Expected 'on' or 'off'\\r\\n"
          "Try \\\"help trace-event\\\" for more information\\r\\n\"" },
        { "info trace-events spapr_iommu_put 0",
          "\"invalid vCPU index 0\\r\\n\"" },
        { "info trace-events spapr_iommu_put x",
          "\"invalid char 'x' in expression\\r\\n"
          "Try \\\"help info trace-events\\\" for more information"
          "\\r\\n\"" },
        { "trace-event spapr_iommu_put on -1",
          "\"'trace-event' has failed: integer is for 32-bit values\\r\\n"
          "Try \\\"help trace-event\\\" for more information\\r\\n\"" },
    };
    TraceRun r;

    trace_run_start(&r, "");
    for (size_t i = 0; i < G_N_ELEMENTS(steps); i++) {
        g_autofree char *reply = hmp(r.s, steps[i].line);

        g_assert_cmpstr(reply, ==, steps[i].reply);
    }
    trace_run_end(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/trace/iommu-put-line", test_iommu_put_line);
    g_test_add_func("/trace/off-writes-nothing", test_off_writes_nothing);
    g_test_add_func("/trace/timestamp-lines", test_timestamp_lines);
    g_test_add_func("/trace/help", test_help);
    g_test_add_func("/trace/iommu-hcall-lines", test_iommu_hcall_lines);
    g_test_add_func("/trace/events-file", test_events_file);
    g_test_add_func("/trace/option-errors", test_option_errors);
    g_test_add_func("/trace/log-file-modes", test_log_file_modes);
    g_test_add_func("/trace/log-file-precedence", test_log_file_precedence);
    g_test_add_func("/trace/log-trace-after-trace",
                    test_log_trace_after_trace);
    g_test_add_func("/trace/qmp", test_qmp);
    g_test_add_func("/trace/hmp", test_hmp);
    return g_test_run();
}
