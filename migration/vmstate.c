/*
 * vmstate: walking a VMStateDescription to write, read and describe state.
 * Loads check every count, version and file error before they use it,
 * because the stream comes from another host and may be hostile.
 */
#include "migration/vmstate.h"
#include "qemu/option.h"

#include <string.h>

/* Whether @field is on the wire for @version_id (spec: field_exists alone
 * decides when it is set). */
static bool field_present(const VMStateField *field, void *opaque,
                          int version_id)
{
    if (field->field_exists) {
        return field->field_exists(opaque, version_id);
    }
    return field->version_id <= version_id;
}

/* Elements of @field in @opaque; -1 for a negative INT32 count. */
static int64_t field_elems(const VMStateField *field, void *opaque)
{
    if (field->flags & VMS_ARRAY) {
        return field->num;
    }
    if (field->flags & VMS_VARRAY_INT32) {
        int32_t n = *(int32_t *)((char *)opaque + field->num_offset);
        return n < 0 ? -1 : n;
    }
    if (field->flags & VMS_VARRAY_UINT32) {
        return *(uint32_t *)((char *)opaque + field->num_offset);
    }
    return 1;
}

static size_t field_size(const VMStateField *field, void *opaque)
{
    if (field->flags & VMS_VBUFFER) {
        return *(uint32_t *)((char *)opaque + field->size_offset);
    }
    return field->size;
}

static void *field_base(const VMStateField *field, void *opaque)
{
    void *base = (char *)opaque + field->offset;

    return (field->flags & VMS_POINTER) ? *(void **)base : base;
}

static void *element(const VMStateField *field, void *base, size_t size,
                     int64_t i)
{
    void *elem = (char *)base + size * i;

    return (field->flags & VMS_ARRAY_OF_POINTER) ? *(void **)elem : elem;
}

/* The analyzer may fold an array into one entry only when every element
 * is laid out alike: no test and no subsections anywhere inside. */
static bool can_compress(const VMStateField *field)
{
    if (field->field_exists) {
        return false;
    }
    if (field->flags & VMS_STRUCT) {
        if (field->vmsd->subsections && field->vmsd->subsections[0]) {
            return false;
        }
        for (const VMStateField *f = field->vmsd->fields; f->name; f++) {
            if (!can_compress(f)) {
                return false;
            }
        }
    }
    return true;
}

/* "name", or "name[k]" when the name repeats within the vmsd.  A
 * validation is not counted: it is no field of the stream, and it takes
 * the name of the field it checks. */
static char *desc_field_name(const VMStateDescription *vmsd,
                             const VMStateField *field)
{
    int occurrence = 0, total = 0;

    for (const VMStateField *f = vmsd->fields; f->name; f++) {
        if (!(f->flags & VMS_MUST_EXIST) && !strcmp(f->name, field->name)) {
            occurrence += f < field;
            total++;
        }
    }
    return total > 1 ? g_strdup_printf("%s[%d]", field->name, occurrence)
                     : g_strdup(field->name);
}

static void desc_field_start(JsonWriter *w, const VMStateDescription *vmsd,
                             const VMStateField *field, bool is_null,
                             bool compress, int64_t i, int64_t count)
{
    g_autofree char *name = desc_field_name(vmsd, field);

    json_writer_start_object(w, NULL);
    json_writer_str(w, "name", name);
    if (compress && count > 1) {
        json_writer_int(w, "array_len", count);
    } else if (!compress && count > 1) {
        json_writer_int(w, "index", i);
    }
    if (is_null) {
        json_writer_str(w, "type", "nullptr");
    } else if (field->flags & VMS_STRUCT) {
        json_writer_str(w, "type", "struct");
        json_writer_start_object(w, "struct");
    } else {
        json_writer_str(w, "type", field->info->name);
    }
}

static void desc_field_end(JsonWriter *w, const VMStateField *field,
                           bool is_null, uint64_t size)
{
    if (!is_null && (field->flags & VMS_STRUCT)) {
        json_writer_end_object(w);
    }
    json_writer_int(w, "size", size);
    json_writer_end_object(w);
}

/* A compressed entry covers a run of elements that are all NULL or all
 * not; returns the end of the run that starts at @i. */
static int64_t run_end(const VMStateField *field, void *base, size_t size,
                       int64_t i, int64_t n)
{
    bool is_null = !element(field, base, size, i);
    int64_t j = i + 1;

    while (j < n && !element(field, base, size, j) == is_null) {
        j++;
    }
    return j;
}

static void save_field(QEMUFile *f, const VMStateDescription *vmsd,
                       const VMStateField *field, void *opaque,
                       JsonWriter *vmdesc)
{
    int64_t n = field_elems(field, opaque), described_to = 0;
    size_t size = field_size(field, opaque);
    void *base = field_base(field, opaque);
    bool compress = can_compress(field);

    g_assert(n >= 0);
    for (int64_t i = 0; i < n; i++) {
        void *elem = element(field, base, size, i);
        bool is_null = (field->flags & VMS_ARRAY_OF_POINTER) && !elem;
        uint64_t start = qemu_file_transferred(f);
        JsonWriter *desc = NULL;

        if (vmdesc && i >= described_to) {
            int64_t count = compress ? run_end(field, base, size, i, n) - i
                                     : n;
            described_to = compress ? i + count : i + 1;
            desc = vmdesc;
            desc_field_start(desc, vmsd, field, is_null, compress, i, count);
        }
        if (is_null) {
            qemu_put_byte(f, VMS_NULLPTR_MARKER);
        } else if (field->flags & VMS_STRUCT) {
            vmstate_save_state(f, field->vmsd, elem, desc);
        } else {
            field->info->put(f, elem, size);
        }
        if (desc) {
            desc_field_end(desc, field, is_null,
                           qemu_file_transferred(f) - start);
        }
    }
}

static void save_subsections(QEMUFile *f, const VMStateDescription *vmsd,
                             void *opaque, JsonWriter *vmdesc)
{
    bool any = false;

    for (const VMStateDescription *const *s = vmsd->subsections; s && *s;
         s++) {
        const VMStateDescription *sub = *s;

        if (sub->needed && !sub->needed(opaque)) {
            continue;
        }
        if (vmdesc && !any) {
            json_writer_start_array(vmdesc, "subsections");
        }
        any = true;
        qemu_put_byte(f, QEMU_VM_SUBSECTION);
        qemu_put_counted_string(f, sub->name);
        qemu_put_be32(f, sub->version_id);
        if (vmdesc) {
            json_writer_start_object(vmdesc, NULL);
        }
        vmstate_save_state(f, sub, opaque, vmdesc);
        if (vmdesc) {
            json_writer_end_object(vmdesc);
        }
    }
    if (vmdesc && any) {
        json_writer_end_array(vmdesc);
    }
}

void vmstate_save_state(QEMUFile *f, const VMStateDescription *vmsd,
                        void *opaque, JsonWriter *vmdesc)
{
    if (vmsd->pre_save) {
        vmsd->pre_save(opaque);
    }
    if (vmdesc) {
        json_writer_str(vmdesc, "vmsd_name", vmsd->name);
        json_writer_int(vmdesc, "version", vmsd->version_id);
        json_writer_start_array(vmdesc, "fields");
    }
    for (const VMStateField *field = vmsd->fields; field->name; field++) {
        if (!(field->flags & VMS_MUST_EXIST) &&
            field_present(field, opaque, vmsd->version_id)) {
            save_field(f, vmsd, field, opaque, vmdesc);
        }
    }
    if (vmdesc) {
        json_writer_end_array(vmdesc);
    }
    save_subsections(f, vmsd, opaque, vmdesc);
}

/* Load. */

static bool load_element(QEMUFile *f, const VMStateField *field, void *elem,
                         size_t size, GError **errp)
{
    if ((field->flags & VMS_ARRAY_OF_POINTER) && !elem) {
        uint8_t marker = qemu_get_byte(f);

        if (!qemu_file_check(f, errp)) {
            return false;
        }
        if (marker != VMS_NULLPTR_MARKER) {
            g_set_error(errp, ILLAN_ERROR, 0, "expected the NULL marker "
                        "0x%02x, got 0x%02x", VMS_NULLPTR_MARKER, marker);
            return false;
        }
        return true;
    }
    if (field->flags & VMS_STRUCT) {
        return vmstate_load_state(f, field->vmsd, elem,
                                  field->vmsd->version_id, errp);
    }
    return field->info->get(f, elem, size, errp) && qemu_file_check(f, errp);
}

static bool load_field(QEMUFile *f, const VMStateField *field, void *opaque,
                       int version_id, GError **errp)
{
    int64_t n;
    size_t size;
    void *base;

    if (!field_present(field, opaque, version_id)) {
        if (field->flags & VMS_MUST_EXIST) {
            g_set_error(errp, ILLAN_ERROR, 0, "input validation failed: %s",
                        field->rule);
            return false;
        }
        return true;
    }
    n = field_elems(field, opaque);
    size = field_size(field, opaque);
    if (n < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "negative element count");
        return false;
    }
    if (field->flags & VMS_ALLOC) {
        void **member = (void **)((char *)opaque + field->offset);

        g_free(*member);
        *member = g_malloc0(size + 1);
    }
    base = field_base(field, opaque);
    for (int64_t i = 0; i < n; i++) {
        if (!load_element(f, field, element(field, base, size, i), size,
                          errp)) {
            return false;
        }
    }
    return true;
}

static const VMStateDescription *find_subsection(
    const VMStateDescription *vmsd, const char *name)
{
    for (const VMStateDescription *const *s = vmsd->subsections; s && *s;
         s++) {
        if (!strcmp((*s)->name, name)) {
            return *s;
        }
    }
    return NULL;
}

/* Subsections follow the fields with no count: take them while the next
 * byte is 0x05 and the name is one of ours ("<vmsd name>/..."). */
static bool load_subsections(QEMUFile *f, const VMStateDescription *vmsd,
                             void *opaque, GError **errp)
{
    size_t prefix = strlen(vmsd->name);

    while (qemu_peek_byte(f, 0) == QEMU_VM_SUBSECTION) {
        int len = qemu_peek_byte(f, 1);
        char name[256] = "";
        const VMStateDescription *sub;
        uint32_t version;

        if (len < 0 || qemu_peek_buffer(f, name, len, 2) != (size_t)len ||
            (size_t)len < prefix + 1 || strncmp(name, vmsd->name, prefix)) {
            return true;
        }
        sub = find_subsection(vmsd, name);
        if (!sub) {
            g_set_error(errp, ILLAN_ERROR, 0, "subsection '%s' does not "
                        "exist in '%s' in this build", name, vmsd->name);
            return false;
        }
        qemu_file_skip(f, 2 + len);
        version = qemu_get_be32(f);
        if (!qemu_file_check(f, errp) ||
            !vmstate_load_state(f, sub, opaque,
                                MIN(version, (uint32_t)INT32_MAX), errp)) {
            g_prefix_error(errp, "subsection '%s': ", name);
            return false;
        }
    }
    return true;
}

bool vmstate_load_state(QEMUFile *f, const VMStateDescription *vmsd,
                        void *opaque, int version_id, GError **errp)
{
    if (version_id > vmsd->version_id) {
        g_set_error(errp, ILLAN_ERROR, 0, "'%s' version %d is newer than "
                    "this build reads (%d)", vmsd->name, version_id,
                    vmsd->version_id);
        return false;
    }
    if (version_id < vmsd->minimum_version_id) {
        g_set_error(errp, ILLAN_ERROR, 0, "'%s' version %d is older than "
                    "this build reads (%d)", vmsd->name, version_id,
                    vmsd->minimum_version_id);
        return false;
    }
    if (vmsd->pre_load && !vmsd->pre_load(opaque, errp)) {
        return false;
    }
    for (const VMStateField *field = vmsd->fields; field->name; field++) {
        if (!load_field(f, field, opaque, version_id, errp)) {
            g_prefix_error(errp, "field '%s': ", field->name);
            return false;
        }
    }
    return load_subsections(f, vmsd, opaque, errp) &&
           (!vmsd->post_load || vmsd->post_load(opaque, version_id, errp));
}

/* -dump-vmstate. */

void vmstate_dump_description(JsonWriter *w, const VMStateDescription *vmsd)
{
    json_writer_str(w, "name", vmsd->name);
    json_writer_int(w, "version_id", vmsd->version_id);
    json_writer_int(w, "minimum_version_id", vmsd->minimum_version_id);
    json_writer_start_array(w, "Fields");
    for (const VMStateField *field = vmsd->fields; field->name; field++) {
        if (field->flags & VMS_MUST_EXIST) {
            continue;
        }
        json_writer_start_object(w, NULL);
        json_writer_str(w, "field", field->name);
        json_writer_int(w, "version_id", field->version_id);
        json_writer_bool(w, "field_exists", field->field_exists != NULL);
        if (field->flags & VMS_ARRAY) {
            json_writer_int(w, "num", field->num);
        }
        json_writer_int(w, "size",
                        (field->flags & VMS_VBUFFER) ? 0 : field->size);
        if (field->vmsd) {
            json_writer_start_object(w, "Description");
            vmstate_dump_description(w, field->vmsd);
            json_writer_end_object(w);
        }
        json_writer_end_object(w);
    }
    json_writer_end_array(w);
    if (vmsd->subsections) {
        json_writer_start_array(w, "Subsections");
        for (const VMStateDescription *const *s = vmsd->subsections; *s;
             s++) {
            json_writer_start_object(w, NULL);
            vmstate_dump_description(w, *s);
            json_writer_end_object(w);
        }
        json_writer_end_array(w);
    }
}
