/*
 * The QMP monitor as a client sees it.  illan is started through libqtest
 * with an extra "-qmp unix:PATH,server=on,wait=off"; the tests open their
 * own connections to PATH and speak raw JSON, so every byte the monitor
 * sends is checked: the greeting, CRLF line ends, replies, errors and
 * events.  Every read is bounded, so a monitor that stops answering fails
 * the test instead of hanging it.
 */
#include "libqtest.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define READ_TIMEOUT_MS     10000
#define GENERIC             "GenericError"
#define NOT_FOUND           "CommandNotFound"
#define DEV_NOT_FOUND       "DeviceNotFound"
#define NEED_CAPS           "Expecting capabilities negotiation with " \
                            "'qmp_capabilities'"
#define PARSE_ERROR         "JSON parse error, "
#define NOT_OBJECT          "QMP input must be a JSON object"
#define NIC0_MAC            "52:54:00:ab:cd:ef"
#define NIC0_REG            0x71000005

/* ---- a raw client connection ---- */

typedef struct Conn {
    int fd;
    GString *rx;
    GQueue events;          /* JsonObject *: read while awaiting a reply */
} Conn;

static Conn *conn_try_open(const char *path)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    Conn *c;

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpuint(strlen(path), <, sizeof(addr.sun_path));
    strcpy(addr.sun_path, path);
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        close(fd);
        return NULL;
    }
    c = g_new0(Conn, 1);
    c->fd = fd;
    c->rx = g_string_new(NULL);
    g_queue_init(&c->events);
    return c;
}

static Conn *conn_open(const char *path)
{
    Conn *c = conn_try_open(path);

    if (!c) {
        g_error("cannot connect to %s: %s", path, g_strerror(errno));
    }
    return c;
}

static void conn_close(Conn *c)
{
    close(c->fd);
    g_string_free(c->rx, TRUE);
    g_queue_clear_full(&c->events, (GDestroyNotify)json_object_unref);
    g_free(c);
}

static void conn_send(Conn *c, const char *data, size_t len)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = send(c->fd, data + done, len - done, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            g_error("send to the monitor failed: %s", g_strerror(errno));
        }
        done += n;
    }
}

static void conn_sendf(Conn *c, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void conn_sendf(Conn *c, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *text = NULL;

    va_start(ap, fmt);
    text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    conn_send(c, text, strlen(text));
}

/* Waits up to @ms for input: the bytes read, 0 at end of file, -1 when
 * nothing came. */
static ssize_t conn_fill(Conn *c, int ms)
{
    struct pollfd p = { .fd = c->fd, .events = POLLIN };
    char buf[65536];
    ssize_t n;
    int rc;

    do {
        rc = poll(&p, 1, ms);
    } while (rc < 0 && errno == EINTR);
    g_assert_cmpint(rc, >=, 0);
    if (rc == 0) {
        return -1;
    }
    do {
        n = read(c->fd, buf, sizeof(buf));
    } while (n < 0 && errno == EINTR);
    if (n < 0 && errno == ECONNRESET) {
        n = 0;
    }
    g_assert_cmpint(n, >=, 0);
    g_string_append_len(c->rx, buf, n);
    return n;
}

/*
 * The next line the monitor sent, without its end.  Every message is one
 * line of compact JSON that ends in CRLF, and holds no other CR or LF.
 */
static char *conn_read_line(Conn *c)
{
    gint64 deadline = g_get_monotonic_time() + READ_TIMEOUT_MS * 1000LL;
    char *nl, *line;
    size_t len;

    while (!(nl = memchr(c->rx->str, '\n', c->rx->len))) {
        gint64 left = (deadline - g_get_monotonic_time()) / 1000;

        if (left <= 0) {
            g_error("no reply from the monitor within %d ms (partial: "
                    "'%.200s')", READ_TIMEOUT_MS, c->rx->str);
        }
        if (conn_fill(c, left) == 0) {
            g_error("the monitor closed the connection (partial: "
                    "'%.200s')", c->rx->str);
        }
    }
    len = nl - c->rx->str;
    g_assert_cmpuint(len, >, 0);
    if (c->rx->str[len - 1] != '\r') {
        g_error("a line from the monitor does not end in CRLF: '%.200s'",
                c->rx->str);
    }
    line = g_strndup(c->rx->str, len - 1);
    /* JSON allows no raw control character, in a string or out of one. */
    for (size_t i = 0; line[i]; i++) {
        if ((unsigned char)line[i] < 0x20) {
            g_error("raw byte 0x%02x in a line from the monitor: '%.200s'",
                    line[i], line);
        }
    }
    g_string_erase(c->rx, 0, len + 1);
    return line;
}

static JsonNode *parse_json(const char *text)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) err = NULL;
    JsonNode *root;

    if (!json_parser_load_from_data(parser, text, -1, &err)) {
        g_error("invalid JSON '%.200s': %s", text, err->message);
    }
    root = json_parser_get_root(parser);
    g_assert_nonnull(root);
    return json_node_copy(root);
}

static JsonObject *parse_object(const char *text)
{
    g_autoptr(JsonNode) root = parse_json(text);

    if (!JSON_NODE_HOLDS_OBJECT(root)) {
        g_error("the monitor sent a JSON text that is no object: '%.200s'",
                text);
    }
    return json_object_ref(json_node_get_object(root));
}

/* The next message, reply or event. */
static JsonObject *conn_recv(Conn *c)
{
    g_autofree char *line = conn_read_line(c);

    return parse_object(line);
}

/* The next reply; events that come first are kept for conn_event(). */
static JsonObject *conn_reply(Conn *c)
{
    for (;;) {
        JsonObject *msg = conn_recv(c);

        if (!json_object_has_member(msg, "event")) {
            return msg;
        }
        g_queue_push_tail(&c->events, msg);
    }
}

static JsonObject *conn_cmd(Conn *c, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static JsonObject *conn_cmd(Conn *c, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *text = NULL;

    va_start(ap, fmt);
    text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    conn_send(c, text, strlen(text));
    return conn_reply(c);
}

/* Nothing at all arrives for @ms: no reply, no event, no hang-up. */
static void conn_assert_quiet(Conn *c, int ms)
{
    ssize_t n = conn_fill(c, ms);

    if (n >= 0) {
        g_error("expected silence, got %s'%.200s'",
                n == 0 ? "end of file after " : "", c->rx->str);
    }
}

static void conn_assert_eof(Conn *c)
{
    ssize_t n = conn_fill(c, READ_TIMEOUT_MS);

    if (n != 0) {
        g_error("expected the monitor to hang up, got %s'%.200s'",
                n < 0 ? "nothing: " : "", c->rx->str);
    }
    g_assert_cmpuint(c->rx->len, ==, 0);
}

/* ---- checks on messages ---- */

static char *object_text(JsonObject *o)
{
    g_autoptr(JsonNode) n = json_node_init_object(json_node_alloc(), o);

    return json_to_string(n, FALSE);
}

/* @o has exactly the NULL-terminated @names as members. */
static void assert_members(JsonObject *o, const char *const *names)
{
    guint n = 0;

    for (; names[n]; n++) {
        if (!json_object_has_member(o, names[n])) {
            g_autofree char *text = object_text(o);
            g_error("member '%s' is missing in %s", names[n], text);
        }
    }
    if (json_object_get_size(o) != n) {
        g_autofree char *text = object_text(o);
        g_error("%s has %u members, expected %u", text,
                json_object_get_size(o), n);
    }
}

#define MEMBERS(o, ...) \
    assert_members((o), (const char *const[]){ __VA_ARGS__, NULL })

static gint64 get_int(JsonObject *o, const char *name)
{
    JsonNode *n = json_object_get_member(o, name);

    g_assert_nonnull(n);
    g_assert_true(JSON_NODE_HOLDS_VALUE(n));
    g_assert_true(json_node_get_value_type(n) == G_TYPE_INT64);
    return json_node_get_int(n);
}

static const char *get_str(JsonObject *o, const char *name)
{
    JsonNode *n = json_object_get_member(o, name);

    g_assert_nonnull(n);
    g_assert_true(JSON_NODE_HOLDS_VALUE(n));
    g_assert_true(json_node_get_value_type(n) == G_TYPE_STRING);
    return json_node_get_string(n);
}

static bool get_bool(JsonObject *o, const char *name)
{
    JsonNode *n = json_object_get_member(o, name);

    g_assert_nonnull(n);
    g_assert_true(JSON_NODE_HOLDS_VALUE(n));
    g_assert_true(json_node_get_value_type(n) == G_TYPE_BOOLEAN);
    return json_node_get_boolean(n);
}

static JsonObject *get_obj(JsonObject *o, const char *name)
{
    JsonNode *n = json_object_get_member(o, name);

    g_assert_nonnull(n);
    g_assert_true(JSON_NODE_HOLDS_OBJECT(n));
    return json_node_get_object(n);
}

static JsonArray *get_arr(JsonObject *o, const char *name)
{
    JsonNode *n = json_object_get_member(o, name);

    g_assert_nonnull(n);
    g_assert_true(JSON_NODE_HOLDS_ARRAY(n));
    return json_node_get_array(n);
}

/* @node equals the JSON text @expected. */
static void assert_json(JsonNode *node, const char *expected)
{
    g_autoptr(JsonNode) want = parse_json(expected);

    if (!json_node_equal(node, want)) {
        g_autofree char *got = json_to_string(node, FALSE);
        g_error("expected %s, got %s", expected, got);
    }
}

/* A success reply: "return" and, when @id_json is not NULL, that "id". */
static JsonNode *assert_return(JsonObject *rsp, const char *id_json)
{
    if (!json_object_has_member(rsp, "return")) {
        g_autofree char *text = object_text(rsp);
        g_error("expected a return, got %s", text);
    }
    if (id_json) {
        MEMBERS(rsp, "return", "id");
        assert_json(json_object_get_member(rsp, "id"), id_json);
    } else {
        MEMBERS(rsp, "return");
    }
    return json_object_get_member(rsp, "return");
}

/* Takes @rsp: {"return": @ret_json}. */
static void expect_return(JsonObject *rsp, const char *ret_json)
{
    assert_json(assert_return(rsp, NULL), ret_json);
    json_object_unref(rsp);
}

/*
 * Takes @rsp: an error of class @cls whose description is @desc (or, with
 * @prefix, starts with it), with "id" @id_json or none.
 */
static void expect_error_full(JsonObject *rsp, const char *cls,
                              const char *desc, bool prefix,
                              const char *id_json)
{
    JsonObject *err;

    if (!json_object_has_member(rsp, "error")) {
        g_autofree char *text = object_text(rsp);
        g_error("expected an error '%s', got %s", desc, text);
    }
    if (id_json) {
        MEMBERS(rsp, "error", "id");
        assert_json(json_object_get_member(rsp, "id"), id_json);
    } else {
        MEMBERS(rsp, "error");
    }
    err = get_obj(rsp, "error");
    MEMBERS(err, "class", "desc");
    g_assert_cmpstr(get_str(err, "class"), ==, cls);
    if (prefix) {
        if (!g_str_has_prefix(get_str(err, "desc"), desc)) {
            g_error("expected a description starting '%s', got '%s'", desc,
                    get_str(err, "desc"));
        }
    } else {
        g_assert_cmpstr(get_str(err, "desc"), ==, desc);
    }
    json_object_unref(rsp);
}

static void expect_error(JsonObject *rsp, const char *cls, const char *desc)
{
    expect_error_full(rsp, cls, desc, false, NULL);
}

/* Sends @request and expects exactly the error @cls/@desc as the next
 * message (no event before it). */
static void check_error(Conn *c, const char *request, const char *cls,
                        const char *desc)
{
    conn_send(c, request, strlen(request));
    expect_error(conn_recv(c), cls, desc);
}

static void check_parse_error(Conn *c, const char *request)
{
    conn_send(c, request, strlen(request));
    expect_error_full(conn_recv(c), GENERIC, PARSE_ERROR, true, NULL);
}

/* An event: exactly event, timestamp and (when @data_json) data. */
static void check_event(JsonObject *ev, const char *name,
                        const char *data_json)
{
    JsonObject *ts;
    gint64 now = g_get_real_time() / G_USEC_PER_SEC;

    if (data_json) {
        MEMBERS(ev, "event", "data", "timestamp");
        assert_json(json_object_get_member(ev, "data"), data_json);
    } else {
        MEMBERS(ev, "event", "timestamp");
    }
    g_assert_cmpstr(get_str(ev, "event"), ==, name);
    ts = get_obj(ev, "timestamp");
    MEMBERS(ts, "seconds", "microseconds");
    g_assert_cmpint(get_int(ts, "seconds"), >, now - 60);
    g_assert_cmpint(get_int(ts, "seconds"), <=, now);
    g_assert_cmpint(get_int(ts, "microseconds"), >=, 0);
    g_assert_cmpint(get_int(ts, "microseconds"), <, G_USEC_PER_SEC);
}

/* Takes the oldest event kept by conn_reply(), or reads the next message,
 * which must be an event: @name with @data_json. */
static void conn_event(Conn *c, const char *name, const char *data_json)
{
    g_autoptr(JsonObject) ev = g_queue_pop_head(&c->events);

    if (!ev) {
        ev = conn_recv(c);
    }
    check_event(ev, name, data_json);
}

static void assert_no_kept_events(Conn *c)
{
    g_assert_cmpuint(g_queue_get_length(&c->events), ==, 0);
}

/* The next message is the event @name (with @data_json). */
static void recv_event(Conn *c, const char *name, const char *data_json)
{
    g_autoptr(JsonObject) ev = conn_recv(c);

    check_event(ev, name, data_json);
}

/* The next message is {"return": @ret_json, "id": @id_json}. */
static void recv_return(Conn *c, const char *id_json, const char *ret_json)
{
    g_autoptr(JsonObject) rsp = conn_recv(c);

    assert_json(assert_return(rsp, id_json), ret_json);
}

/* Reads the greeting: {"QMP": {"version": {"qemu": {major, minor,
 * micro}, "package": STR}, "capabilities": ["oob"]}}, with the QEMU
 * release illan follows.  Returns "version". */
static JsonObject *check_greeting(Conn *c)
{
    JsonObject *greeting = conn_recv(c);
    JsonObject *qmp, *version, *qemu, *ret;

    MEMBERS(greeting, "QMP");
    qmp = get_obj(greeting, "QMP");
    MEMBERS(qmp, "version", "capabilities");
    assert_json(json_object_get_member(qmp, "capabilities"), "[\"oob\"]");
    version = get_obj(qmp, "version");
    MEMBERS(version, "qemu", "package");
    g_assert_cmpstr(get_str(version, "package"), ==, "illan " ILLAN_VERSION);
    qemu = get_obj(version, "qemu");
    MEMBERS(qemu, "major", "minor", "micro");
    g_assert_cmpint(get_int(qemu, "major"), ==, 10);
    g_assert_cmpint(get_int(qemu, "minor"), ==, 1);
    g_assert_cmpint(get_int(qemu, "micro"), ==, 0);
    ret = json_object_ref(version);
    json_object_unref(greeting);
    return ret;
}

static void conn_negotiate(Conn *c)
{
    json_object_unref(check_greeting(c));

    expect_return(conn_cmd(c, "{\"execute\": \"qmp_capabilities\"}"), "{}");
}

static Conn *conn_open_negotiated(const char *path)
{
    Conn *c = conn_open(path);

    conn_negotiate(c);
    return c;
}

/* ---- the emulator ---- */

typedef struct Rig {
    QTestState *qts;
    char *qmp_path;         /* -qmp unix:PATH,server=on,wait=off */
    char *n0_path;          /* netdev n0's local socket (nic0's) */
    char *peer_path;        /* n0's remote: the test's socket */
    char *n1_path, *n1_peer;
} Rig;

static char *tmp_path(const char *what, int n)
{
    return g_strdup_printf("%s/qmp-test-%d-%d.%s", g_get_tmp_dir(),
                           getpid(), n, what);
}

/* nic0 (netdev n0, fixed MAC and reg) and nic1 (no netdev, page mode). */
static void rig_start(Rig *r, const char *extra)
{
    static int n;

    r->qmp_path = tmp_path("qmp", n);
    r->n0_path = tmp_path("n0", n);
    r->peer_path = tmp_path("peer", n);
    r->n1_path = tmp_path("n1", n);
    r->n1_peer = tmp_path("n1peer", n);
    n++;
    r->qts = qtest_initf("-nodefaults "
                         "-netdev dgram,id=n0,local.type=unix,local.path=%s,"
                         "remote.type=unix,remote.path=%s "
                         "-device spapr-vlan,id=nic0,netdev=n0,mac=" NIC0_MAC
                         ",reg=0x%x "
                         "-device spapr-vlan,id=nic1,use-rx-buffer-pools=off "
                         "-qmp unix:%s,server=on,wait=off %s",
                         r->n0_path, r->peer_path, NIC0_REG, r->qmp_path,
                         extra ? extra : "");
}

static void rig_free_paths(Rig *r)
{
    unlink(r->peer_path);
    unlink(r->n1_peer);
    g_free(r->qmp_path);
    g_free(r->n0_path);
    g_free(r->peer_path);
    g_free(r->n1_path);
    g_free(r->n1_peer);
}

static void rig_stop(Rig *r)
{
    qtest_quit(r->qts);
    /* The listening socket goes away with the monitor. */
    g_assert_false(g_file_test(r->qmp_path, G_FILE_TEST_EXISTS));
    rig_free_paths(r);
}

static Conn *rig_conn(Rig *r)
{
    return conn_open_negotiated(r->qmp_path);
}

/* ---- greeting and negotiation ---- */

static void test_greeting(void)
{
    Rig r;
    Conn *c;
    g_autoptr(JsonObject) version = NULL;
    JsonObject *rsp;

    rig_start(&r, NULL);
    c = conn_open(r.qmp_path);
    /* The greeting comes unasked, before anything is sent. */
    version = check_greeting(c);
    expect_return(conn_cmd(c, "{\"execute\": \"qmp_capabilities\"}"), "{}");
    /* query-version answers what the greeting announced. */
    rsp = conn_cmd(c, "{\"execute\": \"query-version\"}");
    {
        g_autoptr(JsonNode) want = json_node_init_object(json_node_alloc(),
                                                         version);
        g_assert_true(json_node_equal(assert_return(rsp, NULL), want));
    }
    json_object_unref(rsp);
    assert_no_kept_events(c);
    conn_close(c);
    rig_stop(&r);
}

static void test_negotiation(void)
{
    Rig r;
    Conn *c, *other;

    rig_start(&r, NULL);
    c = conn_open(r.qmp_path);
    json_object_unref(check_greeting(c));

    /* Before qmp_capabilities every command, known or not, is refused. */
    check_error(c, "{\"execute\": \"query-status\"}", NOT_FOUND, NEED_CAPS);
    check_error(c, "{\"execute\": \"stop\"}", NOT_FOUND, NEED_CAPS);
    check_error(c, "{\"execute\": \"no-such-command\"}", NOT_FOUND,
                NEED_CAPS);
    expect_error_full(conn_cmd(c, "{\"execute\": \"quit\", \"id\": 3}"),
                      NOT_FOUND, NEED_CAPS, false, "3");
    /* The request is still checked first. */
    check_error(c, "{\"execute\": 1}", GENERIC,
                "QMP input member 'execute' must be a string");
    check_error(c, "[]", GENERIC, NOT_OBJECT);
    /* "oob" is the only capability there is. */
    check_error(c, "{\"execute\": \"qmp_capabilities\", "
                   "\"arguments\": {\"enable\": [\"oob\", \"nope\"]}}",
                GENERIC, "Parameter 'enable[1]' does not accept value "
                         "'nope'");
    check_error(c, "{\"execute\": \"qmp_capabilities\", "
                   "\"arguments\": {\"enable\": [1]}}",
                GENERIC, "Invalid parameter type for 'enable[0]', "
                         "expected: string");
    check_error(c, "{\"execute\": \"qmp_capabilities\", "
                   "\"arguments\": {\"enable\": \"oob\"}}",
                GENERIC, "Invalid parameter type for 'enable', "
                         "expected: array");
    check_error(c, "{\"execute\": \"qmp_capabilities\", "
                   "\"arguments\": {\"oob\": true}}",
                GENERIC, "Parameter 'oob' is unexpected");
    /* Those failures left negotiation mode as it was. */
    check_error(c, "{\"execute\": \"query-status\"}", NOT_FOUND, NEED_CAPS);

    /* No events in negotiation mode: another client stops the machine,
     * and the next thing this one reads is its own reply. */
    other = rig_conn(&r);
    expect_return(conn_cmd(other, "{\"execute\": \"stop\"}"), "{}");
    conn_event(other, "STOP", NULL);
    check_error(c, "{\"execute\": \"cont\"}", NOT_FOUND, NEED_CAPS);

    /* An empty list is fine, and completes negotiation. */
    expect_return(conn_cmd(c, "{\"execute\": \"qmp_capabilities\", "
                              "\"arguments\": {\"enable\": []}}"), "{}");
    check_error(c, "{\"execute\": \"qmp_capabilities\"}", NOT_FOUND,
                "Capabilities negotiation is already complete, "
                "command ignored");
    expect_error_full(conn_cmd(c, "{\"execute\": \"qmp_capabilities\", "
                                  "\"arguments\": {\"enable\": [\"oob\"]}, "
                                  "\"id\": \"again\"}"),
                      NOT_FOUND, "Capabilities negotiation is already "
                      "complete, command ignored", false, "\"again\"");
    /* Now commands work and events arrive. */
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": false, \"status\": \"paused\"}");
    expect_return(conn_cmd(c, "{\"execute\": \"cont\"}"), "{}");
    conn_event(c, "RESUME", NULL);
    conn_event(other, "RESUME", NULL);
    assert_no_kept_events(c);
    conn_close(other);
    conn_close(c);
    rig_stop(&r);
}

/* ---- the request envelope ---- */

static void test_id_echoed(void)
{
    static const char *const ids[] = {
        "0", "-7", "123456789012", "1.5", "\"\"", "\"abc\"", "\"\\u00e9\\n\"",
        "true", "null", "[]", "[1, \"two\", {\"three\": [3]}]", "{}",
        "{\"a\": {\"b\": [1, 2, {\"c\": null}]}, \"d\": \"e\"}",
    };
    Rig r;
    Conn *c;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    for (size_t i = 0; i < G_N_ELEMENTS(ids); i++) {
        JsonObject *rsp;

        /* On success, before and after "execute". */
        rsp = conn_cmd(c, "{\"execute\": \"query-status\", \"id\": %s}",
                       ids[i]);
        assert_return(rsp, ids[i]);
        json_object_unref(rsp);
        rsp = conn_cmd(c, "{\"id\": %s, \"execute\": \"query-version\"}",
                       ids[i]);
        assert_return(rsp, ids[i]);
        json_object_unref(rsp);
        /* On every error that comes after the request was read. */
        expect_error_full(conn_cmd(c, "{\"execute\": \"nope\", \"id\": %s}",
                                   ids[i]),
                          NOT_FOUND, "The command nope has not been found",
                          false, ids[i]);
        expect_error_full(conn_cmd(c, "{\"execute\": \"qom-get\", "
                                      "\"arguments\": {\"path\": \"nic0\", "
                                      "\"property\": \"nope\"}, \"id\": %s}",
                                   ids[i]),
                          GENERIC, "Property 'spapr-vlan.nope' not found", false,
                          ids[i]);
        expect_error_full(conn_cmd(c, "{\"id\": %s}", ids[i]), GENERIC,
                          "QMP input lacks member 'execute'", false, ids[i]);
        expect_error_full(conn_cmd(c, "{\"execute\": \"stop\", \"x\": 1, "
                                      "\"id\": %s}", ids[i]),
                          GENERIC, "QMP input member 'x' is unexpected",
                          false, ids[i]);
    }
    /* Malformed text has no id to echo. */
    check_parse_error(c, "{\"execute\": \"query-status\", \"id\": 1,,}");
    assert_no_kept_events(c);
    conn_close(c);
    rig_stop(&r);
}

static void test_single_quotes(void)
{
    Rig r;
    Conn *c;
    JsonObject *rsp;

    rig_start(&r, NULL);
    c = conn_open(r.qmp_path);
    json_object_unref(check_greeting(c));
    expect_return(conn_cmd(c, "{'execute': 'qmp_capabilities'}"), "{}");
    rsp = conn_cmd(c, "{'execute': 'qom-get', 'arguments': "
                      "{'path': '/machine/peripheral/nic0', "
                      "'property': 'mac'}, 'id': 'one'}");
    g_assert_cmpstr(json_node_get_string(assert_return(rsp, "\"one\"")), ==,
                    NIC0_MAC);
    json_object_unref(rsp);
    /* A double quote inside single quotes, an escaped single quote, and
     * a mix of both kinds of string. */
    rsp = conn_cmd(c, "{'execute': \"query-status\", "
                      "'id': ['say \"hi\"', 'it\\'s', \"x'y\", '\\\\', '']}");
    assert_return(rsp, "[\"say \\\"hi\\\"\", \"it's\", \"x'y\", \"\\\\\", "
                       "\"\"]");
    json_object_unref(rsp);
    /* Errors quote what was sent, converted. */
    expect_error(conn_cmd(c, "{'execute': 'it\\'s \"x\"'}"), NOT_FOUND,
                 "The command it's \"x\" has not been found");
    conn_close(c);
    rig_stop(&r);
}

/* ---- commands ---- */

static void test_query_version_commands(void)
{
    static const char *const names[] = {
        "qmp_capabilities", "query-version", "query-commands",
        "query-status", "stop", "cont", "system_reset", "quit",
        "query-rx-filter", "qom-list", "qom-get", "netdev_add",
        "netdev_del", "x-query-net-stats", "x-query-guest-stats",
        "migrate", "migrate-incoming",
        "query-migrate", "pmemsave", "x-exit-preconfig",
    };
    Rig r;
    Conn *c;
    JsonObject *rsp, *ret;
    JsonArray *list;
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);

    rig_start(&r, NULL);
    c = rig_conn(&r);
    rsp = conn_cmd(c, "{\"execute\": \"query-version\"}");
    ret = json_node_get_object(assert_return(rsp, NULL));
    MEMBERS(ret, "qemu", "package");
    g_assert_cmpstr(get_str(ret, "package"), ==, "illan " ILLAN_VERSION);
    assert_json(json_object_get_member(ret, "qemu"),
                "{\"major\": 10, \"minor\": 1, \"micro\": 0}");
    json_object_unref(rsp);

    rsp = conn_cmd(c, "{\"execute\": \"query-commands\"}");
    list = json_node_get_array(assert_return(rsp, NULL));
    /* The full set is held to query-qmp-schema by qemu-client-test. */
    g_assert_cmpuint(json_array_get_length(list), >=, G_N_ELEMENTS(names));
    for (guint i = 0; i < json_array_get_length(list); i++) {
        JsonObject *cmd = json_array_get_object_element(list, i);

        MEMBERS(cmd, "name");
        g_assert_true(g_hash_table_add(seen, (char *)get_str(cmd, "name")));
    }
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        if (!g_hash_table_contains(seen, names[i])) {
            g_error("query-commands does not list %s", names[i]);
        }
    }
    g_hash_table_remove_all(seen);
    json_object_unref(rsp);
    /* Arguments: none taken. */
    check_error(c, "{\"execute\": \"query-commands\", "
                   "\"arguments\": {\"x\": 1}}",
                GENERIC, "Parameter 'x' is unexpected");
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\", "
                              "\"arguments\": {}}"),
                  "{\"running\": true, \"status\": \"running\"}");
    conn_close(c);
    rig_stop(&r);
}

static void test_stop_cont(void)
{
    Rig r;
    Conn *c;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    expect_return(conn_cmd(c, "{\"execute\": \"stop\"}"), "{}");
    conn_event(c, "STOP", NULL);
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": false, \"status\": \"paused\"}");
    /* Stopping a stopped machine succeeds and says nothing more; events
     * go out before the reply of the command that caused them, so none
     * can follow later. */
    expect_return(conn_cmd(c, "{\"execute\": \"stop\"}"), "{}");
    assert_no_kept_events(c);
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": false, \"status\": \"paused\"}");
    assert_no_kept_events(c);
    expect_return(conn_cmd(c, "{\"execute\": \"cont\"}"), "{}");
    conn_event(c, "RESUME", NULL);
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    /* Likewise for a running machine. */
    expect_return(conn_cmd(c, "{\"execute\": \"cont\"}"), "{}");
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    assert_no_kept_events(c);
    /* Several requests in one write are answered in order, each event
     * just before the reply of the command that caused it. */
    conn_sendf(c, "{\"execute\": \"stop\", \"id\": 1}"
                  "{\"execute\": \"query-status\", \"id\": 2}"
                  "{\"execute\": \"cont\", \"id\": 3}");
    recv_event(c, "STOP", NULL);
    recv_return(c, "1", "{}");
    recv_return(c, "2", "{\"running\": false, \"status\": \"paused\"}");
    recv_event(c, "RESUME", NULL);
    recv_return(c, "3", "{}");
    assert_no_kept_events(c);
    conn_close(c);
    rig_stop(&r);
}

static void test_prelaunch(void)
{
    Rig r;
    Conn *c;

    rig_start(&r, "-S");
    c = rig_conn(&r);
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": false, \"status\": \"prelaunch\"}");
    /* stop does not apply before the start. */
    expect_return(conn_cmd(c, "{\"execute\": \"stop\"}"), "{}");
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": false, \"status\": \"prelaunch\"}");
    assert_no_kept_events(c);
    expect_return(conn_cmd(c, "{\"execute\": \"cont\"}"), "{}");
    conn_event(c, "RESUME", NULL);
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    expect_return(conn_cmd(c, "{\"execute\": \"stop\"}"), "{}");
    conn_event(c, "STOP", NULL);
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": false, \"status\": \"paused\"}");
    conn_close(c);
    rig_stop(&r);
}

static void test_system_reset(void)
{
    Rig r;
    Conn *c;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    expect_return(conn_cmd(c, "{\"execute\": \"system_reset\"}"), "{}");
    conn_event(c, "RESET", "{\"guest\": false, "
                           "\"reason\": \"host-qmp-system-reset\"}");
    assert_no_kept_events(c);
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    /* A reset leaves a stopped machine stopped. */
    expect_return(conn_cmd(c, "{\"execute\": \"stop\"}"), "{}");
    conn_event(c, "STOP", NULL);
    expect_return(conn_cmd(c, "{\"execute\": \"system_reset\"}"), "{}");
    conn_event(c, "RESET", "{\"guest\": false, "
                           "\"reason\": \"host-qmp-system-reset\"}");
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": false, \"status\": \"paused\"}");
    conn_close(c);
    rig_stop(&r);
}

typedef struct Child {
    GPid pid;
    int status;
    const char *path;       /* its monitor's socket */
    Conn *conn;
} Child;

static bool child_exited(void *opaque)
{
    Child *c = opaque;
    pid_t got = waitpid(c->pid, &c->status, WNOHANG);

    g_assert_cmpint(got, >=, 0);
    return got == c->pid;
}

/* Waits up to READ_TIMEOUT_MS for @pid to exit; its wait status. */
static int wait_child(GPid pid)
{
    Child c = { .pid = pid };

    if (!qtest_poll_until(child_exited, &c, READ_TIMEOUT_MS / 1000.0)) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        g_error("illan did not exit within %d ms", READ_TIMEOUT_MS);
    }
    return c.status;
}

/* The child's monitor accepts a connection (and the child still runs). */
static bool child_listening(void *opaque)
{
    Child *c = opaque;

    g_assert_cmpint(waitpid(c->pid, NULL, WNOHANG), ==, 0);
    c->conn = conn_try_open(c->path);
    return c->conn != NULL;
}

/* quit: the reply, then SHUTDOWN, then the hang-up, then exit status 0.
 * This illan is started directly (with no qtest connection) so that
 * nothing but quit can end it. */
static void test_quit(void)
{
    g_autofree char *path = tmp_path("quit", 0);
    g_autofree char *qmp_arg = g_strdup_printf("unix:%s,server=on,wait=off",
                                               path);
    const char *argv[] = { illan_binary(), "-nodefaults", "-device",
                           "spapr-vlan,id=nic0", "-qmp", qmp_arg, "-accel",
                           "qtest", NULL };
    g_autoptr(GError) err = NULL;
    Child child = { .path = path };
    Conn *c, *late;
    GPid pid;
    int status;

    unlink(path);
    g_assert_true(g_spawn_async(NULL, (char **)argv, NULL,
                                G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid,
                                &err));
    child.pid = pid;
    qtest_wait_until(child_listening, &child, READ_TIMEOUT_MS / 1000.0,
                     "illan's monitor to listen on %s", path);
    c = child.conn;
    conn_negotiate(c);
    /* A second client, not negotiated: it gets no SHUTDOWN, only the
     * hang-up. */
    late = conn_open(path);
    json_object_unref(check_greeting(late));
    conn_sendf(c, "{\"execute\": \"quit\", \"id\": \"bye\"}");
    recv_return(c, "\"bye\"", "{}");
    assert_no_kept_events(c);
    recv_event(c, "SHUTDOWN", "{\"guest\": false, "
                              "\"reason\": \"host-qmp-quit\"}");
    conn_assert_eof(c);
    conn_assert_eof(late);
    status = wait_child(pid);
    g_spawn_close_pid(pid);
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 0);
    g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
    conn_close(c);
    conn_close(late);
}

/* SIGTERM: SHUTDOWN with reason host-signal, then the hang-up; libqtest
 * checks the exit status. */
static void test_sigterm(void)
{
    Rig r;
    Conn *c;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    rig_stop(&r);
    conn_event(c, "SHUTDOWN", "{\"guest\": false, "
                              "\"reason\": \"host-signal\"}");
    conn_assert_eof(c);
    conn_close(c);
}

/* One RxFilterInfo, for a NIC the guest has not opened. */
static void check_rx_filter(JsonObject *f, const char *name, const char *mac)
{
    MEMBERS(f, "name", "promiscuous", "multicast", "unicast", "vlan",
            "broadcast-allowed", "multicast-overflow", "unicast-overflow",
            "main-mac", "vlan-table", "unicast-table", "multicast-table");
    g_assert_cmpstr(get_str(f, "name"), ==, name);
    if (mac) {
        g_assert_cmpstr(get_str(f, "main-mac"), ==, mac);
    } else {
        g_assert_true(g_regex_match_simple(
            "^[0-9a-f]{2}(:[0-9a-f]{2}){5}$", get_str(f, "main-mac"), 0, 0));
    }
    get_bool(f, "promiscuous");
    g_assert_true(g_regex_match_simple("^(normal|none|all)$",
                                       get_str(f, "multicast"), 0, 0));
    g_assert_true(g_regex_match_simple("^(normal|none|all)$",
                                       get_str(f, "unicast"), 0, 0));
    g_assert_cmpstr(get_str(f, "vlan"), ==, "all");
    g_assert_true(get_bool(f, "broadcast-allowed"));
    g_assert_false(get_bool(f, "multicast-overflow"));
    g_assert_false(get_bool(f, "unicast-overflow"));
    g_assert_cmpuint(json_array_get_length(get_arr(f, "vlan-table")), ==, 0);
    g_assert_cmpuint(json_array_get_length(get_arr(f, "unicast-table")), ==,
                     0);
    g_assert_cmpuint(json_array_get_length(get_arr(f, "multicast-table")),
                     ==, 0);
}

static void test_query_rx_filter(void)
{
    Rig r;
    Conn *c;
    JsonObject *rsp;
    JsonArray *list;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    rsp = conn_cmd(c, "{\"execute\": \"query-rx-filter\"}");
    list = json_node_get_array(assert_return(rsp, NULL));
    g_assert_cmpuint(json_array_get_length(list), ==, 2);
    check_rx_filter(json_array_get_object_element(list, 0), "nic0", NIC0_MAC);
    check_rx_filter(json_array_get_object_element(list, 1), "nic1", NULL);
    json_object_unref(rsp);

    rsp = conn_cmd(c, "{\"execute\": \"query-rx-filter\", "
                      "\"arguments\": {\"name\": \"nic1\"}}");
    list = json_node_get_array(assert_return(rsp, NULL));
    g_assert_cmpuint(json_array_get_length(list), ==, 1);
    check_rx_filter(json_array_get_object_element(list, 0), "nic1", NULL);
    json_object_unref(rsp);

    check_error(c, "{\"execute\": \"query-rx-filter\", "
                   "\"arguments\": {\"name\": \"nope\"}}",
                GENERIC, "invalid net client name: nope");
    check_error(c, "{\"execute\": \"query-rx-filter\", "
                   "\"arguments\": {\"name\": \"n0\"}}",
                GENERIC, "net client(n0) isn't a NIC");
    check_error(c, "{\"execute\": \"query-rx-filter\", "
                   "\"arguments\": {\"name\": 0}}",
                GENERIC, "Invalid parameter type for 'name', "
                         "expected: string");
    check_error(c, "{\"execute\": \"query-rx-filter\", "
                   "\"arguments\": {\"nic\": \"nic0\"}}",
                GENERIC, "Parameter 'nic' is unexpected");
    conn_close(c);
    rig_stop(&r);
}

static void test_qom_list(void)
{
    Rig r;
    Conn *c;
    JsonObject *rsp;
    guint props;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    expect_return(conn_cmd(c, "{\"execute\": \"qom-list\", "
                              "\"arguments\": {\"path\": \"/machine\"}}"),
                  "[{\"name\": \"type\", \"type\": \"string\"},"
                  " {\"name\": \"peripheral\", "
                  "\"type\": \"child<container>\"},"
                  " {\"name\": \"peripheral-anon\", "
                  "\"type\": \"child<container>\"},"
                  " {\"name\": \"unattached\", "
                  "\"type\": \"child<container>\"}]");
    expect_return(conn_cmd(c, "{\"execute\": \"qom-list\", \"arguments\": "
                              "{\"path\": \"/machine/peripheral\"}}"),
                  "[{\"name\": \"type\", \"type\": \"string\"},"
                  " {\"name\": \"nic0\", \"type\": \"child<spapr-vlan>\"},"
                  " {\"name\": \"nic1\", \"type\": \"child<spapr-vlan>\"}]");
    rsp = conn_cmd(c, "{\"execute\": \"qom-list\", \"arguments\": "
                      "{\"path\": \"/machine/peripheral/nic0\"}}");
    props = json_array_get_length(json_node_get_array(assert_return(rsp,
                                                                    NULL)));
    assert_json(assert_return(rsp, NULL),
                "[{\"name\": \"type\", \"type\": \"string\"},"
                " {\"name\": \"realized\", \"type\": \"bool\"},"
                " {\"name\": \"mac\", \"type\": \"str\"},"
                " {\"name\": \"netdev\", \"type\": \"str\"},"
                " {\"name\": \"reg\", \"type\": \"uint32\"},"
                " {\"name\": \"use-rx-buffer-pools\", \"type\": \"bool\"},"
                " {\"name\": \"offloads\", \"type\": \"bool\"},"
                " {\"name\": \"lro\", \"type\": \"bool\"},"
                " {\"name\": \"x-illan-subsections\", \"type\": \"bool\"},"
                " {\"name\": \"bootindex\", \"type\": \"int32\"}]");
    json_object_unref(rsp);
    /* A bare id names the same device. */
    rsp = conn_cmd(c, "{\"execute\": \"qom-list\", \"arguments\": "
                      "{\"path\": \"nic1\"}}");
    g_assert_cmpuint(json_array_get_length(json_node_get_array(
                         assert_return(rsp, NULL))), ==, props);
    json_object_unref(rsp);
    check_error(c, "{\"execute\": \"qom-list\", \"arguments\": "
                   "{\"path\": \"/machine/peripheral/nope\"}}",
                DEV_NOT_FOUND, "Device '/machine/peripheral/nope' not found");
    check_error(c, "{\"execute\": \"qom-list\", \"arguments\": "
                   "{\"path\": \"/nope\"}}",
                DEV_NOT_FOUND, "Device '/nope' not found");
    check_error(c, "{\"execute\": \"qom-list\"}", GENERIC,
                "Parameter 'path' is missing");
    conn_close(c);
    rig_stop(&r);
}

static void check_qom_get(Conn *c, const char *path, const char *prop,
                          const char *want_json)
{
    expect_return(conn_cmd(c, "{\"execute\": \"qom-get\", \"arguments\": "
                              "{\"path\": \"%s\", \"property\": \"%s\"}}",
                           path, prop),
                  want_json);
}

static void test_qom_get(void)
{
    g_autofree char *reg = g_strdup_printf("%u", NIC0_REG);
    Rig r;
    Conn *c;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    check_qom_get(c, "/machine/peripheral/nic0", "mac", "\"" NIC0_MAC "\"");
    check_qom_get(c, "/machine/peripheral/nic0", "reg", reg);
    check_qom_get(c, "/machine/peripheral/nic0", "use-rx-buffer-pools",
                  "true");
    check_qom_get(c, "/machine/peripheral/nic0", "netdev", "\"n0\"");
    check_qom_get(c, "/machine/peripheral/nic0", "type", "\"spapr-vlan\"");
    check_qom_get(c, "/machine/peripheral/nic1", "use-rx-buffer-pools",
                  "false");
    check_qom_get(c, "nic1", "netdev", "\"\"");
    check_qom_get(c, "nic1", "type", "\"spapr-vlan\"");
    check_error(c, "{\"execute\": \"qom-get\", \"arguments\": "
                   "{\"path\": \"/machine/peripheral/nope\", "
                   "\"property\": \"mac\"}}",
                DEV_NOT_FOUND, "Device '/machine/peripheral/nope' not found");
    check_error(c, "{\"execute\": \"qom-get\", \"arguments\": "
                   "{\"path\": \"/machine/peripheral/nic0\", "
                   "\"property\": \"nope\"}}",
                GENERIC, "Property 'spapr-vlan.nope' not found");
    conn_close(c);
    rig_stop(&r);
}

/* ---- netdevs and statistics ---- */

/* Sends one broadcast frame of 60 bytes to the dgram socket at @to. */
static void inject(int fd, const char *to)
{
    const uint8_t frame[60] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                0x52, 0x54, 0x00, 0x99, 0x99, 0x99,
                                0x08, 0x00 };

    qtest_dgram_send(fd, to, frame, sizeof(frame));
}

static JsonObject *find_named(JsonArray *list, const char *name)
{
    for (guint i = 0; i < json_array_get_length(list); i++) {
        JsonObject *o = json_array_get_object_element(list, i);

        if (!g_strcmp0(get_str(o, "name"), name)) {
            return o;
        }
    }
    return NULL;
}

static const char *const drop_names[] = {
    "no-nic", "link-down", "not-registered", "filtered", "no-buffer",
    "dma-error", "too-short", "vm-stopped", "jumbo-tcp",
};

static void check_drops(JsonObject *dropped)
{
    g_autoptr(GList) names = json_object_get_members(dropped);

    for (size_t i = 0; i < G_N_ELEMENTS(drop_names); i++) {
        get_int(dropped, drop_names[i]);
    }
    for (GList *l = names; l; l = l->next) {
        g_assert_cmpint(get_int(dropped, l->data), >=, 0);
    }
}

/* The rx block: frames = delivered + the sum of dropped.  Returns frames. */
static gint64 check_rx(JsonObject *rx)
{
    JsonObject *dropped;
    g_autoptr(GList) names = NULL;
    gint64 sum;

    MEMBERS(rx, "frames", "bytes", "batches", "delivered", "dropped");
    dropped = get_obj(rx, "dropped");
    check_drops(dropped);
    names = json_object_get_members(dropped);
    sum = get_int(rx, "delivered");
    for (GList *l = names; l; l = l->next) {
        sum += get_int(dropped, l->data);
    }
    g_assert_cmpint(sum, ==, get_int(rx, "frames"));
    g_assert_cmpint(get_int(rx, "bytes"), >=, 0);
    g_assert_cmpint(get_int(rx, "batches"), <=, get_int(rx, "frames"));
    return get_int(rx, "frames");
}

static void check_tx(JsonObject *tx)
{
    MEMBERS(tx, "frames", "bytes", "errors", "dropped");
    g_assert_cmpint(get_int(tx, "frames"), >=, 0);
    g_assert_cmpint(get_int(tx, "bytes"), >=, 0);
    g_assert_cmpint(get_int(tx, "errors"), >=, 0);
    g_assert_cmpint(get_int(tx, "dropped"), >=, 0);
}

static void check_nic_stats(JsonObject *nic)
{
    JsonObject *dev;
    JsonArray *pools;

    MEMBERS(nic, "name", "model", "netdev", "link-up", "rx", "tx", "device");
    g_assert_cmpstr(get_str(nic, "model"), ==, "spapr-vlan");
    get_bool(nic, "link-up");
    check_rx(get_obj(nic, "rx"));
    check_tx(get_obj(nic, "tx"));
    dev = get_obj(nic, "device");
    MEMBERS(dev, "rx-buffer-pools", "rx-frames", "rx-bytes",
            "rx-buffer-bytes", "rx-interrupts", "rx-held",
            "rx-bufs-posted", "rx-dropped", "rx-zero-copy", "rx-copy-down",
            "rx-lent", "rx-lend-refused", "tx-frames", "tx-bytes",
            "tx-errors", "tx-in-place", "tx-copied", "attributes",
            "attribute-names", "rx-csum-good",
            "rx-csum-partial", "rx-csum-bad", "rx-csum-completed",
            "rx-lro-frames",
            "rx-lro-segments", "rx-long-tcp", "tx-csum-completed",
            "tx-segmented", "tx-segments", "tx-offload-errors", "pools");
    get_bool(dev, "rx-buffer-pools");
    get_int(dev, "rx-frames");
    get_int(dev, "rx-bytes");
    get_int(dev, "rx-buffer-bytes");
    get_int(dev, "rx-interrupts");
    get_int(dev, "rx-held");
    get_int(dev, "rx-bufs-posted");
    check_drops(get_obj(dev, "rx-dropped"));
    /* A qtest machine's netdev lends nothing. */
    g_assert_cmpint(get_int(dev, "rx-zero-copy"), ==, 0);
    g_assert_cmpint(get_int(dev, "rx-copy-down"), ==, 0);
    g_assert_cmpint(get_int(dev, "rx-lent"), ==, 0);
    g_assert_cmpint(get_int(dev, "rx-lend-refused"), ==, 0);
    get_int(dev, "tx-frames");
    get_int(dev, "tx-bytes");
    get_int(dev, "tx-errors");
    /* Nor sends in place. */
    g_assert_cmpint(get_int(dev, "tx-in-place"), ==, 0);
    MEMBERS(get_obj(dev, "tx-copied"), "gathered", "offload",
            "not-contiguous", "backend");
    /* A device that offers offloads, none turned on. */
    g_assert_cmpint(get_int(dev, "attributes"), ==, 0x4A000);
    g_assert_cmpuint(json_array_get_length(get_arr(dev, "attribute-names")),
                     ==, 3);
    get_int(dev, "rx-csum-good");
    get_int(dev, "rx-csum-partial");
    get_int(dev, "rx-csum-bad");
    get_int(dev, "rx-csum-completed");
    get_int(dev, "rx-lro-frames");
    get_int(dev, "rx-lro-segments");
    get_int(dev, "rx-long-tcp");
    get_int(dev, "tx-csum-completed");
    get_int(dev, "tx-segmented");
    get_int(dev, "tx-segments");
    MEMBERS(get_obj(dev, "tx-offload-errors"), "not-ip", "not-tcp-udp",
            "truncated", "bad-length", "bad-ihl", "fragment", "mss-zero",
            "not-tcp");
    pools = get_arr(dev, "pools");
    for (guint i = 0; i < json_array_get_length(pools); i++) {
        JsonObject *p = json_array_get_object_element(pools, i);

        MEMBERS(p, "bufsize", "posted", "hits");
    }
}

static void check_netdev_stats(JsonObject *nd)
{
    MEMBERS(nd, "name", "type", "nic", "rx", "rx-errors", "tx");
    get_str(nd, "type");
    check_rx(get_obj(nd, "rx"));
    g_assert_cmpint(get_int(nd, "rx-errors"), >=, 0);
    check_tx(get_obj(nd, "tx"));
}

/* x-query-net-stats, with the shape of every entry checked. */
static JsonObject *net_stats(Conn *c)
{
    JsonObject *rsp = conn_cmd(c, "{\"execute\": \"x-query-net-stats\"}");
    JsonNode *ret = assert_return(rsp, NULL);
    JsonObject *o, *result;
    JsonArray *nics, *netdevs;

    g_assert_true(JSON_NODE_HOLDS_OBJECT(ret));
    o = json_node_get_object(ret);
    MEMBERS(o, "nics", "netdevs");
    nics = get_arr(o, "nics");
    netdevs = get_arr(o, "netdevs");
    for (guint i = 0; i < json_array_get_length(nics); i++) {
        check_nic_stats(json_array_get_object_element(nics, i));
    }
    for (guint i = 0; i < json_array_get_length(netdevs); i++) {
        check_netdev_stats(json_array_get_object_element(netdevs, i));
    }
    result = json_object_ref(o);
    json_object_unref(rsp);
    return result;
}

typedef struct StatsWait {
    Conn *c;
    const char *netdev;
    gint64 frames, seen;
    JsonObject *st;
} StatsWait;

static bool netdev_saw_frames(void *opaque)
{
    StatsWait *w = opaque;
    JsonObject *nd;

    g_clear_pointer(&w->st, json_object_unref);
    w->st = net_stats(w->c);
    nd = find_named(get_arr(w->st, "netdevs"), w->netdev);
    g_assert_nonnull(nd);
    w->seen = get_int(get_obj(nd, "rx"), "frames");
    return w->seen >= w->frames;
}

/* Statistics once the netdev @name has seen @frames frames. */
static JsonObject *net_stats_after(Conn *c, const char *netdev,
                                   gint64 frames)
{
    StatsWait w = { .c = c, .netdev = netdev, .frames = frames };

    if (!qtest_poll_until(netdev_saw_frames, &w, QTEST_WAIT_S)) {
        g_error("waited %.0f s for netdev %s to see %" G_GINT64_FORMAT
                " frames; it saw %" G_GINT64_FORMAT, QTEST_WAIT_S, netdev,
                frames, w.seen);
    }
    return w.st;
}

static gint64 drop_count(JsonObject *client, const char *reason)
{
    return get_int(get_obj(get_obj(client, "rx"), "dropped"), reason);
}

static void test_net_stats(void)
{
    Rig r;
    Conn *c;
    JsonObject *st, *nic0, *nic1, *n0;
    int peer;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    st = net_stats(c);
    g_assert_cmpuint(json_array_get_length(get_arr(st, "nics")), ==, 2);
    g_assert_cmpuint(json_array_get_length(get_arr(st, "netdevs")), ==, 1);
    nic0 = find_named(get_arr(st, "nics"), "nic0");
    nic1 = find_named(get_arr(st, "nics"), "nic1");
    n0 = find_named(get_arr(st, "netdevs"), "n0");
    g_assert_cmpstr(get_str(nic0, "netdev"), ==, "n0");
    g_assert_true(JSON_NODE_HOLDS_NULL(json_object_get_member(nic1,
                                                              "netdev")));
    g_assert_true(get_bool(get_obj(nic0, "device"), "rx-buffer-pools"));
    g_assert_false(get_bool(get_obj(nic1, "device"), "rx-buffer-pools"));
    g_assert_cmpstr(get_str(n0, "type"), ==, "dgram");
    g_assert_cmpstr(get_str(n0, "nic"), ==, "nic0");
    g_assert_cmpint(check_rx(get_obj(nic0, "rx")), ==, 0);
    json_object_unref(st);

    /* The guest never opened nic0: three frames are dropped as
     * not-registered; stopped, two more as vm-stopped. */
    peer = qtest_bind_dgram(r.peer_path);
    for (int i = 0; i < 3; i++) {
        inject(peer, r.n0_path);
    }
    st = net_stats_after(c, "n0", 3);
    json_object_unref(st);
    expect_return(conn_cmd(c, "{\"execute\": \"stop\"}"), "{}");
    conn_event(c, "STOP", NULL);
    for (int i = 0; i < 2; i++) {
        inject(peer, r.n0_path);
    }
    st = net_stats_after(c, "n0", 5);
    nic0 = find_named(get_arr(st, "nics"), "nic0");
    n0 = find_named(get_arr(st, "netdevs"), "n0");
    g_assert_cmpint(check_rx(get_obj(nic0, "rx")), ==, 5);
    g_assert_cmpint(check_rx(get_obj(n0, "rx")), ==, 5);
    g_assert_cmpint(get_int(get_obj(n0, "rx"), "bytes"), ==, 5 * 60);
    g_assert_cmpint(get_int(get_obj(nic0, "rx"), "delivered"), ==, 0);
    g_assert_cmpint(drop_count(nic0, "not-registered"), ==, 3);
    g_assert_cmpint(drop_count(nic0, "vm-stopped"), ==, 2);
    g_assert_cmpint(drop_count(n0, "not-registered"), ==, 3);
    g_assert_cmpint(drop_count(n0, "vm-stopped"), ==, 2);
    g_assert_cmpint(get_int(get_obj(get_obj(nic0, "device"), "rx-dropped"),
                            "vm-stopped"), ==, 2);
    json_object_unref(st);
    close(peer);
    conn_close(c);
    rig_stop(&r);
}

static void test_netdev_add_del(void)
{
    Rig r;
    Conn *c;
    JsonObject *st, *n1;
    int peer;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    expect_return(conn_cmd(c, "{\"execute\": \"netdev_add\", \"arguments\": "
                              "{\"type\": \"dgram\", \"id\": \"n1\", "
                              "\"local\": {\"type\": \"unix\", "
                              "\"path\": \"%s\"}, "
                              "\"remote\": {\"type\": \"unix\", "
                              "\"path\": \"%s\"}}}",
                           r.n1_path, r.n1_peer), "{}");
    g_assert_true(g_file_test(r.n1_path, G_FILE_TEST_EXISTS));
    st = net_stats(c);
    g_assert_cmpuint(json_array_get_length(get_arr(st, "netdevs")), ==, 2);
    n1 = find_named(get_arr(st, "netdevs"), "n1");
    g_assert_nonnull(n1);
    g_assert_cmpstr(get_str(n1, "type"), ==, "dgram");
    g_assert_true(JSON_NODE_HOLDS_NULL(json_object_get_member(n1, "nic")));
    json_object_unref(st);

    /* It works: with no NIC, a frame sent to it is dropped as no-nic. */
    peer = qtest_bind_dgram(r.n1_peer);
    inject(peer, r.n1_path);
    st = net_stats_after(c, "n1", 1);
    n1 = find_named(get_arr(st, "netdevs"), "n1");
    g_assert_cmpint(check_rx(get_obj(n1, "rx")), ==, 1);
    g_assert_cmpint(drop_count(n1, "no-nic"), ==, 1);
    json_object_unref(st);
    close(peer);

    /* Errors. */
    check_error(c, "{\"execute\": \"netdev_add\", \"arguments\": "
                   "{\"type\": \"dgram\", \"id\": \"n0\", "
                   "\"local\": {\"type\": \"unix\", \"path\": \"/x\"}, "
                   "\"remote\": {\"type\": \"unix\", \"path\": \"/y\"}}}",
                GENERIC, "Duplicate ID 'n0' for netdev");
    check_error(c, "{\"execute\": \"netdev_add\", \"arguments\": "
                   "{\"type\": \"tap\", \"id\": \"t0\"}}",
                DEV_NOT_FOUND, "Invalid netdev type 'tap' (see -netdev help)");
    check_error(c, "{\"execute\": \"netdev_add\", \"arguments\": "
                   "{\"id\": \"t0\"}}",
                GENERIC, "Parameter 'type' is missing");
    check_error(c, "{\"execute\": \"netdev_add\", \"arguments\": "
                   "{\"type\": \"dgram\"}}",
                GENERIC, "Parameter 'id' is missing");
    check_error(c, "{\"execute\": \"netdev_add\", \"arguments\": "
                   "{\"type\": \"dgram\", \"id\": 5}}",
                GENERIC, "Invalid parameter type for 'id', expected: string");
    check_error(c, "{\"execute\": \"netdev_add\", \"arguments\": "
                   "{\"type\": \"dgram\", \"id\": \"t0\", \"x\": [1]}}",
                GENERIC, "Invalid parameter type for 'x', expected: a "
                         "string, number, boolean or object");
    check_error(c, "{\"execute\": \"netdev_add\", \"arguments\": "
                   "{\"type\": \"dgram\", \"id\": \"t0\"}}",
                GENERIC, "Parameter 'local.type' is missing "
                         "(use local.type=inet or local.type=unix)");
    /* Keys cannot smuggle in option syntax. */
    check_error(c, "{\"execute\": \"netdev_add\", \"arguments\": "
                   "{\"type\": \"dgram\", \"id\": \"t0\", "
                   "\"local\": {\"type\": \"unix\", \"path\": \"/x\"}, "
                   "\"remote\": {\"type\": \"unix\", \"path\": \"/y\"}, "
                   "\"local.type=unix,id\": \"t1\"}}",
                GENERIC, "Parameter name 'local.type=unix,id' is not valid");
    check_error(c, "{\"execute\": \"netdev_add\", \"arguments\": "
                   "{\"type\": \"dgram\", \"id\": \"t0\", "
                   "\"local\": {\"type\": \"unix\", \"path,x\": \"/x\"}}}",
                GENERIC, "Parameter name 'path,x' is not valid");
    check_error(c, "{\"execute\": \"netdev_add\", \"arguments\": "
                   "{\"type\": \"dgram\", \"id\": \"t0\", \"\": 1}}",
                GENERIC, "Parameter name '' is not valid");
    st = net_stats(c);
    g_assert_cmpuint(json_array_get_length(get_arr(st, "netdevs")), ==, 2);
    json_object_unref(st);

    /* netdev_del. */
    expect_return(conn_cmd(c, "{\"execute\": \"netdev_del\", "
                              "\"arguments\": {\"id\": \"n1\"}}"), "{}");
    g_assert_false(g_file_test(r.n1_path, G_FILE_TEST_EXISTS));
    st = net_stats(c);
    g_assert_cmpuint(json_array_get_length(get_arr(st, "netdevs")), ==, 1);
    g_assert_null(find_named(get_arr(st, "netdevs"), "n1"));
    json_object_unref(st);
    check_error(c, "{\"execute\": \"netdev_del\", \"arguments\": "
                   "{\"id\": \"n1\"}}",
                DEV_NOT_FOUND, "Device 'n1' not found");
    check_error(c, "{\"execute\": \"netdev_del\", \"arguments\": "
                   "{\"id\": \"nic0\"}}",
                DEV_NOT_FOUND, "Device 'nic0' not found");
    conn_send(c, "{\"execute\": \"netdev_del\", \"arguments\": "
                 "{\"id\": \"n0\"}}", strlen("{\"execute\": \"netdev_del\", "
                                             "\"arguments\": {\"id\": "
                                             "\"n0\"}}"));
    expect_error(conn_recv(c), GENERIC, "netdev 'n0' is in use by NIC 'nic0'");
    check_error(c, "{\"execute\": \"netdev_del\"}", GENERIC,
                "Parameter 'id' is missing");
    /* The id can be used again. */
    expect_return(conn_cmd(c, "{\"execute\": \"netdev_add\", \"arguments\": "
                              "{\"type\": \"dgram\", \"id\": \"n1\", "
                              "\"local\": {\"type\": \"unix\", "
                              "\"path\": \"%s\"}, "
                              "\"remote\": {\"type\": \"unix\", "
                              "\"path\": \"%s\"}}}",
                           r.n1_path, r.n1_peer), "{}");
    conn_close(c);
    rig_stop(&r);
    /* Removed at exit too. */
    g_assert_false(g_file_test(r.n1_path, G_FILE_TEST_EXISTS));
}

/* ---- several clients ---- */

static void test_many_clients(void)
{
    Rig r;
    Conn *a, *b, *idle;
    g_autoptr(JsonObject) va = NULL;
    g_autoptr(JsonObject) vb = NULL;
    g_autoptr(JsonObject) vi = NULL;

    rig_start(&r, NULL);
    a = conn_open(r.qmp_path);
    b = conn_open(r.qmp_path);
    va = check_greeting(a);
    vb = check_greeting(b);
    /* Each negotiates on its own. */
    expect_return(conn_cmd(a, "{\"execute\": \"qmp_capabilities\"}"), "{}");
    check_error(b, "{\"execute\": \"query-status\"}", NOT_FOUND, NEED_CAPS);
    expect_return(conn_cmd(a, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    expect_return(conn_cmd(b, "{\"execute\": \"qmp_capabilities\"}"), "{}");
    check_error(a, "{\"execute\": \"qmp_capabilities\"}", NOT_FOUND,
                "Capabilities negotiation is already complete, "
                "command ignored");
    idle = conn_open(r.qmp_path);
    vi = check_greeting(idle);

    /* One stops the machine: both negotiated clients hear of it. */
    conn_sendf(a, "{\"execute\": \"stop\", \"id\": \"a\"}");
    recv_event(a, "STOP", NULL);
    recv_return(a, "\"a\"", "{}");
    conn_event(b, "STOP", NULL);
    expect_return(conn_cmd(b, "{\"execute\": \"query-status\"}"),
                  "{\"running\": false, \"status\": \"paused\"}");
    assert_no_kept_events(b);
    check_error(idle, "{\"execute\": \"query-status\"}", NOT_FOUND,
                NEED_CAPS);

    /* A half-sent request on one connection holds up no other. */
    conn_sendf(a, "{\"execute\": \"cont\", ");
    expect_return(conn_cmd(b, "{\"execute\": \"query-status\"}"),
                  "{\"running\": false, \"status\": \"paused\"}");
    conn_sendf(a, "\"id\": 2}");
    recv_event(a, "RESUME", NULL);
    recv_return(a, "2", "{}");
    conn_event(b, "RESUME", NULL);

    /* A client leaving does not disturb the others. */
    conn_close(a);
    expect_return(conn_cmd(b, "{\"execute\": \"system_reset\"}"), "{}");
    conn_event(b, "RESET", "{\"guest\": false, "
                           "\"reason\": \"host-qmp-system-reset\"}");
    conn_close(idle);
    expect_return(conn_cmd(b, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    /* And new ones are still accepted. */
    a = rig_conn(&r);
    expect_return(conn_cmd(a, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    conn_close(a);
    conn_close(b);
    rig_stop(&r);
}

/* A request whose reply is big for little work: it echoes a 4 KiB id
 * that starts with @n. */
static void append_padded_request(GString *out, int n)
{
    g_string_append_printf(out, "{\"execute\": \"query-status\", "
                                "\"id\": \"%d-", n);
    for (int j = 0; j < 4096; j++) {
        g_string_append_c(out, 'x');
    }
    g_string_append(out, "\"}");
}

/* Sends @burst over and over to @c without reading, going on at *@off,
 * until the socket is full (true) or the monitor hung up (false). */
static bool send_until_blocked(Conn *c, const GString *burst, size_t *off)
{
    for (;;) {
        ssize_t n = send(c->fd, burst->str + *off, burst->len - *off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return true;
        }
        if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
            return false;
        }
        g_assert_cmpint(n, >, 0);
        *off = (*off + n) % burst->len;
    }
}

/* Output a client does not read is kept for it, in order; a client that
 * lets more than 16 MiB pile up is hung up on, and the others are served
 * all along. */
static void test_slow_reader(void)
{
    enum { PATIENT = 400, FLOOD_S = 60 };
    Rig r;
    Conn *hog, *b;
    gint64 deadline;
    ssize_t n;
    size_t off = 0;
    g_autoptr(GString) many = g_string_new(NULL);
    g_autoptr(GString) burst = g_string_new(NULL);

    rig_start(&r, NULL);
    hog = rig_conn(&r);
    b = rig_conn(&r);

    /* 1.6 MiB of replies, far more than a socket holds, asked for at once
     * and read only later: all arrive, in order. */
    for (int i = 0; i < PATIENT; i++) {
        append_padded_request(many, i);
    }
    conn_send(b, many->str, many->len);
    /* Not synchronisation: the reader comes late, which is what is
     * tested; every reply below is awaited with conn_recv()'s deadline,
     * however far the monitor got in the meantime. */
    g_usleep(200000);
    for (int i = 0; i < PATIENT; i++) {
        g_autoptr(JsonObject) rsp = conn_recv(b);
        g_autofree char *prefix = g_strdup_printf("%d-x", i);

        MEMBERS(rsp, "return", "id");
        g_assert_true(g_str_has_prefix(get_str(rsp, "id"), prefix));
        g_assert_cmpuint(strlen(get_str(rsp, "id")), ==,
                         strlen(prefix) - 1 + 4096);
    }

    /* The hog asks and never reads.  Meanwhile b is answered, until the
     * hog's unread output passes the limit and it is hung up on. */
    for (int i = 0; i < 16; i++) {
        append_padded_request(burst, i);
    }
    deadline = g_get_monotonic_time() + FLOOD_S * G_USEC_PER_SEC;
    while (send_until_blocked(hog, burst, &off)) {
        expect_return(conn_cmd(b, "{\"execute\": \"query-status\"}"),
                      "{\"running\": true, \"status\": \"running\"}");
        if (g_get_monotonic_time() > deadline) {
            g_error("the monitor did not hang up on a client that does "
                    "not read within %d s", FLOOD_S);
        }
    }
    /* What it had been sent before ends in a hang-up. */
    do {
        g_string_truncate(hog->rx, 0);
        n = conn_fill(hog, READ_TIMEOUT_MS);
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
    } while (n > 0);
    g_assert_cmpint(n, ==, 0);

    /* The monitor carries on. */
    expect_return(conn_cmd(b, "{\"execute\": \"stop\"}"), "{}");
    conn_event(b, "STOP", NULL);
    conn_close(hog);
    hog = rig_conn(&r);
    expect_return(conn_cmd(hog, "{\"execute\": \"query-status\"}"),
                  "{\"running\": false, \"status\": \"paused\"}");
    conn_close(hog);
    conn_close(b);
    rig_stop(&r);
}

/* ---- errors ---- */

static void test_malformed_json(void)
{
    static const char *const bad[] = {
        "{\"execute\": }", "{]", "[}", "}\n", "]\n", "{\"execute\"}",
        "{\"execute\": \"query-status\",}", "{\"execute\" \"stop\"}",
        "{execute: \"stop\"}", "{\"execute\": \"stop\" \"id\": 1}",
        "{\"execute\": tru}", "tru\n", "nul\n",
        "{\"execute\": \"query-status\", \"id\": [1,]}", "-\n", "@\n",
        "{\"execute\": \"\\u12\"}", "{\"id\": +1", "{\"id\": NaN",
    };
    Rig r;
    Conn *c;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        check_parse_error(c, bad[i]);
        expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                      "{\"running\": true, \"status\": \"running\"}");
    }
    /* Invalid UTF-8 (0xFE and 0xFF are lexical errors: see resync). */
    check_parse_error(c, "{\"execute\": \"\xc3\x28\"}");
    /* After a lexical error the rest is skipped up to a structural
     * character, which starts afresh: here a stray '}'. */
    check_parse_error(c, "{\"id\": +1}");
    expect_error(conn_recv(c), GENERIC,
                 "JSON parse error, <data>:1:1: Parse error: unexpected "
                 "character `}', expected value");
    /* A stray closer ends at the next object, which still counts. */
    conn_sendf(c, "}{\"execute\": \"query-status\", \"id\": 9}");
    expect_error_full(conn_recv(c), GENERIC, PARSE_ERROR, true, NULL);
    assert_return(conn_recv(c), "9");
    conn_close(c);
    rig_stop(&r);
}

/* A string left open swallows everything up to the next quote, but for
 * control characters: a newline in it is a lexical error, which ends it,
 * and the stream is back in step. */
static void test_unterminated_string(void)
{
    Rig r;
    Conn *c;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    conn_sendf(c, "{\"execute\": \"query-status\n");
    expect_error(conn_recv(c), GENERIC,
                 "JSON parse error, stray '\"query-status\n'");
    conn_sendf(c, "{\"execute\": \"query-status}{\"id\": 1");
    conn_assert_quiet(c, 300);
    conn_sendf(c, "\"}\n");
    expect_error_full(conn_recv(c), GENERIC, PARSE_ERROR, true, NULL);
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    /* A scalar is only complete at the character after it. */
    conn_sendf(c, "42");
    conn_assert_quiet(c, 300);
    conn_sendf(c, "\n");
    expect_error(conn_recv(c), GENERIC, NOT_OBJECT);
    conn_close(c);
    rig_stop(&r);
}

static void test_not_an_object(void)
{
    static const char *const texts[] = {
        "[1]", "[]", "[{\"execute\": \"query-status\"}]", "42\n", "-1.5e3\n",
        "\"str\"\n", "'str'\n", "null\n", "true\n", "false\n",
    };
    Rig r;
    Conn *c;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
        check_error(c, texts[i], GENERIC, NOT_OBJECT);
    }
    /* Scalars back to back, separated by white space only. */
    conn_sendf(c, "1 2\t3\r\n");
    for (int i = 0; i < 3; i++) {
        expect_error(conn_recv(c), GENERIC, NOT_OBJECT);
    }
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    conn_close(c);
    rig_stop(&r);
}

static void test_bad_envelope(void)
{
    static const char *const not_strings[] = {
        "1", "null", "true", "{}", "[\"stop\"]", "1.5",
    };
    static const char *const not_objects[] = {
        "[]", "\"x\"", "1", "null", "false",
    };
    Rig r;
    Conn *c;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    check_error(c, "{}", GENERIC, "QMP input lacks member 'execute'");
    check_error(c, "{\"arguments\": {}}", GENERIC,
                "QMP input lacks member 'execute'");
    check_error(c, "{\"Execute\": \"stop\"}", GENERIC,
                "QMP input member 'Execute' is unexpected");
    for (size_t i = 0; i < G_N_ELEMENTS(not_strings); i++) {
        g_autofree char *req = g_strdup_printf("{\"execute\": %s}",
                                               not_strings[i]);
        check_error(c, req, GENERIC,
                    "QMP input member 'execute' must be a string");
    }
    for (size_t i = 0; i < G_N_ELEMENTS(not_objects); i++) {
        g_autofree char *req = g_strdup_printf(
            "{\"execute\": \"query-status\", \"arguments\": %s}",
            not_objects[i]);
        check_error(c, req, GENERIC,
                    "QMP input member 'arguments' must be an object");
    }
    check_error(c, "{\"execute\": \"stop\", \"extra\": {}}", GENERIC,
                "QMP input member 'extra' is unexpected");
    check_error(c, "{\"execute\": \"stop\", \"exec-oob\": \"stop\"}", GENERIC,
                "QMP input member 'exec-oob' is unexpected");
    check_error(c, "{\"execute\": \"no-such-command\"}", NOT_FOUND,
                "The command no-such-command has not been found");
    check_error(c, "{\"execute\": \"\"}", NOT_FOUND,
                "The command  has not been found");
    check_error(c, "{\"execute\": \"Query-Status\"}", NOT_FOUND,
                "The command Query-Status has not been found");
    /* None of that stopped the machine. */
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    assert_no_kept_events(c);
    conn_close(c);
    rig_stop(&r);
}

static void test_bad_arguments(void)
{
    /* A string is expected: every other kind of value is refused. */
    static const char *const not_strings[] = {
        "1", "-1", "1.5", "true", "false", "null", "[]", "[\"nic0\"]", "{}",
    };
    /* An array is expected (qmp_capabilities' enable). */
    static const char *const not_arrays[] = {
        "\"oob\"", "1", "true", "null", "{}",
    };
    Rig r;
    Conn *c, *fresh;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    for (size_t i = 0; i < G_N_ELEMENTS(not_strings); i++) {
        const char *v = not_strings[i];
        g_autofree char *r1 = g_strdup_printf(
            "{\"execute\": \"qom-list\", \"arguments\": {\"path\": %s}}", v);
        g_autofree char *r2 = g_strdup_printf(
            "{\"execute\": \"qom-get\", \"arguments\": "
            "{\"path\": \"nic0\", \"property\": %s}}", v);
        g_autofree char *r3 = g_strdup_printf(
            "{\"execute\": \"netdev_del\", \"arguments\": {\"id\": %s}}", v);
        g_autofree char *r4 = g_strdup_printf(
            "{\"execute\": \"netdev_add\", \"arguments\": "
            "{\"type\": %s, \"id\": \"x\"}}", v);

        check_error(c, r1, GENERIC,
                    "Invalid parameter type for 'path', expected: string");
        check_error(c, r2, GENERIC, "Invalid parameter type for "
                                    "'property', expected: string");
        check_error(c, r3, GENERIC,
                    "Invalid parameter type for 'id', expected: string");
        check_error(c, r4, GENERIC,
                    "Invalid parameter type for 'type', expected: string");
    }
    fresh = conn_open(r.qmp_path);
    json_object_unref(check_greeting(fresh));
    for (size_t i = 0; i < G_N_ELEMENTS(not_arrays); i++) {
        g_autofree char *req = g_strdup_printf(
            "{\"execute\": \"qmp_capabilities\", "
            "\"arguments\": {\"enable\": %s}}", not_arrays[i]);
        check_error(fresh, req, GENERIC,
                    "Invalid parameter type for 'enable', expected: array");
    }
    conn_close(fresh);

    /* Unexpected arguments. */
    check_error(c, "{\"execute\": \"query-status\", "
                   "\"arguments\": {\"verbose\": true}}",
                GENERIC, "Parameter 'verbose' is unexpected");
    check_error(c, "{\"execute\": \"stop\", \"arguments\": {\"now\": 1}}",
                GENERIC, "Parameter 'now' is unexpected");
    check_error(c, "{\"execute\": \"qom-get\", \"arguments\": "
                   "{\"path\": \"nic0\", \"property\": \"mac\", "
                   "\"value\": \"x\"}}",
                GENERIC, "Parameter 'value' is unexpected");
    check_error(c, "{\"execute\": \"netdev_del\", \"arguments\": "
                   "{\"id\": \"n0\", \"force\": true}}",
                GENERIC, "Parameter 'force' is unexpected");

    /* Missing arguments. */
    check_error(c, "{\"execute\": \"qom-get\", \"arguments\": "
                   "{\"path\": \"nic0\"}}",
                GENERIC, "Parameter 'property' is missing");
    check_error(c, "{\"execute\": \"qom-get\", \"arguments\": "
                   "{\"property\": \"mac\"}}",
                GENERIC, "Parameter 'path' is missing");
    check_error(c, "{\"execute\": \"qom-get\"}", GENERIC,
                "Parameter 'path' is missing");
    check_error(c, "{\"execute\": \"qom-list\", \"arguments\": {}}", GENERIC,
                "Parameter 'path' is missing");
    check_error(c, "{\"execute\": \"netdev_add\"}", GENERIC,
                "Parameter 'type' is missing");
    /* Nothing was stopped by "stop" with a bad argument. */
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    assert_no_kept_events(c);
    conn_close(c);
    rig_stop(&r);
}

/* @levels nested arrays: "[[...]]". */
static char *nested_arrays(unsigned levels)
{
    GString *s = g_string_new(NULL);

    for (unsigned i = 0; i < levels; i++) {
        g_string_append_c(s, '[');
    }
    for (unsigned i = 0; i < levels; i++) {
        g_string_append_c(s, ']');
    }
    return g_string_free(s, FALSE);
}

/* A query-status @depth levels deep: its id holds the arrays. */
static char *nested_request(unsigned depth)
{
    g_autofree char *id = nested_arrays(depth - 1);

    return g_strdup_printf("{\"execute\": \"query-status\", \"id\": %s}", id);
}

#define SIZED_HEAD "{\"execute\": \"query-status\", \"id\": \""

/* A request of exactly @size bytes: query-status with a long string id. */
static char *sized_request(size_t size)
{
    GString *s = g_string_new(SIZED_HEAD);

    g_assert_cmpuint(size, >, strlen(SIZED_HEAD) + 2);
    while (s->len < size - 2) {
        g_string_append_c(s, 'a');
    }
    g_string_append(s, "\"}");
    g_assert_cmpuint(s->len, ==, size);
    return g_string_free(s, FALSE);
}

/* Strings json-glib would mangle: \u0000 (it ends the string early) and
 * lone surrogates (not UTF-8) are refused, a lone surrogate in QEMU's
 * words whatever follows it.  Escapes for non-characters, which json-glib
 * takes, are refused in the same words, as QEMU does; U+FFFD is a
 * character and comes back.  An escaped backslash before "u0000" is just
 * text and comes back unchanged.  A raw NUL byte is a stray character
 * shown as its escape. */
static void test_bad_strings(void)
{
    Rig r;
    Conn *c;
    JsonObject *rsp;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    check_parse_error(c, "{\"execute\":\"query-status\\u0000junk\"}");
    check_parse_error(c, "{\"execute\":\"query-status\",\"id\":\"a\\u0000b\"}");
    check_error(c, "{\"execute\":\"query-status\",\"id\":\"\\udc00x\"}",
                GENERIC, "JSON parse error, \\udc00 is not a valid Unicode "
                "character");
    check_error(c, "{\"id\": \"\\ud800\", \"execute\":\"query-status\"}",
                GENERIC, "JSON parse error, \\ud800 is not a valid Unicode "
                "character");
    check_error(c, "{\"execute\":\"query-status\",\"id\":\"\\ud800x\"}",
                GENERIC, "JSON parse error, \\ud800 is not a valid Unicode "
                "character");
    check_error(c, "{\"execute\":\"query-status\",\"id\":\"\\uFDD0\"}",
                GENERIC, "JSON parse error, \\uFDD0 is not a valid Unicode "
                "character");
    check_error(c, "{\"execute\":\"query-status\",\"id\":\"\\uffff\"}",
                GENERIC, "JSON parse error, \\uffff is not a valid Unicode "
                "character");
    check_error(c, "{\"execute\":\"query-status\",\"id\":\"\\ud83f\\udffe\"}",
                GENERIC, "JSON parse error, \\ud83f\\udffe is not a valid "
                "Unicode character");
    conn_send(c, "[\0", 2);
    expect_error(conn_recv(c), GENERIC, "JSON parse error, stray '\\u0000'");
    rsp = conn_cmd(c, "{\"execute\":\"query-status\",\"id\":\"\\ufffd\"}");
    g_assert_cmpstr(get_str(rsp, "id"), ==, "\xef\xbf\xbd");
    json_object_unref(rsp);
    rsp = conn_cmd(c, "{\"execute\":\"query-status\",\"id\":\"\\\\u0000\"}");
    g_assert_cmpstr(get_str(rsp, "id"), ==, "\\u0000");
    json_object_unref(rsp);
    conn_close(c);
    rig_stop(&r);
}

static void test_limits(void)
{
    Rig r;
    Conn *c;
    JsonObject *rsp;
    g_autofree char *deep64 = nested_request(64);
    g_autofree char *id64 = nested_arrays(63);
    g_autofree char *deep65 = nested_request(65);
    g_autofree char *big = sized_request(1024 * 1024);
    g_autofree char *too_big = sized_request(1024 * 1024 + 1);
    g_autoptr(GString) very_deep = g_string_new(NULL);
    g_autoptr(GString) long_scalar = g_string_new(NULL);

    rig_start(&r, NULL);
    c = rig_conn(&r);
    /* Nesting: 64 levels are fine, 65 are not. */
    rsp = conn_cmd(c, "%s", deep64);
    assert_return(rsp, id64);
    json_object_unref(rsp);
    check_error(c, deep65, GENERIC, PARSE_ERROR "nesting too deep");
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    /* Far deeper: still one error. */
    for (int i = 0; i < 100000; i++) {
        g_string_append_c(very_deep, '[');
    }
    for (int i = 0; i < 100000; i++) {
        g_string_append_c(very_deep, ']');
    }
    check_error(c, very_deep->str, GENERIC, PARSE_ERROR "nesting too deep");
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");

    /* Size: 1 MiB is fine, one byte more is not. */
    rsp = conn_cmd(c, "%s", big);
    MEMBERS(rsp, "return", "id");
    g_assert_cmpuint(strlen(get_str(rsp, "id")), ==,
                     1024 * 1024 - strlen(SIZED_HEAD) - 2);
    json_object_unref(rsp);
    check_error(c, too_big, GENERIC, PARSE_ERROR "input too large");
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    /* A scalar of 3 MiB. */
    for (int i = 0; i < 3 * 1024 * 1024; i++) {
        g_string_append_c(long_scalar, '7');
    }
    g_string_append_c(long_scalar, '\n');
    check_error(c, long_scalar->str, GENERIC, PARSE_ERROR "input too large");
    /* Sent in pieces, with the object still open in between. */
    conn_sendf(c, "{\"execute\": \"query-status\", \"id\": \"");
    for (int i = 0; i < 3; i++) {
        conn_send(c, long_scalar->str, 1024 * 1024);
        conn_assert_quiet(c, 50);
    }
    conn_sendf(c, "\"}{\"execute\": \"query-status\", \"id\": 1}");
    expect_error(conn_recv(c), GENERIC, PARSE_ERROR "input too large");
    assert_return(conn_recv(c), "1");
    conn_close(c);
    rig_stop(&r);
}

/* A thousand malformed inputs of mixed kinds, each answered with its own
 * error, and the monitor still answers afterwards. */
static void test_flood(void)
{
    static const struct {
        const char *text;
        const char *cls;
    } junk[] = {
        { "{\"execute\": }", GENERIC },
        { "{]", GENERIC },
        { "[}", GENERIC },
        { "}\n", GENERIC },
        { "[1]", GENERIC },
        { "42\n", GENERIC },
        { "\"str\"\n", GENERIC },
        { "null\n", GENERIC },
        { "tru\n", GENERIC },
        { "{\"execute\": 1}", GENERIC },
        { "{\"arguments\": {}}", GENERIC },
        { "{\"execute\": \"nope\"}", NOT_FOUND },
        { "{\"execute\": \"qmp_capabilities\"}", NOT_FOUND },
        { "{\"execute\": \"query-status\", \"arguments\": []}", GENERIC },
        { "{\"execute\": \"query-status\", \"x\": 1}", GENERIC },
        { "{'execute': 'qom-get', 'arguments': {'path': 1}}", GENERIC },
        { "{\"execute\": \"qom-get\", \"arguments\": "
          "{\"path\": \"nope\", \"property\": \"mac\"}}", DEV_NOT_FOUND },
        { NULL, GENERIC },          /* 65 levels deep */
    };
    enum { TOTAL = 1000, BATCH = 40 };
    g_autofree char *deep = nested_request(65);
    Rig r;
    Conn *c;
    unsigned errors = 0, counts[G_N_ELEMENTS(junk)] = { 0 };

    rig_start(&r, NULL);
    c = rig_conn(&r);
    for (unsigned sent = 0; sent < TOTAL; sent += BATCH) {
        g_autoptr(GString) batch = g_string_new(NULL);
        unsigned kinds[BATCH];

        for (unsigned i = 0; i < BATCH; i++) {
            /* Mixed, and not in a fixed rotation. */
            unsigned k = ((sent + i) * 7 + (sent + i) / 3) %
                         G_N_ELEMENTS(junk);

            kinds[i] = k;
            g_string_append(batch, junk[k].text ? junk[k].text : deep);
        }
        conn_send(c, batch->str, batch->len);
        for (unsigned i = 0; i < BATCH; i++) {
            g_autoptr(JsonObject) rsp = conn_recv(c);
            JsonObject *err;

            MEMBERS(rsp, "error");
            err = get_obj(rsp, "error");
            g_assert_cmpstr(get_str(err, "class"), ==, junk[kinds[i]].cls);
            counts[kinds[i]]++;
            errors++;
        }
    }
    g_assert_cmpuint(errors, ==, TOTAL);
    for (size_t k = 0; k < G_N_ELEMENTS(junk); k++) {
        g_assert_cmpuint(counts[k], >, 0);
    }
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    assert_no_kept_events(c);
    conn_close(c);
    rig_stop(&r);
}

/* ---- QEMU's protocol rules, as QEMU's clients rely on them ---- */

/* After @garbage and @resync, the next command is answered: exactly
 * @errors parse errors (no id) come first. */
static void check_resync(Conn *c, const char *garbage, size_t len,
                         unsigned char resync, int errors)
{
    conn_send(c, garbage, len);
    conn_send(c, (const char *)&resync, 1);
    conn_sendf(c, "{\"execute\": \"query-status\", \"id\": \"after\"}");
    for (int i = 0; i < errors; i++) {
        expect_error_full(conn_recv(c), GENERIC, PARSE_ERROR, true, NULL);
    }
    {
        g_autoptr(JsonObject) rsp = conn_recv(c);

        assert_return(rsp, "\"after\"");
    }
}

/* QEMU's qmp-spec: a control character other than tab, CR and LF, or a
 * 0xFF byte, anywhere, is a lexical error that resets the parser. */
static void test_qemu_resync(void)
{
    static const char *const garbage[] = {
        "", "{", "[", "\"", "'", "{\"a\":[", "[[[{\"a\":{\"b\":[{",
        "{\"execute\": \"query-status", "{'execute': 'query-st",
        "{\"a\": \"x\\", "{\"a\": tr", "[nul", "{\"a\": -", "[1.", "[1e",
        "[1e+", "[12", "{\"a\"", "{\"a\":", "[1,", "{\"a\": \"\xc3",
        "{\"id\": 1, \"execute\": \"query-status\"",
    };
    Rig r;
    Conn *c;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    for (size_t i = 0; i < G_N_ELEMENTS(garbage); i++) {
        for (unsigned b = 0x01; b <= 0xFF; b++) {
            if (b == '\t' || b == '\r' || b == '\n' ||
                (b >= 0x20 && b < 0xFE)) {
                continue;
            }
            check_resync(c, garbage[i], strlen(garbage[i]), b, 1);
        }
    }
    /* A NUL byte too. */
    check_resync(c, "{\"a\": [", 7, 0, 1);
    /* Two resync bytes in a row: the second is an error of its own. */
    check_resync(c, "{\x01", 2, 0xFF, 2);
    /* QEMU's own malformed inputs (tests/qtest/qmp-test.c): one error
     * each. */
    check_resync(c, "{", 1, ']', 1);
    check_resync(c, "{'bad ", 6, 0xFF, 1);
    check_resync(c, "{'execute': 'nonexistent', 'id':'", 33, '\n', 1);
    check_resync(c, "", 0, '%', 1);
    /* The error reply has QEMU's shape and words. */
    conn_sendf(c, "{\"a\": \"x\x01");
    expect_error(conn_recv(c), GENERIC,
                 "JSON parse error, stray '\"x\x01'");
    conn_sendf(c, "[\x7f");
    expect_error(conn_recv(c), GENERIC, "JSON parse error, stray '\x7f'");
    assert_no_kept_events(c);
    conn_close(c);
    rig_stop(&r);
}

/* The reply line to @request, raw. */
static char *raw_reply(Conn *c, const char *request)
{
    conn_send(c, request, strlen(request));
    return conn_read_line(c);
}

/* Ids come back as the client wrote them, numbers byte for byte, white
 * space between tokens dropped. */
static void test_qemu_ids_exact(void)
{
    static const struct {
        const char *id, *echo;
    } ids[] = {
        { "18446744073709551616", NULL }, { "1.50", NULL },
        { "-9223372036854775809", NULL }, { "1e308", NULL },
        { "1E+2", NULL }, { "-0", NULL }, { "0.1000", NULL },
        { "123456789012345678901234567890", NULL },
        { "[18446744073709551616, 1.50, {\"x\" : 1e-7}]",
          "[18446744073709551616,1.50,{\"x\":1e-7}]" },
        { "\"\\u0001\\u001f \\\" \\\\\"", NULL },
        { "'single'", "\"single\"" },
    };
    Rig r;
    Conn *c;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    for (size_t i = 0; i < G_N_ELEMENTS(ids); i++) {
        const char *echo = ids[i].echo ? ids[i].echo : ids[i].id;
        g_autofree char *ok = g_strdup_printf(
            "{\"execute\": \"query-status\", \"id\": %s}", ids[i].id);
        g_autofree char *bad = g_strdup_printf(
            "{\"id\": %s, \"execute\": \"nope\"}", ids[i].id);
        g_autofree char *tail = g_strdup_printf("\"id\": %s}", echo);
        g_autofree char *line = raw_reply(c, ok);
        g_autofree char *err = raw_reply(c, bad);

        g_assert_true(g_str_has_suffix(line, tail));
        g_assert_true(g_str_has_prefix(line, "{\"return\": "));
        g_assert_true(g_str_has_suffix(err, tail));
        g_assert_true(g_str_has_prefix(err, "{\"error\": "));
        json_object_unref(parse_object(line));
    }
    /* A number no double holds is refused where it is read, an integer
     * id too. */
    {
        g_autofree char *digits = g_strnfill(400, '9');
        g_autofree char *req = g_strdup_printf(
            "{\"execute\": \"query-status\", \"id\": %s}", digits);
        g_autofree char *desc = g_strdup_printf(
            "JSON parse error, number '%.64s' is beyond the range of a "
            "double", digits);

        check_error(c, req, GENERIC, desc);
    }
    check_error(c, "{\"execute\": \"query-status\", \"id\": 1e400}", GENERIC,
                "JSON parse error, number '1e400' is beyond the range of "
                "a double");
    check_error(c, "{\"execute\": \"query-status\", \"arguments\": "
                   "{\"a\": [-1e999]}}", GENERIC,
                "JSON parse error, number '-1e999' is beyond the range of "
                "a double");
    /* As is an escape JSON does not have, which json-glib would take. */
    check_error(c, "{\"execute\": \"query-stat\\us\"}", GENERIC,
                "JSON parse error, invalid escape sequence in string");
    check_error(c, "{\"execute\": \"query-status\", \"id\": \"\\u12x\"}",
                GENERIC, "JSON parse error, invalid escape sequence in "
                "string");
    check_error(c, "{\"execute\": \"query-statu\\s\"}", GENERIC,
                "JSON parse error, invalid escape sequence in string");
    /* An integer argument beyond 64 bits is refused, not clamped. */
    check_error(c, "{\"execute\": \"pmemsave\", \"arguments\": {\"val\": "
                   "18446744073709551616, \"size\": 1, \"filename\": "
                   "\"/dev/null\"}}", GENERIC,
                "Invalid parameter type for 'val', expected: int");
    check_error(c, "{\"execute\": \"pmemsave\", \"arguments\": {\"val\": 0, "
                   "\"size\": -9223372036854775809, \"filename\": "
                   "\"/dev/null\"}}", GENERIC,
                "Invalid parameter type for 'size', expected: int");
    conn_close(c);
    rig_stop(&r);
}

/* Every line the monitor sends is strict JSON (conn_read_line() refuses
 * raw control bytes), whatever strings the client got into its state. */
static void test_qemu_output_valid(void)
{
    Rig r;
    Conn *c;
    JsonObject *st, *nd;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    /* A netdev id with 0x1F, which netdev_add takes. */
    expect_return(conn_cmd(c, "{\"execute\": \"netdev_add\", \"arguments\": "
                              "{\"type\": \"dgram\", \"id\": \"a\\u001fb\", "
                              "\"local\": {\"type\": \"unix\", "
                              "\"path\": \"%s\"}, "
                              "\"remote\": {\"type\": \"unix\", "
                              "\"path\": \"%s\"}}}",
                           r.n1_path, r.n1_peer), "{}");
    for (int i = 0; i < 3; i++) {
        st = net_stats(c);
        nd = find_named(get_arr(st, "netdevs"), "a\x1f" "b");
        g_assert_nonnull(nd);
        json_object_unref(st);
    }
    /* Errors that quote what the client sent. */
    check_error(c, "{\"execute\": \"a\\u0001\\u007f\\b\\u00e9\"}", NOT_FOUND,
                "The command a\x01\x7f\b\xc3\xa9 has not been found");
    check_error(c, "{\"execute\": \"qom-get\", \"arguments\": {\"path\": "
                   "\"\\n\\r\\t\", \"property\": \"x\"}}", DEV_NOT_FOUND,
                "Device '\n\r\t' not found");
    expect_return(conn_cmd(c, "{\"execute\": \"netdev_del\", "
                              "\"arguments\": {\"id\": \"a\\u001fb\"}}"),
                  "{}");
    conn_close(c);
    rig_stop(&r);
}

/* The oob capability, as QEMU negotiates it on a socket monitor. */
static void test_qemu_oob(void)
{
    Rig r;
    Conn *c, *plain;

    rig_start(&r, NULL);
    c = conn_open(r.qmp_path);
    json_object_unref(check_greeting(c));

    /* Not before it is enabled. */
    check_error(c, "{\"exec-oob\": \"query-status\"}", GENERIC,
                "QMP input member 'exec-oob' is unexpected");
    check_error(c, "{\"execute\": \"qmp_capabilities\", \"arguments\": "
                   "{\"enable\": [\"cap-does-not-exist\"]}}", GENERIC,
                "Parameter 'enable[0]' does not accept value "
                "'cap-does-not-exist'");
    expect_return(conn_cmd(c, "{\"execute\": \"qmp_capabilities\", "
                              "\"arguments\": {\"enable\": [\"oob\"]}}"),
                  "{}");
    /* Enabled: exec-oob is a command key, and no command allows it. */
    expect_error_full(conn_cmd(c, "{\"exec-oob\": \"query-status\", "
                                  "\"id\": \"o1\"}"), GENERIC,
                      "The command query-status does not support OOB",
                      false, "\"o1\"");
    check_error(c, "{\"exec-oob\": \"no-such-command\"}", NOT_FOUND,
                "The command no-such-command has not been found");
    check_error(c, "{\"exec-oob\": 1}", GENERIC,
                "QMP input member 'exec-oob' must be a string");
    check_error(c, "{\"execute\": \"stop\", \"exec-oob\": \"stop\"}", GENERIC,
                "QMP input member 'exec-oob' clashes with 'execute'");
    check_error(c, "{\"exec-oob\": \"stop\", \"execute\": \"stop\"}", GENERIC,
                "QMP input member 'execute' clashes with 'exec-oob'");
    expect_return(conn_cmd(c, "{\"execute\": \"query-status\"}"),
                  "{\"running\": true, \"status\": \"running\"}");
    /* Another client that did not enable it still may not. */
    plain = rig_conn(&r);
    check_error(plain, "{\"exec-oob\": \"query-status\"}", GENERIC,
                "QMP input member 'exec-oob' is unexpected");
    conn_close(plain);
    conn_close(c);
    rig_stop(&r);
}

/* The next reply, which must carry "id" @id_json. */
static JsonObject *conn_reply_id(Conn *c, const char *id_json)
{
    JsonObject *rsp = conn_reply(c);

    if (!json_object_has_member(rsp, "id")) {
        g_autofree char *text = object_text(rsp);
        g_error("expected the reply with id %s, got %s", id_json, text);
    }
    assert_json(json_object_get_member(rsp, "id"), id_json);
    return rsp;
}

/* Lets illan's open() of @fifo for reading return: opens it for writing
 * once illan waits in it (until then there is no reader and the open
 * fails with ENXIO), and closes it, so that illan reads end of file. */
static void fifo_release_reader(const char *fifo)
{
    gint64 deadline = g_get_monotonic_time() +
                      READ_TIMEOUT_MS * G_GINT64_CONSTANT(1000);
    int fd;

    while ((fd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
        g_assert_cmpint(errno, ==, ENXIO);
        if (g_get_monotonic_time() > deadline) {
            g_error("illan did not open %s within %d ms", fifo,
                    READ_TIMEOUT_MS);
        }
        g_usleep(1000);
    }
    close(fd);
}

/*
 * QEMU's qmp-test, out of band: an in-band command that blocks the main
 * thread (migrate-incoming on a FIFO, whose open waits for a writer)
 * holds the in-band requests after it, a malformed one too, while an
 * out-of-band one sent after them is answered at once.
 */
static void test_qemu_oob_overtakes(void)
{
    g_autofree char *dir = g_dir_make_tmp("qmp-test-XXXXXX", NULL);
    g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
    Rig r;
    Conn *c;

    g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
    rig_start(&r, "-incoming defer");
    c = conn_open(r.qmp_path);
    json_object_unref(check_greeting(c));
    expect_return(conn_cmd(c, "{\"execute\": \"qmp_capabilities\", "
                              "\"arguments\": {\"enable\": [\"oob\"]}}"),
                  "{}");

    conn_sendf(c, "{\"execute\": \"migrate-incoming\", \"id\": "
                  "\"ib-blocks-1\", \"arguments\": {\"uri\": \"file:%s\"}}",
               fifo);
    conn_sendf(c, "{\"execute\": \"query-name\", \"id\": \"ib-quick-1\"}");
    conn_sendf(c, "{\"exec-oob\": \"migrate-pause\", \"id\": \"oob-1\"}");
    expect_error_full(conn_reply_id(c, "\"oob-1\""), NOT_FOUND,
                      "The command migrate-pause has not been found", false,
                      "\"oob-1\"");
    fifo_release_reader(fifo);
    json_object_unref(conn_reply_id(c, "\"ib-blocks-1\""));
    json_object_unref(conn_reply_id(c, "\"ib-quick-1\""));

    /* A malformed in-band request waits its turn too: the out-of-band
     * one sent after it comes back first. */
    conn_sendf(c, "{\"execute\": \"migrate-incoming\", \"id\": "
                  "\"blocks-2\", \"arguments\": {\"uri\": \"file:%s\"}}",
               fifo);
    conn_sendf(c, "{\"id\": \"err-2\"}");
    conn_sendf(c, "{\"exec-oob\": \"migrate-pause\", \"id\": \"oob-2\"}");
    json_object_unref(conn_reply_id(c, "\"oob-2\""));
    fifo_release_reader(fifo);
    json_object_unref(conn_reply_id(c, "\"blocks-2\""));
    expect_error_full(conn_reply_id(c, "\"err-2\""), GENERIC,
                      "QMP input lacks member 'execute'", false,
                      "\"err-2\"");
    conn_close(c);
    rig_stop(&r);
    unlink(fifo);
    rmdir(dir);
}

/* Sends @text in one sendmsg() with @fd as SCM_RIGHTS. */
static void conn_send_with_fd(Conn *c, const char *text, int fd)
{
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct iovec iov = { .iov_base = (void *)text, .iov_len = strlen(text) };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
                          .msg_control = control.buf,
                          .msg_controllen = sizeof(control.buf) };
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    g_assert_cmpint(sendmsg(c->fd, &msg, MSG_NOSIGNAL), ==,
                    (ssize_t)strlen(text));
}

/* Takes @rsp: {"return": {}, "id": @id_json}. */
static void expect_return_id(JsonObject *rsp, const char *id_json)
{
    assert_json(assert_return(rsp, id_json), "{}");
    json_object_unref(rsp);
}

/* Whether the read end of the pipe written through @wfd is open
 * anywhere. */
static bool pipe_has_reader(int wfd)
{
    struct pollfd p = { .fd = wfd, .events = POLLOUT };

    g_assert_cmpint(poll(&p, 1, 0), ==, 1);
    return !(p.revents & POLLERR);
}

/*
 * Each getfd takes the descriptor sent with it, even when it waits behind
 * an in-band command that blocks (blkdebug's config on a FIFO) and the
 * next getfd, with another descriptor, is sent meanwhile: a session
 * without oob is not read past an in-band request until it is answered,
 * as QEMU suspends its monitor.
 */
static void test_qemu_getfd_own_descriptor(void)
{
    g_autofree char *dir = g_dir_make_tmp("qmp-test-XXXXXX", NULL);
    g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
    int p1[2], p2[2];
    Rig r;
    Conn *c;

    g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
    g_assert_cmpint(pipe2(p1, O_CLOEXEC), ==, 0);
    g_assert_cmpint(pipe2(p2, O_CLOEXEC), ==, 0);
    rig_start(&r, NULL);
    c = rig_conn(&r);

    conn_sendf(c, "{\"execute\": \"blockdev-add\", \"id\": \"blocks\", "
                  "\"arguments\": {\"driver\": \"blkdebug\", \"node-name\": "
                  "\"blocks\", \"config\": \"%s\", \"image\": "
                  "{\"driver\": \"null-co\"}}}", fifo);
    conn_send_with_fd(c, "{\"execute\": \"getfd\", \"id\": \"a\", "
                         "\"arguments\": {\"fdname\": \"a\"}}", p1[0]);
    conn_send_with_fd(c, "{\"execute\": \"getfd\", \"id\": \"b\", "
                         "\"arguments\": {\"fdname\": \"b\"}}", p2[0]);
    close(p1[0]);
    close(p2[0]);
    fifo_release_reader(fifo);
    expect_return_id(conn_reply(c), "\"blocks\"");
    expect_return_id(conn_reply(c), "\"a\"");
    expect_return_id(conn_reply(c), "\"b\"");
    g_assert_true(pipe_has_reader(p1[1]));
    g_assert_true(pipe_has_reader(p2[1]));
    /* "a" names pipe 1, "b" pipe 2. */
    expect_return(conn_cmd(c, "{\"execute\": \"closefd\", \"arguments\": "
                              "{\"fdname\": \"a\"}}"), "{}");
    g_assert_false(pipe_has_reader(p1[1]));
    g_assert_true(pipe_has_reader(p2[1]));
    expect_return(conn_cmd(c, "{\"execute\": \"closefd\", \"arguments\": "
                              "{\"fdname\": \"b\"}}"), "{}");
    g_assert_false(pipe_has_reader(p2[1]));
    close(p1[1]);
    close(p2[1]);
    conn_close(c);
    rig_stop(&r);
    unlink(fifo);
    rmdir(dir);
}

/* blockdev-add of a blkdebug node whose config is @config: the reply. */
static JsonObject *blkdebug_add(Conn *c, const char *config)
{
    return conn_cmd(c, "{\"execute\": \"blockdev-add\", \"arguments\": "
                       "{\"driver\": \"blkdebug\", \"node-name\": \"q\", "
                       "\"config\": \"%s\", \"image\": "
                       "{\"driver\": \"null-co\"}}}", config);
}

/*
 * blkdebug's config is read a line at a time, as QEMU's parser reads it,
 * and no further than its first line that is not empty or a comment:
 * /dev/zero, which has no end, is refused at once with QEMU's error.
 */
static void test_qemu_blkdebug_config_lines(void)
{
    g_autofree char *dir = g_dir_make_tmp("qmp-test-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "config", NULL);
    Rig r;
    Conn *c;

    rig_start(&r, NULL);
    c = rig_conn(&r);
    expect_error(blkdebug_add(c, "/dev/zero"), GENERIC, "parse error");
    expect_error(blkdebug_add(c, dir), GENERIC,
                 "Cannot read config file: Is a directory");
    g_assert_true(g_file_set_contents(path, "# rules\n\n#\n", -1, NULL));
    expect_return(blkdebug_add(c, path), "{}");
    expect_return(conn_cmd(c, "{\"execute\": \"blockdev-del\", "
                              "\"arguments\": {\"node-name\": \"q\"}}"), "{}");
    /* QEMU skips only a line that starts with its end or a '#'. */
    g_assert_true(g_file_set_contents(path, "#\n \n", -1, NULL));
    expect_error(blkdebug_add(c, path), GENERIC, "parse error");
    g_assert_true(g_file_set_contents(path, "\nevent = \"read_aio\"\n", -1,
                                      NULL));
    expect_error(blkdebug_add(c, path), GENERIC, "no group defined");
    conn_close(c);
    rig_stop(&r);
    unlink(path);
    rmdir(dir);
}

/*
 * The in-band requests a client leaves waiting when it hangs up are
 * dropped, as QEMU drops its queue: a blockdev-del queued behind a
 * command that blocks (blkdebug's config on a FIFO) never runs.
 */
static void test_qemu_hangup_drops_held(void)
{
    g_autofree char *dir = g_dir_make_tmp("qmp-test-XXXXXX", NULL);
    g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
    const char *enable_oob = "{\"execute\": \"qmp_capabilities\", "
                             "\"arguments\": {\"enable\": [\"oob\"]}}";
    Rig r;
    Conn *quitter, *watcher;

    g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
    rig_start(&r, NULL);
    watcher = conn_open(r.qmp_path);
    json_object_unref(check_greeting(watcher));
    expect_return(conn_cmd(watcher, "%s", enable_oob), "{}");
    expect_return(conn_cmd(watcher, "{\"execute\": \"blockdev-add\", "
                                    "\"arguments\": {\"driver\": "
                                    "\"null-co\", \"node-name\": "
                                    "\"keep\"}}"), "{}");
    quitter = conn_open(r.qmp_path);
    json_object_unref(check_greeting(quitter));
    expect_return(conn_cmd(quitter, "%s", enable_oob), "{}");
    conn_sendf(quitter, "{\"execute\": \"blockdev-add\", \"arguments\": "
                        "{\"driver\": \"blkdebug\", \"node-name\": "
                        "\"blocks\", \"config\": \"%s\", \"image\": "
                        "{\"driver\": \"null-co\"}}}", fifo);
    conn_sendf(quitter, "{\"execute\": \"blockdev-del\", \"arguments\": "
                        "{\"node-name\": \"keep\"}}");
    conn_close(quitter);
    /* The monitor thread has seen the hang-up once it answers an
     * out-of-band request sent after it. */
    conn_sendf(watcher, "{\"exec-oob\": \"migrate-pause\", \"id\": "
                        "\"oob\"}");
    json_object_unref(conn_reply_id(watcher, "\"oob\""));
    /* Queued on the main thread behind the blocking command, and
     * answered after anything that command's end lets run. */
    conn_sendf(watcher, "{\"execute\": \"query-name\", \"id\": "
                        "\"sync\"}");
    fifo_release_reader(fifo);
    json_object_unref(conn_reply_id(watcher, "\"sync\""));
    check_error(watcher, "{\"execute\": \"blockdev-add\", \"arguments\": "
                         "{\"driver\": \"null-co\", \"node-name\": "
                         "\"keep\"}}",
                GENERIC, "Duplicate nodes with node-name='keep'");
    conn_close(watcher);
    rig_stop(&r);
    unlink(fifo);
    rmdir(dir);
}

/*
 * blockdev-add keeps nodes used by nothing, as QEMU's qtests make them,
 * with QEMU's errors; blkdebug reads its config as QEMU does, which
 * blocks the main thread on a FIFO: QEMU's qmp-test's own out-of-band
 * sequence.
 */
static void test_qemu_blockdev_add(void)
{
    g_autofree char *dir = g_dir_make_tmp("qmp-test-XXXXXX", NULL);
    g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
    g_autofree char *rules = g_build_filename(dir, "rules", NULL);
    Rig r;
    Conn *c;

    g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
    g_assert_true(g_file_set_contents(rules, "[inject-error]\n"
                                      "event = \"read_aio\"\n", -1, NULL));
    rig_start(&r, NULL);
    c = conn_open(r.qmp_path);
    json_object_unref(check_greeting(c));
    expect_return(conn_cmd(c, "{\"execute\": \"qmp_capabilities\", "
                              "\"arguments\": {\"enable\": [\"oob\"]}}"),
                  "{}");

    expect_return(conn_cmd(c, "{\"execute\": \"blockdev-add\", \"arguments\": "
                              "{\"driver\": \"null-co\", \"node-name\": "
                              "\"n1\", \"read-zeroes\": true, "
                              "\"size\": 4096}}"), "{}");
    check_error(c, "{\"execute\": \"blockdev-add\", \"arguments\": "
                   "{\"driver\": \"null-aio\", \"node-name\": \"n1\"}}",
                GENERIC, "Duplicate nodes with node-name='n1'");
    check_error(c, "{\"execute\": \"blockdev-add\", \"arguments\": "
                   "{\"driver\": \"null-co\"}}",
                GENERIC, "'node-name' must be specified for the root node");
    check_error(c, "{\"execute\": \"blockdev-add\", \"arguments\": "
                   "{\"driver\": \"null-co\", \"node-name\": \"1x\"}}",
                GENERIC, "Invalid node-name: '1x'");
    check_error(c, "{\"execute\": \"blockdev-add\", \"arguments\": "
                   "{\"driver\": \"qcow2\", \"node-name\": \"q\"}}",
                GENERIC, "Parameter 'driver' does not accept value 'qcow2'");
    check_error(c, "{\"execute\": \"blockdev-add\", \"arguments\": "
                   "{\"node-name\": \"q\"}}",
                GENERIC, "Parameter 'driver' is missing");
    check_error(c, "{\"execute\": \"blockdev-add\", \"arguments\": "
                   "{\"driver\": \"null-co\", \"node-name\": \"q\", "
                   "\"size\": \"1\"}}",
                GENERIC, "Invalid parameter type for 'size', expected: "
                         "integer");
    check_error(c, "{\"execute\": \"blockdev-add\", \"arguments\": "
                   "{\"driver\": \"null-co\", \"node-name\": \"q\", "
                   "\"filename\": \"x\"}}",
                GENERIC, "Parameter 'filename' is unexpected");
    check_error(c, "{\"execute\": \"blockdev-add\", \"arguments\": "
                   "{\"driver\": \"blkdebug\", \"node-name\": \"q\"}}",
                GENERIC, "Parameter 'image' is missing");
    conn_sendf(c, "{\"execute\": \"blockdev-add\", \"arguments\": "
                  "{\"driver\": \"blkdebug\", \"node-name\": \"q\", "
                  "\"config\": \"%s/none\", \"image\": "
                  "{\"driver\": \"null-co\"}}}", dir);
    expect_error(conn_recv(c), GENERIC, "Could not read blkdebug config "
                 "file: No such file or directory");
    conn_sendf(c, "{\"execute\": \"blockdev-add\", \"arguments\": "
                  "{\"driver\": \"blkdebug\", \"node-name\": \"q\", "
                  "\"config\": \"%s\", \"image\": "
                  "{\"driver\": \"null-co\"}}}", rules);
    expect_error(conn_recv(c), GENERIC, "blkdebug config file: illan does "
                 "no block I/O to inject errors into; give a file with no "
                 "rules");
    /* Nothing of a refused node stays: the name is free. */
    expect_return(conn_cmd(c, "{\"execute\": \"blockdev-add\", \"arguments\": "
                              "{\"driver\": \"blkdebug\", \"node-name\": "
                              "\"q\", \"image\": {\"driver\": \"null-co\", "
                              "\"node-name\": \"q-img\"}}}"), "{}");
    check_error(c, "{\"execute\": \"blockdev-del\", \"arguments\": "
                   "{\"node-name\": \"q-img\"}}",
                GENERIC, "Node q-img is not owned by the monitor");
    expect_return(conn_cmd(c, "{\"execute\": \"blockdev-del\", "
                              "\"arguments\": {\"node-name\": \"q\"}}"), "{}");
    /* The image went with it. */
    expect_return(conn_cmd(c, "{\"execute\": \"blockdev-add\", \"arguments\": "
                              "{\"driver\": \"null-co\", \"node-name\": "
                              "\"q-img\"}}"), "{}");

    /* QEMU's qmp-test: the config's open waits for a writer. */
    conn_sendf(c, "{\"execute\": \"blockdev-add\", \"id\": \"ib-blocks-1\", "
                  "\"arguments\": {\"driver\": \"blkdebug\", \"node-name\": "
                  "\"ib-blocks-1\", \"config\": \"%s\", \"image\": "
                  "{\"driver\": \"null-co\", \"read-zeroes\": true}}}", fifo);
    conn_sendf(c, "{\"execute\": \"query-name\", \"id\": \"ib-quick-1\"}");
    conn_sendf(c, "{\"exec-oob\": \"migrate-pause\", \"id\": \"oob-1\"}");
    json_object_unref(conn_reply_id(c, "\"oob-1\""));
    fifo_release_reader(fifo);
    {
        g_autoptr(JsonObject) rsp = conn_reply_id(c, "\"ib-blocks-1\"");

        assert_json(assert_return(rsp, "\"ib-blocks-1\""), "{}");
    }
    json_object_unref(conn_reply_id(c, "\"ib-quick-1\""));

    expect_return(conn_cmd(c, "{\"execute\": \"blockdev-del\", "
                              "\"arguments\": {\"node-name\": \"n1\"}}"), "{}");
    check_error(c, "{\"execute\": \"blockdev-del\", \"arguments\": "
                   "{\"node-name\": \"n1\"}}",
                GENERIC, "Failed to find node with node-name='n1'");
    conn_close(c);
    rig_stop(&r);
    unlink(fifo);
    unlink(rules);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qmp/greeting", test_greeting);
    g_test_add_func("/qmp/negotiation", test_negotiation);
    g_test_add_func("/qmp/id-echoed", test_id_echoed);
    g_test_add_func("/qmp/single-quotes", test_single_quotes);
    g_test_add_func("/qmp/query-version-commands",
                    test_query_version_commands);
    g_test_add_func("/qmp/stop-cont", test_stop_cont);
    g_test_add_func("/qmp/prelaunch", test_prelaunch);
    g_test_add_func("/qmp/system-reset", test_system_reset);
    g_test_add_func("/qmp/quit", test_quit);
    g_test_add_func("/qmp/sigterm", test_sigterm);
    g_test_add_func("/qmp/query-rx-filter", test_query_rx_filter);
    g_test_add_func("/qmp/qom-list", test_qom_list);
    g_test_add_func("/qmp/qom-get", test_qom_get);
    g_test_add_func("/qmp/net-stats", test_net_stats);
    g_test_add_func("/qmp/netdev-add-del", test_netdev_add_del);
    g_test_add_func("/qmp/many-clients", test_many_clients);
    g_test_add_func("/qmp/slow-reader", test_slow_reader);
    g_test_add_func("/qmp/errors/malformed-json", test_malformed_json);
    g_test_add_func("/qmp/errors/unterminated-string",
                    test_unterminated_string);
    g_test_add_func("/qmp/errors/not-an-object", test_not_an_object);
    g_test_add_func("/qmp/errors/envelope", test_bad_envelope);
    g_test_add_func("/qmp/errors/arguments", test_bad_arguments);
    g_test_add_func("/qmp/errors/limits", test_limits);
    g_test_add_func("/qmp/errors/bad-strings", test_bad_strings);
    g_test_add_func("/qmp/errors/flood", test_flood);
    g_test_add_func("/qmp/qemu/resync", test_qemu_resync);
    g_test_add_func("/qmp/qemu/ids-exact", test_qemu_ids_exact);
    g_test_add_func("/qmp/qemu/output-valid", test_qemu_output_valid);
    g_test_add_func("/qmp/qemu/oob", test_qemu_oob);
    g_test_add_func("/qmp/qemu/oob-overtakes", test_qemu_oob_overtakes);
    g_test_add_func("/qmp/qemu/blockdev-add", test_qemu_blockdev_add);
    g_test_add_func("/qmp/qemu/blkdebug-config-lines",
                    test_qemu_blkdebug_config_lines);
    g_test_add_func("/qmp/qemu/hangup-drops-held",
                    test_qemu_hangup_drops_held);
    g_test_add_func("/qmp/qemu/getfd-own-descriptor",
                    test_qemu_getfd_own_descriptor);
    return g_test_run();
}
