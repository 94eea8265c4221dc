/*
 * HMP through QMP's human-monitor-command: the line is split into a
 * command name and the rest, found in the HMP registry
 * (qemu/hmp-registry.h) and answered with its text.  "help" and "info"
 * list the registry; a name it does not hold gets HMP's own answer,
 * "unknown command: 'NAME'".  The HMP commands that show or change what
 * a QMP command does (info status, stop, set_link, ...) run that QMP
 * command and print its result as QEMU's HMP does.
 */
#include "qemu/hmp-registry.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "qemu/option.h"
#include "qemu/qmp-registry.h"

#include <stdint.h>
#include <string.h>

/* Runs QMP command @name; takes @args (may be NULL).  On error, prints
 * it as HMP does and returns NULL. */
static JsonNode *run_qmp(const char *name, JsonObject *args, GString *out)
{
    const QmpCommand *cmd = qmp_find_command(name);
    g_autoptr(JsonObject) a = args ? args : json_object_new();
    QmpError err = { 0 };
    JsonNode *ret;

    g_assert(cmd);
    if (!qmp_command_allowed(cmd, &err)) {
        ret = NULL;
    } else {
        ret = cmd->fn(a, &err);
    }
    if (!ret) {
        g_string_append_printf(out, "Error: %s\n", err.desc);
        g_free(err.desc);
    }
    return ret;
}

static void run_qmp_quietly(const char *name, JsonObject *args, GString *out)
{
    JsonNode *ret = run_qmp(name, args, out);

    if (ret) {
        json_node_unref(ret);
    }
}

/* The first word of @line in *@word (caller frees); returns the rest,
 * with leading blanks skipped. */
static const char *split_word(const char *line, char **word)
{
    const char *end;

    while (g_ascii_isspace(*line)) {
        line++;
    }
    for (end = line; *end && !g_ascii_isspace(*end); end++) {
    }
    *word = g_strndup(line, end - line);
    while (g_ascii_isspace(*end)) {
        end++;
    }
    return end;
}

/* help and info. */

typedef struct HelpList {
    GString *out;
    bool info;          /* list the "info X" commands, else the others */
    const char *only;   /* just this one */
} HelpList;

static void help_line(const HmpCommand *cmd, void *opaque)
{
    HelpList *h = opaque;
    bool is_info = g_str_has_prefix(cmd->name, "info ");

    if (is_info != h->info || (h->only && strcmp(cmd->name, h->only))) {
        return;
    }
    g_string_append_printf(h->out, "%s %s -- %s\n", cmd->name, cmd->params,
                           cmd->help);
}

static void list_commands(GString *out, bool info, const char *only)
{
    HelpList h = { out, info, only };

    hmp_foreach_command(help_line, &h);
}

static void hmp_help(const char *args, GString *out)
{
    g_autofree char *word = NULL;
    g_autofree char *sub = NULL;
    g_autofree char *full = NULL;
    const char *rest = split_word(args, &word);

    if (!*word) {
        list_commands(out, false, NULL);
        return;
    }
    if (!strcmp(word, "info")) {
        split_word(rest, &sub);
        full = *sub ? g_strdup_printf("info %s", sub) : NULL;
        if (full && !hmp_find_command(full)) {
            g_string_append_printf(out, "unknown command: '%s'\n", full);
            return;
        }
        list_commands(out, true, full);
        return;
    }
    if (!hmp_find_command(word)) {
        g_string_append_printf(out, "unknown command: '%s'\n", word);
        return;
    }
    /* As QEMU's help_cmd(): "log" shows its items. */
    if (!strcmp(word, "log")) {
        qemu_log_items_help(out, "log");
        return;
    }
    list_commands(out, false, word);
}

static void hmp_info(const char *args, GString *out)
{
    (void)args;
    list_commands(out, true, NULL);
}

/* Runs one command line. */
static void hmp_run(const char *line, GString *out)
{
    g_autofree char *word = NULL;
    g_autofree char *sub = NULL;
    g_autofree char *name = NULL;
    const char *rest = split_word(line, &word);
    const HmpCommand *cmd;

    if (!*word) {
        return;
    }
    if (!strcmp(word, "info") && *rest) {
        rest = split_word(rest, &sub);
        name = g_strdup_printf("info %s", sub);
    } else {
        name = g_strdup(strcmp(word, "?") ? word : "help");
    }
    cmd = hmp_find_command(name);
    if (!cmd) {
        g_string_append_printf(out, "unknown command: '%s'\n", name);
        return;
    }
    cmd->fn(rest, out);
}

/* HMP's lines end in CR LF, whether a handler wrote "\n" or "\r\n". */
static char *crlf(const char *text)
{
    GString *s = g_string_new(NULL);

    for (const char *c = text; *c; c++) {
        if (*c == '\n' && (c == text || c[-1] != '\r')) {
            g_string_append_c(s, '\r');
        }
        g_string_append_c(s, *c);
    }
    return g_string_free(s, false);
}

static JsonNode *human_monitor_command(JsonObject *args, QmpError *err)
{
    const char *line = json_object_get_string_member(args, "command-line");
    g_autoptr(GString) out = g_string_new(NULL);
    g_autofree char *text = NULL;
    JsonNode *ret;

    /* No HMP command illan has depends on a CPU, and QEMU's qmp-shell -H
     * passes 0 with every line; any other index names nothing. */
    if (json_object_has_member(args, "cpu-index") &&
        json_object_get_int_member(args, "cpu-index") != 0) {
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      "Parameter 'cpu-index' expects a CPU number");
        return NULL;
    }
    hmp_run(line, out);
    text = crlf(out->str);
    ret = json_node_new(JSON_NODE_VALUE);
    json_node_set_string(ret, text);
    return ret;
}

/* The HMP faces of QMP commands. */

static void hmp_info_status(const char *args, GString *out)
{
    JsonNode *ret = run_qmp("query-status", NULL, out);
    JsonObject *st;
    const char *status;

    (void)args;
    if (!ret) {
        return;
    }
    st = json_node_get_object(ret);
    status = json_object_get_string_member(st, "status");
    if (json_object_get_boolean_member(st, "running")) {
        g_string_append(out, "VM status: running\n");
    } else if (!strcmp(status, "paused")) {
        g_string_append(out, "VM status: paused\n");
    } else {
        g_string_append_printf(out, "VM status: paused (%s)\n", status);
    }
    json_node_unref(ret);
}

static void hmp_info_version(const char *args, GString *out)
{
    JsonNode *ret = run_qmp("query-version", NULL, out);
    JsonObject *v, *q;
    const char *package;

    (void)args;
    if (!ret) {
        return;
    }
    v = json_node_get_object(ret);
    q = json_object_get_object_member(v, "qemu");
    package = json_object_get_string_member(v, "package");
    g_string_append_printf(out, "%" G_GINT64_FORMAT ".%" G_GINT64_FORMAT
                           ".%" G_GINT64_FORMAT "%s%s\n",
                           json_object_get_int_member(q, "major"),
                           json_object_get_int_member(q, "minor"),
                           json_object_get_int_member(q, "micro"),
                           *package ? " " : "", package);
    json_node_unref(ret);
}

static void hmp_info_name(const char *args, GString *out)
{
    JsonNode *ret = run_qmp("query-name", NULL, out);
    JsonObject *info;

    (void)args;
    if (!ret) {
        return;
    }
    info = json_node_get_object(ret);
    if (json_object_has_member(info, "name")) {
        g_string_append_printf(out, "%s\n",
                               json_object_get_string_member(info, "name"));
    }
    json_node_unref(ret);
}

static void print_ram_stats(JsonObject *ram, GString *out)
{
    g_string_append_printf(out,
        "RAM info:\n"
        "  Throughput (Mbps): %.2f\n"
        "  Sizes:\n"
        "    Pagesize: %" G_GINT64_FORMAT " B\n"
        "    Total: %" G_GINT64_FORMAT " B\n"
        "    Transferred: %" G_GINT64_FORMAT " B\n"
        "  Pages:\n"
        "    Normal: %" G_GINT64_FORMAT " pages\n"
        "    Zero: %" G_GINT64_FORMAT " pages\n",
        json_object_get_double_member(ram, "mbps"),
        json_object_get_int_member(ram, "page-size"),
        json_object_get_int_member(ram, "total"),
        json_object_get_int_member(ram, "transferred"),
        json_object_get_int_member(ram, "normal"),
        json_object_get_int_member(ram, "duplicate"));
}

/* As QEMU's: nothing before the first migration. */
static void hmp_info_migrate(const char *args, GString *out)
{
    JsonNode *ret = run_qmp("query-migrate", NULL, out);
    JsonObject *info;

    (void)args;
    if (!ret) {
        return;
    }
    info = json_node_get_object(ret);
    if (json_object_has_member(info, "status")) {
        g_string_append_printf(out, "Status: %s",
                               json_object_get_string_member(info, "status"));
        if (json_object_has_member(info, "error-desc")) {
            g_string_append_printf(out, " (%s)",
                                   json_object_get_string_member(
                                       info, "error-desc"));
        }
        g_string_append_c(out, '\n');
        if (json_object_has_member(info, "total-time")) {
            g_string_append_printf(out, "Time (ms): total=%" G_GINT64_FORMAT
                                   "\n", json_object_get_int_member(
                                       info, "total-time"));
        }
    }
    if (json_object_has_member(info, "ram")) {
        print_ram_stats(json_object_get_object_member(info, "ram"), out);
    }
    json_node_unref(ret);
}

static void hmp_simple(const char *qmp_name, const char *args, GString *out)
{
    if (*args) {
        g_string_append_printf(out, "%s: extraneous characters at the end "
                               "of line\n", qmp_name);
        return;
    }
    run_qmp_quietly(qmp_name, NULL, out);
}

static void hmp_stop(const char *args, GString *out)
{
    hmp_simple("stop", args, out);
}

static void hmp_cont(const char *args, GString *out)
{
    hmp_simple("cont", args, out);
}

static void hmp_system_reset(const char *args, GString *out)
{
    hmp_simple("system_reset", args, out);
}

/* set_link NAME on|off */
static void hmp_set_link(const char *args, GString *out)
{
    g_auto(GStrv) words = g_strsplit_set(args, " \t", -1);
    JsonObject *a;
    guint n = g_strv_length(words);

    if (n != 2 || (strcmp(words[1], "on") && strcmp(words[1], "off"))) {
        g_string_append(out, "Error: usage: set_link name on|off\n");
        return;
    }
    a = json_object_new();
    json_object_set_string_member(a, "name", words[0]);
    json_object_set_boolean_member(a, "up", !strcmp(words[1], "on"));
    run_qmp_quietly("set_link", a, out);
}

/* qom-list PATH, qom-get PATH PROPERTY. */
static void hmp_qom_list(const char *args, GString *out)
{
    JsonObject *a = json_object_new();
    JsonNode *ret;
    JsonArray *list;

    json_object_set_string_member(a, "path", *args ? args : "/");
    ret = run_qmp("qom-list", a, out);
    if (!ret) {
        return;
    }
    list = json_node_get_array(ret);
    for (guint i = 0; i < json_array_get_length(list); i++) {
        JsonObject *p = json_array_get_object_element(list, i);

        g_string_append_printf(out, "%s (%s)\n",
                               json_object_get_string_member(p, "name"),
                               json_object_get_string_member(p, "type"));
    }
    json_node_unref(ret);
}

static void hmp_qom_get(const char *args, GString *out)
{
    g_auto(GStrv) words = g_strsplit_set(args, " \t", -1);
    JsonObject *a;
    JsonNode *ret;
    g_autofree char *text = NULL;

    if (g_strv_length(words) != 2) {
        g_string_append(out, "Error: usage: qom-get path property\n");
        return;
    }
    a = json_object_new();
    json_object_set_string_member(a, "path", words[0]);
    json_object_set_string_member(a, "property", words[1]);
    ret = run_qmp("qom-get", a, out);
    if (!ret) {
        return;
    }
    text = json_to_string(ret, true);
    g_string_append_printf(out, "%s\n", text);
    json_node_unref(ret);
}

/* qom-set PATH PROPERTY VALUE: the value as a string, as HMP gives it. */
static void hmp_qom_set(const char *args, GString *out)
{
    g_auto(GStrv) words = g_strsplit_set(args, " \t", 3);
    JsonObject *a;

    if (g_strv_length(words) != 3) {
        g_string_append(out, "Error: usage: qom-set path property value\n");
        return;
    }
    a = json_object_new();
    json_object_set_string_member(a, "path", words[0]);
    json_object_set_string_member(a, "property", words[1]);
    json_object_set_string_member(a, "value", words[2]);
    run_qmp_quietly("qom-set", a, out);
}

/* migrate_set_capability NAME on|off. */
static void hmp_migrate_set_capability(const char *args, GString *out)
{
    g_auto(GStrv) words = g_strsplit_set(args, " \t", -1);
    JsonObject *a, *cap;
    JsonArray *caps;

    if (g_strv_length(words) != 2 ||
        (strcmp(words[1], "on") && strcmp(words[1], "off"))) {
        g_string_append(out, "Error: usage: migrate_set_capability "
                        "capability on|off\n");
        return;
    }
    cap = json_object_new();
    json_object_set_string_member(cap, "capability", words[0]);
    json_object_set_boolean_member(cap, "state", !strcmp(words[1], "on"));
    caps = json_array_new();
    json_array_add_object_element(caps, cap);
    a = json_object_new();
    json_object_set_array_member(a, "capabilities", caps);
    run_qmp_quietly("migrate-set-capabilities", a, out);
}

/* migrate_set_parameter NAME VALUE: bandwidths in MiB/s unless a suffix
 * says otherwise, as QEMU's HMP reads them, other sizes in bytes; the
 * downtime in ms.  Which names illan has is migration's to say. */
static void hmp_migrate_set_parameter(const char *args, GString *out)
{
    g_auto(GStrv) words = g_strsplit_set(args, " \t", -1);
    g_autoptr(GError) err = NULL;
    bool bandwidth, size;
    uint64_t v;
    JsonObject *a;

    if (g_strv_length(words) != 2) {
        g_string_append(out, "Error: usage: migrate_set_parameter "
                        "parameter value\n");
        return;
    }
    bandwidth = g_str_has_suffix(words[0], "bandwidth");
    size = bandwidth || g_str_has_suffix(words[0], "-size");
    if (size ? !qemu_parse_size(words[0], words[1], bandwidth ? 'M' : 0, &v,
                                &err)
             : !qemu_parse_uint64(words[0], words[1], &v, &err)) {
        g_string_append_printf(out, "Error: %s\n", err->message);
        return;
    }
    a = json_object_new();
    json_object_set_int_member(a, words[0], MIN(v, (uint64_t)INT64_MAX));
    run_qmp_quietly("migrate-set-parameters", a, out);
}

static void hmp_info_migrate_capabilities(const char *args, GString *out)
{
    JsonNode *ret = run_qmp("query-migrate-capabilities", NULL, out);
    JsonArray *caps;

    (void)args;
    if (!ret) {
        return;
    }
    caps = json_node_get_array(ret);
    for (guint i = 0; i < json_array_get_length(caps); i++) {
        JsonObject *c = json_array_get_object_element(caps, i);

        g_string_append_printf(out, "%s: %s\n",
                               json_object_get_string_member(c, "capability"),
                               json_object_get_boolean_member(c, "state")
                               ? "on" : "off");
    }
    json_node_unref(ret);
}

static void hmp_info_migrate_parameters(const char *args, GString *out)
{
    JsonNode *ret = run_qmp("query-migrate-parameters", NULL, out);
    JsonObject *p;

    (void)args;
    if (!ret) {
        return;
    }
    p = json_node_get_object(ret);
    g_string_append_printf(out,
        "max-bandwidth: %" G_GINT64_FORMAT " bytes/second\n"
        "avail-switchover-bandwidth: %" G_GINT64_FORMAT " bytes/second\n"
        "downtime-limit: %" G_GINT64_FORMAT " ms\n",
        json_object_get_int_member(p, "max-bandwidth"),
        json_object_get_int_member(p, "avail-switchover-bandwidth"),
        json_object_get_int_member(p, "downtime-limit"));
    json_node_unref(ret);
}

/* log ITEM[,...]|none, as QEMU's: an unknown item prints the items and
 * changes nothing; trace: items switch events, warnings in the reply. */
static void hmp_log(const char *args, GString *out)
{
    g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
    bool help = false;
    int mask = 0;

    if (!*args) {
        g_string_append(out, "log: string expected\n"
                        "Try \"help log\" for more information\n");
        return;
    }
    if (strcmp(args, "none")) {
        if (!qemu_str_to_log_mask(args, &mask)) {
            qemu_log_items_help(out, "log");
            return;
        }
        qemu_log_enable_trace_items(args, "", warnings, &help);
    }
    for (guint i = 0; i < warnings->len; i++) {
        g_string_append_printf(out, "%s\n",
                               (char *)g_ptr_array_index(warnings, i));
    }
    qemu_set_log(mask);
}

static const HmpCommand hmp_commands[] = {
    { "help", "[cmd]", "show the help", hmp_help },
    { "info", "[subcommand]", "show various information about the system "
      "state", hmp_info },
    { "info status", "", "show the current VM status (running|paused)",
      hmp_info_status },
    { "info version", "", "show the version of QEMU", hmp_info_version },
    { "info name", "", "show the current VM name", hmp_info_name },
    { "info migrate", "", "show migration status", hmp_info_migrate },
    { "info migrate_capabilities", "", "show current migration "
      "capabilities", hmp_info_migrate_capabilities },
    { "info migrate_parameters", "", "show current migration parameters",
      hmp_info_migrate_parameters },
    { "migrate_set_capability", "capability state", "Enable/Disable the "
      "usage of a capability for migration", hmp_migrate_set_capability },
    { "migrate_set_parameter", "parameter value", "Set the parameter for "
      "migration", hmp_migrate_set_parameter },
    { "log", "item1[,...]", "activate logging of the specified items",
      hmp_log },
    { "stop", "", "stop emulation", hmp_stop },
    { "cont", "", "resume emulation", hmp_cont },
    { "system_reset", "", "reset the system", hmp_system_reset },
    { "set_link", "name on|off", "change the link status of a network "
      "adapter", hmp_set_link },
    { "qom-list", "path", "list QOM properties", hmp_qom_list },
    { "qom-get", "path property", "print QOM property", hmp_qom_get },
    { "qom-set", "path property value", "set QOM property", hmp_qom_set },
};

static const QmpArg hmp_args[] = {
    { "command-line", QMP_ARG_STR, false },
    { "cpu-index", QMP_ARG_INT, true },
    { NULL, 0, false }
};

static const QmpCommand hmp_qmp_commands[] = {
    { "human-monitor-command", hmp_args, false, human_monitor_command,
      false },
};

static void hmp_commands_register(void)
{
    hmp_register_commands(hmp_commands, G_N_ELEMENTS(hmp_commands));
    qmp_register_commands(hmp_qmp_commands, G_N_ELEMENTS(hmp_qmp_commands));
}
illan_init(hmp_commands_register)
