/*
 * The trace events' monitor commands, QEMU 7.2's: QMP
 * trace-event-get-state and trace-event-set-state, HMP info trace-events
 * and trace-event, with QEMU's checks and texts.  illan has no vCPU, so
 * every vcpu argument names one that does not exist.
 */
#include "qemu/hmp-registry.h"
#include "qemu/module.h"
#include "qemu/qmp-registry.h"
#include "trace/control.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *event_state_name(const TraceEvent *ev)
{
    if (!trace_event_available(ev)) {
        return "unavailable";
    }
    return trace_event_enabled(ev) ? "enabled" : "disabled";
}

static bool check_vcpu(JsonObject *args, QmpError *err)
{
    if (json_object_has_member(args, "vcpu")) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "invalid vCPU index %u",
                      (unsigned)json_object_get_int_member(args, "vcpu"));
        return false;
    }
    return true;
}

/* A plain name must name an event; unless @ignore_unavailable, none it
 * names may be compiled out. */
static bool check_events(const char *name, bool ignore_unavailable,
                         QmpError *err)
{
    const TraceEvent *ev;
    size_t pos = 0;

    if (!trace_event_is_pattern(name) && !trace_event_find(name)) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "unknown event \"%s\"", name);
        return false;
    }
    while (!ignore_unavailable && (ev = trace_event_next(name, &pos))) {
        if (!trace_event_available(ev)) {
            qmp_error_set(err, QMP_ERROR_GENERIC, "event \"%s\" is disabled",
                          ev->name);
            return false;
        }
    }
    return true;
}

/* [TraceEventInfo], last match first, as QEMU builds its list. */
static JsonNode *qmp_trace_event_get_state(JsonObject *args, QmpError *err)
{
    const char *name = json_object_get_string_member(args, "name");
    g_autoptr(GPtrArray) matches = g_ptr_array_new();
    JsonArray *list;
    const TraceEvent *ev;
    size_t pos = 0;

    if (!check_vcpu(args, err) || !check_events(name, true, err)) {
        return NULL;
    }
    while ((ev = trace_event_next(name, &pos))) {
        g_ptr_array_add(matches, (gpointer)ev);
    }
    list = json_array_new();
    for (guint i = matches->len; i-- > 0;) {
        JsonObject *info = json_object_new();

        ev = g_ptr_array_index(matches, i);
        json_object_set_string_member(info, "name", ev->name);
        json_object_set_string_member(info, "state", event_state_name(ev));
        json_object_set_boolean_member(info, "vcpu", false);
        json_array_add_object_element(list, info);
    }
    return qmp_return_array(list);
}

static JsonNode *qmp_trace_event_set_state(JsonObject *args, QmpError *err)
{
    const char *name = json_object_get_string_member(args, "name");
    bool on = json_object_get_boolean_member(args, "enable");
    bool ignore = json_object_has_member(args, "ignore-unavailable") &&
        json_object_get_boolean_member(args, "ignore-unavailable");
    const TraceEvent *ev;
    size_t pos = 0;

    if (!check_vcpu(args, err) || !check_events(name, ignore, err)) {
        return NULL;
    }
    while ((ev = trace_event_next(name, &pos))) {
        trace_event_set_enabled(ev, on);
    }
    return qmp_return_empty();
}

static const QmpArg get_state_args[] = {
    { "name", QMP_ARG_STR, false },
    { "vcpu", QMP_ARG_INT, true },
    { NULL, 0, false },
};

static const QmpArg set_state_args[] = {
    { "name", QMP_ARG_STR, false },
    { "enable", QMP_ARG_BOOL, false },
    { "ignore-unavailable", QMP_ARG_BOOL, true },
    { "vcpu", QMP_ARG_INT, true },
    { NULL, 0, false },
};

static const QmpCommand trace_qmp_commands[] = {
    { "trace-event-get-state", get_state_args, false,
      qmp_trace_event_get_state, false },
    { "trace-event-set-state", set_state_args, false,
      qmp_trace_event_set_state, false },
};

/* HMP's [vcpu], parsed as QEMU's HMP parses a 32-bit integer: what
 * does not fit is refused by the parser, what turns negative as an int
 * by the command. */
static bool hmp_vcpu_arg(const char *word, JsonObject *args, GString *out,
                         const char *cmd)
{
    char *end;
    long long vcpu;

    if (!word) {
        return true;
    }
    vcpu = strtoll(word, &end, 0);
    if (*end) {
        g_string_append_printf(out, "invalid char '%c' in expression\n"
                               "Try \"help %s\" for more information\n",
                               *end, cmd);
        return false;
    }
    if (vcpu < 0 || vcpu > UINT32_MAX) {
        g_string_append_printf(out, "'%s' has failed: integer is for "
                               "32-bit values\n"
                               "Try \"help %s\" for more information\n",
                               g_str_has_prefix(cmd, "info ") ? cmd + 5 : cmd,
                               cmd);
        return false;
    }
    if (vcpu > INT32_MAX) {
        g_string_append(out, "argument vcpu must be positive");
        return false;
    }
    json_object_set_int_member(args, "vcpu", vcpu);
    return true;
}

/* Runs @fn on @args (taken); an error is printed as QEMU's
 * error_report() prints it in a monitor: the message alone. */
static JsonNode *hmp_run_qmp(JsonNode *(*fn)(JsonObject *, QmpError *),
                             JsonObject *args, GString *out)
{
    QmpError err = { 0 };
    JsonNode *ret = fn(args, &err);

    if (!ret) {
        g_string_append_printf(out, "%s\n", err.desc);
        g_free(err.desc);
    }
    json_object_unref(args);
    return ret;
}

/* The words of an HMP line. */
static GPtrArray *hmp_words(const char *line)
{
    g_auto(GStrv) split = g_strsplit_set(line, " \t", -1);
    GPtrArray *words = g_ptr_array_new_with_free_func(g_free);

    for (char **p = split; *p; p++) {
        if (**p) {
            g_ptr_array_add(words, g_strdup(*p));
        }
    }
    return words;
}

/* info trace-events [NAME] [VCPU]: "NAME : state N", 1 when enabled. */
static void hmp_info_trace_events(const char *line, GString *out)
{
    g_autoptr(GPtrArray) w = hmp_words(line);
    JsonObject *args = json_object_new();
    JsonNode *ret;

    json_object_set_string_member(args, "name",
                                  w->len ? g_ptr_array_index(w, 0) : "*");
    if (!hmp_vcpu_arg(w->len > 1 ? g_ptr_array_index(w, 1) : NULL, args,
                      out, "info trace-events")) {
        json_object_unref(args);
        return;
    }
    ret = hmp_run_qmp(qmp_trace_event_get_state, args, out);
    if (!ret) {
        return;
    }
    for (guint i = 0; i < json_array_get_length(json_node_get_array(ret));
         i++) {
        JsonObject *info = json_array_get_object_element(
            json_node_get_array(ret), i);

        g_string_append_printf(out, "%s : state %u\n",
            json_object_get_string_member(info, "name"),
            !strcmp(json_object_get_string_member(info, "state"),
                    "enabled"));
    }
    json_node_unref(ret);
}

/* trace-event NAME on|off [VCPU]; unavailable events are skipped. */
static void hmp_trace_event(const char *line, GString *out)
{
    g_autoptr(GPtrArray) w = hmp_words(line);
    JsonObject *args;
    JsonNode *ret;

    if (w->len < 1) {
        g_string_append(out, "trace-event: string expected\n"
                        "Try \"help trace-event\" for more information\n");
        return;
    }
    if (w->len < 2 || (strcmp(g_ptr_array_index(w, 1), "on") &&
                       strcmp(g_ptr_array_index(w, 1), "off"))) {
        g_string_append(out, "Expected 'on' or 'off'\n"
                        "Try \"help trace-event\" for more information\n");
        return;
    }
    args = json_object_new();
    json_object_set_string_member(args, "name", g_ptr_array_index(w, 0));
    json_object_set_boolean_member(args, "enable",
                                   !strcmp(g_ptr_array_index(w, 1), "on"));
    json_object_set_boolean_member(args, "ignore-unavailable", true);
    if (!hmp_vcpu_arg(w->len > 2 ? g_ptr_array_index(w, 2) : NULL, args,
                      out, "trace-event")) {
        json_object_unref(args);
        return;
    }
    ret = hmp_run_qmp(qmp_trace_event_set_state, args, out);
    if (ret) {
        json_node_unref(ret);
    }
}

static const HmpCommand trace_hmp_commands[] = {
    { "info trace-events", "[name] [vcpu]",
      "show available trace-events & their state (name: event name "
      "pattern; vcpu: vCPU to query, default is any)",
      hmp_info_trace_events },
    { "trace-event", "name on|off [vcpu]",
      "changes status of a specific trace event (vcpu: vCPU to set, "
      "default is all)", hmp_trace_event },
};

static void trace_commands_register(void)
{
    qmp_register_commands(trace_qmp_commands,
                          G_N_ELEMENTS(trace_qmp_commands));
    hmp_register_commands(trace_hmp_commands,
                          G_N_ELEMENTS(trace_hmp_commands));
}
illan_init(trace_commands_register)
