/* A test's -trace log file (see trace-log.h). */
#include "libqos/trace-log.h"

#include <glib.h>
#include <glib/gstdio.h>

void trace_log_init(TraceLog *t)
{
    t->dir = g_dir_make_tmp("trace-log-XXXXXX", NULL);
    g_assert_nonnull(t->dir);
    t->path = g_build_filename(t->dir, "log", NULL);
}

char *trace_log_args(const TraceLog *t, const char *events)
{
    g_auto(GStrv) patterns = g_strsplit(events ? events : "", ",", -1);
    GString *args = g_string_new(NULL);

    for (char **p = patterns; *p && **p; p++) {
        g_string_append_printf(args, "-trace '%s' ", *p);
    }
    /* Last: as in QEMU, a later -trace without file= would cancel it. */
    g_string_append_printf(args, "-trace file=%s", t->path);
    return g_string_free(args, FALSE);
}

char *trace_log_read(const TraceLog *t)
{
    char *text = NULL;

    if (!g_file_get_contents(t->path, &text, NULL, NULL)) {
        return g_strdup("");
    }
    return text;
}

void trace_log_free(TraceLog *t)
{
    g_unlink(t->path);
    g_rmdir(t->dir);
    g_free(t->path);
    g_free(t->dir);
}
