/*
 * Trace events through QEMU's interface, on a real illan: -trace, its
 * log file, and the lines the sPAPR TCE hcalls write.
 */
#include "hw/ppc/hcall.h"
#include "libqtest.h"

#include <glib/gstdio.h>
#include <string.h>

#define LIOBN       0x71000000ULL

typedef struct TraceRun {
    char *dir;
    char *log;
    QTestState *s;
} TraceRun;

/* illan with one spapr-vlan and @trace_args, logging to a file of its
 * own. */
static void trace_run_start(TraceRun *r, const char *trace_args)
{
    r->dir = g_dir_make_tmp("trace-test-XXXXXX", NULL);
    g_assert_nonnull(r->dir);
    r->log = g_build_filename(r->dir, "log", NULL);
    r->s = qtest_initf("-nodefaults -device spapr-vlan -m 256M "
                       "-trace file=%s %s", r->log, trace_args);
}

static char *trace_run_log(const TraceRun *r)
{
    g_autoptr(GError) err = NULL;
    char *text = NULL;

    /* Every line is flushed before the hcall that wrote it replies. */
    g_assert_true(g_file_get_contents(r->log, &text, NULL, &err));
    return text;
}

static void trace_run_end(TraceRun *r)
{
    qtest_quit(r->s);
    g_unlink(r->log);
    g_rmdir(r->dir);
    g_free(r->log);
    g_free(r->dir);
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

    g_assert_cmpint(illan_run("-trace help", &out, &err), ==, 0);
    names = g_strsplit(out, "\n", -1);
    g_assert_true(g_strv_contains((const char *const *)names,
                                  "spapr_iommu_put"));
    g_assert_true(g_strv_contains((const char *const *)names,
                                  "spapr_iommu_xlate"));
    g_assert_cmpstr(err, ==, "");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/trace/iommu-put-line", test_iommu_put_line);
    g_test_add_func("/trace/off-writes-nothing", test_off_writes_nothing);
    g_test_add_func("/trace/help", test_help);
    return g_test_run();
}
