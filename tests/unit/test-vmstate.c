/*
 * vmstate and the stream, byte for byte: QEMU's example section from the
 * protocol notes, the description JSON, versions and tests, arrays of
 * structs and of pointers, subsections, and the refusals of a loader.
 */
#include "migration/savevm.h"
#include "migration/vmstate.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A stream in a memory file, written and then read back. */
typedef struct Wire {
    int fd;
    QEMUFile *out;
} Wire;

static void wire_open(Wire *w)
{
    FILE *tmp = tmpfile();

    g_assert_nonnull(tmp);
    w->fd = dup(fileno(tmp));
    fclose(tmp);
    w->out = qemu_file_new_output(w->fd);
}

/* Ends writing; returns the bytes written (caller frees). */
static uint8_t *wire_bytes(Wire *w, size_t *len)
{
    uint8_t *buf;

    g_assert_true(qemu_file_close(w->out, NULL));
    *len = lseek(w->fd, 0, SEEK_END);
    buf = g_malloc(*len + 1);
    g_assert_cmpint(pread(w->fd, buf, *len, 0), ==, (ssize_t)*len);
    return buf;
}

static QEMUFile *wire_input(Wire *w)
{
    lseek(w->fd, 0, SEEK_SET);
    return qemu_file_new_input(w->fd);
}

/* The example device: uint32 reg, subsection mydev/sub with uint8 flag. */
typedef struct MyDev {
    uint32_t reg;
    uint8_t flag;
    bool sub_needed;
} MyDev;

static bool sub_needed(void *opaque)
{
    return ((MyDev *)opaque)->sub_needed;
}

static const VMStateDescription vmstate_mydev_sub = {
    .name = "mydev/sub",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = sub_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(flag, MyDev),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_mydev = {
    .name = "mydev",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(reg, MyDev),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription *const[]) {
        &vmstate_mydev_sub,
        NULL
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

/* The protocol notes' verified example, from header to footer. */
static void test_example_stream(void)
{
    static const uint8_t head[] = {
        0x51, 0x45, 0x56, 0x4d, 0x00, 0x00, 0x00, 0x03,
        0x07, 0x00, 0x00, 0x00, 0x02, 'p', 'c',
    };
    static const uint8_t section_tail[] = {
        0x05, 'm', 'y', 'd', 'e', 'v',
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
        0x11, 0x22, 0x33, 0x44,
        0x05, 0x09, 'm', 'y', 'd', 'e', 'v', '/', 's', 'u', 'b',
        0x00, 0x00, 0x00, 0x01, 0x7f,
        0x7e,
    };
    static const char device_desc[] =
        "{\"name\": \"mydev\", \"instance_id\": 0, \"vmsd_name\": \"mydev\", "
        "\"version\": 1, \"fields\": [{\"name\": \"reg\", \"type\": "
        "\"uint32\", \"size\": 4}], \"subsections\": [{\"vmsd_name\": "
        "\"mydev/sub\", \"version\": 1, \"fields\": [{\"name\": \"flag\", "
        "\"type\": \"uint8\", \"size\": 1}]}]}";
    MyDev dev = { .reg = 0x11223344, .flag = 0x7f, .sub_needed = true };
    MyDev back = { 0 };
    g_autoptr(GError) err = NULL;
    g_autofree uint8_t *bytes = NULL;
    GuestRam *ram = guest_ram_new(16 << 20, NULL);
    RamStats stats;
    Wire w;
    size_t len, json_len;
    uint8_t *sec, *eof;
    QEMUFile *in;

    vmstate_register("mydev", 0, &vmstate_mydev, &mydev_ops, &dev);
    wire_open(&w);
    g_assert_true(qemu_savevm_state(w.out, "pc", ram, &stats, NULL));
    bytes = wire_bytes(&w, &len);
    g_assert_cmpmem(bytes, sizeof(head), head, sizeof(head));
    g_assert_cmpuint(stats.duplicate, ==, 4096);
    g_assert_cmpuint(stats.normal, ==, 0);
    /* FULL, a section id, then the rest exactly as QEMU's. */
    sec = memmem(bytes, len, section_tail, sizeof(section_tail));
    g_assert_nonnull(sec);
    g_assert_cmpuint(sec[-5], ==, 0x04);
    g_assert_cmpmem(sec - 4, 4, sec + sizeof(section_tail), 4);
    eof = sec + sizeof(section_tail) + 4;
    g_assert_cmpuint(eof[0], ==, 0x00);
    g_assert_cmpuint(eof[1], ==, 0x06);
    json_len = (size_t)eof[2] << 24 | eof[3] << 16 | eof[4] << 8 | eof[5];
    g_assert_cmpuint((size_t)(eof + 6 - bytes) + json_len, ==, len);
    bytes[len] = 0;
    g_assert_nonnull(strstr((char *)eof + 6, device_desc));
    g_assert_nonnull(strstr((char *)eof + 6, "\"page_size\": 4096"));

    /* Read back into a fresh device: only a whole load commits. */
    vmstate_unregister(&dev);
    vmstate_register("mydev", 0, &vmstate_mydev, &mydev_ops, &back);
    in = wire_input(&w);
    g_assert_true(qemu_loadvm_state(in, "pc", ram, &err));
    g_assert_no_error(err);
    g_assert_cmphex(back.reg, ==, 0x11223344);
    g_assert_cmphex(back.flag, ==, 0x7f);
    qemu_file_close(in, NULL);
    /* Another machine type is refused before any section. */
    back = (MyDev){ 0 };
    in = wire_input(&w);
    g_assert_false(qemu_loadvm_state(in, "pseries-2.0", ram, &err));
    g_assert_nonnull(strstr(err->message, "machine type mismatch"));
    g_assert_cmphex(back.reg, ==, 0);
    qemu_file_close(in, NULL);
    vmstate_unregister(&back);
    close(w.fd);
    guest_ram_free(ram);
}

/* Everything the loader refuses at stream level, one message each. */
static void test_stream_refusals(void)
{
    static const struct {
        const uint8_t *bytes;
        size_t len;
        const char *msg;
    } cases[] = {
        { (const uint8_t *)"QEVX\0\0\0\3", 8, "not a migration stream" },
        { (const uint8_t *)"QEVM\0\0\0\2", 8, "version 2 is obsolete" },
        { (const uint8_t *)"QEVM\0\0\0\4", 8, "unsupported migration stream "
                                              "version 4" },
        { (const uint8_t *)"QEVM\0\0\0\3\4", 9, "configuration section "
                                                "missing" },
        { (const uint8_t *)"QEVM\0\0\0\3\7\0\0\0\2pc\x09", 16,
          "unknown section type 0x09" },
        { (const uint8_t *)"QEVM\0\0\0\3\7\0\0\0\2pc", 15, "truncated" },
        { (const uint8_t *)"QEVM\0\0\0\3\7\0\0\1\0", 13, "configuration: "
          "field 'len': input validation failed: must be under 256 (the "
          "machine type name's length)" },
    };
    GuestRam *ram = guest_ram_new(16 << 20, NULL);

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) err = NULL;
        QEMUFile *in;
        Wire w;
        size_t len;

        wire_open(&w);
        qemu_put_buffer(w.out, cases[i].bytes, cases[i].len);
        g_free(wire_bytes(&w, &len));
        in = wire_input(&w);
        g_assert_false(qemu_loadvm_state(in, "pc", ram, &err));
        if (!strstr(err->message, cases[i].msg)) {
            g_error("case %zu: '%s' lacks '%s'", i, err->message,
                    cases[i].msg);
        }
        qemu_file_close(in, NULL);
        close(w.fd);
    }
    guest_ram_free(ram);
}

/* A state with every kind of field. */
typedef struct Elem {
    int32_t a;
    uint16_t b;
} Elem;

typedef struct Kinds {
    bool flag;
    int8_t i8;
    int16_t i16;
    int64_t i64;
    uint32_t since_v2;
    uint32_t tested;
    uint32_t equal;
    int32_t le;
    double d;
    uint8_t buf[3];
    uint64_t words[4];
    Elem elems[2];
    Elem *ptrs[4];
    Elem storage[4];
    uint32_t n;
    uint16_t *var;
    uint16_t var_storage[8];
    bool test_result;
} Kinds;

static bool kinds_tested(void *opaque, int version_id)
{
    (void)version_id;
    return ((Kinds *)opaque)->test_result;
}

static bool kinds_n_ok(void *opaque, int version_id)
{
    (void)version_id;
    return ((Kinds *)opaque)->n <= 8;
}

static const VMStateDescription vmstate_elem = {
    .name = "elem",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_INT32(a, Elem),
        VMSTATE_UINT16(b, Elem),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_kinds = {
    .name = "kinds",
    .version_id = 2,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(flag, Kinds),
        VMSTATE_INT8(i8, Kinds),
        VMSTATE_INT16(i16, Kinds),
        VMSTATE_INT64(i64, Kinds),
        VMSTATE_UINT32_V(since_v2, Kinds, 2),
        VMSTATE_UINT32_TEST(tested, Kinds, kinds_tested),
        VMSTATE_UINT32_EQUAL(equal, Kinds),
        VMSTATE_INT32_LE(le, Kinds),
        VMSTATE_CPUDOUBLE(d, Kinds),
        VMSTATE_BUFFER(buf, Kinds),
        VMSTATE_UNUSED(2),
        VMSTATE_UINT64_ARRAY(words, Kinds, 4),
        VMSTATE_STRUCT_ARRAY(elems, Kinds, 2, 0, vmstate_elem, Elem),
        VMSTATE_ARRAY_OF_POINTER_TO_STRUCT(ptrs, Kinds, 4, 0, vmstate_elem,
                                           Elem),
        VMSTATE_UINT32(n, Kinds),
        VMSTATE_VALIDATE("n", "must be at most 8", kinds_n_ok),
        VMSTATE_VARRAY_UINT32(var, Kinds, n, 0, vmstate_info_uint16,
                              uint16_t),
        VMSTATE_UNUSED(1),
        VMSTATE_END_OF_LIST()
    },
};

static void kinds_init(Kinds *k, bool filled)
{
    *k = (Kinds){ .equal = 0xabcd, .le = 100, .test_result = true };
    for (int i = 0; i < 4; i++) {
        k->ptrs[i] = i == 2 ? NULL : &k->storage[i];
    }
    k->var = k->var_storage;
    if (!filled) {
        return;
    }
    k->flag = true;
    k->i8 = -2;
    k->i16 = -300;
    k->i64 = -5;
    k->since_v2 = 0x22;
    k->tested = 0x33;
    k->le = 60;
    k->d = 1.5;
    memcpy(k->buf, "xyz", 3);
    for (int i = 0; i < 4; i++) {
        k->words[i] = 0x0101010101010101ULL * (i + 1);
        k->storage[i] = (Elem){ -i, 0x100 + i };
    }
    k->elems[0] = (Elem){ 7, 8 };
    k->elems[1] = (Elem){ 9, 10 };
    k->n = 3;
    for (int i = 0; i < 3; i++) {
        k->var_storage[i] = 0xbeef + i;
    }
}

static uint8_t *save_kinds(Kinds *k, Wire *w, size_t *len, char **desc)
{
    JsonWriter *jw = json_writer_new(false);

    wire_open(w);
    json_writer_start_object(jw, NULL);
    vmstate_save_state(w->out, &vmstate_kinds, k, jw);
    json_writer_end_object(jw);
    *desc = g_strdup(json_writer_text(jw));
    json_writer_free(jw);
    return wire_bytes(w, len);
}

static void test_kinds_round_trip(void)
{
    Kinds k, back;
    Wire w;
    size_t len;
    g_autofree char *desc = NULL;
    g_autofree uint8_t *bytes = NULL;
    g_autoptr(GError) err = NULL;
    QEMUFile *in;
    /* 1+1+2+8+4+4+4+4+8+3+2+32+12+(6+6+1+6)+4+6+1 bytes */
    const size_t expected = 1 + 1 + 2 + 8 + 4 + 4 + 4 + 4 + 8 + 3 + 2 + 32 +
                            12 + 19 + 4 + 6 + 1;

    kinds_init(&k, true);
    bytes = save_kinds(&k, &w, &len, &desc);
    g_assert_cmpuint(len, ==, expected);
    /* The double as its upper then lower half; NULL as '0'. */
    g_assert_cmphex(bytes[28], ==, 0x3f);
    g_assert_cmphex(bytes[29], ==, 0xf8);
    g_assert_cmpuint(bytes[expected - 1 - 6 - 4 - 6 - 1], ==, 0x30);
    g_test_message("%s", desc);
    g_assert_nonnull(strstr(desc, "{\"name\": \"words\", \"array_len\": 4, "
                              "\"type\": \"uint64\", \"size\": 8}"));
    g_assert_nonnull(strstr(desc, "{\"name\": \"unused[0]\", \"type\": "
                              "\"unused_buffer\", \"size\": 2}"));
    g_assert_nonnull(strstr(desc, "{\"name\": \"ptrs\", \"array_len\": 2, "
                              "\"type\": \"struct\", \"struct\": "
                              "{\"vmsd_name\": \"elem\", \"version\": 1, "
                              "\"fields\": [{\"name\": \"a\", \"type\": "
                              "\"int32\", \"size\": 4}, {\"name\": \"b\", "
                              "\"type\": \"uint16\", \"size\": 2}]}, "
                              "\"size\": 6}, {\"name\": \"ptrs\", "
                              "\"type\": \"nullptr\", \"size\": 1}, "
                              "{\"name\": \"ptrs\", \"type\": \"struct\""));
    g_assert_nonnull(strstr(desc, "{\"name\": \"tested\", \"type\": "
                              "\"uint32\", \"size\": 4}"));
    g_assert_nonnull(strstr(desc, "{\"name\": \"var\", \"array_len\": 3, "
                              "\"type\": \"uint16\", \"size\": 2}"));
    /* The validation of n is no field: n keeps its name. */
    g_assert_nonnull(strstr(desc, "{\"name\": \"n\", \"type\": "
                              "\"uint32\", \"size\": 4}"));
    g_assert_null(strstr(desc, "n is at most 8"));

    kinds_init(&back, false);
    in = wire_input(&w);
    g_assert_true(vmstate_load_state(in, &vmstate_kinds, &back, 2, &err));
    g_assert_true(back.flag);
    g_assert_cmpint(back.i8, ==, -2);
    g_assert_cmpint(back.i16, ==, -300);
    g_assert_cmpint(back.i64, ==, -5);
    g_assert_cmphex(back.since_v2, ==, 0x22);
    g_assert_cmphex(back.tested, ==, 0x33);
    g_assert_cmpint(back.le, ==, 60);
    g_assert_true(back.d == 1.5);
    g_assert_cmpmem(back.buf, 3, "xyz", 3);
    g_assert_cmpmem(back.words, sizeof(back.words), k.words, sizeof(k.words));
    g_assert_cmpint(back.elems[1].a, ==, 9);
    g_assert_cmpint(back.storage[3].b, ==, 0x103);
    g_assert_cmpuint(back.n, ==, 3);
    g_assert_cmphex(back.var_storage[2], ==, 0xbef1);
    qemu_file_close(in, NULL);
    close(w.fd);
}

/* A field whose test is false is not on the wire, and the loader, with
 * the same test, does not read it; versions outside min..max are refused. */
static void test_versions_and_tests(void)
{
    Kinds k, back;
    Wire w;
    size_t len;
    g_autofree char *desc = NULL;
    g_autofree uint8_t *bytes = NULL;
    g_autoptr(GError) err = NULL;
    QEMUFile *in;

    kinds_init(&k, true);
    k.test_result = false;
    bytes = save_kinds(&k, &w, &len, &desc);
    g_assert_null(strstr(desc, "\"tested\""));
    kinds_init(&back, false);
    back.test_result = false;
    in = wire_input(&w);
    g_assert_true(vmstate_load_state(in, &vmstate_kinds, &back, 2, &err));
    g_assert_cmphex(back.tested, ==, 0);
    qemu_file_close(in, NULL);

    /* Too new, too old. */
    in = wire_input(&w);
    g_assert_false(vmstate_load_state(in, &vmstate_kinds, &back, 3, &err));
    g_assert_nonnull(strstr(err->message, "version 3 is newer"));
    g_clear_error(&err);
    g_assert_false(vmstate_load_state(in, &vmstate_kinds, &back, 0, &err));
    g_assert_nonnull(strstr(err->message, "version 0 is older"));
    g_clear_error(&err);
    qemu_file_close(in, NULL);
    close(w.fd);
}

/* Received values the local state refuses, each named by field. */
static void test_value_refusals(void)
{
    Kinds k, back;
    Wire w;
    size_t len;
    g_autofree char *desc = NULL;
    g_autofree uint8_t *bytes = NULL;
    g_autoptr(GError) err = NULL;
    QEMUFile *in;

    kinds_init(&k, true);
    k.equal = 0x1234;
    k.le = 101;
    bytes = save_kinds(&k, &w, &len, &desc);
    kinds_init(&back, false);
    in = wire_input(&w);
    g_assert_false(vmstate_load_state(in, &vmstate_kinds, &back, 2, &err));
    g_assert_cmpstr(err->message, ==, "field 'equal': received 0x1234, but "
                    "this machine has 0xabcd");
    qemu_file_close(in, NULL);
    close(w.fd);
    g_clear_error(&err);
    g_free(bytes);
    g_free(desc);

    kinds_init(&k, true);
    k.le = 101;
    bytes = save_kinds(&k, &w, &len, &desc);
    in = wire_input(&w);
    g_assert_false(vmstate_load_state(in, &vmstate_kinds, &back, 2, &err));
    g_assert_cmpstr(err->message, ==, "field 'le': received 101, outside "
                    "0..100");
    qemu_file_close(in, NULL);
    close(w.fd);
    g_clear_error(&err);
    g_free(bytes);
    g_free(desc);

    /* A count past what the state holds fails its validation before the
     * array is read. */
    kinds_init(&k, true);
    k.n = 9;
    k.var = g_new0(uint16_t, 9);
    bytes = save_kinds(&k, &w, &len, &desc);
    g_free(k.var);
    kinds_init(&back, false);
    in = wire_input(&w);
    g_assert_false(vmstate_load_state(in, &vmstate_kinds, &back, 2, &err));
    g_assert_cmpstr(err->message, ==, "field 'n': input validation failed: "
                    "must be at most 8");
    qemu_file_close(in, NULL);
    close(w.fd);
}

/* A subsection this build does not have breaks the load; one for
 * another parent is left for it. */
static void test_subsections(void)
{
    static const uint8_t unknown[] = {
        0x11, 0x22, 0x33, 0x44,
        0x05, 0x09, 'm', 'y', 'd', 'e', 'v', '/', 'x', 'x', 'x',
        0x00, 0x00, 0x00, 0x01, 0x7f,
    };
    static const uint8_t other[] = {
        0x11, 0x22, 0x33, 0x44,
        0x05, 0x09, 'o', 't', 'h', 'e', 'r', '/', 's', 'u', 'b',
    };
    MyDev back = { 0 };
    g_autoptr(GError) err = NULL;
    QEMUFile *in;
    Wire w;
    size_t len;

    wire_open(&w);
    qemu_put_buffer(w.out, unknown, sizeof(unknown));
    g_free(wire_bytes(&w, &len));
    in = wire_input(&w);
    g_assert_false(vmstate_load_state(in, &vmstate_mydev, &back, 1, &err));
    g_assert_cmpstr(err->message, ==, "subsection 'mydev/xxx' does not exist "
                    "in 'mydev' in this build");
    qemu_file_close(in, NULL);
    close(w.fd);

    wire_open(&w);
    qemu_put_buffer(w.out, other, sizeof(other));
    g_free(wire_bytes(&w, &len));
    in = wire_input(&w);
    g_assert_true(vmstate_load_state(in, &vmstate_mydev, &back, 1, NULL));
    g_assert_cmpint(qemu_peek_byte(in, 0), ==, 0x05);
    qemu_file_close(in, NULL);
    close(w.fd);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/vmstate/example-stream", test_example_stream);
    g_test_add_func("/vmstate/stream-refusals", test_stream_refusals);
    g_test_add_func("/vmstate/kinds-round-trip", test_kinds_round_trip);
    g_test_add_func("/vmstate/versions-and-tests", test_versions_and_tests);
    g_test_add_func("/vmstate/value-refusals", test_value_refusals);
    g_test_add_func("/vmstate/subsections", test_subsections);
    return g_test_run();
}
