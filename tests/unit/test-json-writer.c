/*
 * Unit tests for the JSON writer (util/json-writer.c): what it writes is
 * strict JSON whatever it is given, doubles read back as the same value,
 * and a json-glib tree comes out member for member.
 */
#include "qemu/json-writer.h"

#include <math.h>
#include <string.h>

/* @w's text parses, holds no raw control byte and no byte past 0x7E. */
static JsonNode *assert_strict(JsonWriter *w)
{
    const char *text = json_writer_text(w);
    g_autoptr(GError) err = NULL;
    JsonNode *node;

    for (const char *p = text; *p; p++) {
        g_assert_cmpint((unsigned char)*p, >=, 0x20);
        g_assert_cmpint((unsigned char)*p, <, 0x7F);
    }
    node = json_from_string(text, &err);
    g_assert_no_error(err);
    return node;
}

static void test_strings(void)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        { "\b\f\n\r\t\"\\/", "\"\\b\\f\\n\\r\\t\\\"\\\\/\"" },
        { "\x01\x1f\x7f", "\"\\u0001\\u001F\\u007F\"" },
        { "\xc3\xa9", "\"\\u00E9\"" },
        { "\xf0\x9f\x98\x80", "\"\\uD83D\\uDE00\"" },
        { "a\xffz", "\"a\\uFFFDz\"" },
        { "\xc3", "\"\\uFFFD\"" },
    };
    char all[128];

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        JsonWriter *w = json_writer_new(false);

        json_writer_str(w, NULL, cases[i].in);
        g_assert_cmpstr(json_writer_text(w), ==, cases[i].out);
        json_node_unref(assert_strict(w));
        json_writer_free(w);
    }
    /* Every ASCII character reads back as itself. */
    for (int c = 1; c < 128; c++) {
        all[c - 1] = c;
    }
    all[127] = 0;
    {
        JsonWriter *w = json_writer_new(false);
        g_autoptr(JsonNode) n = NULL;

        json_writer_str(w, NULL, all);
        n = assert_strict(w);
        g_assert_cmpstr(json_node_get_string(n), ==, all);
        json_writer_free(w);
    }
}

static char *double_text(double d)
{
    JsonWriter *w = json_writer_new(false);
    char *text;

    json_writer_double(w, NULL, d);
    text = g_strdup(json_writer_text(w));
    json_writer_free(w);
    return text;
}

static void test_doubles(void)
{
    static const struct {
        double in;
        const char *out;
    } cases[] = {
        { 1.5, "1.5" }, { 100, "100.0" }, { 0, "0.0" }, { -0.0, "-0.0" },
        { 1e308, "1e+308" }, { 0.1, "0.1" }, { 1e16, "10000000000000000.0" },
        { 1.0 / 3, "0.3333333333333333" }, { 123.456, "123.456" },
        { 5e-324, "5e-324" }, { INFINITY, "null" },
        { -INFINITY, "null" }, { NAN, "null" },
    };
    GRand *rand = g_rand_new_with_seed(14);

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *text = double_text(cases[i].in);

        g_assert_cmpstr(text, ==, cases[i].out);
    }
    /* Random bit patterns read back exactly, and read as doubles. */
    for (int i = 0; i < 100000; i++) {
        union { guint64 bits; double d; } u;
        g_autofree char *text = NULL;

        u.bits = (guint64)g_rand_int(rand) << 32 | g_rand_int(rand);
        if (!isfinite(u.d)) {
            continue;
        }
        text = double_text(u.d);
        g_assert_true(g_ascii_strtod(text, NULL) == u.d);
        g_assert_nonnull(strpbrk(text, ".e"));
    }
    g_rand_free(rand);
}

/* A tree comes out in member order, in QEMU's compact layout. */
static void test_node(void)
{
    static const char text[] =
        "{\"b\": [1, 2.5, true, null, \"s\\u0001\"], \"a\": {}, "
        "\"c\": [], \"d\": {\"e\": -7}}";
    g_autoptr(JsonNode) in = json_from_string(text, NULL);
    JsonWriter *w = json_writer_new(false);

    json_writer_node(w, NULL, in);
    g_assert_cmpstr(json_writer_text(w), ==, text);
    json_writer_free(w);
    w = json_writer_new(false);
    json_writer_start_object(w, NULL);
    json_writer_raw(w, "id", "18446744073709551616");
    json_writer_null(w, "n");
    json_writer_end_object(w);
    g_assert_cmpstr(json_writer_text(w), ==,
                    "{\"id\": 18446744073709551616, \"n\": null}");
    json_writer_free(w);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/json-writer/strings", test_strings);
    g_test_add_func("/json-writer/doubles", test_doubles);
    g_test_add_func("/json-writer/node", test_node);
    return g_test_run();
}
