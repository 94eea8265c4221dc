/*
 * Trace events at run time (trace/control.h).  The states are written by
 * the main thread and read by every thread with relaxed atomics: an event
 * switched on shows up in other threads' next calls, with no ordering
 * against anything else needed.
 */
#include "trace/control.h"
#include "qemu/option.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

TraceStamp trace_stamp_now(void)
{
    gint64 now = g_get_real_time();

    return (TraceStamp){ .tid = gettid(), .sec = now / G_USEC_PER_SEC,
                         .usec = now % G_USEC_PER_SEC };
}

const TraceEvent *trace_event_find(const char *name)
{
    for (size_t i = 0; i < trace_event_table_len; i++) {
        if (!strcmp(trace_event_table[i].name, name)) {
            return &trace_event_table[i];
        }
    }
    return NULL;
}

/* QEMU's rule: '*' makes a pattern; '?' still matches one character
 * inside one (g_pattern_match_simple), as in QEMU. */
bool trace_event_is_pattern(const char *text)
{
    return strchr(text, '*') != NULL;
}

bool trace_pattern_match(const char *pattern, const char *name)
{
    return g_pattern_match_simple(pattern, name);
}

const TraceEvent *trace_event_next(const char *pattern, size_t *pos)
{
    while (*pos < trace_event_table_len) {
        const TraceEvent *ev = &trace_event_table[(*pos)++];

        if (!pattern || trace_pattern_match(pattern, ev->name)) {
            return ev;
        }
    }
    return NULL;
}

bool trace_event_available(const TraceEvent *ev)
{
    return ev->state != NULL;
}

bool trace_event_enabled(const TraceEvent *ev)
{
    return ev->state && __atomic_load_n(ev->state, __ATOMIC_RELAXED);
}

unsigned trace_events_enabled_count;

void trace_event_set_enabled(const TraceEvent *ev, bool on)
{
    if (ev->state &&
        __atomic_exchange_n(ev->state, on, __ATOMIC_RELAXED) != on) {
        __atomic_store_n(&trace_events_enabled_count,
                         trace_events_enabled_count + (on ? 1 : -1),
                         __ATOMIC_RELAXED);
    }
}

void trace_list_events(FILE *out)
{
    for (size_t i = 0; i < trace_event_table_len; i++) {
        fprintf(out, "%s\n", trace_event_table[i].name);
    }
}

static void warn(GPtrArray *warnings, const char *prefix, const char *name,
                 const char *what)
{
    char *line = g_strdup_printf("%swarning: trace event '%s' %s", prefix,
                                 name, what);

    if (warnings) {
        g_ptr_array_add(warnings, line);
    } else {
        fprintf(stderr, "%s\n", line);
        g_free(line);
    }
}

/* As QEMU: a pattern changes the events it matches and says nothing
 * when it matches none; text without '*' changes the first event it
 * matches, which must be available, and warns when none. */
void trace_enable_events(const char *line, const char *prefix,
                         GPtrArray *warnings, bool *help)
{
    bool on = line[0] != '-';
    const char *pattern = on ? line : line + 1;
    const TraceEvent *ev;
    size_t pos = 0;

    if (!strcmp(line, "help") || !strcmp(line, "?")) {
        trace_list_events(stdout);
        *help = true;
        return;
    }
    if (!trace_event_is_pattern(pattern)) {
        ev = trace_event_next(pattern, &pos);
        if (!ev) {
            warn(warnings, prefix, pattern, "does not exist");
        } else if (!trace_event_available(ev)) {
            warn(warnings, prefix, pattern, "is not traceable");
        } else {
            trace_event_set_enabled(ev, on);
        }
        return;
    }
    while ((ev = trace_event_next(pattern, &pos))) {
        trace_event_set_enabled(ev, on);
    }
}

bool trace_enable_events_file(const char *path, GPtrArray *warnings,
                              bool *help, GError **errp)
{
    FILE *f = fopen(path, "r");
    char *buf = NULL;
    size_t size = 0;
    unsigned lineno = 0;

    if (!f) {
        g_set_error(errp, ILLAN_ERROR, 0, "%s: %s", path, g_strerror(errno));
        return false;
    }
    /* As QEMU: a line is its text less the newline, spaces kept; only
     * empty lines and those starting with '#' are skipped. */
    while (getline(&buf, &size, f) >= 0) {
        buf[strcspn(buf, "\n")] = '\0';
        lineno++;
        if (buf[0] && buf[0] != '#') {
            g_autofree char *prefix = g_strdup_printf("illan:%s:%u: ", path,
                                                      lineno);

            trace_enable_events(buf, prefix, warnings, help);
        }
    }
    free(buf);
    fclose(f);
    return true;
}

bool trace_opt_parse(const char *arg, char **file, GPtrArray *warnings,
                     bool *help, GError **errp)
{
    static const char *const known[] = { "enable", "events", "file", NULL };
    g_autoptr(QemuOpts) opts = qemu_opts_parse(arg, "enable", errp);
    g_autofree char *prefix = g_strdup_printf("illan: -trace %s: ", arg);
    const char *enable, *events;

    if (!opts || !qemu_opts_check_keys(opts, known, errp)) {
        g_prefix_error(errp, "-trace %s: ", arg);
        return false;
    }
    enable = qemu_opt_get(opts, "enable");
    events = qemu_opt_get(opts, "events");
    if (enable) {
        trace_enable_events(enable, prefix, warnings, help);
    }
    /* QEMU's error names the file alone. */
    if (events && !trace_enable_events_file(events, warnings, help, errp)) {
        return false;
    }
    /* As QEMU: every -trace sets the file, so one without file= cancels
     * an earlier one and -D decides again. */
    g_free(*file);
    *file = g_strdup(qemu_opt_get(opts, "file"));
    return true;
}
