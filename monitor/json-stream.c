/*
 * The JSON stream splitter: a lexer over QEMU's token grammar that keeps
 * the text of the tokens and counts the open braces and brackets.  A text
 * ends when a token leaves no brace or bracket open, or closes one that
 * was not.  After a limit is broken the rest of that text is skipped up
 * to where it would have ended, so the next text starts clean.
 */
#include "monitor/json-stream.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef enum LexState {
    LEX_START,          /* between tokens */
    LEX_STRING,         /* in a string; js->quote closes it */
    LEX_ESCAPE,         /* after a backslash in a string */
    LEX_SIGN,           /* after a leading '-' */
    LEX_ZERO,           /* after a leading 0, which no digit may follow */
    LEX_DIGITS,         /* in the integer part */
    LEX_POINT,          /* after the '.' */
    LEX_FRACTION,       /* in the fraction's digits */
    LEX_EXP,            /* after the 'e' */
    LEX_EXP_SIGN,       /* after the exponent's sign */
    LEX_EXP_DIGITS,     /* in the exponent's digits */
    LEX_KEYWORD,        /* in a run of lower-case letters */
    LEX_RECOVERY,       /* after a lexical error, up to a resync byte */
} LexState;

struct JsonStream {
    JsonStreamFn fn;
    void *opaque;
    GString *text;
    size_t token_start;     /* where the current token begins in text */
    int braces, brackets;   /* open minus closed */
    LexState state;
    char quote;             /* the open string's quote */
    size_t escape_at;       /* where the last escape's backslash is */
    unsigned hex_left;      /* hex digits a \u escape still needs */
    uint32_t hex_value;     /* those it had so far */
    bool lead_pending;      /* a leading surrogate wants its trail */
    size_t lead_at;         /* where that surrogate's escape is */
    uint32_t lead_value;    /* and its value */
    JsonStreamError skipping;   /* a limit the text broke */
    char *culprit;          /* what broke NUMBER_RANGE or BAD_UNICODE */
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
        g_free(js->culprit);
        g_free(js);
    }
}

static void reset_text(JsonStream *js)
{
    g_string_truncate(js->text, 0);
    js->braces = js->brackets = 0;
    js->hex_left = 0;
    js->lead_pending = false;
    js->skipping = JSON_STREAM_OK;
    g_clear_pointer(&js->culprit, g_free);
}

static void emit(JsonStream *js)
{
    JsonStreamError error = js->skipping;
    const char *what = js->culprit ? js->culprit : "";

    js->fn(js->opaque, error ? what : js->text->str, error);
    reset_text(js);
}

static void skip_rest(JsonStream *js, JsonStreamError why)
{
    if (!js->skipping) {
        js->skipping = why;
        g_string_truncate(js->text, 0);
    }
}

static void append(JsonStream *js, char c)
{
    if (js->skipping) {
        return;
    }
    if (js->text->len >= JSON_STREAM_MAX_SIZE) {
        skip_rest(js, JSON_STREAM_TOO_BIG);
        return;
    }
    g_string_append_c(js->text, c);
}

/* @c cannot go where it is: report the token it spoiled, forget the
 * text, and skip to where tokens can start again. */
static void lexical_error(JsonStream *js, char c)
{
    g_autoptr(GString) token = g_string_new(NULL);

    if (!js->skipping) {
        g_string_append(token, js->text->str + js->token_start);
    }
    /* The token is handed over as a C string, which a NUL would end. */
    if (c) {
        g_string_append_c(token, c);
    } else {
        g_string_append(token, "\\u0000");
    }
    js->fn(js->opaque, token->str, JSON_STREAM_LEXICAL);
    reset_text(js);
    js->state = LEX_RECOVERY;
}

/* A number that strtod() turns into infinity could not be written back. */
static void check_number(JsonStream *js)
{
    const char *number = js->text->str + js->token_start;

    if (!js->skipping && !isfinite(g_ascii_strtod(number, NULL))) {
        js->culprit = g_strdup(number);
        skip_rest(js, JSON_STREAM_NUMBER_RANGE);
    }
}

/* A token is complete: does it complete the text too? */
static void end_token(JsonStream *js, char structural)
{
    js->state = LEX_START;
    switch (structural) {
    case '{': js->braces++; break;
    case '}': js->braces--; break;
    case '[': js->brackets++; break;
    case ']': js->brackets--; break;
    }
    if (js->braces + js->brackets > JSON_STREAM_MAX_DEPTH) {
        skip_rest(js, JSON_STREAM_TOO_DEEP);
    }
    if ((js->braces > 0 || js->brackets > 0) &&
        js->braces >= 0 && js->brackets >= 0) {
        return;
    }
    emit(js);
}

static bool is_resync_byte(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c >= 0xFE || strchr("[]{}:,", c);
}

static void begin_token(JsonStream *js, char c, LexState state)
{
    js->token_start = js->text->len;
    js->state = state;
    append(js, c);
}

static void start_char(JsonStream *js, unsigned char c)
{
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        if (js->braces > 0 || js->brackets > 0) {
            append(js, c);
        }
    } else if (c && strchr("[]{}:,", c)) {
        begin_token(js, c, LEX_START);
        end_token(js, c);
    } else if (c == '"' || c == '\'') {
        begin_token(js, '"', LEX_STRING);
        js->quote = c;
    } else if (c == '-') {
        begin_token(js, c, LEX_SIGN);
    } else if (c == '0') {
        begin_token(js, c, LEX_ZERO);
    } else if (g_ascii_isdigit(c)) {
        begin_token(js, c, LEX_DIGITS);
    } else if (c >= 'a' && c <= 'z') {
        begin_token(js, c, LEX_KEYWORD);
    } else {
        js->token_start = js->text->len;
        lexical_error(js, c);
    }
}

#define ESCAPE_LEN  6   /* \uXXXX */

/* The @len bytes of escapes at @at are no Unicode character: QEMU
 * refuses the text, where json-glib would make a string that is not
 * UTF-8 of a lone surrogate, and take a non-character. */
static void bad_unicode(JsonStream *js, size_t at, size_t len)
{
    js->lead_pending = false;
    if (!js->skipping) {
        js->culprit = g_strndup(js->text->str + at, len);
        skip_rest(js, JSON_STREAM_BAD_UNICODE);
    }
}

/* The pending leading surrogate got no trailing one. */
static void lone_lead(JsonStream *js)
{
    bad_unicode(js, js->lead_at, ESCAPE_LEN);
}

/* One of Unicode's 66 non-characters, which QEMU's parser refuses. */
static bool is_noncharacter(uint32_t cp)
{
    return (cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE;
}

/* A \u escape's fourth hex digit was appended.  A non-character written
 * as a pair is named by both escapes, as QEMU names it. */
static void unicode_escape_done(JsonStream *js)
{
    uint32_t value = js->hex_value;
    bool lead = value >= 0xD800 && value <= 0xDBFF;
    bool trail = value >= 0xDC00 && value <= 0xDFFF;

    if (js->lead_pending) {
        uint32_t cp = 0x10000 + ((js->lead_value & 0x3FF) << 10 |
                                 (value & 0x3FF));

        js->lead_pending = false;
        if (!trail) {
            lone_lead(js);
        } else if (is_noncharacter(cp)) {
            bad_unicode(js, js->lead_at, 2 * ESCAPE_LEN);
        }
    } else if (lead) {
        js->lead_pending = true;
        js->lead_at = js->escape_at;
        js->lead_value = value;
    } else if (trail || is_noncharacter(value)) {
        bad_unicode(js, js->escape_at, ESCAPE_LEN);
    }
}

/* Single-quoted strings are rewritten: their double quotes escaped, and
 * \' (accepted in either kind) written as a bare quote. */
static void string_char(JsonStream *js, unsigned char c)
{
    if (js->hex_left) {
        if (g_ascii_isxdigit(c)) {
            append(js, c);
            js->hex_value = js->hex_value << 4 | g_ascii_xdigit_value(c);
            if (--js->hex_left == 0) {
                unicode_escape_done(js);
            }
            return;
        }
        js->hex_left = 0;
        skip_rest(js, JSON_STREAM_BAD_ESCAPE);
    } else if (js->lead_pending && c != '\\') {
        lone_lead(js);
    }
    if (c < 0x20 || c >= 0xFE) {
        lexical_error(js, c);
    } else if (c == '\\') {
        js->escape_at = js->text->len;
        append(js, c);
        js->state = LEX_ESCAPE;
    } else if (c == js->quote) {
        append(js, '"');
        end_token(js, 0);
    } else if (c == '"') {
        append(js, '\\');
        append(js, '"');
    } else {
        append(js, c);
    }
}

static void escape_char(JsonStream *js, unsigned char c)
{
    if (c < 0x20 || c >= 0xFE) {
        lexical_error(js, c);
        return;
    }
    /* QEMU's parser refuses the text, where json-glib would take \x
     * for x, or \u with fewer than 4 hex digits. */
    if (!strchr("\"\\/bfnrtu'", c)) {
        skip_rest(js, JSON_STREAM_BAD_ESCAPE);
    }
    if (js->lead_pending && c != 'u') {
        lone_lead(js);
    }
    js->hex_left = c == 'u' ? 4 : 0;
    js->hex_value = 0;
    if (c == '\'' && !js->skipping) {
        g_string_truncate(js->text, js->text->len - 1);
    }
    append(js, c);
    js->state = LEX_STRING;
}

/* The next state of a number on @c, LEX_START when @c ends it, or
 * LEX_RECOVERY when @c cannot follow. */
static LexState number_next(LexState state, unsigned char c)
{
    bool digit = g_ascii_isdigit(c), e = c == 'e' || c == 'E';

    switch (state) {
    case LEX_SIGN:
        return c == '0' ? LEX_ZERO : digit ? LEX_DIGITS : LEX_RECOVERY;
    case LEX_ZERO:
        return digit ? LEX_RECOVERY : c == '.' ? LEX_POINT : LEX_START;
    case LEX_DIGITS:
        return digit ? LEX_DIGITS : c == '.' ? LEX_POINT
             : e ? LEX_EXP : LEX_START;
    case LEX_POINT:
        return digit ? LEX_FRACTION : LEX_RECOVERY;
    case LEX_FRACTION:
        return digit ? LEX_FRACTION : e ? LEX_EXP : LEX_START;
    case LEX_EXP:
        return c == '+' || c == '-' ? LEX_EXP_SIGN
             : digit ? LEX_EXP_DIGITS : LEX_RECOVERY;
    case LEX_EXP_SIGN:
        return digit ? LEX_EXP_DIGITS : LEX_RECOVERY;
    case LEX_EXP_DIGITS:
        return digit ? LEX_EXP_DIGITS : LEX_START;
    default:
        g_assert_not_reached();
    }
}

/* Returns false when @c ended the token before it and must be looked at
 * again. */
static bool lex_char(JsonStream *js, unsigned char c)
{
    LexState next;

    switch (js->state) {
    case LEX_START:
        start_char(js, c);
        return true;
    case LEX_STRING:
        string_char(js, c);
        return true;
    case LEX_ESCAPE:
        escape_char(js, c);
        return true;
    case LEX_KEYWORD:
        if (c >= 'a' && c <= 'z') {
            append(js, c);
            return true;
        }
        end_token(js, 0);
        return false;
    case LEX_RECOVERY:
        if (is_resync_byte(c)) {
            js->state = LEX_START;
            return false;
        }
        return true;
    default:
        next = number_next(js->state, c);
        if (next == LEX_RECOVERY) {
            lexical_error(js, c);
        } else if (next == LEX_START) {
            check_number(js);
            end_token(js, 0);
            return false;
        } else {
            append(js, c);
            js->state = next;
        }
        return true;
    }
}

void json_stream_feed(JsonStream *js, const char *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        while (!lex_char(js, data[i])) {
        }
    }
}

/* ---- reading a member back from a text ---- */

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
        p++;
    }
    return p;
}

/* @p is at a string's opening quote; returns just past its closing one.
 * The NUL checks only keep a text that is not JSON from being overrun. */
static const char *skip_string(const char *p)
{
    for (p++; *p && *p != '"'; p++) {
        if (*p == '\\' && p[1]) {
            p++;
        }
    }
    return *p ? p + 1 : p;
}

/* @p is at a value; returns just past it.  @compact, if not NULL, gets
 * the value without the white space between its tokens. */
static const char *skip_value(const char *p, GString *compact)
{
    int depth = 0;

    while (*p) {
        const char *from = p;

        if (*p == '"') {
            p = skip_string(p);
        } else if (*p == '{' || *p == '[') {
            depth++, p++;
        } else if (*p == '}' || *p == ']' || *p == ',') {
            if (depth == 0) {
                return p;
            }
            depth -= *p != ',';
            p++;
        } else if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
            p = skip_space(p);
            continue;
        } else {
            p++;
        }
        if (compact) {
            g_string_append_len(compact, from, p - from);
        }
    }
    return p;
}

static bool key_is(const char *key, size_t len, const char *name)
{
    g_autofree char *quoted = g_strndup(key, len);
    g_autoptr(JsonNode) node = NULL;

    if (!memchr(key, '\\', len)) {
        return len == strlen(name) + 2 && !strncmp(key + 1, name, len - 2);
    }
    node = json_from_string(quoted, NULL);
    return node && !g_strcmp0(json_node_get_string(node), name);
}

char *json_stream_member_text(const char *text, const char *name)
{
    const char *p = skip_space(text);
    const char *found = NULL;

    if (*p != '{') {
        return NULL;
    }
    p = skip_space(p + 1);
    while (*p == '"') {
        const char *key = p;
        bool wanted;

        p = skip_string(p);
        wanted = key_is(key, p - key, name);
        p = skip_space(p);
        if (*p != ':') {
            break;
        }
        p = skip_space(p + 1);
        if (wanted) {
            found = p;
        }
        p = skip_value(p, NULL);
        p = skip_space(*p == ',' ? p + 1 : p);
    }
    if (found) {
        GString *compact = g_string_new(NULL);

        skip_value(found, compact);
        return g_string_free(compact, FALSE);
    }
    return NULL;
}
