/*
 * The -trace log file of one illan run, in a directory of its own, for
 * tests that read back the lines trace events write.
 */
#ifndef LIBQOS_TRACE_LOG_H
#define LIBQOS_TRACE_LOG_H

typedef struct TraceLog {
    char *dir;
    char *path;
} TraceLog;

void trace_log_init(TraceLog *t);
/* The -trace options logging @events, patterns separated by commas
 * (NULL: none), one -trace each, as QEMU takes them. */
char *trace_log_args(const TraceLog *t, const char *events);
/* The log's text; "" when illan has not made the file. */
char *trace_log_read(const TraceLog *t);
/* Removes the file and the directory. */
void trace_log_free(TraceLog *t);

#endif
