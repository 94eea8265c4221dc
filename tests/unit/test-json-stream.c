/*
 * Unit tests for the JSON stream splitter (monitor/json-stream.c) on its
 * own: where texts begin and end, how single-quoted strings are rewritten,
 * and the size and depth limits.  Each test feeds bytes and checks the
 * texts handed over, in order, with their error codes.
 */
#include "monitor/json-stream.h"

#include <json-glib/json-glib.h>
#include <string.h>

typedef struct Got {
    char *text;
    JsonStreamError error;
} Got;

typedef struct Sink {
    GArray *got;            /* Got */
    JsonStream *js;
} Sink;

static void on_text(void *opaque, const char *text, JsonStreamError error)
{
    Sink *s = opaque;
    Got g = { g_strdup(text), error };

    g_assert_nonnull(text);
    g_array_append_val(s->got, g);
}

static void got_clear(gpointer p)
{
    g_free(((Got *)p)->text);
}

static void sink_init(Sink *s)
{
    s->got = g_array_new(FALSE, FALSE, sizeof(Got));
    g_array_set_clear_func(s->got, got_clear);
    s->js = json_stream_new(on_text, s);
}

static void sink_fini(Sink *s)
{
    json_stream_free(s->js);
    g_array_unref(s->got);
}

static void feed(Sink *s, const char *data)
{
    json_stream_feed(s->js, data, strlen(data));
}

static guint count(Sink *s)
{
    return s->got->len;
}

/* Text @i was handed over without error and equals @want. */
static void assert_text(Sink *s, guint i, const char *want)
{
    Got *g;

    g_assert_cmpuint(i, <, s->got->len);
    g = &g_array_index(s->got, Got, i);
    g_assert_cmpint(g->error, ==, JSON_STREAM_OK);
    g_assert_cmpstr(g->text, ==, want);
}

/* Text @i was an error @err, handed over with an empty text. */
static void assert_error(Sink *s, guint i, JsonStreamError err)
{
    Got *g;

    g_assert_cmpuint(i, <, s->got->len);
    g = &g_array_index(s->got, Got, i);
    g_assert_cmpint(g->error, ==, err);
    g_assert_cmpstr(g->text, ==, "");
}

/* The texts @data splits into, as one string per text ("E1"/"E2" for
 * errors), when fed in chunks of the given sizes (0-terminated list;
 * the rest in one piece). */
static GPtrArray *split(const char *data, size_t len, const size_t *chunks)
{
    Sink s;
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    size_t done = 0;

    sink_init(&s);
    for (; chunks && *chunks && done < len; chunks++) {
        size_t n = MIN(*chunks, len - done);

        json_stream_feed(s.js, data + done, n);
        done += n;
    }
    json_stream_feed(s.js, data + done, len - done);
    for (guint i = 0; i < s.got->len; i++) {
        Got *g = &g_array_index(s.got, Got, i);

        g_ptr_array_add(out, !g->error ? g_strdup(g->text)
                             : *g->text ? g_strdup_printf("E%d:%s", g->error,
                                                          g->text)
                             : g_strdup_printf("E%d", g->error));
    }
    sink_fini(&s);
    return out;
}

static void assert_same(GPtrArray *a, GPtrArray *b)
{
    g_assert_cmpuint(a->len, ==, b->len);
    for (guint i = 0; i < a->len; i++) {
        g_assert_cmpstr(a->pdata[i], ==, b->pdata[i]);
    }
}

/* Parses @text with json-glib, as the monitor does. */
static JsonNode *parse(const char *text)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) err = NULL;

    if (!json_parser_load_from_data(parser, text, -1, &err)) {
        g_error("'%s' does not parse: %s", text, err->message);
    }
    return json_node_copy(json_parser_get_root(parser));
}

/* ---- where texts end ---- */

static void test_back_to_back(void)
{
    Sink s;

    sink_init(&s);
    feed(&s, "{\"a\":1}{\"b\":2}[3]{}[]");
    g_assert_cmpuint(count(&s), ==, 5);
    assert_text(&s, 0, "{\"a\":1}");
    assert_text(&s, 1, "{\"b\":2}");
    assert_text(&s, 2, "[3]");
    assert_text(&s, 3, "{}");
    assert_text(&s, 4, "[]");
    /* White space between texts is dropped; inside one it is kept. */
    feed(&s, " \r\n\t{ \"c\" :\n3 }\r\n");
    g_assert_cmpuint(count(&s), ==, 6);
    assert_text(&s, 5, "{ \"c\" :\n3 }");
    /* An open object is held until it closes. */
    feed(&s, "{\"d\":");
    g_assert_cmpuint(count(&s), ==, 6);
    feed(&s, "4}");
    g_assert_cmpuint(count(&s), ==, 7);
    assert_text(&s, 6, "{\"d\":4}");
    sink_fini(&s);
}

static void test_nested(void)
{
    Sink s;

    sink_init(&s);
    feed(&s, "[[1,[2,[3]]],[[]],{\"a\":[{\"b\":[]}]}]");
    g_assert_cmpuint(count(&s), ==, 1);
    assert_text(&s, 0, "[[1,[2,[3]]],[[]],{\"a\":[{\"b\":[]}]}]");
    /* The splitter tracks depth, not pairing: a mismatched closer still
     * ends a level, and the parser is left to refuse the text. */
    feed(&s, "{\"a\":[1}]");
    g_assert_cmpuint(count(&s), ==, 2);
    assert_text(&s, 1, "{\"a\":[1}]");
    feed(&s, "{]");
    assert_text(&s, 2, "{]");
    feed(&s, "[}");
    assert_text(&s, 3, "[}");
    g_assert_cmpuint(count(&s), ==, 4);
    sink_fini(&s);
}

static void test_strings_with_brackets(void)
{
    static const char *const texts[] = {
        "{\"a\":\"}{][\"}",
        "{\"a\":\"x\\\"}y\",\"b\":\"\\\\\"}",
        "[\"\\\\\\\"]\",\"[[[[\"]",
        "{\"a\":\"\\u007d\\n\\t\\/\"}",
        "{\"a'b\":\"it's\"}",
    };
    Sink s;

    sink_init(&s);
    for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
        feed(&s, texts[i]);
        g_assert_cmpuint(count(&s), ==, i + 1);
        assert_text(&s, i, texts[i]);
        json_node_unref(parse(texts[i]));   /* a whole JSON text */
    }
    /* The escaped quote did not close the string: the object stays open
     * until the real end. */
    feed(&s, "{\"a\":\"\\\"}");
    g_assert_cmpuint(count(&s), ==, G_N_ELEMENTS(texts));
    feed(&s, "\"}");
    assert_text(&s, G_N_ELEMENTS(texts), "{\"a\":\"\\\"}\"}");
    sink_fini(&s);
}

static void test_single_quotes(void)
{
    static const struct {
        const char *in, *out, *value;   /* value of "a", or NULL */
    } cases[] = {
        { "{'a':'b'}", "{\"a\":\"b\"}", "b" },
        { "{'a':'say \"hi\"'}", "{\"a\":\"say \\\"hi\\\"\"}", "say \"hi\"" },
        { "{'a':'it\\'s'}", "{\"a\":\"it's\"}", "it's" },
        { "{'a':'\\\\'}", "{\"a\":\"\\\\\"}", "\\" },
        { "{'a':'\\\"'}", "{\"a\":\"\\\"\"}", "\"" },
        { "{'a':'}{]['}", "{\"a\":\"}{][\"}", "}{][" },
        { "{'a':''}", "{\"a\":\"\"}", "" },
        { "{'a':\"x'y\"}", "{\"a\":\"x'y\"}", "x'y" },
        /* \' is accepted in double-quoted strings too. */
        { "{\"a\":\"it\\'s\"}", "{\"a\":\"it's\"}", "it's" },
        { "['a',\"b\",'c\"d']", "[\"a\",\"b\",\"c\\\"d\"]", NULL },
    };
    Sink s;

    sink_init(&s);
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(JsonNode) n = NULL;

        feed(&s, cases[i].in);
        g_assert_cmpuint(count(&s), ==, i + 1);
        assert_text(&s, i, cases[i].out);
        n = parse(cases[i].out);
        if (cases[i].value) {
            g_assert_cmpstr(json_object_get_string_member(
                                json_node_get_object(n), "a"), ==,
                            cases[i].value);
        }
    }
    sink_fini(&s);
}

static void test_scalars(void)
{
    Sink s;

    sink_init(&s);
    feed(&s, "1 22\t\"x y\"\nnull\r\ntrue 'q r' -1.5e3 ");
    g_assert_cmpuint(count(&s), ==, 7);
    assert_text(&s, 0, "1");
    assert_text(&s, 1, "22");
    assert_text(&s, 2, "\"x y\"");
    assert_text(&s, 3, "null");
    assert_text(&s, 4, "true");
    assert_text(&s, 5, "\"q r\"");
    assert_text(&s, 6, "-1.5e3");
    /* A scalar is held until white space, an object or an array ends it. */
    feed(&s, "42");
    g_assert_cmpuint(count(&s), ==, 7);
    feed(&s, "0");
    g_assert_cmpuint(count(&s), ==, 7);
    feed(&s, "{}");
    g_assert_cmpuint(count(&s), ==, 9);
    assert_text(&s, 7, "420");
    assert_text(&s, 8, "{}");
    feed(&s, "7[1]");
    assert_text(&s, 9, "7");
    assert_text(&s, 10, "[1]");
    /* A stray closer at the top level is a scalar like any other. */
    feed(&s, "} ]\n");
    g_assert_cmpuint(count(&s), ==, 13);
    assert_text(&s, 11, "}");
    assert_text(&s, 12, "]");
    /* Nothing between texts yields nothing. */
    feed(&s, "  \r\n\t ");
    g_assert_cmpuint(count(&s), ==, 13);
    sink_fini(&s);
}

/* The same texts whatever the stream's division into feeds. */
static void test_every_split(void)
{
    static const char stream[] =
        "{\"execute\":\"a\",\"id\":[1,{\"b\":\"}\\\"{\"}]}"
        "['x\\'y','\"',\"\\\\\"]"
        " 12 'sc al' \n"
        "{'k':'\\\\\\''}[[[]]]"
        "{\"u\":\"\\u00e9\"} null\t";
    size_t len = strlen(stream);
    g_autoptr(GPtrArray) whole = split(stream, len, NULL);

    g_assert_cmpuint(whole->len, ==, 8);
    g_assert_cmpstr(whole->pdata[1], ==, "[\"x'y\",\"\\\"\",\"\\\\\"]");
    g_assert_cmpstr(whole->pdata[3], ==, "\"sc al\"");
    g_assert_cmpstr(whole->pdata[4], ==, "{\"k\":\"\\\\'\"}");
    for (size_t k = 1; k < len; k++) {
        size_t one[] = { k, 0 };
        g_autoptr(GPtrArray) two = split(stream, len, one);

        assert_same(whole, two);
        /* And in three pieces, from every offset on. */
        for (size_t m = 1; k + m < len; m += 7) {
            size_t three[] = { k, m, 0 };
            g_autoptr(GPtrArray) got = split(stream, len, three);

            assert_same(whole, got);
        }
    }
    {
        size_t ones[sizeof(stream)];
        g_autoptr(GPtrArray) bytes = NULL;

        for (size_t i = 0; i < len; i++) {
            ones[i] = 1;
        }
        ones[len] = 0;
        bytes = split(stream, len, ones);
        assert_same(whole, bytes);
    }
}

/* ---- limits ---- */

static char *nest(unsigned depth, const char *inner)
{
    GString *s = g_string_new(NULL);

    for (unsigned i = 0; i < depth; i++) {
        g_string_append_c(s, '[');
    }
    g_string_append(s, inner);
    for (unsigned i = 0; i < depth; i++) {
        g_string_append_c(s, ']');
    }
    return g_string_free(s, FALSE);
}

static void test_depth_limit(void)
{
    g_autofree char *ok = nest(JSON_STREAM_MAX_DEPTH, "1");
    g_autofree char *deep = nest(JSON_STREAM_MAX_DEPTH + 1, "1");
    g_autofree char *deeper = nest(100000, "");
    g_autofree char *tricky = nest(JSON_STREAM_MAX_DEPTH + 1,
                                   "\"]]]]\",'[[}}'");
    Sink s;

    sink_init(&s);
    feed(&s, ok);
    g_assert_cmpuint(count(&s), ==, 1);
    assert_text(&s, 0, ok);
    /* One level more: one error, then the next text is clean. */
    feed(&s, deep);
    g_assert_cmpuint(count(&s), ==, 2);
    assert_error(&s, 1, JSON_STREAM_TOO_DEEP);
    feed(&s, "{\"a\":1}");
    assert_text(&s, 2, "{\"a\":1}");
    /* Far deeper, fed a byte at a time: still one error. */
    for (size_t i = 0; deeper[i]; i++) {
        json_stream_feed(s.js, &deeper[i], 1);
    }
    g_assert_cmpuint(count(&s), ==, 4);
    assert_error(&s, 3, JSON_STREAM_TOO_DEEP);
    /* Strings are still tracked while skipping: brackets in them do not
     * count. */
    feed(&s, tricky);
    g_assert_cmpuint(count(&s), ==, 5);
    assert_error(&s, 4, JSON_STREAM_TOO_DEEP);
    feed(&s, "[2] 3 ");
    g_assert_cmpuint(count(&s), ==, 7);
    assert_text(&s, 5, "[2]");
    assert_text(&s, 6, "3");
    /* Objects count as arrays do. */
    {
        GString *objs = g_string_new(NULL);

        for (unsigned i = 0; i <= JSON_STREAM_MAX_DEPTH; i++) {
            g_string_append(objs, "{\"a\":");
        }
        g_string_append(objs, "1");
        for (unsigned i = 0; i <= JSON_STREAM_MAX_DEPTH; i++) {
            g_string_append_c(objs, '}');
        }
        feed(&s, objs->str);
        g_assert_cmpuint(count(&s), ==, 8);
        assert_error(&s, 7, JSON_STREAM_TOO_DEEP);
        g_string_free(objs, TRUE);
    }
    sink_fini(&s);
}

/* A text of exactly @size bytes: {"a":"xxx..."}. */
static char *sized(size_t size)
{
    GString *s = g_string_new("{\"a\":\"");

    while (s->len < size - 2) {
        g_string_append_c(s, 'x');
    }
    g_string_append(s, "\"}");
    g_assert_cmpuint(s->len, ==, size);
    return g_string_free(s, FALSE);
}

static void test_size_limit(void)
{
    g_autofree char *max = sized(JSON_STREAM_MAX_SIZE);
    g_autofree char *over = sized(JSON_STREAM_MAX_SIZE + 1);
    Sink s;
    char chunk[4096];

    sink_init(&s);
    feed(&s, max);
    g_assert_cmpuint(count(&s), ==, 1);
    assert_text(&s, 0, max);
    /* One byte more: one error, then the next text is clean. */
    feed(&s, over);
    g_assert_cmpuint(count(&s), ==, 2);
    assert_error(&s, 1, JSON_STREAM_TOO_BIG);
    feed(&s, "{\"b\":2}");
    g_assert_cmpuint(count(&s), ==, 3);
    assert_text(&s, 2, "{\"b\":2}");

    /* 8 MiB inside one string, in chunks: nothing until it closes, then
     * one error. */
    memset(chunk, 'y', sizeof(chunk));
    feed(&s, "{\"c\":\"");
    for (int i = 0; i < 2048; i++) {
        json_stream_feed(s.js, chunk, sizeof(chunk));
    }
    g_assert_cmpuint(count(&s), ==, 3);
    feed(&s, "\"}[4]");
    g_assert_cmpuint(count(&s), ==, 5);
    assert_error(&s, 3, JSON_STREAM_TOO_BIG);
    assert_text(&s, 4, "[4]");

    /* A top-level scalar over the limit ends at white space. */
    memset(chunk, '9', sizeof(chunk));
    for (int i = 0; i < 300; i++) {
        json_stream_feed(s.js, chunk, sizeof(chunk));
    }
    g_assert_cmpuint(count(&s), ==, 5);
    feed(&s, " 5 ");
    g_assert_cmpuint(count(&s), ==, 7);
    assert_error(&s, 5, JSON_STREAM_TOO_BIG);
    assert_text(&s, 6, "5");

    /* Single-quoted strings grow when their double quotes are escaped;
     * the limit counts the rewritten text. */
    {
        GString *q = g_string_new("['");

        while (q->len < JSON_STREAM_MAX_SIZE / 2 + 2) {
            g_string_append_c(q, '"');
        }
        g_string_append(q, "']");
        feed(&s, q->str);
        g_assert_cmpuint(count(&s), ==, 8);
        assert_error(&s, 7, JSON_STREAM_TOO_BIG);
        g_string_free(q, TRUE);
    }

    /* Too big and too deep in the same text: reported once. */
    {
        g_autofree char *deep = nest(JSON_STREAM_MAX_DEPTH + 1, "");
        g_autofree char *inner = g_strndup(deep, JSON_STREAM_MAX_DEPTH + 1);

        feed(&s, "[\"");
        for (int i = 0; i < 300; i++) {
            json_stream_feed(s.js, chunk, sizeof(chunk));
        }
        feed(&s, "\",");
        feed(&s, inner);
        feed(&s, deep + JSON_STREAM_MAX_DEPTH + 1);
        feed(&s, "]");
        g_assert_cmpuint(count(&s), ==, 9);
        assert_error(&s, 8, JSON_STREAM_TOO_BIG);
    }
    feed(&s, "{}");
    g_assert_cmpuint(count(&s), ==, 10);
    assert_text(&s, 9, "{}");
    sink_fini(&s);
}

/* ---- lexical errors and resync ---- */

/* Each input splits into the texts and errors of @want, "|"-separated
 * ("E3:TOKEN" for a lexical error, "E4:NUMBER" for one out of range). */
static void test_lexical_errors(void)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        { "{\xff{}", "E3:\xff|{}" },
        { "{\x01{}", "E3:\x01|{}" },
        { "{'bad \xff{}", "E3:\"bad \xff|{}" },
        { "{'id':'\n{}", "E3:\"\n|{}" },
        { "%p{}", "E3:%|{}" },
        { "{\"a\":[1, 2 \x1f [3]", "E3:\x1f|[3]" },
        { "{\"a\":\"x\\\x01[]", "E3:\"x\\\x01|[]" },
        { "[tr\x01[]", "E3:\x01|[]" },
        { "[-\x02[]", "E3:-\x02|[]" },
        { "[1.\x03[]", "E3:1.\x03|[]" },
        { "[1e+\x04[]", "E3:1e+\x04|[]" },
        /* The rest of a spoilt token is skipped up to a structural
         * character, a control character or 0xFE/0xFF. */
        { "-x 1 true [1]", "E3:-x|[1]" },
        { "01 [1]", "E3:01|[1]" },
        { "1.e5,", "E3:1.e|," },
        { "tRue [1]", "t|E3:R|[1]" },
        { "{\"a\": +1}", "E3:+|}" },
        { " \r\n\t\x0c{}", "E3:\x0c|{}" },
        /* 0xFF ends the skipping and is an error in turn. */
        { "{}\xff\xff{}", "{}|E3:\xff|E3:\xff|{}" },
        { "[\xfe\xfe]", "E3:\xfe|E3:\xfe|]" },
        /* Strings may hold anything else, bytes past 0x7F included. */
        { "[\"\x7f\x80\xfd\"]", "[\"\x7f\x80\xfd\"]" },
        /* Escapes JSON lacks spoil the text, which still ends where it
         * would have. */
        { "[\"a\\x\", \"]\"] [1]", "E5|[1]" },
        { "['\\q'] {\"a\": \"\\/\\b\\f\\n\\r\\t\\u0041\\'\\\"\"}",
          "E5|{\"a\": \"\\/\\b\\f\\n\\r\\t\\u0041'\\\"\"}" },
        { "[\"\\u12\"] [\"\\u00e9\\uD83D\\ude00\"]",
          "E5|[\"\\u00e9\\uD83D\\ude00\"]" },
        /* Numbers a double cannot hold. */
        { "[1e400]", "E4:1e400" },
        { "{\"a\": -1e400, \"b\": \x01{}", "E3:\x01|{}" },
        { "[1e308, 18446744073709551616]",
          "[1e308, 18446744073709551616]" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GPtrArray) got = split(cases[i].in, strlen(cases[i].in),
                                         NULL);
        g_autofree char *joined = NULL;

        g_ptr_array_add(got, NULL);
        joined = g_strjoinv("|", (char **)got->pdata);
        g_assert_cmpstr(joined, ==, cases[i].want);
    }
}

/* The texts and errors @in (of @len bytes) splits into, "|"-separated. */
static char *split_joined(const char *in, size_t len)
{
    g_autoptr(GPtrArray) got = split(in, len, NULL);

    g_ptr_array_add(got, NULL);
    return g_strjoinv("|", (char **)got->pdata);
}

#define WITH_LEN(s) s, sizeof(s) - 1

/* A NUL byte is a lexical error like any control character, reported as
 * the escape \u0000 since the token is handed over as a C string. */
static void test_nul_byte(void)
{
    static const struct {
        const char *in;
        size_t len;
        const char *want;
    } cases[] = {
        { WITH_LEN("{\"a\": [\0[1]"), "E3:\\u0000|[1]" },
        { WITH_LEN("[-\0[]"), "E3:-\\u0000|[]" },
        { WITH_LEN("{'a':'x\0{}"), "E3:\"x\\u0000|{}" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *joined = split_joined(cases[i].in, cases[i].len);

        g_assert_cmpstr(joined, ==, cases[i].want);
    }
}

/* A surrogate escape that is not half of a pair spoils its text, which
 * still ends where it would have; the error names the escape as written
 * ("E6:ESCAPE"), the leading one when a pair is broken after it. */
static void test_lone_surrogates(void)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        { "[\"\\ud800\"] [1]", "E6:\\ud800|[1]" },
        { "[\"\\udc00x\"]", "E6:\\udc00" },
        { "[\"\\ud800x\"]", "E6:\\ud800" },
        { "[\"\\uD800\\u0041\"]", "E6:\\uD800" },
        { "[\"\\ud800\\ud800\"]", "E6:\\ud800" },
        { "[\"\\ud800\\n\"]", "E6:\\ud800" },
        { "['\\udbff']", "E6:\\udbff" },
        { "{\"a\\udfff\": 1}", "E6:\\udfff" },
        { "[\"x\\ud83d\\ude00\\udfff\"]", "E6:\\udfff" },
        /* Pairs are fine, and so is what is not a surrogate. */
        { "[\"\\uDBFF\\uDFFD\\ud7ff\\ue000\"]",
          "[\"\\uDBFF\\uDFFD\\ud7ff\\ue000\"]" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *joined = split_joined(cases[i].in,
                                               strlen(cases[i].in));

        g_assert_cmpstr(joined, ==, cases[i].want);
    }
}

/* An escape for one of Unicode's 66 non-characters spoils its text as
 * in QEMU: U+FDD0..U+FDEF and the last two code points of each plane,
 * the latter as a surrogate pair named whole. */
static void test_noncharacters(void)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        { "[\"\\ufdd0\"] [1]", "E6:\\ufdd0|[1]" },
        { "[\"\\uFDEF\"]", "E6:\\uFDEF" },
        { "[\"x\\ufffe\"]", "E6:\\ufffe" },
        { "['\\uffff']", "E6:\\uffff" },
        { "{\"a\\uFFFF\": 1}", "E6:\\uFFFF" },
        { "[\"\\ud83f\\udffe\"]", "E6:\\ud83f\\udffe" },
        { "[\"\\uD83F\\uDFFFx\"]", "E6:\\uD83F\\uDFFF" },
        { "[\"\\udbff\\udfff\"]", "E6:\\udbff\\udfff" },
        { "[\"\\ud83d\\ude00\\ufdd5\"]", "E6:\\ufdd5" },
        /* A broken pair is named by its lead, whatever follows. */
        { "[\"\\ud800\\uffff\"]", "E6:\\ud800" },
        /* Their neighbours are characters. */
        { "[\"\\ufdcf\\ufdf0\\ufffd\\ud83f\\udffd\\udbff\\udffd\"]",
          "[\"\\ufdcf\\ufdf0\\ufffd\\ud83f\\udffd\\udbff\\udffd\"]" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *joined = split_joined(cases[i].in,
                                               strlen(cases[i].in));

        g_assert_cmpstr(joined, ==, cases[i].want);
    }
}

/* ---- a member's text ---- */

static void test_member_text(void)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        { "{\"execute\":\"x\", \"id\" : 18446744073709551616 }",
          "18446744073709551616" },
        { "{\"id\":1.50}", "1.50" },
        { "{\"id\": [1, 2.50, {\"a\" : \"b c\"}],\"x\":1}",
          "[1,2.50,{\"a\":\"b c\"}]" },
        { "{\"a\": {\"id\": 1}}", NULL },
        { "{\"\\u0069d\": 7}", "7" },
        { "{\"id\": 1, \"id\": 2}", "2" },
        { "{\"x\": \"\\\"id\\\": 5\", \"id\": \"s\\\"\"}",
          "\"s\\\"\"" },
        { "{}", NULL },
        { "[{\"id\": 1}]", NULL },
        /* Texts cut short are not overrun. */
        { "{\"id\": [1, \"x", "[1,\"x" },
        { "{\"id\": \"\\", "\"\\" },
        { "{\"id", NULL },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *got = json_stream_member_text(cases[i].text, "id");

        g_assert_cmpstr(got, ==, cases[i].want);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/json-stream/back-to-back", test_back_to_back);
    g_test_add_func("/json-stream/nested", test_nested);
    g_test_add_func("/json-stream/strings-with-brackets",
                    test_strings_with_brackets);
    g_test_add_func("/json-stream/single-quotes", test_single_quotes);
    g_test_add_func("/json-stream/scalars", test_scalars);
    g_test_add_func("/json-stream/every-split", test_every_split);
    g_test_add_func("/json-stream/depth-limit", test_depth_limit);
    g_test_add_func("/json-stream/size-limit", test_size_limit);
    g_test_add_func("/json-stream/lexical-errors", test_lexical_errors);
    g_test_add_func("/json-stream/nul-byte", test_nul_byte);
    g_test_add_func("/json-stream/lone-surrogates", test_lone_surrogates);
    g_test_add_func("/json-stream/noncharacters", test_noncharacters);
    g_test_add_func("/json-stream/member-text", test_member_text);
    return g_test_run();
}
