/*
 * Splits a byte stream into JSON texts, as a QMP peer sends them: objects
 * and arrays back to back with no delimiter, or scalars ended by the next
 * token.  The splitter knows JSON's tokens (QEMU's lexical grammar, with
 * single-quoted strings) but not its grammar: each text is handed over
 * whole, for a parser to judge, or as an error.  Single-quoted strings
 * come out as double-quoted JSON.  Nothing the peer sends makes the
 * splitter grow without bound.
 *
 * A lexical error (a byte no token can contain or start: a control
 * character other than tab, CR and LF, a 0xFE or 0xFF byte, a stray
 * character, a malformed number) drops the text it was in, is reported
 * once with the token it spoiled (a NUL byte shown as \u0000), and the
 * splitter skips to the next byte where a token may begin afresh: a
 * structural character, a control character or 0xFE/0xFF.
 * This is how a client forces the parser back into a known state.
 */
#ifndef MONITOR_JSON_STREAM_H
#define MONITOR_JSON_STREAM_H

#include <glib.h>
#include <stdbool.h>

#define JSON_STREAM_MAX_SIZE    (1u << 20)
#define JSON_STREAM_MAX_DEPTH   64

typedef enum JsonStreamError {
    JSON_STREAM_OK,
    JSON_STREAM_TOO_BIG,        /* the text passed JSON_STREAM_MAX_SIZE */
    JSON_STREAM_TOO_DEEP,       /* nesting passed JSON_STREAM_MAX_DEPTH */
    JSON_STREAM_LEXICAL,        /* a lexical error; the text is the token */
    JSON_STREAM_NUMBER_RANGE,   /* a number beyond a double; the text is it */
    JSON_STREAM_BAD_ESCAPE,     /* a backslash before a letter JSON lacks */
    JSON_STREAM_BAD_UNICODE,    /* a lone surrogate or a non-character;
                                 * the text is its escape(s) */
} JsonStreamError;

/* @text is NUL-terminated and valid only during the call.  Without an
 * error it is the JSON text; with one, what the error is about (empty for
 * the limits). */
typedef void (*JsonStreamFn)(void *opaque, const char *text,
                             JsonStreamError error);

typedef struct JsonStream JsonStream;

JsonStream *json_stream_new(JsonStreamFn fn, void *opaque);
void json_stream_feed(JsonStream *js, const char *data, size_t len);
void json_stream_free(JsonStream *js);

/* The value of the top-level member @name of @text, a JSON object the
 * stream handed over and a parser accepted, as it was written but for
 * the white space between its tokens, which is dropped: so numbers come
 * back byte for byte.  NULL if there is no such member; the last one if
 * there are several. */
char *json_stream_member_text(const char *text, const char *name);

#endif
