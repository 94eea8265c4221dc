/*
 * QEMU's log: -d ITEM[,ITEM...] chooses what is written, -D FILE where
 * (stderr by default).  Guest mistakes (LOG_GUEST_ERROR) and the log
 * trace backend's lines go through it.  Off by default; a disabled item
 * costs one relaxed load and a branch.
 */
#ifndef QEMU_LOG_H
#define QEMU_LOG_H

#include <glib.h>
#include <stdbool.h>
#include <stdio.h>

/* QEMU's bit for -d guest_errors. */
#define LOG_GUEST_ERROR (1 << 11)

/* The -d items that are on; written by the main thread (options, HMP
 * "log"), read by every thread. */
extern int qemu_loglevel;

static inline bool qemu_loglevel_mask(int mask)
{
    return (__atomic_load_n(&qemu_loglevel, __ATOMIC_RELAXED) & mask) != 0;
}

/* Writes one message to the log file (or stderr) at once: lines from
 * several threads never interleave. */
void qemu_log(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

#define qemu_log_mask(MASK, FMT, ...)                       \
    do {                                                    \
        if (G_UNLIKELY(qemu_loglevel_mask(MASK))) {         \
            qemu_log(FMT, ## __VA_ARGS__);                  \
        }                                                   \
    } while (0)

/* -d ITEMS: "guest_errors", "trace:PATTERN" (left for
 * qemu_log_enable_trace_items), "help" (prints the items, *exit_now
 * set).  Sets the mask; errors name the item. */
bool qemu_log_parse_items(const char *items, bool *exit_now, GError **errp);

/* The trace:PATTERN items of -d or HMP "log", in order, as
 * trace_enable_events() takes them; as QEMU, -d's after every -trace. */
void qemu_log_enable_trace_items(const char *items, const char *prefix,
                                 GPtrArray *warnings, bool *help);

/* For HMP "log": *@mask of the comma-separated @items (trace: items
 * add no bit); false when one is no item. */
bool qemu_str_to_log_mask(const char *items, int *mask);
/* QEMU's list of the items, for "-d help" or HMP "log" (@command). */
void qemu_log_items_help(GString *out, const char *command);
/* The items on from now on (HMP "log", "log none" for 0). */
void qemu_set_log(int mask);

/* -D FILE (emptied, @append false) and -trace file=FILE (@append true),
 * as QEMU opens them: at once, so a bad path fails at start; NULL goes
 * back to stderr.  The error is QEMU's, for the caller to prefix with
 * its option. */
bool qemu_log_set_file(const char *path, bool append, GError **errp);

/* -msg timestamp=on: trace lines start with "TID@SEC.USEC:", as
 * QEMU's log backend writes them. */
void qemu_log_set_timestamp(bool on);
bool qemu_log_timestamp(void);

#endif
