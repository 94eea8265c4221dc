/*
 * query-qmp-schema against the code: every command the library registers
 * is in the schema with the arguments it declares, every event some
 * source file emits is in the schema and every event in the schema is
 * emitted, and every type a schema entry names is defined once.
 * ILLAN_SOURCE_ROOT names the tree to search.  Whether the schema's
 * commands are exactly the binary's, system/'s included, is checked over
 * the wire by qemu-client-test.  Also the registry's unregister, which
 * fuzz-qmp uses.
 */
#include "monitor/qmp-schema.h"
#include "qemu/qmp-registry.h"

#include <string.h>

static const char *const source_dirs[] = {
    "system", "monitor", "guest", "hw", "net", "migration", "util",
};

/* name -> SchemaInfo object, and the list it lives in. */
typedef struct Schema {
    JsonArray *list;
    GHashTable *by_name;
} Schema;

static Schema *schema_load(void)
{
    Schema *s = g_new0(Schema, 1);

    s->list = qmp_schema_build();
    s->by_name = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < json_array_get_length(s->list); i++) {
        JsonObject *e = json_array_get_object_element(s->list, i);
        const char *name = json_object_get_string_member(e, "name");

        if (!g_hash_table_insert(s->by_name, (gpointer)name, e)) {
            g_error("schema: '%s' is defined twice", name);
        }
    }
    return s;
}

static void schema_free(Schema *s)
{
    g_hash_table_destroy(s->by_name);
    json_array_unref(s->list);
    g_free(s);
}

static JsonObject *entry(Schema *s, const char *name, const char *meta)
{
    JsonObject *e = g_hash_table_lookup(s->by_name, name);

    if (!e) {
        g_error("schema: '%s' is missing", name);
    }
    g_assert_cmpstr(json_object_get_string_member(e, "meta-type"), ==, meta);
    return e;
}

static const char *schema_type_of(QmpArgType type)
{
    switch (type) {
    case QMP_ARG_STR: return "str";
    case QMP_ARG_INT: return "int";
    case QMP_ARG_BOOL: return "bool";
    case QMP_ARG_ARRAY: return "[";
    }
    g_assert_not_reached();
}

static JsonObject *member(JsonArray *members, const char *name)
{
    for (guint i = 0; i < json_array_get_length(members); i++) {
        JsonObject *m = json_array_get_object_element(members, i);

        if (!strcmp(json_object_get_string_member(m, "name"), name)) {
            return m;
        }
    }
    return NULL;
}

/* The command's declared arguments are the schema's, with the same type
 * and optionality; a command that checks its own may take more. */
static void check_command(const QmpCommand *cmd, void *opaque)
{
    Schema *s = opaque;
    JsonObject *c = entry(s, cmd->name, "command");
    JsonObject *args = entry(s, json_object_get_string_member(c, "arg-type"),
                             "object");
    JsonArray *members = json_object_get_array_member(args, "members");
    guint declared = 0;

    for (const QmpArg *a = cmd->args; a && a->name; a++, declared++) {
        JsonObject *m = member(members, a->name);

        if (!m) {
            g_error("schema: %s lacks argument '%s'", cmd->name, a->name);
        }
        g_assert_true(g_str_has_prefix(json_object_get_string_member(m,
                                                                     "type"),
                                       schema_type_of(a->type)));
        g_assert_cmpint(json_object_has_member(m, "default"), ==,
                        a->optional);
    }
    if (!cmd->takes_any_args &&
        json_array_get_length(members) != declared) {
        g_error("schema: %s has arguments the command does not declare",
                cmd->name);
    }
}

static void test_registered_in_schema(void)
{
    Schema *s = schema_load();

    qmp_foreach_command(check_command, s);
    schema_free(s);
}

/* Every name the schema uses (argument, member, element, variant types)
 * is an entry of the schema. */
static void check_named(Schema *s, JsonObject *o, const char *key)
{
    const char *name;

    if (!json_object_has_member(o, key)) {
        return;
    }
    name = json_object_get_string_member(o, key);
    if (!g_hash_table_contains(s->by_name, name)) {
        g_error("schema: type '%s' is used but not defined", name);
    }
}

static void check_named_in(Schema *s, JsonObject *e, const char *array,
                           const char *key)
{
    JsonArray *a;

    if (!json_object_has_member(e, array)) {
        return;
    }
    a = json_object_get_array_member(e, array);
    for (guint i = 0; i < json_array_get_length(a); i++) {
        check_named(s, json_array_get_object_element(a, i), key);
    }
}

static void test_types_defined(void)
{
    Schema *s = schema_load();

    for (guint i = 0; i < json_array_get_length(s->list); i++) {
        JsonObject *e = json_array_get_object_element(s->list, i);
        const char *meta = json_object_get_string_member(e, "meta-type");

        check_named(s, e, "arg-type");
        check_named(s, e, "ret-type");
        check_named(s, e, "element-type");
        if (!strcmp(meta, "object")) {
            check_named_in(s, e, "members", "type");
            check_named_in(s, e, "variants", "type");
        } else if (!strcmp(meta, "alternate")) {
            check_named_in(s, e, "members", "type");
        } else if (!strcmp(meta, "enum")) {
            g_assert_true(json_object_has_member(e, "values"));
        }
    }
    schema_free(s);
}

/* The names of qmp_event_emit("NAME", ...) in the source tree. */
static void scan_file(const char *path, GHashTable *events)
{
    g_autofree char *text = NULL;
    g_autoptr(GRegex) re = g_regex_new("qmp_event_emit\\(\"([A-Z0-9_]+)\"",
                                       0, 0, NULL);
    g_autoptr(GMatchInfo) mi = NULL;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    g_regex_match(re, text, 0, &mi);
    while (g_match_info_matches(mi)) {
        g_hash_table_add(events, g_match_info_fetch(mi, 1));
        g_match_info_next(mi, NULL);
    }
}

static void scan_dir(const char *dir, GHashTable *events)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;

    g_assert_nonnull(d);
    while ((name = g_dir_read_name(d))) {
        g_autofree char *path = g_build_filename(dir, name, NULL);

        if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
            scan_dir(path, events);
        } else if (g_str_has_suffix(name, ".c")) {
            scan_file(path, events);
        }
    }
}

static void test_events(void)
{
    const char *root = g_getenv("ILLAN_SOURCE_ROOT");
    g_autoptr(GHashTable) emitted = g_hash_table_new_full(g_str_hash,
                                                          g_str_equal,
                                                          g_free, NULL);
    Schema *s = schema_load();
    GHashTableIter it;
    gpointer name;

    g_assert_nonnull(root);
    for (size_t i = 0; i < G_N_ELEMENTS(source_dirs); i++) {
        g_autofree char *dir = g_build_filename(root, source_dirs[i], NULL);

        scan_dir(dir, emitted);
    }
    g_assert_cmpuint(g_hash_table_size(emitted), >, 0);
    g_hash_table_iter_init(&it, emitted);
    while (g_hash_table_iter_next(&it, &name, NULL)) {
        entry(s, name, "event");
    }
    for (guint i = 0; i < json_array_get_length(s->list); i++) {
        JsonObject *e = json_array_get_object_element(s->list, i);
        const char *ename = json_object_get_string_member(e, "name");

        if (!strcmp(json_object_get_string_member(e, "meta-type"), "event") &&
            !g_hash_table_contains(emitted, ename)) {
            g_error("schema: event %s is never emitted", ename);
        }
    }
    schema_free(s);
}

static JsonNode *return_null(JsonObject *args, QmpError *err)
{
    (void)args, (void)err;
    return json_node_new(JSON_NODE_NULL);
}

static void count_command(const QmpCommand *cmd, void *opaque)
{
    (void)cmd;
    (*(unsigned *)opaque)++;
}

static unsigned registered_count(void)
{
    unsigned n = 0;

    qmp_foreach_command(count_command, &n);
    return n;
}

/* What fuzz-qmp relies on: a command unregistered is gone from lookup
 * and from the list, the others stay, an unknown name changes nothing,
 * and the name may be registered again. */
static void test_unregister(void)
{
    static const QmpCommand fakes[] = {
        { .name = "x-test-first", .fn = return_null },
        { .name = "x-test-second", .fn = return_null },
    };
    static const QmpCommand again = { .name = "x-test-first",
                                      .fn = return_null };
    unsigned before = registered_count();

    qmp_register_commands(fakes, G_N_ELEMENTS(fakes));
    g_assert_cmpuint(registered_count(), ==, before + 2);
    qmp_unregister_command("x-test-first");
    g_assert_null(qmp_find_command("x-test-first"));
    g_assert_true(qmp_find_command("x-test-second") == &fakes[1]);
    g_assert_cmpuint(registered_count(), ==, before + 1);
    qmp_unregister_command("x-test-no-such-command");
    g_assert_cmpuint(registered_count(), ==, before + 1);
    qmp_register_commands(&again, 1);
    g_assert_true(qmp_find_command("x-test-first") == &again);
    qmp_unregister_command("x-test-first");
    qmp_unregister_command("x-test-second");
    g_assert_cmpuint(registered_count(), ==, before);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qmp-schema/registered-in-schema",
                    test_registered_in_schema);
    g_test_add_func("/qmp-schema/types-defined", test_types_defined);
    g_test_add_func("/qmp-schema/events", test_events);
    g_test_add_func("/qmp-registry/unregister", test_unregister);
    return g_test_run();
}
