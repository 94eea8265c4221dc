/*
 * Carried sections: the layout a loaded stream had, the VM description
 * that gives a FULL section's length, and the hash-table format.
 */
#include "migration/carry.h"
#include "migration/stream-format.h"
#include "qemu/bswap.h"
#include "qemu/option.h"

#include <json-glib/json-glib.h>
#include <string.h>

/* QEMU nests a subsection in a subsection at most a few deep; the limit
 * keeps a hostile description from recursing without end. */
#define VMDESC_MAX_DEPTH    16
/* A hash table entry (two 64-bit words), as QEMU's htab chunks send. */
#define HTAB_PTE_SIZE       16

static bool fields_length(JsonArray *fields, uint64_t *len, GError **errp);
static bool vmsd_length(JsonObject *o, int depth, uint64_t *len,
                        GError **errp);

typedef struct LayoutRecord {
    uint8_t type;
    char *idstr;                /* START and FULL */
    uint32_t instance, version, section_id;
    GBytes *body;               /* NULL for a modelled section */
    char *desc_json;            /* carried FULL */
} LayoutRecord;

struct StreamLayout {
    gint ref;
    bool has_ram_id;
    uint32_t ram_id;
    GPtrArray *full;            /* LayoutRecord *, stream order */
    GPtrArray *iterative;       /* LayoutRecord *, stream order */
    GHashTable *iterative_ids;  /* section ids of carried iterative ones */
    uint64_t carried_bytes;
    unsigned carried_sections;
};

static void record_free(gpointer p)
{
    LayoutRecord *r = p;

    g_free(r->idstr);
    g_clear_pointer(&r->body, g_bytes_unref);
    g_free(r->desc_json);
    g_free(r);
}

StreamLayout *stream_layout_new(void)
{
    StreamLayout *l = g_new0(StreamLayout, 1);

    l->ref = 1;
    l->full = g_ptr_array_new_with_free_func(record_free);
    l->iterative = g_ptr_array_new_with_free_func(record_free);
    l->iterative_ids = g_hash_table_new(NULL, NULL);
    return l;
}

StreamLayout *stream_layout_ref(StreamLayout *l)
{
    g_atomic_int_inc(&l->ref);
    return l;
}

void stream_layout_unref(StreamLayout *l)
{
    if (l && g_atomic_int_dec_and_test(&l->ref)) {
        g_ptr_array_free(l->full, TRUE);
        g_ptr_array_free(l->iterative, TRUE);
        g_hash_table_destroy(l->iterative_ids);
        g_free(l);
    }
}

void stream_layout_set_ram_id(StreamLayout *l, uint32_t section_id)
{
    l->has_ram_id = true;
    l->ram_id = section_id;
}

static LayoutRecord *record_new(uint8_t type, const char *idstr,
                                uint32_t instance, uint32_t version,
                                uint32_t section_id, GBytes *body)
{
    LayoutRecord *r = g_new0(LayoutRecord, 1);

    r->type = type;
    r->idstr = g_strdup(idstr);
    r->instance = instance;
    r->version = version;
    r->section_id = section_id;
    r->body = body ? g_bytes_ref(body) : NULL;
    return r;
}

void stream_layout_add_modelled(StreamLayout *l, const char *idstr,
                                uint32_t instance, uint32_t section_id)
{
    g_ptr_array_add(l->full, record_new(QEMU_VM_SECTION_FULL, idstr,
                                        instance, 0, section_id, NULL));
}

void stream_layout_add_carried(StreamLayout *l, const char *idstr,
                               uint32_t instance, uint32_t version,
                               uint32_t section_id, GBytes *body,
                               const char *desc_json)
{
    LayoutRecord *r = record_new(QEMU_VM_SECTION_FULL, idstr, instance,
                                 version, section_id, body);

    r->desc_json = g_strdup(desc_json);
    g_ptr_array_add(l->full, r);
    l->carried_bytes += g_bytes_get_size(body);
    l->carried_sections++;
}

void stream_layout_add_iterative(StreamLayout *l, uint8_t type,
                                 const char *idstr, uint32_t instance,
                                 uint32_t version, uint32_t section_id,
                                 GBytes *body)
{
    g_ptr_array_add(l->iterative, record_new(type, idstr, instance, version,
                                             section_id, body));
    if (type == QEMU_VM_SECTION_START) {
        g_hash_table_add(l->iterative_ids, GUINT_TO_POINTER(section_id));
        l->carried_sections++;
    }
    l->carried_bytes += g_bytes_get_size(body);
}

bool stream_layout_has_iterative(const StreamLayout *l, uint32_t section_id)
{
    return g_hash_table_contains(l->iterative_ids,
                                 GUINT_TO_POINTER(section_id));
}

bool stream_layout_carries(const StreamLayout *l)
{
    return l->carried_sections > 0;
}

bool stream_layout_ram_id(const StreamLayout *l, uint32_t *section_id)
{
    *section_id = l->ram_id;
    return l->has_ram_id;
}

bool stream_layout_modelled_id(const StreamLayout *l, const char *idstr,
                               uint32_t instance, uint32_t *section_id)
{
    for (guint i = 0; i < l->full->len; i++) {
        LayoutRecord *r = g_ptr_array_index(l->full, i);

        if (!r->body && r->instance == instance && !strcmp(r->idstr, idstr)) {
            *section_id = r->section_id;
            return true;
        }
    }
    return false;
}

uint32_t stream_layout_max_id(const StreamLayout *l)
{
    uint32_t max = l->ram_id;

    for (guint i = 0; i < l->full->len; i++) {
        max = MAX(max, ((LayoutRecord *)g_ptr_array_index(l->full, i))
                       ->section_id);
    }
    for (guint i = 0; i < l->iterative->len; i++) {
        max = MAX(max, ((LayoutRecord *)g_ptr_array_index(l->iterative, i))
                       ->section_id);
    }
    return max;
}

uint64_t stream_layout_carried_bytes(const StreamLayout *l)
{
    return l->carried_bytes;
}

unsigned stream_layout_carried_sections(const StreamLayout *l)
{
    return l->carried_sections;
}

static void put_record(QEMUFile *f, const LayoutRecord *r)
{
    gsize len;
    const void *data = g_bytes_get_data(r->body, &len);

    qemu_put_byte(f, r->type);
    qemu_put_be32(f, r->section_id);
    if (r->type == QEMU_VM_SECTION_START || r->type == QEMU_VM_SECTION_FULL) {
        qemu_put_counted_string(f, r->idstr);
        qemu_put_be32(f, r->instance);
        qemu_put_be32(f, r->version);
    }
    qemu_put_buffer(f, data, len);
    qemu_put_byte(f, QEMU_VM_SECTION_FOOTER);
    qemu_put_be32(f, r->section_id);
}

void stream_layout_put_iterative(const StreamLayout *l, QEMUFile *f,
                                 bool starts)
{
    for (guint i = 0; i < l->iterative->len; i++) {
        LayoutRecord *r = g_ptr_array_index(l->iterative, i);

        if ((r->type == QEMU_VM_SECTION_START) == starts) {
            put_record(f, r);
        }
    }
}

void stream_layout_visit_full(const StreamLayout *l,
                              const StreamLayoutVisitor *v, void *opaque)
{
    for (guint i = 0; i < l->full->len; i++) {
        LayoutRecord *r = g_ptr_array_index(l->full, i);

        if (r->body) {
            v->carried(opaque, r->idstr, r->instance, r->version,
                       r->section_id, r->body, r->desc_json);
        } else {
            v->modelled(opaque, r->idstr, r->instance, r->section_id);
        }
    }
}

static bool member_uint(JsonObject *o, const char *name, uint64_t *val)
{
    JsonNode *n = json_object_get_member(o, name);

    if (!n || json_node_get_value_type(n) != G_TYPE_INT64 ||
        json_node_get_int(n) < 0) {
        return false;
    }
    *val = json_node_get_int(n);
    return true;
}

/* Field @i of a description's "fields": its object, and the size of one
 * element and their count ("array_len" for a compressed array), each
 * bounded so that no sum of them wraps: no body is 4 GiB. */
static JsonObject *field_extent(JsonArray *fields, guint i, uint64_t *size,
                                uint64_t *count)
{
    JsonNode *n = json_array_get_element(fields, i);
    JsonObject *f = JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n)
                                              : NULL;

    *count = 1;
    if (!f || !member_uint(f, "size", size) ||
        (json_object_has_member(f, "array_len") &&
         !member_uint(f, "array_len", count)) ||
        *size > G_MAXUINT32 || *count > G_MAXUINT32 ||
        *size * *count > G_MAXUINT32) {
        return NULL;
    }
    return f;
}

StreamLayout *stream_layout_copy(const StreamLayout *l)
{
    StreamLayout *c = stream_layout_new();

    c->has_ram_id = l->has_ram_id;
    c->ram_id = l->ram_id;
    for (guint i = 0; i < l->full->len; i++) {
        LayoutRecord *r = g_ptr_array_index(l->full, i);

        if (r->body) {
            gsize len;
            const void *data = g_bytes_get_data(r->body, &len);
            g_autoptr(GBytes) body = g_bytes_new(data, len);

            stream_layout_add_carried(c, r->idstr, r->instance, r->version,
                                      r->section_id, body, r->desc_json);
        } else {
            stream_layout_add_modelled(c, r->idstr, r->instance,
                                       r->section_id);
        }
    }
    for (guint i = 0; i < l->iterative->len; i++) {
        LayoutRecord *r = g_ptr_array_index(l->iterative, i);

        stream_layout_add_iterative(c, r->type, r->idstr, r->instance,
                                    r->version, r->section_id, r->body);
    }
    return c;
}

static LayoutRecord *find_carried(const StreamLayout *l, const char *idstr,
                                  uint32_t instance)
{
    for (guint i = 0; i < l->full->len; i++) {
        LayoutRecord *r = g_ptr_array_index(l->full, i);

        if (r->body && r->instance == instance && !strcmp(r->idstr, idstr)) {
            return r;
        }
    }
    return NULL;
}

uint8_t *stream_layout_body(StreamLayout *l, const char *idstr,
                            uint32_t instance, size_t *len)
{
    LayoutRecord *r = find_carried(l, idstr, instance);

    /* A copy's bodies are its own (stream_layout_copy()). */
    return r ? (uint8_t *)g_bytes_get_data(r->body, len) : NULL;
}

/* In a description's "fields", the offset and size of @name's element
 * @index: a compressed array has "array_len" elements of "size", an
 * uncompressed one an entry per element with its "index". */
static bool fields_find(JsonArray *fields, const char *name, unsigned index,
                        size_t *offset, size_t *size, JsonObject **field)
{
    uint64_t at = 0;

    for (guint i = 0; i < json_array_get_length(fields); i++) {
        uint64_t sz, count, idx = 0;
        JsonObject *f = field_extent(fields, i, &sz, &count);

        if (!f || at > G_MAXUINT32 ||
            (json_object_has_member(f, "index") &&
             !member_uint(f, "index", &idx))) {
            return false;
        }
        if (!g_strcmp0(json_object_get_string_member_with_default(
                           f, "name", NULL), name) &&
            (count > 1 ? index < count : idx == index)) {
            *offset = at + (count > 1 ? index * sz : 0);
            *size = sz;
            *field = f;
            return true;
        }
        at += sz * count;
    }
    return false;
}

static bool fits(size_t offset, size_t size, size_t len)
{
    return offset <= len && size <= len - offset;
}

/* The description of @r as a JSON object, parsed into @p. */
static JsonObject *record_desc(const LayoutRecord *r, JsonParser *p)
{
    if (!r || !json_parser_load_from_data(p, r->desc_json, -1, NULL) ||
        !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(p))) {
        return NULL;
    }
    return json_node_get_object(json_parser_get_root(p));
}

bool stream_layout_find_field(const StreamLayout *l, const char *idstr,
                              uint32_t instance, const char *field,
                              unsigned index, const char *member,
                              size_t *offset, size_t *size)
{
    LayoutRecord *r = find_carried(l, idstr, instance);
    g_autoptr(JsonParser) p = json_parser_new_immutable();
    JsonObject *o = record_desc(r, p), *f, *inner;
    JsonNode *fields, *strct;
    size_t at, in_at, outer;

    if (!o) {
        return false;
    }
    fields = json_object_get_member(o, "fields");
    if (!fields || !JSON_NODE_HOLDS_ARRAY(fields) ||
        !fields_find(json_node_get_array(fields), field, index, &at, size,
                     &f)) {
        return false;
    }
    *offset = at;
    if (!member) {
        return fits(*offset, *size, g_bytes_get_size(r->body));
    }
    outer = *size;
    strct = json_object_get_member(f, "struct");
    inner = strct && JSON_NODE_HOLDS_OBJECT(strct)
            ? json_node_get_object(strct) : NULL;
    fields = inner ? json_object_get_member(inner, "fields") : NULL;
    if (!fields || !JSON_NODE_HOLDS_ARRAY(fields) ||
        !fields_find(json_node_get_array(fields), member, 0, &in_at, size,
                     &f)) {
        return false;
    }
    if (in_at > outer || *size > outer - in_at) {
        return false;
    }
    *offset = at + in_at;
    return fits(*offset, *size, g_bytes_get_size(r->body));
}

const uint8_t *stream_layout_peek_body(const StreamLayout *l,
                                       const char *idstr, uint32_t instance,
                                       size_t *len)
{
    LayoutRecord *r = find_carried(l, idstr, instance);

    return r ? g_bytes_get_data(r->body, len) : NULL;
}


bool stream_layout_find_subsection_field(const StreamLayout *l,
                                         const char *idstr,
                                         uint32_t instance,
                                         const char *subsection,
                                         const char *field, size_t *offset,
                                         size_t *size)
{
    LayoutRecord *r = find_carried(l, idstr, instance);
    g_autoptr(JsonParser) p = json_parser_new_immutable();
    JsonObject *o = record_desc(r, p), *f;
    JsonNode *subs, *fields = o ? json_object_get_member(o, "fields") : NULL;
    uint64_t at = 0;
    size_t in_at;

    if (!o || (fields && (!JSON_NODE_HOLDS_ARRAY(fields) ||
                          !fields_length(json_node_get_array(fields), &at,
                                         NULL)))) {
        return false;
    }
    subs = json_object_get_member(o, "subsections");
    for (guint i = 0; subs && JSON_NODE_HOLDS_ARRAY(subs) &&
                      i < json_array_get_length(json_node_get_array(subs));
         i++) {
        JsonNode *n = json_array_get_element(json_node_get_array(subs), i);
        JsonObject *sub = JSON_NODE_HOLDS_OBJECT(n) ? json_node_get_object(n)
                                                    : NULL;
        const char *name = sub ? json_object_get_string_member_with_default(
                                     sub, "vmsd_name", NULL) : NULL;

        if (!name) {
            return false;
        }
        at += 1 + 1 + strlen(name) + 4;
        fields = json_object_get_member(sub, "fields");
        if (!strcmp(name, subsection)) {
            if (!fields || !JSON_NODE_HOLDS_ARRAY(fields) ||
                !fields_find(json_node_get_array(fields), field, 0, &in_at,
                             size, &f) || at > G_MAXUINT32) {
                return false;
            }
            *offset = at + in_at;
            return fits(*offset, *size, g_bytes_get_size(r->body));
        }
        if (!vmsd_length(sub, 1, &at, NULL)) {
            return false;
        }
    }
    return false;
}

/*
 * spapr/htab: a be32 header; -1 (no hash table) or a table size ends the
 * record at once, 0 is followed by chunks (be32 index, be16 valid, be16
 * invalid, then the valid entries) up to an all-zero chunk.
 */
bool htab_record_read(QEMUFile *f, GByteArray *out, size_t max,
                      GError **errp)
{
    uint8_t head[8];

    qemu_get_buffer(f, head, 4);
    g_byte_array_append(out, head, 4);
    if (ldn_be_p(head, 4) != 0) {
        return qemu_file_check(f, errp);
    }
    for (;;) {
        size_t valid;
        g_autofree uint8_t *entries = NULL;

        qemu_get_buffer(f, head, 8);
        if (!qemu_file_check(f, errp)) {
            return false;
        }
        g_byte_array_append(out, head, 8);
        valid = ldn_be_p(head + 4, 2);
        if (ldn_be_p(head, 4) == 0 && valid == 0 &&
            ldn_be_p(head + 6, 2) == 0) {
            return true;
        }
        if (out->len + valid * HTAB_PTE_SIZE > max) {
            g_set_error(errp, ILLAN_ERROR, 0, "more than %zu bytes of hash "
                        "table entries to carry", max);
            return false;
        }
        entries = g_malloc(valid * HTAB_PTE_SIZE);
        qemu_get_buffer(f, entries, valid * HTAB_PTE_SIZE);
        g_byte_array_append(out, entries, valid * HTAB_PTE_SIZE);
    }
}

struct VMDesc {
    JsonParser *parser;
    JsonArray *devices;
};

void vmdesc_free(VMDesc *d)
{
    if (d) {
        g_clear_object(&d->parser);
        g_free(d);
    }
}

/* The JSON holds no byte below 0x20, so scanning back from the end for
 * the marker whose length word reaches exactly the end finds it. */
static bool vmdesc_locate(const uint8_t *data, size_t size, size_t max_len,
                          size_t *start)
{
    size_t lowest = size > max_len + 5 ? size - max_len - 5 : 0;

    for (size_t p = size >= 6 ? size - 6 : 0; size >= 6 && p + 1 > lowest;
         p--) {
        if (data[p] == QEMU_VM_VMDESCRIPTION &&
            (size_t)ldn_be_p(data + p + 1, 4) == size - p - 5 &&
            data[p + 5] == '{') {
            *start = p;
            return true;
        }
        if (p == 0) {
            break;
        }
    }
    return false;
}

/* json-glib parses by recursion without a limit: a deeply nested text
 * would overflow the stack.  QEMU's description nests a few levels per
 * subsection. */
static bool json_depth_ok(const char *text, size_t len)
{
    bool in_string = false, escaped = false;
    int depth = 0;

    for (size_t i = 0; i < len; i++) {
        char c = text[i];

        if (in_string) {
            in_string = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if (c == '"') {
            in_string = true;
        } else if ((c == '{' || c == '[') &&
                   ++depth > VMDESC_MAX_DEPTH * 4) {
            return false;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return true;
}

VMDesc *vmdesc_find(GBytes *held, size_t max_len, size_t *start,
                    GError **errp)
{
    gsize size;
    const uint8_t *data = g_bytes_get_data(held, &size);
    g_autoptr(VMDesc) d = g_new0(VMDesc, 1);
    JsonNode *root, *devices;

    if (!vmdesc_locate(data, size, max_len, start)) {
        g_set_error(errp, ILLAN_ERROR, VMDESC_ABSENT, "no VM description "
                    "(of at most %zu bytes) at the end", max_len);
        return NULL;
    }
    if (!json_depth_ok((const char *)data + *start + 5, size - *start - 5)) {
        g_set_error(errp, ILLAN_ERROR, 0, "the VM description nests more "
                    "than %d deep", VMDESC_MAX_DEPTH * 4);
        return NULL;
    }
    d->parser = json_parser_new_immutable();
    if (!json_parser_load_from_data(d->parser, (const char *)data + *start + 5,
                                    size - *start - 5, errp)) {
        g_prefix_error(errp, "the VM description is not JSON: ");
        return NULL;
    }
    root = json_parser_get_root(d->parser);
    devices = JSON_NODE_HOLDS_OBJECT(root)
              ? json_object_get_member(json_node_get_object(root), "devices")
              : NULL;
    if (!devices || !JSON_NODE_HOLDS_ARRAY(devices)) {
        g_set_error(errp, ILLAN_ERROR, 0, "the VM description has no "
                    "\"devices\" array");
        return NULL;
    }
    d->devices = json_node_get_array(devices);
    return g_steal_pointer(&d);
}

unsigned vmdesc_sections(const VMDesc *d)
{
    return json_array_get_length(d->devices);
}


static bool vmsd_length(JsonObject *o, int depth, uint64_t *len,
                        GError **errp);

/* A field's "size" is what one element wrote, its struct's subsections
 * included; "array_len" elements of it when the array was compressed,
 * else one entry per element. */
static bool fields_length(JsonArray *fields, uint64_t *len, GError **errp)
{
    for (guint i = 0; i < json_array_get_length(fields); i++) {
        uint64_t size, count;

        if (!field_extent(fields, i, &size, &count) || *len > G_MAXUINT32) {
            g_set_error(errp, ILLAN_ERROR, 0, "field %u has no valid size "
                        "(or one of 4 GiB or more)", i);
            return false;
        }
        *len += size * count;
    }
    return true;
}

static bool subsections_length(JsonArray *subs, int depth, uint64_t *len,
                               GError **errp)
{
    for (guint i = 0; i < json_array_get_length(subs); i++) {
        JsonNode *n = json_array_get_element(subs, i);
        JsonObject *sub = JSON_NODE_HOLDS_OBJECT(n)
                          ? json_node_get_object(n) : NULL;
        const char *name = sub ? json_object_get_string_member_with_default(
                                     sub, "vmsd_name", NULL) : NULL;

        if (!name || strlen(name) > 255) {
            g_set_error(errp, ILLAN_ERROR, 0, "subsection %u has no name", i);
            return false;
        }
        /* marker, name length, name, version */
        if (*len > G_MAXUINT32) {
            g_set_error(errp, ILLAN_ERROR, 0, "4 GiB or more");
            return false;
        }
        *len += 1 + 1 + strlen(name) + 4;
        if (!vmsd_length(sub, depth + 1, len, errp)) {
            g_prefix_error(errp, "subsection '%s': ", name);
            return false;
        }
    }
    return true;
}

static bool vmsd_length(JsonObject *o, int depth, uint64_t *len,
                        GError **errp)
{
    JsonNode *fields = json_object_get_member(o, "fields");
    JsonNode *subs = json_object_get_member(o, "subsections");

    if (depth > VMDESC_MAX_DEPTH) {
        g_set_error(errp, ILLAN_ERROR, 0, "subsections nest more than %d "
                    "deep", VMDESC_MAX_DEPTH);
        return false;
    }
    if ((fields && !JSON_NODE_HOLDS_ARRAY(fields)) ||
        (subs && !JSON_NODE_HOLDS_ARRAY(subs))) {
        g_set_error(errp, ILLAN_ERROR, 0, "\"fields\" or \"subsections\" "
                    "is not an array");
        return false;
    }
    return (!fields || fields_length(json_node_get_array(fields), len,
                                     errp)) &&
           (!subs || subsections_length(json_node_get_array(subs), depth,
                                        len, errp));
}

bool vmdesc_section(const VMDesc *d, unsigned i, const char **name,
                    uint32_t *instance, uint64_t *body_len, char **json,
                    GError **errp)
{
    JsonNode *n = i < vmdesc_sections(d)
                  ? json_array_get_element(d->devices, i) : NULL;
    JsonObject *o = n && JSON_NODE_HOLDS_OBJECT(n)
                    ? json_node_get_object(n) : NULL;
    uint64_t inst;

    if (!n) {
        g_set_error(errp, ILLAN_ERROR, 0, "the VM description covers only "
                    "%u sections", vmdesc_sections(d));
        return false;
    }
    *name = o ? json_object_get_string_member_with_default(o, "name", NULL)
              : NULL;
    if (!*name || !member_uint(o, "instance_id", &inst) ||
        inst > G_MAXUINT32) {
        g_set_error(errp, ILLAN_ERROR, 0, "the VM description's entry %u "
                    "has no name or instance_id", i);
        return false;
    }
    *instance = inst;
    *body_len = 0;
    if (!vmsd_length(o, 0, body_len, errp)) {
        g_prefix_error(errp, "the VM description of '%s': ", *name);
        return false;
    }
    *json = json_to_string(n, FALSE);
    return true;
}
