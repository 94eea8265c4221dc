/*
 * Carrying what illan does not model: a stream shaped as QEMU's pseries
 * writes it (RAM and the hash table iterative, device sections FULL, the
 * VM description after EOF) loads, and the stream written back holds
 * every carried record byte for byte, in its place, with its id.
 */
#include "migration/carry.h"
#include "migration/savevm.h"
#include "migration/vmstate.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define RAM_SIZE        (16u << 20)
#define RAM_ID          2
#define HTAB_ID         564

typedef struct MyDev {
    uint32_t reg;
} MyDev;

static const VMStateDescription vmstate_mydev = {
    .name = "mydev",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(reg, MyDev),
        VMSTATE_END_OF_LIST()
    },
};

static void mydev_capture(void *obj, void *image)
{
    memcpy(image, obj, sizeof(MyDev));
}

static void mydev_commit(void *obj, const void *image)
{
    memcpy(obj, image, sizeof(MyDev));
}

static const VMStateImageOps mydev_ops = {
    .size = sizeof(MyDev),
    .capture = mydev_capture,
    .commit = mydev_commit,
};

static void put_be(GByteArray *a, unsigned size, uint64_t v)
{
    for (unsigned i = size; i-- > 0;) {
        uint8_t b = v >> (i * 8);

        g_byte_array_append(a, &b, 1);
    }
}

static void put_str(GByteArray *a, const char *s)
{
    put_be(a, 1, strlen(s));
    g_byte_array_append(a, (const uint8_t *)s, strlen(s));
}

/* A record: its header, @body, its footer; returns where it starts. */
static size_t put_record(GByteArray *a, uint8_t type, uint32_t id,
                         const char *idstr, uint32_t instance,
                         uint32_t version, const void *body, size_t len)
{
    size_t at = a->len;

    put_be(a, 1, type);
    put_be(a, 4, id);
    if (idstr) {
        put_str(a, idstr);
        put_be(a, 4, instance);
        put_be(a, 4, version);
    }
    g_byte_array_append(a, body, len);
    put_be(a, 1, QEMU_VM_SECTION_FOOTER);
    put_be(a, 4, id);
    return at;
}

/* The RAM section's setup: its one block, then the end-of-section flag. */
static GByteArray *ram_setup_body(void)
{
    GByteArray *a = g_byte_array_new();

    put_be(a, 8, RAM_SIZE | 0x04);
    put_str(a, RAM_BLOCK_NAME);
    put_be(a, 8, RAM_SIZE);
    put_be(a, 8, 0x10);
    return a;
}

/* A hash table record: header 0, one chunk of two entries, the end. */
static GByteArray *htab_chunk_body(void)
{
    GByteArray *a = g_byte_array_new();

    put_be(a, 4, 0);
    put_be(a, 4, 7);
    put_be(a, 2, 2);
    put_be(a, 2, 1);
    for (int i = 0; i < 32; i++) {
        put_be(a, 1, 0xa0 + i);
    }
    put_be(a, 4, 0);
    put_be(a, 4, 0);
    return a;
}

typedef struct QemuStream {
    GByteArray *bytes;
    size_t eof;                 /* the EOF marker */
    size_t carried[4];          /* the carried FULL records */
    size_t carried_len[4];
    size_t htab[2];
    size_t htab_len[2];
} QemuStream;

static const char vmdesc_json[] =
    "{\"page_size\": 4096, \"devices\": ["
    "{\"name\": \"timer\", \"instance_id\": 0, \"vmsd_name\": \"timer\", "
    "\"version\": 2, \"fields\": [{\"name\": \"a\", \"type\": \"int64\", "
    "\"size\": 8}, {\"name\": \"u\", \"type\": \"unused_buffer\", "
    "\"size\": 8}]}, "
    "{\"name\": \"ics\", \"instance_id\": 0, \"vmsd_name\": \"ics\", "
    "\"version\": 1, \"fields\": [{\"name\": \"irqs\", \"array_len\": 3, "
    "\"type\": \"struct\", \"struct\": {\"vmsd_name\": \"ics/irq\", "
    "\"version\": 1, \"fields\": [{\"name\": \"server\", \"type\": "
    "\"uint32\", \"size\": 4}, {\"name\": \"priority\", \"type\": "
    "\"uint8\", \"size\": 1}, {\"name\": \"saved_priority\", "
    "\"type\": \"uint8\", \"size\": 1}, {\"name\": \"status\", "
    "\"type\": \"uint8\", \"size\": 1}, {\"name\": \"flags\", "
    "\"type\": \"uint8\", \"size\": 1}]}, \"size\": 8}], "
    "\"subsections\": [{\"vmsd_name\": \"ics/sub\", \"version\": 1, "
    "\"fields\": [{\"name\": \"x\", \"type\": \"uint8\", \"size\": 1}], "
    "\"subsections\": [{\"vmsd_name\": \"ics/sub/in\", \"version\": 1, "
    "\"fields\": [{\"name\": \"y\", \"type\": \"uint16\", "
    "\"size\": 2}]}]}]}, "
    "{\"name\": \"mydev\", \"instance_id\": 0, \"vmsd_name\": \"mydev\", "
    "\"version\": 1, \"fields\": [{\"name\": \"reg\", \"type\": "
    "\"uint32\", \"size\": 4}]}, "
    "{\"name\": \"spapr_iommu\", \"instance_id\": 2147483648, "
    "\"vmsd_name\": \"spapr_iommu\", \"version\": 3, \"fields\": "
    "[{\"name\": \"liobn\", \"type\": \"uint32 equal\", \"size\": 4}]}, "
    "{\"name\": \"globalstate\", \"instance_id\": 0, \"vmsd_name\": "
    "\"globalstate\", \"version\": 1, \"fields\": [{\"name\": \"size\", "
    "\"type\": \"uint32\", \"size\": 4}, {\"name\": \"runstate\", "
    "\"type\": \"buffer\", \"size\": 3}]}]}";

/* The ics body: three 8-byte structs, then a subsection holding one
 * byte and a subsection of its own. */
static GByteArray *ics_body(void)
{
    GByteArray *a = g_byte_array_new();

    for (int i = 0; i < 24; i++) {
        put_be(a, 1, i);
    }
    put_be(a, 1, 0x05);
    put_str(a, "ics/sub");
    put_be(a, 4, 1);
    put_be(a, 1, 0x42);
    put_be(a, 1, 0x05);
    put_str(a, "ics/sub/in");
    put_be(a, 4, 1);
    put_be(a, 2, 0x7e7e);         /* a fake footer inside the body */
    return a;
}

static void qemu_stream_build(QemuStream *q, bool with_vmdesc)
{
    static const uint8_t timer[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 0x7e };
    static const uint8_t mydev[4] = { 0x11, 0x22, 0x33, 0x44 };
    static const uint8_t iommu[4] = { 0x80, 0, 0, 0 };
    static const uint8_t global[7] = { 0, 0, 0, 3, 'r', 'u', 'n' };
    g_autoptr(GByteArray) ram = ram_setup_body();
    g_autoptr(GByteArray) htab = htab_chunk_body();
    g_autoptr(GByteArray) ics = ics_body();
    uint8_t eos[8] = { 0, 0, 0, 0, 0, 0, 0, 0x10 };
    uint8_t no_table[4] = { 0xff, 0xff, 0xff, 0xff };
    GByteArray *a = g_byte_array_new();
    struct { const char *name; uint32_t inst, ver, id; const void *body;
             size_t len; } full[] = {
        { "timer", 0, 2, 3, timer, sizeof(timer) },
        { "ics", 0, 1, 4, ics->data, ics->len },
        { "mydev", 0, 1, 9, mydev, sizeof(mydev) },
        { "spapr_iommu", 0x80000000u, 3, 559, iommu, sizeof(iommu) },
        { "globalstate", 0, 1, 571, global, sizeof(global) },
    };
    int c = 0;

    memset(q, 0, sizeof(*q));
    g_byte_array_append(a, (const uint8_t *)"QEVM\0\0\0\3", 8);
    put_be(a, 1, QEMU_VM_CONFIGURATION);
    put_be(a, 4, 2);
    g_byte_array_append(a, (const uint8_t *)"pc", 2);
    put_record(a, QEMU_VM_SECTION_START, RAM_ID, "ram", 0, 4, ram->data,
               ram->len);
    q->htab[0] = put_record(a, QEMU_VM_SECTION_START, HTAB_ID, "spapr/htab",
                            0, 1, no_table, 4);
    q->htab_len[0] = a->len - q->htab[0];
    put_record(a, QEMU_VM_SECTION_END, RAM_ID, NULL, 0, 0, eos, 8);
    q->htab[1] = put_record(a, QEMU_VM_SECTION_END, HTAB_ID, NULL, 0, 0,
                            htab->data, htab->len);
    q->htab_len[1] = a->len - q->htab[1];
    for (size_t i = 0; i < G_N_ELEMENTS(full); i++) {
        size_t at = put_record(a, QEMU_VM_SECTION_FULL, full[i].id,
                               full[i].name, full[i].inst, full[i].ver,
                               full[i].body, full[i].len);

        if (strcmp(full[i].name, "mydev")) {
            q->carried[c] = at;
            q->carried_len[c++] = a->len - at;
        }
    }
    q->eof = a->len;
    put_be(a, 1, QEMU_VM_EOF);
    if (with_vmdesc) {
        put_be(a, 1, QEMU_VM_VMDESCRIPTION);
        put_be(a, 4, strlen(vmdesc_json));
        g_byte_array_append(a, (const uint8_t *)vmdesc_json,
                            strlen(vmdesc_json));
    }
    q->bytes = a;
}

static QEMUFile *input_of(const void *data, size_t len)
{
    g_autoptr(GBytes) b = g_bytes_new(data, len);

    return qemu_file_new_from_bytes(b);
}

/* The stream written now, as bytes. */
static GBytes *save_now(GuestRam *ram)
{
    FILE *tmp = tmpfile();
    int fd = dup(fileno(tmp));
    QEMUFile *out = qemu_file_new_output(fd);
    RamStats stats;
    size_t len;
    uint8_t *buf;

    fclose(tmp);
    g_assert_true(qemu_savevm_state(out, "pc", ram, &stats, NULL));
    g_assert_true(qemu_file_close(out, NULL));
    len = lseek(fd, 0, SEEK_END);
    buf = g_malloc(len);
    g_assert_cmpint(pread(fd, buf, len, 0), ==, (ssize_t)len);
    close(fd);
    return g_bytes_new_take(buf, len);
}

static const uint8_t *find(GBytes *hay, const void *needle, size_t len)
{
    gsize size;
    const uint8_t *data = g_bytes_get_data(hay, &size);

    return memmem(data, size, needle, len);
}

static void test_carry_round_trip(void)
{
    MyDev dev = { 0 };
    GuestRam *ram = guest_ram_new(RAM_SIZE, NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(GBytes) back = NULL;
    const uint8_t *prev = NULL, *mine;
    QemuStream q;
    QEMUFile *in;
    uint64_t bytes;
    unsigned sections;
    static const uint8_t my_section[] = {
        0x04, 0, 0, 0, 9, 5, 'm', 'y', 'd', 'e', 'v', 0, 0, 0, 0, 0, 0, 0, 1,
        0x11, 0x22, 0x33, 0x45, 0x7e, 0, 0, 0, 9,
    };

    vmstate_register("mydev", 0, &vmstate_mydev, &mydev_ops, &dev);
    qemu_stream_build(&q, true);
    in = input_of(q.bytes->data, q.bytes->len);
    if (!qemu_loadvm_state(in, "pc", ram, &err)) {
        g_error("%s", err->message);
    }
    qemu_file_free(in);
    g_assert_cmphex(dev.reg, ==, 0x11223344);
    g_assert_true(qemu_loadvm_carried(&bytes, &sections));
    g_assert_cmpuint(sections, ==, 5);     /* htab and four FULL */
    g_assert_cmpuint(qemu_loadvm_held_bytes(), ==,
                     q.bytes->len - q.carried[0] - 19);

    /* Back out: each carried record as it came, in its order; the
     * modelled section has its new state and the stream's id. */
    dev.reg = 0x11223345;
    back = save_now(ram);
    for (int i = 0; i < 2; i++) {
        const uint8_t *at = find(back, q.bytes->data + q.htab[i],
                                 q.htab_len[i]);

        g_assert_nonnull(at);
        g_assert_true(at > prev);
        prev = at;
    }
    mine = find(back, my_section, sizeof(my_section));
    g_assert_nonnull(mine);
    for (int i = 0; i < 4; i++) {
        const uint8_t *at = find(back, q.bytes->data + q.carried[i],
                                 q.carried_len[i]);

        g_assert_nonnull(at);
        g_assert_true(at > prev);
        g_assert_true(i != 2 || at > mine);
        g_assert_true(i != 1 || at < mine);
        prev = at;
    }
    /* The description written back covers them, so it loads again. */
    in = qemu_file_new_from_bytes(back);
    g_assert_true(qemu_loadvm_state(in, "pc", ram, &err));
    qemu_file_free(in);
    g_assert_cmphex(dev.reg, ==, 0x11223345);
    vmstate_unregister(&dev);
    g_byte_array_unref(q.bytes);
    guest_ram_free(ram);
}

/* What a hook finds by the description, and changes. */
static bool mark_status(StreamLayout *copy, void *opaque)
{
    size_t off, size, len;
    uint8_t *body = stream_layout_body(copy, "ics", 0, &len);

    (void)opaque;
    g_assert_nonnull(body);
    g_assert_true(stream_layout_find_field(copy, "ics", 0, "irqs", 2,
                                           "status", &off, &size));
    g_assert_cmpuint(off, ==, 22);
    g_assert_cmpuint(size, ==, 1);
    g_assert_cmpuint(body[off], ==, 22);
    g_assert_false(stream_layout_find_field(copy, "ics", 0, "irqs", 3,
                                            "status", &off, &size));
    g_assert_false(stream_layout_find_field(copy, "ics", 0, "irqs", 0,
                                            "nope", &off, &size));
    g_assert_true(stream_layout_find_field(copy, "timer", 0, "u", 0, NULL,
                                           &off, &size));
    g_assert_cmpuint(off, ==, 8);
    g_assert_true(stream_layout_find_subsection_field(copy, "ics", 0,
                                                      "ics/sub", "x", &off,
                                                      &size));
    g_assert_cmpuint(off, ==, 24 + 1 + 1 + 7 + 4);
    g_assert_cmpuint(body[off], ==, 0x42);
    g_assert_false(stream_layout_find_subsection_field(copy, "ics", 0,
                                                       "ics/sub", "y", &off,
                                                       &size));
    body[22] = 0xee;
    return true;
}

/* A hook's change goes out, and stays the machine's. */
static void test_carry_hook(void)
{
    MyDev dev = { 0 };
    GuestRam *ram = guest_ram_new(RAM_SIZE, NULL);
    g_autoptr(GBytes) first = NULL, second = NULL;
    QemuStream q;
    QEMUFile *in;
    uint8_t *ics;

    vmstate_register("mydev", 0, &vmstate_mydev, &mydev_ops, &dev);
    qemu_stream_build(&q, true);
    in = input_of(q.bytes->data, q.bytes->len);
    g_assert_true(qemu_loadvm_state(in, "pc", ram, NULL));
    qemu_file_free(in);
    qemu_savevm_set_carried_hook(mark_status, NULL);
    first = save_now(ram);
    qemu_savevm_set_carried_hook(NULL, NULL);
    second = save_now(ram);
    ics = q.bytes->data + q.carried[1];
    g_assert_null(find(first, ics, q.carried_len[1]));
    ics[17 + 22] = 0xee;          /* after the record's 17-byte header */
    g_assert_nonnull(find(first, ics, q.carried_len[1]));
    g_assert_nonnull(find(second, ics, q.carried_len[1]));
    vmstate_unregister(&dev);
    g_byte_array_unref(q.bytes);
    guest_ram_free(ram);
}

static char *refusal(const void *data, size_t len)
{
    GuestRam *ram = guest_ram_new(RAM_SIZE, NULL);
    MyDev dev = { 0 };
    QEMUFile *in = input_of(data, len);
    GError *err = NULL;
    char *msg;

    vmstate_register("mydev", 0, &vmstate_mydev, &mydev_ops, &dev);
    g_assert_false(qemu_loadvm_state(in, "pc", ram, &err));
    qemu_file_free(in);
    g_assert_cmphex(dev.reg, ==, 0);
    vmstate_unregister(&dev);
    guest_ram_free(ram);
    msg = g_strdup(err->message);
    g_error_free(err);
    g_test_message("refused: %s", msg);
    return msg;
}

static void assert_has(const char *msg, const char *part)
{
    if (!strstr(msg, part)) {
        g_error("'%s' lacks '%s'", msg, part);
    }
}

static void test_carry_refusals(void)
{
    QemuStream q;
    g_autofree char *none = NULL, *cut = NULL, *wrong = NULL, *extra = NULL;
    char *json;

    qemu_stream_build(&q, false);
    none = refusal(q.bytes->data, q.bytes->len);
    assert_has(none, "section 'timer' instance 0: illan does not model it "
               "and the stream has no VM description");
    assert_has(none, "suppress-vmdesc");
    g_byte_array_unref(q.bytes);

    qemu_stream_build(&q, true);
    cut = refusal(q.bytes->data, q.carried[1] + 20);
    assert_has(cut, "section 'timer' instance 0: illan does not model it, "
               "and the stream ends at byte");
    assert_has(cut, "truncated");

    /* Cut where the last byte is 0, as an EOF marker would be. */
    g_free(cut);
    g_assert_cmpuint(q.bytes->data[q.carried[0] + 19 + 9], ==, 0);
    cut = refusal(q.bytes->data, q.carried[0] + 19 + 10);
    assert_has(cut, "truncated");

    /* A description that says the ics body is a byte longer. */
    json = memmem(q.bytes->data, q.bytes->len, "\"array_len\": 3", 14);
    json[13] = '4';
    wrong = refusal(q.bytes->data, q.bytes->len);
    assert_has(wrong, "section 'ics' instance 0: missing section footer");
    json[13] = '3';

    /* A description nested deeper than a parser's stack allows. */
    {
        g_autoptr(GByteArray) deep = g_byte_array_new();
        g_autofree char *nested = NULL;
        g_autoptr(GString) json = g_string_new("{\"devices\": ");

        for (int i = 0; i < 100000; i++) {
            g_string_append_c(json, '[');
        }
        for (int i = 0; i < 100000; i++) {
            g_string_append_c(json, ']');
        }
        g_string_append_c(json, '}');
        g_byte_array_append(deep, q.bytes->data, q.eof + 1);
        g_byte_array_append(deep, (const uint8_t[]){ 0x06, json->len >> 24,
                                                     json->len >> 16,
                                                     json->len >> 8,
                                                     json->len }, 5);
        g_byte_array_append(deep, (const uint8_t *)json->str, json->len);
        nested = refusal(deep->data, deep->len);
        assert_has(nested, "section 'timer' instance 0: illan does not "
                   "model it, and the stream's description is bad: the VM "
                   "description nests more than");
    }

    /* A section the description does not cover. */
    json = memmem(q.bytes->data, q.bytes->len, "\"name\": \"timer\"", 15);
    json[9] = 'T';
    extra = refusal(q.bytes->data, q.bytes->len);
    assert_has(extra, "section 'timer' instance 0: the VM description does "
               "not cover it (its entry 0 is 'Timer' instance 0)");
    g_byte_array_unref(q.bytes);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/carry/round-trip", test_carry_round_trip);
    g_test_add_func("/carry/refusals", test_carry_refusals);
    g_test_add_func("/carry/hook", test_carry_hook);
    return g_test_run();
}
