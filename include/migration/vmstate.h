/*
 * Declarative device state, written and read in QEMU's vmstate encoding
 * (big-endian, positional, no tags) and described in QEMU's VM-description
 * and -dump-vmstate JSON.  A VMStateDescription lists fields in wire order;
 * whether a field is on the wire depends on its version or its
 * field_exists test; subsections carry state that only some streams have.
 */
#ifndef MIGRATION_VMSTATE_H
#define MIGRATION_VMSTATE_H

#include "migration/qemu-file.h"
#include "qemu/json-writer.h"

#include <stddef.h>

/* The markers vmstate writes inside a section, QEMU's numbers: one
 * before each subsection, one for each NULL pointer field. */
#define QEMU_VM_SUBSECTION          0x05
#define VMS_NULLPTR_MARKER          0x30

typedef struct VMStateDescription VMStateDescription;
typedef struct VMStateField VMStateField;

/* Writes the state of @opaque; with @vmdesc, also describes what it wrote
 * into the object the caller has open ("vmsd_name", "version", "fields",
 * "subsections"). */
void vmstate_save_state(QEMUFile *f, const VMStateDescription *vmsd,
                        void *opaque, JsonWriter *vmdesc);
/* Reads state written in @version_id into @opaque: pre_load, fields,
 * subsections, post_load.  Errors name the field or subsection. */
bool vmstate_load_state(QEMUFile *f, const VMStateDescription *vmsd,
                        void *opaque, int version_id, GError **errp);
/* -dump-vmstate's DESC object ("name", versions, "Fields", "Subsections")
 * into the object the caller has open. */
void vmstate_dump_description(JsonWriter *w, const VMStateDescription *vmsd);

/* One wire type: its vmdesc "type" name and its encoding. */
typedef struct VMStateInfo {
    const char *name;
    void (*put)(QEMUFile *f, const void *pv, size_t size);
    /* False with *errp when the received value is refused. */
    bool (*get)(QEMUFile *f, void *pv, size_t size, GError **errp);
} VMStateInfo;

extern const VMStateInfo vmstate_info_bool;
extern const VMStateInfo vmstate_info_int8, vmstate_info_uint8;
extern const VMStateInfo vmstate_info_int16, vmstate_info_uint16;
extern const VMStateInfo vmstate_info_int32, vmstate_info_uint32;
extern const VMStateInfo vmstate_info_int64, vmstate_info_uint64;
/* The received value must equal the local one. */
extern const VMStateInfo vmstate_info_uint8_equal, vmstate_info_uint16_equal;
extern const VMStateInfo vmstate_info_int32_equal, vmstate_info_uint32_equal;
extern const VMStateInfo vmstate_info_uint64_equal;
/* The received value must be between 0 and the local one. */
extern const VMStateInfo vmstate_info_int32_le;
extern const VMStateInfo vmstate_info_cpudouble;
extern const VMStateInfo vmstate_info_buffer;
extern const VMStateInfo vmstate_info_unused_buffer;

enum VMStateFlags {
    VMS_SINGLE           = 0x001,
    VMS_POINTER          = 0x002,   /* the member points at the data */
    VMS_ARRAY            = 0x004,   /* num elements */
    VMS_STRUCT           = 0x008,   /* elements are a nested vmsd */
    VMS_VARRAY_INT32     = 0x010,   /* count in the int32 at num_offset */
    VMS_VARRAY_UINT32    = 0x020,   /* count in the uint32 at num_offset */
    VMS_ARRAY_OF_POINTER = 0x040,   /* elements are pointers; NULL is 0x30 */
    VMS_VBUFFER          = 0x080,   /* byte count in the uint32 at size_offset */
    VMS_ALLOC            = 0x100,   /* allocate the buffer on load */
    VMS_MUST_EXIST       = 0x200,   /* a validation: no bytes, test must pass */
};

struct VMStateField {
    const char *name;
    size_t offset;
    size_t size;                    /* of one element */
    int num;                        /* VMS_ARRAY */
    size_t num_offset;              /* VMS_VARRAY_* */
    size_t size_offset;             /* VMS_VBUFFER */
    const VMStateInfo *info;
    unsigned flags;
    const VMStateDescription *vmsd; /* VMS_STRUCT */
    int version_id;                 /* on the wire from this version on */
    /* When set, decides alone whether the field is on the wire. */
    bool (*field_exists)(void *opaque, int version_id);
    const char *rule;               /* VMSTATE_VALIDATE: what must hold */
};

struct VMStateDescription {
    const char *name;
    int version_id;                 /* the version this build writes */
    int minimum_version_id;         /* the oldest it reads */
    /* A subsection is written only when this is true. */
    bool (*needed)(void *opaque);
    bool (*pre_load)(void *opaque, GError **errp);
    bool (*post_load)(void *opaque, int version_id, GError **errp);
    void (*pre_save)(void *opaque);
    const VMStateField *fields;     /* ends with VMSTATE_END_OF_LIST() */
    const VMStateDescription *const *subsections;   /* NULL-terminated */
};

/* The field macros, named as QEMU's so tables read the same. */
#define VMSTATE_SINGLE_TEST(_f, _s, _test, _v, _info, _type) {          \
    .name = #_f, .version_id = (_v), .field_exists = (_test),           \
    .size = sizeof(_type), .info = &(_info), .flags = VMS_SINGLE,       \
    .offset = offsetof(_s, _f) + 0 * sizeof(((_s *)0)->_f == (_type)0), \
}
#define VMSTATE_SINGLE(_f, _s, _v, _info, _type) \
    VMSTATE_SINGLE_TEST(_f, _s, NULL, _v, _info, _type)

#define VMSTATE_BOOL(_f, _s)   VMSTATE_SINGLE(_f, _s, 0, vmstate_info_bool, bool)
#define VMSTATE_BOOL_V(_f, _s, _v) \
    VMSTATE_SINGLE(_f, _s, _v, vmstate_info_bool, bool)
#define VMSTATE_INT8(_f, _s)   VMSTATE_SINGLE(_f, _s, 0, vmstate_info_int8, int8_t)
#define VMSTATE_UINT8(_f, _s)  VMSTATE_SINGLE(_f, _s, 0, vmstate_info_uint8, uint8_t)
#define VMSTATE_INT16(_f, _s)  VMSTATE_SINGLE(_f, _s, 0, vmstate_info_int16, int16_t)
#define VMSTATE_UINT16(_f, _s) VMSTATE_SINGLE(_f, _s, 0, vmstate_info_uint16, uint16_t)
#define VMSTATE_INT32(_f, _s)  VMSTATE_SINGLE(_f, _s, 0, vmstate_info_int32, int32_t)
#define VMSTATE_UINT32(_f, _s) VMSTATE_SINGLE(_f, _s, 0, vmstate_info_uint32, uint32_t)
#define VMSTATE_INT64(_f, _s)  VMSTATE_SINGLE(_f, _s, 0, vmstate_info_int64, int64_t)
#define VMSTATE_UINT64(_f, _s) VMSTATE_SINGLE(_f, _s, 0, vmstate_info_uint64, uint64_t)
#define VMSTATE_UINT32_V(_f, _s, _v) \
    VMSTATE_SINGLE(_f, _s, _v, vmstate_info_uint32, uint32_t)
#define VMSTATE_UINT32_TEST(_f, _s, _test) \
    VMSTATE_SINGLE_TEST(_f, _s, _test, 0, vmstate_info_uint32, uint32_t)
#define VMSTATE_UINT8_EQUAL(_f, _s) \
    VMSTATE_SINGLE(_f, _s, 0, vmstate_info_uint8_equal, uint8_t)
#define VMSTATE_UINT16_EQUAL(_f, _s) \
    VMSTATE_SINGLE(_f, _s, 0, vmstate_info_uint16_equal, uint16_t)
#define VMSTATE_INT32_EQUAL(_f, _s) \
    VMSTATE_SINGLE(_f, _s, 0, vmstate_info_int32_equal, int32_t)
#define VMSTATE_UINT32_EQUAL(_f, _s) \
    VMSTATE_SINGLE(_f, _s, 0, vmstate_info_uint32_equal, uint32_t)
#define VMSTATE_UINT64_EQUAL(_f, _s) \
    VMSTATE_SINGLE(_f, _s, 0, vmstate_info_uint64_equal, uint64_t)
#define VMSTATE_INT32_LE(_f, _s) \
    VMSTATE_SINGLE(_f, _s, 0, vmstate_info_int32_le, int32_t)
#define VMSTATE_CPUDOUBLE(_f, _s) \
    VMSTATE_SINGLE(_f, _s, 0, vmstate_info_cpudouble, double)

#define VMSTATE_ARRAY(_f, _s, _n, _v, _info, _type) {                   \
    .name = #_f, .version_id = (_v), .num = (_n), .info = &(_info),     \
    .size = sizeof(_type), .flags = VMS_ARRAY,                          \
    .offset = offsetof(_s, _f) + 0 * sizeof(((_s *)0)->_f[0] == (_type)0), \
}
#define VMSTATE_UINT8_ARRAY(_f, _s, _n) \
    VMSTATE_ARRAY(_f, _s, _n, 0, vmstate_info_uint8, uint8_t)
#define VMSTATE_UINT32_ARRAY(_f, _s, _n) \
    VMSTATE_ARRAY(_f, _s, _n, 0, vmstate_info_uint32, uint32_t)
#define VMSTATE_UINT64_ARRAY(_f, _s, _n) \
    VMSTATE_ARRAY(_f, _s, _n, 0, vmstate_info_uint64, uint64_t)

/* A variable array reached through a pointer, its count in another field
 * that precedes it on the wire. */
#define VMSTATE_VARRAY_UINT32(_f, _s, _count, _v, _info, _type) {       \
    .name = #_f, .version_id = (_v), .info = &(_info),                  \
    .size = sizeof(_type), .flags = VMS_VARRAY_UINT32 | VMS_POINTER,    \
    .num_offset = offsetof(_s, _count), .offset = offsetof(_s, _f),     \
}
#define VMSTATE_VARRAY_INT32(_f, _s, _count, _v, _info, _type) {        \
    .name = #_f, .version_id = (_v), .info = &(_info),                  \
    .size = sizeof(_type), .flags = VMS_VARRAY_INT32 | VMS_POINTER,     \
    .num_offset = offsetof(_s, _count), .offset = offsetof(_s, _f),     \
}

#define VMSTATE_STRUCT(_f, _s, _v, _vmsd, _type) {                      \
    .name = #_f, .version_id = (_v), .vmsd = &(_vmsd),                  \
    .size = sizeof(_type), .flags = VMS_STRUCT,                         \
    .offset = offsetof(_s, _f) + 0 * sizeof(&((_s *)0)->_f == (_type *)0), \
}
#define VMSTATE_STRUCT_ARRAY(_f, _s, _n, _v, _vmsd, _type) {            \
    .name = #_f, .version_id = (_v), .num = (_n), .vmsd = &(_vmsd),     \
    .size = sizeof(_type), .flags = VMS_STRUCT | VMS_ARRAY,             \
    .offset = offsetof(_s, _f),                                         \
}
#define VMSTATE_ARRAY_OF_POINTER_TO_STRUCT(_f, _s, _n, _v, _vmsd, _type) { \
    .name = #_f, .version_id = (_v), .num = (_n), .vmsd = &(_vmsd),     \
    .size = sizeof(_type *),                                            \
    .flags = VMS_ARRAY | VMS_STRUCT | VMS_ARRAY_OF_POINTER,             \
    .offset = offsetof(_s, _f),                                         \
}

/* A byte buffer member of fixed size. */
#define VMSTATE_BUFFER(_f, _s) {                                        \
    .name = #_f, .size = sizeof(((_s *)0)->_f),                         \
    .info = &vmstate_info_buffer, .flags = VMS_SINGLE,                  \
    .offset = offsetof(_s, _f),                                         \
}
/* A buffer whose byte count is the uint32 member @_size, allocated on
 * load (the member is a pointer the owner frees). */
#define VMSTATE_VBUFFER_ALLOC_UINT32(_f, _s, _v, _test, _size) {        \
    .name = #_f, .version_id = (_v), .field_exists = (_test),           \
    .size_offset = offsetof(_s, _size), .info = &vmstate_info_buffer,   \
    .flags = VMS_VBUFFER | VMS_POINTER | VMS_ALLOC,                     \
    .offset = offsetof(_s, _f),                                         \
}
/* @_size zero bytes, skipped on load: a field that was removed. */
#define VMSTATE_UNUSED(_size) {                                         \
    .name = "unused", .size = (_size),                                  \
    .info = &vmstate_info_unused_buffer, .flags = VMS_SINGLE,           \
}
/* No bytes; the load fails when @_test returns false, naming the field
 * @_name it checks and saying @_rule ("must be ..."). */
#define VMSTATE_VALIDATE(_name, _rule, _test) {                         \
    .name = (_name), .rule = (_rule), .field_exists = (_test),          \
    .flags = VMS_ARRAY | VMS_MUST_EXIST, .num = 0,                      \
}
#define VMSTATE_END_OF_LIST() { .name = NULL }

#endif
