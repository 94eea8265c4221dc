/*
 * -dump-vmstate across releases.  Each committed dump under
 * tests/migration (vmstate-RELEASE-MACHINE.json) is compared with what
 * this build dumps for the same machine: every section must still exist
 * and read the old version exactly as it was written: for each
 * description, the fields on the wire at the old version_id must have
 * the same names, sizes, counts and order, and every old subsection must
 * still be known.  New state must come with a version bump (fields with
 * a higher version_id) or in a new subsection.  QEMU's own checker
 * ignores array lengths, tests and fields appended at the end; this one
 * does not.  The test also proves the checker catches a renamed,
 * reordered, resized and removed field.
 */
#include "libqtest.h"

#include <string.h>
#include <unistd.h>

static void problem(GPtrArray *out, const char *path, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

static void problem(GPtrArray *out, const char *path, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *msg = NULL;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_ptr_array_add(out, g_strdup_printf("%s: %s", path, msg));
}

/* Fields on the wire when a stream of @version is read. */
static GPtrArray *wire_fields(JsonObject *desc, gint64 version)
{
    GPtrArray *fields = g_ptr_array_new();
    JsonArray *all = json_object_get_array_member(desc, "Fields");

    for (guint i = 0; all && i < json_array_get_length(all); i++) {
        JsonObject *f = json_array_get_object_element(all, i);

        if (json_object_get_boolean_member(f, "field_exists") ||
            json_object_get_int_member(f, "version_id") <= version) {
            g_ptr_array_add(fields, f);
        }
    }
    return fields;
}

static void compare_desc(JsonObject *old, JsonObject *new, const char *path,
                         GPtrArray *out);

static void compare_field(JsonObject *of, JsonObject *nf, const char *path,
                          GPtrArray *out)
{
    const char *name = json_object_get_string_member(of, "field");
    g_autofree char *sub = g_strdup_printf("%s.%s", path, name);
    static const char *const keys[] = { "size", "num", "version_id" };

    if (strcmp(name, json_object_get_string_member(nf, "field"))) {
        problem(out, path, "field '%s' is now '%s' (renamed or reordered)",
                name, json_object_get_string_member(nf, "field"));
        return;
    }
    for (size_t k = 0; k < G_N_ELEMENTS(keys); k++) {
        gint64 o = json_object_get_int_member_with_default(of, keys[k], -1);
        gint64 n = json_object_get_int_member_with_default(nf, keys[k], -1);

        if (o != n && !(json_object_has_member(of, "Description") &&
                        !strcmp(keys[k], "size"))) {
            problem(out, sub, "%s was %" G_GINT64_FORMAT " and is %"
                    G_GINT64_FORMAT, keys[k], o, n);
        }
    }
    if (json_object_get_boolean_member(of, "field_exists") !=
        json_object_get_boolean_member(nf, "field_exists")) {
        problem(out, sub, "field_exists changed");
    }
    if (json_object_has_member(of, "Description") !=
        json_object_has_member(nf, "Description")) {
        problem(out, sub, "is no longer the same kind (struct or not)");
    } else if (json_object_has_member(of, "Description")) {
        compare_desc(json_object_get_object_member(of, "Description"),
                     json_object_get_object_member(nf, "Description"), sub,
                     out);
    }
}

static JsonObject *find_subsection(JsonObject *desc, const char *name)
{
    JsonArray *subs = json_object_has_member(desc, "Subsections") ?
                      json_object_get_array_member(desc, "Subsections") :
                      NULL;

    for (guint i = 0; subs && i < json_array_get_length(subs); i++) {
        JsonObject *s = json_array_get_object_element(subs, i);

        if (!strcmp(json_object_get_string_member(s, "name"), name)) {
            return s;
        }
    }
    return NULL;
}

static void compare_desc(JsonObject *old, JsonObject *new, const char *path,
                         GPtrArray *out)
{
    gint64 ov = json_object_get_int_member(old, "version_id");
    gint64 nv = json_object_get_int_member(new, "version_id");
    g_autoptr(GPtrArray) of = NULL, nf = NULL;
    JsonArray *osubs;

    if (strcmp(json_object_get_string_member(old, "name"),
               json_object_get_string_member(new, "name"))) {
        problem(out, path, "vmsd '%s' is now '%s'",
                json_object_get_string_member(old, "name"),
                json_object_get_string_member(new, "name"));
        return;
    }
    if (nv < ov || json_object_get_int_member(new, "minimum_version_id") >
                   ov) {
        problem(out, path, "cannot read version %" G_GINT64_FORMAT
                " any more (reads %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT
                ")", ov, json_object_get_int_member(new,
                                                    "minimum_version_id"),
                nv);
        return;
    }
    of = wire_fields(old, ov);
    nf = wire_fields(new, ov);
    for (guint i = 0; i < MIN(of->len, nf->len); i++) {
        compare_field(g_ptr_array_index(of, i), g_ptr_array_index(nf, i),
                      path, out);
    }
    for (guint i = nf->len; i < of->len; i++) {
        problem(out, path, "field '%s' was removed",
                json_object_get_string_member(g_ptr_array_index(of, i),
                                              "field"));
    }
    for (guint i = of->len; i < nf->len; i++) {
        problem(out, path, "field '%s' was added without a version bump or "
                "subsection", json_object_get_string_member(
                    g_ptr_array_index(nf, i), "field"));
    }
    osubs = json_object_has_member(old, "Subsections") ?
            json_object_get_array_member(old, "Subsections") : NULL;
    for (guint i = 0; osubs && i < json_array_get_length(osubs); i++) {
        JsonObject *os = json_array_get_object_element(osubs, i);
        const char *name = json_object_get_string_member(os, "name");
        JsonObject *ns = find_subsection(new, name);
        g_autofree char *sub = g_strdup_printf("%s/%s", path, name);

        if (!ns) {
            problem(out, path, "subsection '%s' was removed", name);
        } else {
            compare_desc(os, ns, sub, out);
        }
    }
}

/* Problems migrating from a build that dumped @old to one that dumped
 * @new, one line each. */
static GPtrArray *check_dumps(JsonObject *old, JsonObject *new)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GList) names = json_object_get_members(old);

    for (GList *l = names; l; l = l->next) {
        JsonObject *os, *ns;

        if (!strcmp(l->data, "vmschkmachine")) {
            continue;
        }
        if (!json_object_has_member(new, l->data)) {
            problem(out, l->data, "section does not exist any more");
            continue;
        }
        os = json_object_get_object_member(old, l->data);
        ns = json_object_get_object_member(new, l->data);
        compare_desc(json_object_get_object_member(os, "Description"),
                     json_object_get_object_member(ns, "Description"),
                     l->data, out);
    }
    return out;
}

static JsonObject *parse(const char *text)
{
    g_autoptr(JsonParser) p = json_parser_new();

    g_assert_true(json_parser_load_from_data(p, text, -1, NULL));
    return json_object_ref(json_node_get_object(json_parser_get_root(p)));
}

static JsonObject *load_file(const char *path)
{
    g_autofree char *text = NULL;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    return parse(text);
}

/* This build's dump for @machine, as text. */
static char *dump_text(const char *machine)
{
    g_autofree char *dir = g_dir_make_tmp("illan-vmstate-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "dump.json", NULL);
    g_autofree char *args = g_strdup_printf("-M %s -dump-vmstate %s",
                                            machine, path);
    g_autofree char *out = NULL, *err = NULL;
    char *text;

    g_assert_cmpint(illan_run(args, &out, &err), ==, 0);
    g_assert_cmpstr(err, ==, "");
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    unlink(path);
    rmdir(dir);
    return text;
}

/* The type a name stands for: the first release's names are aliases. */
static const char *machine_type(const char *name)
{
    return !strcmp(name, "pseries-1.0") ? "pseries-2.5" :
           !strcmp(name, "pseries-2.0") ? "pseries-2.6" : name;
}

static JsonObject *dump_now(const char *machine)
{
    g_autofree char *text = dump_text(machine);
    JsonObject *dump = parse(text);

    g_assert_cmpstr(json_object_get_string_member(
                        json_object_get_object_member(dump, "vmschkmachine"),
                        "Name"), ==, machine_type(machine));
    return dump;
}

static void test_release(gconstpointer data)
{
    const char *path = data;
    g_autofree char *base = g_path_get_basename(path);
    const char *m = strstr(base, "pseries");
    /* vmstate-RELEASE-MACHINE.json */
    g_autofree char *machine = g_strndup(m, strlen(m) - strlen(".json"));
    g_autoptr(JsonObject) old = load_file(path);
    g_autoptr(JsonObject) new = dump_now(machine);
    g_autoptr(GPtrArray) problems = check_dumps(old, new);

    for (guint i = 0; i < problems->len; i++) {
        g_test_message("%s", (char *)g_ptr_array_index(problems, i));
    }
    g_assert_cmpuint(problems->len, ==, 0);
}

/* Edits of spapr_llan's field list that break old streams. */
static void test_checker_catches(void)
{
    static const struct {
        const char *from, *to, *says;
    } edits[] = {
        { "\"field\": \"rx_bufs\"", "\"field\": \"rx_buffers\"",
          "field 'rx_bufs' is now 'rx_buffers'" },
        { "\"field\": \"add_buf_ptr\"", "\"field\": \"use_buf_ptr\"",
          "field 'add_buf_ptr' is now 'use_buf_ptr'" },
        { "\"rxq_ptr\",\n          \"version_id\": 0,\n"
          "          \"field_exists\": false,\n          \"size\": 8",
          "\"rxq_ptr\",\n          \"version_id\": 0,\n"
          "          \"field_exists\": false,\n          \"size\": 4",
          "spapr-vlan.rxq_ptr: size was 8 and is 4" },
        { "\"rxq_ptr\",\n          \"version_id\": 0",
          "\"rxq_ptr\",\n          \"version_id\": 2",
          "field 'rxq_ptr' was removed" },
        { "\"name\": \"spapr_llan/rx_pools\"", "\"name\": \"spapr_llan/pools\"",
          "subsection 'spapr_llan/rx_pools' was removed" },
    };
    g_autofree char *text = NULL;
    g_autoptr(JsonObject) now = NULL;

    text = dump_text("pseries-2.0");
    now = parse(text);
    for (size_t i = 0; i < G_N_ELEMENTS(edits); i++) {
        const char *at = strstr(text, edits[i].from);
        g_autofree char *edited = NULL;
        g_autoptr(JsonObject) mutant = NULL;
        g_autoptr(GPtrArray) problems = NULL;
        gboolean found = FALSE;

        g_assert_nonnull(at);
        edited = g_strdup_printf("%.*s%s%s", (int)(at - text), text,
                                 edits[i].to, at + strlen(edits[i].from));
        mutant = parse(edited);
        problems = check_dumps(now, mutant);
        for (guint k = 0; k < problems->len; k++) {
            found |= strstr(g_ptr_array_index(problems, k),
                            edits[i].says) != NULL;
        }
        if (!found) {
            g_error("edit %zu not caught (%u problems)", i, problems->len);
        }
    }
}

int main(int argc, char **argv)
{
    const char *dir = g_getenv("ILLAN_FIXTURES");
    g_autoptr(GPtrArray) dumps = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GDir) d = NULL;
    const char *name;

    g_test_init(&argc, &argv, NULL);
    g_assert_nonnull(dir);
    d = g_dir_open(dir, 0, NULL);
    g_assert_nonnull(d);
    while ((name = g_dir_read_name(d))) {
        if (g_str_has_prefix(name, "vmstate-") &&
            g_str_has_suffix(name, ".json")) {
            g_ptr_array_add(dumps, g_build_filename(dir, name, NULL));
        }
    }
    g_assert_cmpuint(dumps->len, >=, 2);
    for (guint i = 0; i < dumps->len; i++) {
        const char *path = g_ptr_array_index(dumps, i);
        g_autofree char *base = g_path_get_basename(path);
        g_autofree char *test = g_strdup_printf("/vmstate-compat/%s", base);

        g_test_add_data_func(test, path, test_release);
    }
    g_test_add_func("/vmstate-compat/checker-catches", test_checker_catches);
    return g_test_run();
}
