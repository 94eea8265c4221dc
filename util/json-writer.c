/*
 * JSON writer.  Each container remembers whether it has a member yet, so
 * separators and (in pretty mode) line breaks go in front of the next one.
 */
#include "qemu/json-writer.h"

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

static void append_string(GString *out, const char *s)
{
    g_string_append_c(out, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') {
            g_string_append_c(out, '\\');
            g_string_append_c(out, *s);
        } else if ((unsigned char)*s < 0x20) {
            g_string_append_printf(out, "\\u%04x", *s);
        } else {
            g_string_append_c(out, *s);
        }
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
