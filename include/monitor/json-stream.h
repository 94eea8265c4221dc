/*
 * Splits a byte stream into JSON texts, as a QMP peer sends them: objects
 * and arrays back to back with no delimiter, or scalars separated by
 * white space.  Single-quoted strings (a QEMU extension) come out as
 * double-quoted JSON.  Each text is handed over whole, or with an error
 * when it broke a limit; nothing the peer sends makes the splitter grow
 * without bound.
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
} JsonStreamError;

/* @text is NUL-terminated and valid only during the call. */
typedef void (*JsonStreamFn)(void *opaque, const char *text,
                             JsonStreamError error);

typedef struct JsonStream JsonStream;

JsonStream *json_stream_new(JsonStreamFn fn, void *opaque);
void json_stream_feed(JsonStream *js, const char *data, size_t len);
void json_stream_free(JsonStream *js);

#endif
