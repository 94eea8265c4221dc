/*
 * JSON writer.  Each container remembers whether it has a member yet, so
 * separators and (in pretty mode) line breaks go in front of the next one.
 */
#include "qemu/json-writer.h"

#include <math.h>
#include <string.h>

#define JSON_MAX_DEPTH 64

struct JsonWriter {
    GString *out;
    bool pretty;
    unsigned depth;
    bool has_member[JSON_MAX_DEPTH];
};

JsonWriter *json_writer_new(bool pretty)
{
    JsonWriter *w = g_new0(JsonWriter, 1);

    w->out = g_string_new(NULL);
    w->pretty = pretty;
    return w;
}

void json_writer_free(JsonWriter *w)
{
    if (w) {
        g_string_free(w->out, TRUE);
        g_free(w);
    }
}

const char *json_writer_text(const JsonWriter *w)
{
    return w->out->str;
}

static void newline_indent(JsonWriter *w)
{
    g_string_append_c(w->out, '\n');
    g_string_append_printf(w->out, "%*s", w->depth * 2, "");
}

static void append_escape(GString *out, gunichar u)
{
    if (u > 0xFFFF) {
        u -= 0x10000;
        g_string_append_printf(out, "\\u%04X\\u%04X",
                               0xD800 + (u >> 10), 0xDC00 + (u & 0x3FF));
    } else {
        g_string_append_printf(out, "\\u%04X", u);
    }
}

/* As QEMU writes strings: ASCII only, every control character and every
 * character past 0x7E escaped, bytes that are not UTF-8 written as
 * U+FFFD.  The text is then valid JSON whatever @s holds. */
static void append_string(GString *out, const char *s)
{
    /* Pairs: a character, and the letter that escapes it. */
    static const char short_escape[] = "\bb\ff\nn\rr\tt\"\"\\\\";

    g_string_append_c(out, '"');
    while (*s) {
        gunichar u = g_utf8_get_char_validated(s, -1);
        const char *esc = strchr(short_escape, *s);

        if (u == (gunichar)-1 || u == (gunichar)-2) {
            append_escape(out, 0xFFFD);
            s++;
            continue;
        }
        if (esc && (esc - short_escape) % 2 == 0) {
            g_string_append_c(out, '\\');
            g_string_append_c(out, esc[1]);
        } else if (u < 0x20 || u >= 0x7F) {
            append_escape(out, u);
        } else {
            g_string_append_c(out, *s);
        }
        s = g_utf8_next_char(s);
    }
    g_string_append_c(out, '"');
}

/* The separator, indentation and name that come before any value. */
static void begin_value(JsonWriter *w, const char *name)
{
    if (w->depth > 0) {
        if (w->has_member[w->depth]) {
            g_string_append_c(w->out, ',');
            if (!w->pretty) {
                g_string_append_c(w->out, ' ');
            }
        }
        w->has_member[w->depth] = true;
        if (w->pretty) {
            newline_indent(w);
        }
    }
    if (name) {
        append_string(w->out, name);
        g_string_append(w->out, ": ");
    }
}

static void open_container(JsonWriter *w, const char *name, char c)
{
    begin_value(w, name);
    g_string_append_c(w->out, c);
    g_assert(w->depth + 1 < JSON_MAX_DEPTH);
    w->has_member[++w->depth] = false;
}

static void close_container(JsonWriter *w, char c)
{
    bool had_members = w->has_member[w->depth];

    g_assert(w->depth > 0);
    w->depth--;
    if (w->pretty && had_members) {
        newline_indent(w);
    }
    g_string_append_c(w->out, c);
}

void json_writer_start_object(JsonWriter *w, const char *name)
{
    open_container(w, name, '{');
}

void json_writer_end_object(JsonWriter *w)
{
    close_container(w, '}');
}

void json_writer_start_array(JsonWriter *w, const char *name)
{
    open_container(w, name, '[');
}

void json_writer_end_array(JsonWriter *w)
{
    close_container(w, ']');
}

void json_writer_int(JsonWriter *w, const char *name, int64_t val)
{
    begin_value(w, name);
    g_string_append_printf(w->out, "%" G_GINT64_FORMAT, val);
}

void json_writer_bool(JsonWriter *w, const char *name, bool val)
{
    begin_value(w, name);
    g_string_append(w->out, val ? "true" : "false");
}

void json_writer_str(JsonWriter *w, const char *name, const char *val)
{
    begin_value(w, name);
    append_string(w->out, val);
}

void json_writer_null(JsonWriter *w, const char *name)
{
    begin_value(w, name);
    g_string_append(w->out, "null");
}

/* @val with @digits significant digits, in the C locale; whether that
 * reads back as @val. */
static bool format_double(char *buf, size_t size, int digits, double val)
{
    char format[8];

    g_snprintf(format, sizeof(format), "%%.%dg", digits);
    g_ascii_formatd(buf, size, format, val);
    return g_ascii_strtod(buf, NULL) == val;
}

/* The fewest digits that read back as @val, with a '.' or an exponent so
 * that a reader takes it for a double.  JSON has no infinity or NaN:
 * those are written as null. */
void json_writer_double(JsonWriter *w, const char *name, double val)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];

    begin_value(w, name);
    if (!isfinite(val)) {
        g_string_append(w->out, "null");
        return;
    }
    for (int digits = 1; digits <= 17; digits++) {
        if (format_double(buf, sizeof(buf), digits, val)) {
            break;
        }
    }
    /* 100 as 100.0, not 1e+02: below 1e17, enough digits for %g to
     * write all the integer part. */
    if (fabs(val) >= 1 && fabs(val) < 1e17 && strchr(buf, 'e')) {
        int integer_digits = 1;

        for (double v = fabs(val); v >= 10; v /= 10) {
            integer_digits++;
        }
        format_double(buf, sizeof(buf), integer_digits, val);
    }
    g_string_append(w->out, buf);
    if (!strpbrk(buf, ".eE")) {
        g_string_append(w->out, ".0");
    }
}

void json_writer_raw(JsonWriter *w, const char *name, const char *json)
{
    begin_value(w, name);
    g_string_append(w->out, json);
}

static void write_value(JsonWriter *w, const char *name, JsonNode *node)
{
    GType type = json_node_get_value_type(node);

    if (type == G_TYPE_INT64) {
        json_writer_int(w, name, json_node_get_int(node));
    } else if (type == G_TYPE_DOUBLE) {
        json_writer_double(w, name, json_node_get_double(node));
    } else if (type == G_TYPE_BOOLEAN) {
        json_writer_bool(w, name, json_node_get_boolean(node));
    } else {
        g_assert(type == G_TYPE_STRING);
        json_writer_str(w, name, json_node_get_string(node));
    }
}

void json_writer_node(JsonWriter *w, const char *name, JsonNode *node)
{
    if (JSON_NODE_HOLDS_OBJECT(node)) {
        JsonObject *obj = json_node_get_object(node);
        g_autoptr(GList) members = json_object_get_members(obj);

        json_writer_start_object(w, name);
        for (GList *l = members; l; l = l->next) {
            json_writer_node(w, l->data, json_object_get_member(obj, l->data));
        }
        json_writer_end_object(w);
    } else if (JSON_NODE_HOLDS_ARRAY(node)) {
        JsonArray *arr = json_node_get_array(node);

        json_writer_start_array(w, name);
        for (guint i = 0; i < json_array_get_length(arr); i++) {
            json_writer_node(w, NULL, json_array_get_element(arr, i));
        }
        json_writer_end_array(w);
    } else if (JSON_NODE_HOLDS_NULL(node)) {
        json_writer_null(w, name);
    } else {
        write_value(w, name, node);
    }
}
