/*
 * QEMU's log (qemu/log.h): the -d items, the -D file, and the one write
 * per message that keeps lines from several threads whole.
 */
#include "qemu/log.h"
#include "qemu/option.h"
#include "trace/control.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

int qemu_loglevel;

/* Replaced only on the main thread, while the other threads may be
 * writing: a lock, so that none writes to a closed file. */
static GMutex log_lock;
static FILE *log_file;
static bool log_timestamp;

typedef struct LogItem {
    const char *name;
    int mask;
    const char *help;
} LogItem;

static const LogItem log_items[] = {
    { "guest_errors", LOG_GUEST_ERROR,
      "log when the guest does something invalid (an hcall refused for "
      "the guest's mistake: its name, the argument and the rule)" },
};

void qemu_log(const char *fmt, ...)
{
    va_list ap;

    g_mutex_lock(&log_lock);
    va_start(ap, fmt);
    vfprintf(log_file ? log_file : stderr, fmt, ap);
    va_end(ap);
    if (log_file) {
        fflush(log_file);
    }
    g_mutex_unlock(&log_lock);
}

static const LogItem *log_item_find(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(log_items); i++) {
        if (!strcmp(name, log_items[i].name)) {
            return &log_items[i];
        }
    }
    return NULL;
}

/* QEMU's "trace:PATTERN"; "trace:" alone is an unknown item. */
static bool is_trace_item(const char *word)
{
    return g_str_has_prefix(word, "trace:") && word[6];
}

/* Adds @word's item to *@mask; false when it is no item.  trace: words
 * are items with no mask bit. */
static bool add_item(const char *word, int *mask)
{
    const LogItem *item;

    if (is_trace_item(word)) {
        return true;
    }
    item = log_item_find(word);
    if (!item) {
        return false;
    }
    *mask |= item->mask;
    return true;
}

bool qemu_str_to_log_mask(const char *items, int *mask)
{
    g_auto(GStrv) words = g_strsplit(items, ",", -1);

    *mask = 0;
    for (char **w = words; *w; w++) {
        if (!add_item(*w, mask)) {
            return false;
        }
    }
    return true;
}

void qemu_set_log(int mask)
{
    __atomic_store_n(&qemu_loglevel, mask, __ATOMIC_RELAXED);
}

void qemu_log_items_help(GString *out, const char *command)
{
    g_string_append(out, "Log items (comma separated):\n");
    if (!strcmp(command, "log")) {
        g_string_append_printf(out, "%-15s %s\n", "none", "remove all logs");
    }
    for (size_t i = 0; i < G_N_ELEMENTS(log_items); i++) {
        g_string_append_printf(out, "%-15s %s\n", log_items[i].name,
                               log_items[i].help);
    }
    g_string_append_printf(out, "trace:PATTERN   enable trace events\n"
                           "\nUse \"%s trace:help\" to get a list of trace "
                           "events.\n\n", command);
}

bool qemu_log_parse_items(const char *items, bool *exit_now, GError **errp)
{
    g_auto(GStrv) words = g_strsplit(items, ",", -1);
    int mask = 0;

    *exit_now = false;
    /* QEMU refuses an empty -d as it does an unknown item. */
    if (!*items) {
        g_set_error(errp, ILLAN_ERROR, 0, "-d : unknown log item '' "
                    "(-d help lists them)");
        return false;
    }
    for (char **w = words; *w; w++) {
        if (!strcmp(*w, "help")) {
            g_autoptr(GString) help = g_string_new(NULL);

            qemu_log_items_help(help, "-d");
            fputs(help->str, stdout);
            *exit_now = true;
            return true;
        }
        if (!add_item(*w, &mask)) {
            g_set_error(errp, ILLAN_ERROR, 0, "-d %s: unknown log item '%s' "
                        "(-d help lists them)", items, *w);
            return false;
        }
    }
    qemu_set_log(mask);
    return true;
}

void qemu_log_enable_trace_items(const char *items, const char *prefix,
                                 GPtrArray *warnings, bool *help)
{
    g_auto(GStrv) words = g_strsplit(items, ",", -1);

    for (char **w = words; *w && !*help; w++) {
        if (is_trace_item(*w)) {
            trace_enable_events(*w + 6, prefix, warnings, help);
        }
    }
}

bool qemu_log_set_file(const char *path, bool append, GError **errp)
{
    FILE *f = NULL;

    if (path) {
        f = fopen(path, append ? "a" : "w");
        if (!f) {
            g_set_error(errp, ILLAN_ERROR, 0, "Error opening logfile %s: %s",
                        path, g_strerror(errno));
            return false;
        }
    }
    g_mutex_lock(&log_lock);
    if (log_file) {
        fclose(log_file);
    }
    log_file = f;
    g_mutex_unlock(&log_lock);
    return true;
}

void qemu_log_set_timestamp(bool on)
{
    __atomic_store_n(&log_timestamp, on, __ATOMIC_RELAXED);
}

bool qemu_log_timestamp(void)
{
    return __atomic_load_n(&log_timestamp, __ATOMIC_RELAXED);
}
