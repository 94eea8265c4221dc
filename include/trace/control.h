/*
 * Trace events at run time: the table scripts/tracetool.py generates from
 * the trace-events files, found by name or glob pattern, switched on and
 * off by -trace, -d trace:, QMP and HMP (all on the main thread), read
 * by every thread through the generated trace_NAME() functions.
 */
#ifndef TRACE_CONTROL_H
#define TRACE_CONTROL_H

#include <glib.h>
#include <stdbool.h>
#include <stdio.h>

typedef struct TraceEvent {
    const char *name;
    bool *state;            /* NULL: compiled out (trace_backends=nop) */
    const char *file;       /* the trace-events file, from the source root */
    const char *origin;     /* "QEMU" (QEMU 7.2's name and arguments) or
                             * "illan" */
} TraceEvent;

/* Generated (trace-events-all.c). */
extern const TraceEvent trace_event_table[];
extern const size_t trace_event_table_len;

/* The start of a log line under -msg timestamp=on: TID@SEC.USEC. */
typedef struct TraceStamp {
    int tid;
    long long sec;
    long usec;
} TraceStamp;

TraceStamp trace_stamp_now(void);

const TraceEvent *trace_event_find(const char *name);
/* Whether @text has glob characters ('*', '?'). */
bool trace_event_is_pattern(const char *text);
bool trace_pattern_match(const char *pattern, const char *name);
/* The next event at or after *@pos that @pattern matches (all when
 * NULL); start with *@pos = 0. */
const TraceEvent *trace_event_next(const char *pattern, size_t *pos);

bool trace_event_available(const TraceEvent *ev);
bool trace_event_enabled(const TraceEvent *ev);
/* Main thread only; does nothing to an unavailable event. */
void trace_event_set_enabled(const TraceEvent *ev, bool on);

/* How many events are on: written with the states, read by every
 * thread, so that a site with several events (an hcall's dispatch)
 * pays one load and a branch while all are off. */
extern unsigned trace_events_enabled_count;

static inline bool trace_any_event_enabled(void)
{
    return __atomic_load_n(&trace_events_enabled_count, __ATOMIC_RELAXED);
}

/* Every event's name, one a line (-trace help). */
void trace_list_events(FILE *out);

/*
 * One events-file line or -trace enable= value: PATTERN enables,
 * -PATTERN disables.  A name that matches no event, or an unavailable
 * one, is a warning, QEMU's: @prefix then "warning: ...", added to
 * @warnings, or printed to stderr when @warnings is NULL.  "help" lists
 * the events and sets *@help.
 */
void trace_enable_events(const char *line, const char *prefix,
                         GPtrArray *warnings, bool *help);
/* -trace events=FILE: one line each, as written less its newline;
 * lines starting with '#' and empty ones skipped.  The error is QEMU's,
 * "FILE: REASON". */
bool trace_enable_events_file(const char *path, GPtrArray *warnings,
                              bool *help, GError **errp);

/*
 * -trace ARG: [enable=]PATTERN, events=FILE, file=FILE (the log file,
 * in -D's place), help.  Sets *@file to its file=, NULL without one,
 * as QEMU does.
 */
bool trace_opt_parse(const char *arg, char **file, GPtrArray *warnings,
                     bool *help, GError **errp);

#endif
