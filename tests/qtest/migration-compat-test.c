/*
 * Streams written by earlier builds must load in this one.  Each fixture
 * in tests/migration is a stream (pseries-1.0 with pools off, pseries-2.0
 * with them on: a registered LAN, buffers of three sizes posted, the
 * queue past its first wrap and frames delivered but not yet read) and
 * the guest model's state beside it.  A destination loads the stream,
 * the guest reads the pending frames, and new frames land in the
 * restored buffers.  Each stream is also walked the way QEMU's analyzer
 * walks it, from its own description, which must account for every byte.
 *
 *   migration-compat-test --write-fixtures DIR   writes this build's set
 */
#include "migration-helpers.h"

#include <string.h>

#define FIXTURE_RAM     (16ULL << 20)

/* ---- Walking a stream by its description ---- */

typedef struct Walk {
    const uint8_t *p, *end;
    uint64_t page_size;
    size_t rx_pools;            /* field bytes of spapr_llan/rx_pools */
} Walk;

static uint64_t take(Walk *w, unsigned n)
{
    uint64_t v = 0;

    g_assert_cmpint(w->end - w->p, >=, n);
    for (unsigned i = 0; i < n; i++) {
        v = v << 8 | *w->p++;
    }
    return v;
}

static char *take_str(Walk *w)
{
    unsigned len = take(w, 1);
    char *s;

    g_assert_cmpint(w->end - w->p, >=, len);
    s = g_strndup((const char *)w->p, len);
    w->p += len;
    return s;
}

static void walk_vmsd(Walk *w, JsonObject *desc);

static void walk_fields(Walk *w, JsonArray *fields)
{
    for (guint i = 0; i < json_array_get_length(fields); i++) {
        JsonObject *f = json_array_get_object_element(fields, i);
        gint64 n = json_object_get_int_member_with_default(f, "array_len", 1);
        gint64 size = json_object_get_int_member(f, "size");
        const char *type = json_object_get_string_member(f, "type");

        for (gint64 k = 0; k < n; k++) {
            if (!strcmp(type, "struct")) {
                const uint8_t *start = w->p;

                walk_vmsd(w, json_object_get_object_member(f, "struct"));
                /* Elements of a folded array are all the same size. */
                g_assert_cmpint(w->p - start, ==, size);
            } else {
                g_assert_cmpint(w->end - w->p, >=, size);
                w->p += size;
            }
        }
    }
}

static void walk_vmsd(Walk *w, JsonObject *desc)
{
    JsonArray *subs;

    walk_fields(w, json_object_get_array_member(desc, "fields"));
    if (!json_object_has_member(desc, "subsections")) {
        return;
    }
    subs = json_object_get_array_member(desc, "subsections");
    for (guint i = 0; i < json_array_get_length(subs); i++) {
        JsonObject *sub = json_array_get_object_element(subs, i);
        g_autofree char *name = NULL;
        const uint8_t *start;

        g_assert_cmphex(take(w, 1), ==, 0x05);
        name = take_str(w);
        g_assert_cmpstr(name, ==,
                        json_object_get_string_member(sub, "vmsd_name"));
        g_assert_cmpint(take(w, 4), ==,
                        json_object_get_int_member(sub, "version"));
        start = w->p;
        walk_vmsd(w, sub);
        if (!strcmp(name, "spapr_llan/rx_pools")) {
            w->rx_pools = w->p - start;
        }
    }
}

/* RAM's built-in format: block list, then pages until EOS. */
static void walk_ram(Walk *w)
{
    for (;;) {
        uint64_t word = take(w, 8), flags = word & (w->page_size - 1);

        if (flags & 0x04) {
            for (uint64_t total = word & ~(w->page_size - 1); total;) {
                g_free(take_str(w));
                total -= take(w, 8);
            }
        }
        if (flags & (0x02 | 0x08) && !(flags & 0x20)) {
            g_free(take_str(w));
        }
        w->p += flags & 0x02 ? 1 : flags & 0x08 ? w->page_size : 0;
        if (flags & 0x10) {
            return;
        }
    }
}

/* The description, found as QEMU's analyzer finds it: after the last
 * NUL, the first '{', with 0x06 and the length before it. */
static JsonObject *find_vmdesc(const uint8_t *data, size_t len,
                               size_t *desc_at)
{
    const uint8_t *nul = data + len;
    const uint8_t *brace;
    g_autoptr(JsonParser) parser = json_parser_new();

    while (nul > data && *--nul != 0) {
    }
    brace = memchr(nul, '{', data + len - nul);
    g_assert_nonnull(brace);
    g_assert_cmphex(brace[-5], ==, 0x06);
    g_assert_cmpuint(((size_t)brace[-4] << 24 | brace[-3] << 16 |
                      brace[-2] << 8 | brace[-1]), ==, data + len - brace);
    g_assert_true(json_parser_load_from_data(parser, (const char *)brace,
                                             data + len - brace, NULL));
    *desc_at = brace - 5 - data;
    return json_object_ref(json_node_get_object(json_parser_get_root(parser)));
}

static JsonObject *find_device(JsonObject *desc, const char *name,
                               gint64 instance)
{
    JsonArray *devices = json_object_get_array_member(desc, "devices");

    for (guint i = 0; i < json_array_get_length(devices); i++) {
        JsonObject *d = json_array_get_object_element(devices, i);

        if (!strcmp(json_object_get_string_member(d, "name"), name) &&
            json_object_get_int_member(d, "instance_id") == instance) {
            return d;
        }
    }
    g_error("section '%s' instance %" G_GINT64_FORMAT " has no description",
            name, instance);
}

/* Walks the whole stream; returns the spapr_llan section's payload size
 * and its rx_pools subsection's field bytes (0 when absent). */
static void walk_stream(const uint8_t *data, size_t len, size_t *llan,
                        size_t *rx_pools)
{
    size_t desc_at;
    g_autoptr(JsonObject) desc = find_vmdesc(data, len, &desc_at);
    Walk w = { data, data + desc_at,
               json_object_get_int_member(desc, "page_size"), 0 };

    *llan = *rx_pools = 0;
    g_assert_cmphex(take(&w, 4), ==, 0x5145564d);
    g_assert_cmphex(take(&w, 4), ==, 3);
    g_assert_cmphex(take(&w, 1), ==, 0x07);
    walk_vmsd(&w, json_object_get_object_member(desc, "configuration"));
    for (;;) {
        unsigned type = take(&w, 1);
        uint32_t id;

        if (type == 0x00) {
            break;
        }
        id = take(&w, 4);
        if (type == 0x01 || type == 0x04) {
            g_autofree char *name = take_str(&w);
            gint64 instance = take(&w, 4);
            const uint8_t *start;

            take(&w, 4);
            start = w.p;
            if (!strcmp(name, "ram")) {
                walk_ram(&w);
            } else {
                JsonObject *dev = find_device(desc, name, instance);

                walk_vmsd(&w, dev);
                if (g_str_has_suffix(name, "/spapr_llan")) {
                    *llan = w.p - start;
                    *rx_pools = w.rx_pools;
                }
            }
        } else {
            g_assert_true(type == 0x02 || type == 0x03);
            walk_ram(&w);
        }
        g_assert_cmphex(take(&w, 1), ==, 0x7e);
        g_assert_cmpuint(take(&w, 4), ==, id);
    }
    /* Nothing between EOF and the description. */
    g_assert_true(w.p == w.end);
}

/* ---- Fixtures ---- */

static void write_fixture(const char *dir, const char *machine)
{
    g_autofree char *stream = g_strdup_printf("illan-%s-%s.mig",
                                              ILLAN_VERSION, machine);
    g_autofree char *path = g_build_filename(dir, stream, NULL);
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    g_autofree char *guest_path = NULL, *model = NULL, *pools = NULL;
    g_autofree char *text = NULL;
    Rig r;

    rig_init(&r);
    r.src = rig_start(&r, r.src_dev, machine, NULL, "-m 16M");
    rig_open_guest(&r, FIXTURE_RAM);
    /* 60 frames through a 41-entry queue, then 3 left unread. */
    for (int round = 0; round < 12; round++) {
        for (int i = 0; i < 5; i++) {
            rig_inject(&r, r.src_dev);
        }
        for (int i = 0; i < 5; i++) {
            rig_expect_next(&r);
        }
    }
    for (int i = 0; i < 3; i++) {
        rig_inject(&r, r.src_dev);
    }
    wait_delivered(r.src, r.sent);
    pools = pool_table(r.src);
    migrate(r.src, uri);
    model = qibmveth_save(r.veth);
    text = g_strdup_printf("[fixture]\nmachine=%s\nstream=%s\nsent=%u\n"
                           "seen=%u\npools=%s\n\n%s", machine, stream,
                           r.sent, r.seen, pools, model);
    guest_path = g_strdup_printf("%s/illan-%s-%s.guest", dir, ILLAN_VERSION,
                                 machine);
    g_assert_true(g_file_set_contents(guest_path, text, -1, NULL));
    g_assert_cmpint(qibmveth_close(r.veth), ==, H_SUCCESS);
    qtest_quit(r.src);
    rig_free(&r);
}

/* Loads one fixture and has its guest carry on. */
static void test_fixture(gconstpointer data)
{
    const char *guest_path = data;
    g_autofree char *text = NULL, *machine = NULL, *stream = NULL;
    g_autofree char *pools = NULL, *dst_pools = NULL, *state = NULL;
    g_autofree char *dir = g_path_get_dirname(guest_path);
    g_autofree char *stream_path = NULL, *incoming = NULL;
    g_autofree uint8_t *bytes = NULL;
    g_autoptr(GKeyFile) kf = g_key_file_new();
    size_t llan, rx_pools;
    gsize len;
    Rig r;

    g_assert_true(g_file_get_contents(guest_path, &text, NULL, NULL));
    g_assert_true(g_key_file_load_from_data(kf, text, -1, 0, NULL));
    machine = g_key_file_get_string(kf, "fixture", "machine", NULL);
    stream = g_key_file_get_string(kf, "fixture", "stream", NULL);
    pools = g_key_file_get_string(kf, "fixture", "pools", NULL);
    stream_path = g_build_filename(dir, stream, NULL);

    g_assert_true(g_file_get_contents(stream_path, (char **)&bytes, &len,
                                      NULL));
    walk_stream(bytes, len, &llan, &rx_pools);
    g_test_message("%s: %zu bytes; spapr_llan section %zu bytes, of which "
                   "rx_pools fields %zu", stream, len, llan, rx_pools);
    g_assert_cmpuint(rx_pools, ==,
                     strcmp(machine, "pseries-1.0") ? 163880 : 0);

    rig_init(&r);
    r.sent = g_key_file_get_integer(kf, "fixture", "sent", NULL);
    r.seen = g_key_file_get_integer(kf, "fixture", "seen", NULL);
    incoming = g_strdup_printf("-m 16M -incoming file:%s", stream_path);
    r.dst = rig_start(&r, r.dst_dev, machine, NULL, incoming);
    assert_completed(r.dst);
    state = run_state(r.dst);
    g_assert_cmpstr(state, ==, "running");
    dst_pools = pool_table(r.dst);
    g_assert_cmpstr(dst_pools, ==, pools);
    r.veth = qibmveth_restore(r.dst, text);
    while (r.seen < r.sent) {
        rig_expect_next(&r);
    }
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 5; i++) {
            rig_inject(&r, r.dst_dev);
        }
        for (int i = 0; i < 5; i++) {
            rig_expect_next(&r);
        }
    }
    g_assert_cmpint(qibmveth_close(r.veth), ==, H_SUCCESS);
    qtest_quit(r.dst);
    rig_free(&r);
}

int main(int argc, char **argv)
{
    const char *dir = g_getenv("ILLAN_FIXTURES");
    g_autoptr(GPtrArray) guests = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GDir) d = NULL;
    const char *name;

    if (argc == 3 && !strcmp(argv[1], "--write-fixtures")) {
        write_fixture(argv[2], "pseries-1.0");
        write_fixture(argv[2], "pseries-2.0");
        return 0;
    }
    g_test_init(&argc, &argv, NULL);
    g_assert_nonnull(dir);
    d = g_dir_open(dir, 0, NULL);
    g_assert_nonnull(d);
    while ((name = g_dir_read_name(d))) {
        if (g_str_has_suffix(name, ".guest")) {
            g_ptr_array_add(guests, g_build_filename(dir, name, NULL));
        }
    }
    /* Every release adds its pair; at least this one's must be there. */
    g_assert_cmpuint(guests->len, >=, 2);
    for (guint i = 0; i < guests->len; i++) {
        const char *path = g_ptr_array_index(guests, i);
        g_autofree char *base = g_path_get_basename(path);
        g_autofree char *test = g_strdup_printf("/migration-compat/%s", base);

        g_test_add_data_func(test, path, test_fixture);
    }
    return g_test_run();
}
