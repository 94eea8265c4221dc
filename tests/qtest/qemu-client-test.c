/*
 * illan as QEMU's own test programs and management tools use it (our
 * code, modelled on what qom-test, device-introspect-test, qmp-cmd-test
 * and test-hmp do): the QOM tree walked from "/" with every property
 * read, qom-set's refusals, set_link and its effect on the counters,
 * device-list-properties, the query commands a client runs blind, and
 * HMP through human-monitor-command.
 */
#include "hw/ppc/hcall.h"
#include "libqtest.h"
#include "libqos/eth-frames.h"
#include "libqos/rig.h"

#include <string.h>

#define NIC_ARGS    ",id=nic0"

static void rig_up(QRig *r, const char *extra)
{
    qrig_init(r);
    qrig_bind_peer(r);
    qrig_start(r, &(QRigOpts){ .nic = NIC_ARGS, .extra = extra });
}

/* A memory-backend-ram object, as QEMU's tests make one. */
static void add_ram_object(QTestState *qts)
{
    JsonObject *rsp = qtest_qmp(qts, "{'execute': 'object-add', "
                                "'arguments': {'qom-type': "
                                "'memory-backend-ram', 'id': 'ram0', "
                                "'size': 65536}}");

    g_assert_true(json_object_has_member(rsp, "return"));
    json_object_unref(rsp);
}

static void assert_error(JsonObject *rsp, const char *cls, const char *desc)
{
    JsonObject *err;

    g_assert_true(json_object_has_member(rsp, "error"));
    err = json_object_get_object_member(rsp, "error");
    g_assert_cmpstr(json_object_get_string_member(err, "class"), ==, cls);
    g_assert_cmpstr(json_object_get_string_member(err, "desc"), ==, desc);
    json_object_unref(rsp);
}

static char *hmp(QTestState *qts, const char *line)
{
    JsonObject *rsp = qtest_qmp(qts, "{'execute': 'human-monitor-command', "
                                "'arguments': {'command-line': '%s'}}", line);
    char *text = g_strdup(json_node_get_string(qtest_qmp_return(rsp)));

    json_object_unref(rsp);
    return text;
}

/* The default machine's QOM type, "NAME-machine" (caller frees). */
static char *default_machine_type(QTestState *qts)
{
    JsonObject *rsp = qtest_qmp(qts, "{'execute': 'query-machines'}");
    JsonArray *list = json_node_get_array(qtest_qmp_return(rsp));
    char *type = NULL;

    for (guint i = 0; i < json_array_get_length(list); i++) {
        JsonObject *m = json_array_get_object_element(list, i);

        if (json_object_has_member(m, "is-default")) {
            g_assert_null(type);
            type = g_strdup_printf("%s-machine",
                                   json_object_get_string_member(m, "name"));
        }
    }
    g_assert_nonnull(type);
    json_object_unref(rsp);
    return type;
}

/* ---- the QOM walk ---- */

typedef struct Walk {
    QTestState *qts;
    GHashTable *types;      /* path -> type, every object reached */
    guint props;            /* properties read */
} Walk;

static void walk(Walk *w, const char *path, const char *type);

static void walk_prop(Walk *w, const char *path, JsonObject *p)
{
    const char *name = json_object_get_string_member(p, "name");
    const char *type = json_object_get_string_member(p, "type");
    g_autofree char *child = g_strdup_printf("%s/%s",
                                             strcmp(path, "/") ? path : "",
                                             name);
    JsonObject *rsp = qtest_qmp(w->qts, "{'execute': 'qom-get', 'arguments':"
                                " {'path': '%s', 'property': '%s'}}",
                                path, name);
    JsonNode *v = qtest_qmp_return(rsp);

    w->props++;
    if (g_str_has_prefix(type, "child<")) {
        g_autofree char *ctype = g_strndup(type + 6, strlen(type) - 7);

        /* A child's value is its path. */
        g_assert_cmpstr(json_node_get_string(v), ==, child);
        walk(w, child, ctype);
    } else if (!strcmp(type, "bool")) {
        g_assert_true(json_node_get_value_type(v) == G_TYPE_BOOLEAN);
    } else if (!strcmp(type, "string") || !strcmp(type, "str")) {
        g_assert_true(json_node_get_value_type(v) == G_TYPE_STRING);
    } else {
        g_assert_true(g_str_has_prefix(type, "int") ||
                      g_str_has_prefix(type, "uint"));
        g_assert_true(json_node_get_value_type(v) == G_TYPE_INT64);
    }
    json_object_unref(rsp);
}

static void walk(Walk *w, const char *path, const char *type)
{
    JsonObject *rsp = qtest_qmp(w->qts, "{'execute': 'qom-list', "
                                "'arguments': {'path': '%s'}}", path);
    JsonArray *props = json_node_get_array(qtest_qmp_return(rsp));
    JsonObject *t = qtest_qmp(w->qts, "{'execute': 'qom-get', 'arguments':"
                              " {'path': '%s', 'property': 'type'}}", path);

    g_assert_cmpstr(json_node_get_string(qtest_qmp_return(t)), ==, type);
    json_object_unref(t);
    g_assert_true(g_hash_table_insert(w->types, g_strdup(path),
                                      g_strdup(type)));
    for (guint i = 0; i < json_array_get_length(props); i++) {
        walk_prop(w, path, json_array_get_object_element(props, i));
    }
    json_object_unref(rsp);
}

static void test_qom_walk(void)
{
    QRig r;
    Walk w = { .types = g_hash_table_new_full(g_str_hash, g_str_equal,
                                              g_free, g_free) };
    g_autofree char *machine = NULL;
    const char *expected[][2] = {
        { "/", "container" },
        { "/machine", NULL },
        { "/machine/peripheral", "container" },
        { "/machine/peripheral-anon", "container" },
        { "/machine/unattached", "container" },
        { "/machine/peripheral/nic0", "spapr-vlan" },
        { "/objects", "container" },
        { "/objects/ram0", "memory-backend-ram" },
    };

    rig_up(&r, NULL);
    add_ram_object(r.qts);
    machine = default_machine_type(r.qts);
    expected[1][1] = machine;
    w.qts = r.qts;
    walk(&w, "/", "container");
    g_assert_cmpuint(g_hash_table_size(w.types), ==, G_N_ELEMENTS(expected));
    for (size_t i = 0; i < G_N_ELEMENTS(expected); i++) {
        g_assert_cmpstr(g_hash_table_lookup(w.types, expected[i][0]), ==,
                        expected[i][1]);
    }
    g_assert_cmpuint(w.props, >, G_N_ELEMENTS(expected));
    g_hash_table_destroy(w.types);
    qrig_stop(&r);
}

static void check_prop(QTestState *qts, const char *path, const char *prop,
                       const char *json)
{
    JsonObject *rsp = qtest_qmp(qts, "{'execute': 'qom-get', 'arguments': "
                                "{'path': '%s', 'property': '%s'}}",
                                path, prop);
    g_autofree char *text = json_to_string(qtest_qmp_return(rsp), false);

    g_assert_cmpstr(text, ==, json);
    json_object_unref(rsp);
}

static void test_qom_values(void)
{
    QRig r;
    JsonObject *rsp;
    JsonArray *list, *props;
    g_autofree char *machine = NULL, *nope = NULL, *qtree = NULL;

    rig_up(&r, NULL);
    add_ram_object(r.qts);
    machine = default_machine_type(r.qts);
    nope = g_strdup_printf("Property '%s.nope' not found", machine);
    check_prop(r.qts, "/machine/peripheral/nic0", "mac",
               "\"52:54:00:12:34:56\"");
    check_prop(r.qts, "/machine/peripheral/nic0", "netdev", "\"n0\"");
    check_prop(r.qts, "/machine/peripheral/nic0", "reg", "1895825408");
    check_prop(r.qts, "/machine/peripheral/nic0", "realized", "true");
    /* Partial paths, empty components. */
    check_prop(r.qts, "nic0", "type", "\"spapr-vlan\"");
    check_prop(r.qts, "peripheral/nic0", "type", "\"spapr-vlan\"");
    check_prop(r.qts, "//machine//peripheral/", "type", "\"container\"");
    check_prop(r.qts, "/objects/ram0", "size", "65536");
    /* "mac" is the MAC in use, as the guest sets it. */
    g_assert_cmpint(qtest_hcallv(r.qts, H_CHANGE_LOGICAL_LAN_MAC, QRIG_UNIT,
                                 0x525400aabbccULL), ==, H_SUCCESS);
    check_prop(r.qts, "nic0", "mac", "\"52:54:00:aa:bb:cc\"");
    qtree = hmp(r.qts, "info qtree");
    g_assert_nonnull(strstr(qtree, "    mac = \"52:54:00:aa:bb:cc\"\r\n"));
    assert_error(qtest_qmp(r.qts, "{'execute': 'qom-get', 'arguments': "
                           "{'path': 'machine/nope', 'property': 'type'}}"),
                 "DeviceNotFound", "Device 'machine/nope' not found");
    assert_error(qtest_qmp(r.qts, "{'execute': 'qom-get', 'arguments': "
                           "{'path': '/machine', 'property': 'nope'}}"),
                 "GenericError", nope);
    rsp = qtest_qmp(r.qts, "{'execute': 'qom-list-get', 'arguments': "
                    "{'paths': ['/objects/ram0', '/machine']}}");
    list = json_node_get_array(qtest_qmp_return(rsp));
    g_assert_cmpuint(json_array_get_length(list), ==, 2);
    props = json_object_get_array_member(
        json_array_get_object_element(list, 0), "properties");
    g_assert_cmpuint(json_array_get_length(props), ==, 2);
    g_assert_cmpint(json_object_get_int_member(
                        json_array_get_object_element(props, 1), "value"),
                    ==, 65536);
    json_object_unref(rsp);
    qrig_stop(&r);
}

static void test_qom_set(void)
{
    QRig r;
    g_autofree char *machine = NULL, *initrd = NULL;

    rig_up(&r, NULL);
    machine = default_machine_type(r.qts);
    initrd = g_strdup_printf("Property '%s.initrd' not found", machine);
    assert_error(qtest_qmp(r.qts, "{'execute': 'qom-set', 'arguments': "
                           "{'path': '/machine/peripheral/nic0', "
                           "'property': 'mac', "
                           "'value': '52:54:00:00:00:01'}}"),
                 "GenericError", "Attempt to set property 'mac' on device "
                 "'nic0' (type 'spapr-vlan') after it was realized");
    assert_error(qtest_qmp(r.qts, "{'execute': 'qom-set', 'arguments': "
                           "{'path': 'nic0', 'property': 'type', "
                           "'value': 'x'}}"),
                 "GenericError",
                 "Property 'spapr-vlan.type' is not writable");
    assert_error(qtest_qmp(r.qts, "{'execute': 'qom-set', 'arguments': "
                           "{'path': '/machine', 'property': 'initrd', "
                           "'value': 'x'}}"),
                 "GenericError", initrd);
    assert_error(qtest_qmp(r.qts, "{'execute': 'qom-set', 'arguments': "
                           "{'path': '/nope', 'property': 'type', "
                           "'value': 'x'}}"),
                 "DeviceNotFound", "Device '/nope' not found");
    assert_error(qtest_qmp(r.qts, "{'execute': 'qom-set', 'arguments': "
                           "{'path': '/machine', 'property': 'type'}}"),
                 "GenericError", "Parameter 'value' is missing");
    /* Nothing changed. */
    check_prop(r.qts, "nic0", "mac", "\"52:54:00:12:34:56\"");
    qrig_stop(&r);
}

/* ---- set_link ---- */

static void send_frames(QRig *r, unsigned n)
{
    uint8_t frame[128];

    for (unsigned i = 0; i < n; i++) {
        eth_frame_tagged(frame, sizeof(frame), qrig_mac, qrig_mac, 0, i,
                         ETH_FRAME_TAG_LAST);
        qrig_send(r, frame, sizeof(frame));
    }
}

static bool link_up(QTestState *qts, bool nic)
{
    JsonObject *st = qrig_net_stats(qts);
    bool up = json_object_get_boolean_member(
        nic ? qrig_stats_nic(st) : qrig_stats_netdev(st, "n0"), "link-up");

    json_object_unref(st);
    return up;
}

static void set_link(QTestState *qts, const char *name, bool up)
{
    JsonObject *rsp = qtest_qmp(qts, "{'execute': 'set_link', 'arguments':"
                                " {'name': '%s', 'up': %s}}", name,
                                up ? "true" : "false");

    qtest_qmp_return(rsp);
    json_object_unref(rsp);
}

static void test_set_link(void)
{
    QRig r;

    rig_up(&r, NULL);
    qrig_open_guest(&r, NULL);
    g_assert_true(link_up(r.qts, true));
    send_frames(&r, 3);
    qrig_wait_stat(r.qts, "nic.rx.delivered", 3);

    /* The netdev's link takes its NIC's with it. */
    set_link(r.qts, "n0", false);
    g_assert_false(link_up(r.qts, true));
    send_frames(&r, 4);
    qrig_wait_stat(r.qts, "netdev.rx.dropped.link-down", 4);
    g_assert_cmpint(qrig_stat(r.qts, "nic.rx.delivered"), ==, 3);

    set_link(r.qts, "n0", true);
    g_assert_true(link_up(r.qts, true));
    send_frames(&r, 2);
    qrig_wait_stat(r.qts, "nic.rx.delivered", 5);

    /* The NIC's own link leaves the netdev's alone. */
    set_link(r.qts, "nic0", false);
    g_assert_false(link_up(r.qts, true));
    send_frames(&r, 1);
    qrig_wait_stat(r.qts, "netdev.rx.dropped.link-down", 5);
    set_link(r.qts, "nic0", true);
    send_frames(&r, 1);
    qrig_wait_stat(r.qts, "nic.rx.delivered", 6);

    assert_error(qtest_qmp(r.qts, "{'execute': 'set_link', 'arguments': "
                           "{'name': 'nope', 'up': true}}"),
                 "DeviceNotFound", "Device 'nope' not found");
    qrig_stop(&r);
}

/* ---- types and the queries a client runs blind ---- */

static JsonObject *find_named(JsonArray *list, const char *name)
{
    for (guint i = 0; i < json_array_get_length(list); i++) {
        JsonObject *o = json_array_get_object_element(list, i);

        if (!strcmp(json_object_get_string_member(o, "name"), name)) {
            return o;
        }
    }
    return NULL;
}

static void test_device_list_properties(void)
{
    static const char *const want[][3] = {
        { "mac", "str", NULL },
        { "netdev", "str", NULL },
        { "reg", "uint32", "4294967295" },
        { "use-rx-buffer-pools", "bool", "true" },
    };
    QTestState *qts = qtest_init("");
    JsonObject *rsp = qtest_qmp(qts, "{'execute': 'device-list-properties',"
                                " 'arguments': {'typename': 'spapr-vlan'}}");
    JsonArray *list = json_node_get_array(qtest_qmp_return(rsp));

    for (guint i = 0; i < json_array_get_length(list); i++) {
        JsonObject *p = json_array_get_object_element(list, i);

        g_assert_true(json_object_has_member(p, "type"));
        g_assert_true(json_object_has_member(p, "description"));
    }
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        JsonObject *p = find_named(list, want[i][0]);

        g_assert_nonnull(p);
        g_assert_cmpstr(json_object_get_string_member(p, "type"), ==,
                        want[i][1]);
        if (want[i][2]) {
            g_autofree char *def = json_to_string(
                json_object_get_member(p, "default-value"), false);

            g_assert_cmpstr(def, ==, want[i][2]);
        } else {
            g_assert_false(json_object_has_member(p, "default-value"));
        }
    }
    json_object_unref(rsp);
    assert_error(qtest_qmp(qts, "{'execute': 'device-list-properties', "
                           "'arguments': {'typename': 'nope'}}"),
                 "DeviceNotFound", "Device 'nope' not found");
    assert_error(qtest_qmp(qts, "{'execute': 'device-list-properties', "
                           "'arguments': {'typename': 'device'}}"),
                 "GenericError",
                 "Parameter 'typename' expects a non-abstract device type");
    qtest_quit(qts);
}

/* The schema's commands are exactly those query-commands lists. */
static void test_schema_complete(void)
{
    QTestState *qts = qtest_init("");
    JsonObject *schema_rsp = qtest_qmp(qts, "{'execute': 'query-qmp-schema'}");
    JsonObject *cmds_rsp = qtest_qmp(qts, "{'execute': 'query-commands'}");
    JsonArray *schema = json_node_get_array(qtest_qmp_return(schema_rsp));
    JsonArray *cmds = json_node_get_array(qtest_qmp_return(cmds_rsp));
    g_autoptr(GHashTable) described = g_hash_table_new(g_str_hash,
                                                       g_str_equal);

    for (guint i = 0; i < json_array_get_length(schema); i++) {
        JsonObject *e = json_array_get_object_element(schema, i);

        if (!strcmp(json_object_get_string_member(e, "meta-type"),
                    "command")) {
            g_hash_table_add(described,
                             (char *)json_object_get_string_member(e,
                                                                   "name"));
        }
    }
    g_assert_cmpuint(g_hash_table_size(described), ==,
                     json_array_get_length(cmds));
    for (guint i = 0; i < json_array_get_length(cmds); i++) {
        const char *name = json_object_get_string_member(
            json_array_get_object_element(cmds, i), "name");

        if (!g_hash_table_contains(described, name)) {
            g_error("query-qmp-schema does not describe %s", name);
        }
    }
    json_object_unref(schema_rsp);
    json_object_unref(cmds_rsp);
    qtest_quit(qts);
}

static const char *type_parent(JsonArray *types, const char *name)
{
    for (guint i = 0; i < json_array_get_length(types); i++) {
        JsonObject *t = json_array_get_object_element(types, i);

        if (!strcmp(json_object_get_string_member(t, "name"), name)) {
            return json_object_has_member(t, "parent") ?
                   json_object_get_string_member(t, "parent") : "";
        }
    }
    return NULL;
}

static void test_qom_list_types(void)
{
    QTestState *qts = qtest_init("");
    JsonObject *all = qtest_qmp(qts, "{'execute': 'qom-list-types', "
                                "'arguments': {'abstract': true}}");
    JsonObject *devs = qtest_qmp(qts, "{'execute': 'qom-list-types', "
                                 "'arguments': {'implements': 'device'}}");
    JsonArray *types = json_node_get_array(qtest_qmp_return(all));
    JsonArray *dl = json_node_get_array(qtest_qmp_return(devs));
    g_autofree char *machine = default_machine_type(qts);

    g_assert_cmpstr(type_parent(types, "spapr-vlan"), ==, "vio-spapr-device");
    g_assert_cmpstr(type_parent(types, "vio-spapr-device"), ==, "device");
    g_assert_cmpstr(type_parent(types, machine), ==, "spapr-machine");
    g_assert_cmpstr(type_parent(types, "object"), ==, "");
    /* Concrete devices only, without "abstract". */
    g_assert_cmpuint(json_array_get_length(dl), ==, 1);
    g_assert_cmpstr(type_parent(dl, "spapr-vlan"), ==, "vio-spapr-device");
    json_object_unref(all);
    json_object_unref(devs);
    qtest_quit(qts);
}

/* As qmp-cmd-test: every query-* command without a mandatory argument
 * answers with a return; query-kvm is not there. */
static void test_blind_queries(void)
{
    QTestState *qts = qtest_init("");
    JsonObject *rsp = qtest_qmp(qts, "{'execute': 'query-qmp-schema'}");
    JsonArray *schema = json_node_get_array(qtest_qmp_return(rsp));
    guint ran = 0;

    for (guint i = 0; i < json_array_get_length(schema); i++) {
        JsonObject *e = json_array_get_object_element(schema, i);
        const char *name = json_object_get_string_member(e, "name");
        JsonObject *r;

        if (strcmp(json_object_get_string_member(e, "meta-type"),
                   "command") || !g_str_has_prefix(name, "query-")) {
            continue;
        }
        r = qtest_qmp(qts, "{'execute': '%s'}", name);
        qtest_qmp_return(r);
        json_object_unref(r);
        ran++;
    }
    g_assert_cmpuint(ran, >=, 8);
    json_object_unref(rsp);

    /* No -name, no name. */
    rsp = qtest_qmp(qts, "{'execute': 'query-name'}");
    g_assert_cmpuint(json_object_get_size(
                         json_node_get_object(qtest_qmp_return(rsp))), ==, 0);
    json_object_unref(rsp);
    rsp = qtest_qmp(qts, "{'execute': 'query-cpus-fast'}");
    g_assert_cmpuint(json_array_get_length(
                         json_node_get_array(qtest_qmp_return(rsp))), ==, 0);
    json_object_unref(rsp);
    assert_error(qtest_qmp(qts, "{'execute': 'query-kvm'}"),
                 "CommandNotFound", "The command query-kvm has not been "
                 "found");
    qtest_quit(qts);
}

static void test_query_machines(void)
{
    QTestState *qts = qtest_init("");
    JsonObject *rsp = qtest_qmp(qts, "{'execute': 'query-machines', "
                                "'arguments': {'compat-props': true}}");
    JsonArray *list = json_node_get_array(qtest_qmp_return(rsp));
    guint defaults = 0, compat = 0;

    for (guint i = 0; i < json_array_get_length(list); i++) {
        JsonObject *m = json_array_get_object_element(list, i);
        JsonObject *c = qtest_qmp(qts, "{'execute': 'qom-list-properties',"
                                  " 'arguments': {'typename': '%s-machine'}}",
                                  json_object_get_string_member(m, "name"));

        qtest_qmp_return(c);
        json_object_unref(c);
        defaults += json_object_has_member(m, "is-default");
        compat += json_array_get_length(
            json_object_get_array_member(m, "compat-props"));
        g_assert_cmpint(json_object_get_int_member(m, "cpu-max"), ==, 0);
    }
    g_assert_cmpuint(defaults, ==, 1);
    g_assert_cmpuint(compat, >, 0);
    json_object_unref(rsp);
    qtest_quit(qts);
}

/* ---- HMP ---- */

/* What info version prints: query-version's release and package. */
static char *version_line(QTestState *qts)
{
    JsonObject *rsp = qtest_qmp(qts, "{'execute': 'query-version'}");
    JsonObject *v = json_node_get_object(qtest_qmp_return(rsp));
    JsonObject *q = json_object_get_object_member(v, "qemu");
    char *line = g_strdup_printf("%" G_GINT64_FORMAT ".%" G_GINT64_FORMAT
                                 ".%" G_GINT64_FORMAT " %s\r\n",
                                 json_object_get_int_member(q, "major"),
                                 json_object_get_int_member(q, "minor"),
                                 json_object_get_int_member(q, "micro"),
                                 json_object_get_string_member(v, "package"));

    json_object_unref(rsp);
    return line;
}

static void test_hmp_info(void)
{
    QRig r;
    g_autofree char *status = NULL, *version = NULL, *qtree = NULL;
    g_autofree char *qom = NULL, *mtree = NULL, *help = NULL;
    g_autofree char *machine = NULL, *qom_want = NULL;
    g_autofree char *version_want = NULL;
    g_auto(GStrv) lines = NULL;

    qrig_init(&r);
    qrig_bind_peer(&r);
    qrig_start(&r, &(QRigOpts){ .nic = NIC_ARGS, .extra = "-S" });
    status = hmp(r.qts, "info status");
    g_assert_cmpstr(status, ==, "VM status: paused (prelaunch)\r\n");
    json_object_unref(qtest_qmp(r.qts, "{'execute': 'cont'}"));
    g_free(status);
    status = hmp(r.qts, "info status");
    g_assert_cmpstr(status, ==, "VM status: running\r\n");
    version = hmp(r.qts, "info version");
    version_want = version_line(r.qts);
    g_assert_cmpstr(version, ==, version_want);
    qtree = hmp(r.qts, "info qtree");
    g_assert_nonnull(strstr(qtree, "  dev: spapr-vlan, id \"nic0\"\r\n"
                            "    mac = \"52:54:00:12:34:56\"\r\n"));
    qom = hmp(r.qts, "info qom-tree");
    machine = default_machine_type(r.qts);
    qom_want = g_strdup_printf("/machine (%s)\r\n"
                    "  /peripheral (container)\r\n"
                    "    /nic0 (spapr-vlan)\r\n"
                    "  /peripheral-anon (container)\r\n"
                    "  /unattached (container)\r\n", machine);
    g_assert_cmpstr(qom, ==, qom_want);
    mtree = hmp(r.qts, "info mtree");
    g_assert_nonnull(strstr(mtree, "0000000000000000-000000000fffffff "
                            "(prio 0, ram): ppc_spapr.ram\r\n"));
    /* test-hmp's reading of "help info": "info NAME ..." per line. */
    help = hmp(r.qts, "help info");
    lines = g_strsplit(help, "\r\n", -1);
    g_assert_cmpuint(g_strv_length(lines), >=, 6);
    for (char **l = lines; *l && **l; l++) {
        g_autofree char *name = NULL;

        g_assert_true(g_str_has_prefix(*l, "info "));
        g_assert_nonnull(strchr(*l + 5, ' '));
        name = g_strndup(*l, strchr(*l + 5, ' ') - *l);
        g_free(hmp(r.qts, name));
    }
    qrig_stop(&r);
}

/* QEMU's HMP migration settings (test-hmp sends the first two): a bare
 * bandwidth is MiB/s, and what illan lacks is refused by name. */
static void test_hmp_migrate(void)
{
    QTestState *qts = qtest_init("-M pseries");
    g_autofree char *dt = hmp(qts, "migrate_set_parameter downtime-limit 1");
    g_autofree char *bw = hmp(qts, "migrate_set_parameter max-bandwidth 1");
    g_autofree char *ev = hmp(qts, "migrate_set_capability events on");
    g_autofree char *params = hmp(qts, "info migrate_parameters");
    g_autofree char *caps = hmp(qts, "info migrate_capabilities");
    g_autofree char *size = hmp(qts, "migrate_set_parameter "
                                "xbzrle-cache-size 64k");
    g_autofree char *cap = hmp(qts, "migrate_set_capability xbzrle on");
    g_autofree char *usage = hmp(qts, "migrate_set_capability events");

    g_assert_cmpstr(dt, ==, "");
    g_assert_cmpstr(bw, ==, "");
    g_assert_cmpstr(ev, ==, "");
    g_assert_cmpstr(params, ==, "max-bandwidth: 1048576 bytes/second\r\n"
                    "avail-switchover-bandwidth: 0 bytes/second\r\n"
                    "downtime-limit: 1 ms\r\n");
    g_assert_true(g_str_has_prefix(caps, "xbzrle: off\r\n"));
    g_assert_nonnull(strstr(caps, "\r\nevents: on\r\n"));
    g_assert_cmpstr(size, ==, "Error: Parameter 'xbzrle-cache-size' is not "
                    "supported by illan (it has downtime-limit, "
                    "max-bandwidth and avail-switchover-bandwidth)\r\n");
    g_assert_cmpstr(cap, ==, "Error: Capability 'xbzrle' is not supported "
                    "by illan (its only capability is 'events')\r\n");
    g_assert_cmpstr(usage, ==, "Error: usage: migrate_set_capability "
                    "capability on|off\r\n");
    qtest_quit(qts);
}

static void test_hmp_errors(void)
{
    QTestState *qts = qtest_init("-device spapr-vlan");
    g_autofree char *unknown = hmp(qts, "foo bar");
    g_autofree char *info = hmp(qts, "info foo");
    g_autofree char *dev_help = hmp(qts, "device_add \"spapr-vlan,help\"");
    g_autofree char *dev_list = hmp(qts, "device_add help");
    g_autofree char *dev_add = hmp(qts, "device_add spapr-vlan,id=x");
    g_autofree char *dev_bad = hmp(qts, "device_add usb-mouse,id=m");
    g_autofree char *link = hmp(qts, "set_link nope off");
    g_autofree char *empty = hmp(qts, "");
    JsonObject *rsp;

    g_assert_cmpstr(unknown, ==, "unknown command: 'foo'\r\n");
    g_assert_cmpstr(info, ==, "unknown command: 'info foo'\r\n");
    g_assert_true(g_str_has_prefix(dev_help, "spapr-vlan options:\r\n"));
    g_assert_nonnull(strstr(dev_help, "  mac=<macaddr> "));
    g_assert_nonnull(strstr(dev_list, "name \"spapr-vlan\", bus "
                            "spapr-vio-bus"));
    g_assert_cmpstr(dev_add, ==, "Error: Bus 'spapr-vio' does not support "
                    "hotplugging\r\n");
    g_assert_cmpstr(dev_bad, ==, "Error: 'usb-mouse' is not a valid device "
                    "model name\r\n");
    g_assert_cmpstr(link, ==, "Error: Device 'nope' not found\r\n");
    g_assert_cmpstr(empty, ==, "");
    assert_error(qtest_qmp(qts, "{'execute': 'human-monitor-command', "
                           "'arguments': {'command-line': 'info status', "
                           "'cpu-index': 1}}"),
                 "GenericError", "Parameter 'cpu-index' expects a CPU number");
    /* qmp-shell -H sends cpu-index 0 with every line. */
    rsp = qtest_qmp(qts, "{'execute': 'human-monitor-command', 'arguments': "
                    "{'command-line': 'info status', 'cpu-index': 0}}");
    g_assert_cmpstr(json_node_get_string(qtest_qmp_return(rsp)), ==,
                    "VM status: running\r\n");
    json_object_unref(rsp);
    qtest_quit(qts);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qemu-client/qom/walk", test_qom_walk);
    g_test_add_func("/qemu-client/qom/values", test_qom_values);
    g_test_add_func("/qemu-client/qom/set", test_qom_set);
    g_test_add_func("/qemu-client/qom/list-types", test_qom_list_types);
    g_test_add_func("/qemu-client/device-list-properties",
                   test_device_list_properties);
    g_test_add_func("/qemu-client/schema-complete", test_schema_complete);
    g_test_add_func("/qemu-client/set-link", test_set_link);
    g_test_add_func("/qemu-client/queries", test_blind_queries);
    g_test_add_func("/qemu-client/query-machines", test_query_machines);
    g_test_add_func("/qemu-client/hmp/info", test_hmp_info);
    g_test_add_func("/qemu-client/hmp/migrate", test_hmp_migrate);
    g_test_add_func("/qemu-client/hmp/errors", test_hmp_errors);
    return g_test_run();
}
