/*
 * A streaming JSON writer in the two layouts QEMU's migration code uses:
 * compact (one line, a space after ':' and ',') for the VM description
 * that ends a stream, and pretty (2-space indentation) for -dump-vmstate.
 * Members come out in the order they are written.  QMP writes its
 * replies and events with it too, in the compact layout.  The text is
 * always valid JSON: strings come out in ASCII with every control
 * character escaped, doubles with the fewest digits that read back the
 * same value.
 */
#ifndef QEMU_JSON_WRITER_H
#define QEMU_JSON_WRITER_H

#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct JsonWriter JsonWriter;

JsonWriter *json_writer_new(bool pretty);
void json_writer_free(JsonWriter *w);
/* The text so far; valid until the next call. */
const char *json_writer_text(const JsonWriter *w);

/* @name is the member name inside an object, NULL inside an array. */
void json_writer_start_object(JsonWriter *w, const char *name);
void json_writer_end_object(JsonWriter *w);
void json_writer_start_array(JsonWriter *w, const char *name);
void json_writer_end_array(JsonWriter *w);
void json_writer_int(JsonWriter *w, const char *name, int64_t val);
void json_writer_bool(JsonWriter *w, const char *name, bool val);
void json_writer_str(JsonWriter *w, const char *name, const char *val);
void json_writer_null(JsonWriter *w, const char *name);
/* Always with a '.' or an exponent; infinities and NaN come out as null. */
void json_writer_double(JsonWriter *w, const char *name, double val);
/* @json is written as it is: the caller knows it is one valid value. */
void json_writer_raw(JsonWriter *w, const char *name, const char *json);
/* @node and everything under it, members in their order. */
void json_writer_node(JsonWriter *w, const char *name, JsonNode *node);

#endif
