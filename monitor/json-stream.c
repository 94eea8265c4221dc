/*
 * The JSON stream splitter.  It only tracks nesting and strings; the
 * texts it hands over are parsed by json-glib.  After a limit is broken
 * the rest of that text is skipped up to where its nesting closes, so the
 * next text starts clean.
 */
#include "monitor/json-stream.h"

struct JsonStream {
    JsonStreamFn fn;
    void *opaque;
    GString *text;
    unsigned depth;
    char quote;             /* the open string's quote, or 0 */
    bool escape;            /* the last character was a backslash */
    bool scalar;            /* inside a top-level scalar */
    JsonStreamError skipping;
};

JsonStream *json_stream_new(JsonStreamFn fn, void *opaque)
{
    JsonStream *js = g_new0(JsonStream, 1);

    js->fn = fn;
    js->opaque = opaque;
    js->text = g_string_new(NULL);
    return js;
}

void json_stream_free(JsonStream *js)
{
    if (js) {
        g_string_free(js->text, TRUE);
        g_free(js);
    }
}

static void emit(JsonStream *js)
{
    JsonStreamError error = js->skipping;

    js->skipping = JSON_STREAM_OK;
    js->scalar = false;
    js->quote = 0;
    js->escape = false;
    js->fn(js->opaque, error ? "" : js->text->str, error);
    g_string_truncate(js->text, 0);
}

static void append(JsonStream *js, char c)
{
    if (js->skipping) {
        return;
    }
    if (js->text->len >= JSON_STREAM_MAX_SIZE) {
        js->skipping = JSON_STREAM_TOO_BIG;
        g_string_truncate(js->text, 0);
        return;
    }
    g_string_append_c(js->text, c);
}

/* Inside a string: single-quoted ones are rewritten with double quotes. */
static void string_char(JsonStream *js, char c)
{
    if (js->escape) {
        js->escape = false;
        if (c == '\'' && !js->skipping && js->text->len) {
            /* \' needs no escape in a double-quoted string: drop the \ */
            g_string_truncate(js->text, js->text->len - 1);
        }
        append(js, c);
        return;
    }
    if (c == '\\') {
        js->escape = true;
        append(js, c);
    } else if (c == js->quote) {
        js->quote = 0;
        append(js, '"');
    } else if (c == '"') {
        append(js, '\\');
        append(js, '"');
    } else {
        append(js, c);
    }
}

static void nested_char(JsonStream *js, char c)
{
    if (c == '"' || c == '\'') {
        js->quote = c;
        append(js, '"');
        return;
    }
    append(js, c);
    if (c == '{' || c == '[') {
        if (++js->depth > JSON_STREAM_MAX_DEPTH && !js->skipping) {
            js->skipping = JSON_STREAM_TOO_DEEP;
            g_string_truncate(js->text, 0);
        }
    } else if (c == '}' || c == ']') {
        if (--js->depth == 0) {
            emit(js);
        }
    }
}

static void top_level_char(JsonStream *js, char c)
{
    bool space = g_ascii_isspace(c);

    if (js->scalar && (space || c == '{' || c == '[')) {
        emit(js);
    }
    if (space) {
        return;
    }
    if (c == '{' || c == '[') {
        js->depth = 0;
        nested_char(js, c);
        return;
    }
    js->scalar = true;
    if (c == '"' || c == '\'') {
        js->quote = c;
        append(js, '"');
    } else {
        append(js, c);
    }
}

static void feed_char(JsonStream *js, char c)
{
    if (js->quote) {
        string_char(js, c);
    } else if (js->depth > 0) {
        nested_char(js, c);
    } else {
        top_level_char(js, c);
    }
}

void json_stream_feed(JsonStream *js, const char *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        feed_char(js, data[i]);
    }
}
