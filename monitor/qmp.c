/*
 * The QMP monitor's transport and dispatch, and its own commands
 * (qmp_capabilities, query-version, query-commands).  Every client gets the
 * greeting at once, must negotiate with qmp_capabilities, and then gets
 * one reply per request and every event.  Input is split by json-stream
 * and parsed by json-glib; anything malformed is answered with an error,
 * and the client is only dropped when it hangs up.
 */
#include "monitor/qmp.h"
#include "monitor/json-stream.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/option.h"
#include "qemu/qmp-registry.h"
#include "qemu/unix-socket.h"

#include <errno.h>
#include <glib-unix.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define QMP_READ_CHUNK  4096
/* Output a client may leave unread before it is hung up on: room for a
 * few replies that echo a 1 MiB input back, escaped. */
#define QMP_MAX_PENDING_OUTPUT  (16u << 20)

typedef struct QmpClient {
    int fd;
    guint watch;
    guint out_watch;        /* set while output waits for the socket */
    GString *out;
    JsonStream *stream;
    bool negotiated;
    bool hung_up;           /* we gave up on it; the read side drops it */
} QmpClient;

typedef struct QmpListener {
    int fd;
    guint watch;
    char *path;
} QmpListener;

static GPtrArray *clients;      /* QmpClient * */
static GPtrArray *listeners;    /* QmpListener * */

static void hang_up(QmpClient *c)
{
    c->hung_up = true;
    g_string_truncate(c->out, 0);
    shutdown(c->fd, SHUT_RDWR);
}

static gboolean client_writable(gint fd, GIOCondition cond, gpointer opaque);

/* Sends what the socket takes now and leaves the rest to a G_IO_OUT
 * watch, so a slow reader never holds up the main loop. */
static void client_flush(QmpClient *c)
{
    while (c->out->len && !c->hung_up) {
        ssize_t n = send(c->fd, c->out->str, c->out->len,
                         MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n > 0) {
            g_string_erase(c->out, 0, n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            if (!c->out_watch) {
                c->out_watch = g_unix_fd_add(c->fd, G_IO_OUT,
                                             client_writable, c);
            }
            return;
        } else {
            hang_up(c);
        }
    }
}

static gboolean client_writable(gint fd, GIOCondition cond, gpointer opaque)
{
    QmpClient *c = opaque;

    (void)fd, (void)cond;
    client_flush(c);
    if (c->out->len && !c->hung_up) {
        return G_SOURCE_CONTINUE;
    }
    c->out_watch = 0;
    return G_SOURCE_REMOVE;
}

static void client_write(QmpClient *c, JsonNode *root)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    g_autofree char *text = NULL;

    if (c->hung_up) {
        return;
    }
    json_generator_set_root(gen, root);
    text = json_generator_to_data(gen, NULL);
    g_string_append(c->out, text);
    g_string_append(c->out, "\r\n");
    if (c->out->len > QMP_MAX_PENDING_OUTPUT) {
        hang_up(c);
        return;
    }
    client_flush(c);
}

static void client_write_object(QmpClient *c, JsonObject *obj)
{
    g_autoptr(JsonNode) root = json_node_new(JSON_NODE_OBJECT);

    json_node_take_object(root, obj);
    client_write(c, root);
}

/* {"qemu": {"major", "minor", "micro"}, "package"}: for the greeting and
 * query-version. */
static JsonObject *version_info(void)
{
    JsonObject *ver = json_object_new(), *qemu = json_object_new();

    json_object_set_int_member(qemu, "micro", ILLAN_VERSION_MICRO);
    json_object_set_int_member(qemu, "minor", ILLAN_VERSION_MINOR);
    json_object_set_int_member(qemu, "major", ILLAN_VERSION_MAJOR);
    json_object_set_object_member(ver, "qemu", qemu);
    json_object_set_string_member(ver, "package", "illan");
    return ver;
}

static void send_greeting(QmpClient *c)
{
    JsonObject *qmp = json_object_new(), *greeting = json_object_new();

    json_object_set_object_member(qmp, "version", version_info());
    json_object_set_array_member(qmp, "capabilities", json_array_new());
    json_object_set_object_member(greeting, "QMP", qmp);
    client_write_object(c, greeting);
}

static void send_error(QmpClient *c, const QmpError *err, JsonNode *id)
{
    JsonObject *reply = json_object_new(), *error = json_object_new();

    json_object_set_string_member(error, "class", err->cls);
    json_object_set_string_member(error, "desc", err->desc);
    json_object_set_object_member(reply, "error", error);
    if (id) {
        json_object_set_member(reply, "id", json_node_copy(id));
    }
    client_write_object(c, reply);
}

static void send_return(QmpClient *c, JsonNode *value, JsonNode *id)
{
    JsonObject *reply = json_object_new();

    json_object_set_member(reply, "return", value);
    if (id) {
        json_object_set_member(reply, "id", json_node_copy(id));
    }
    client_write_object(c, reply);
}

static const char *arg_type_name(QmpArgType type)
{
    switch (type) {
    case QMP_ARG_STR: return "string";
    case QMP_ARG_INT: return "int";
    case QMP_ARG_BOOL: return "boolean";
    case QMP_ARG_ARRAY: return "array";
    }
    g_assert_not_reached();
}

static bool arg_has_type(JsonNode *node, QmpArgType type)
{
    GType vt = JSON_NODE_HOLDS_VALUE(node) ? json_node_get_value_type(node)
                                           : G_TYPE_INVALID;

    switch (type) {
    case QMP_ARG_STR: return vt == G_TYPE_STRING;
    case QMP_ARG_INT: return vt == G_TYPE_INT64;
    case QMP_ARG_BOOL: return vt == G_TYPE_BOOLEAN;
    case QMP_ARG_ARRAY: return JSON_NODE_HOLDS_ARRAY(node);
    }
    g_assert_not_reached();
}

/* Checks @args against the command's declared arguments. */
static bool check_args(const QmpCommand *cmd, JsonObject *args, QmpError *err)
{
    g_autoptr(GList) names = json_object_get_members(args);

    for (const QmpArg *a = cmd->args; a && a->name; a++) {
        JsonNode *node = json_object_get_member(args, a->name);

        if (!node) {
            if (!a->optional) {
                qmp_error_set(err, QMP_ERROR_GENERIC,
                              "Parameter '%s' is missing", a->name);
                return false;
            }
        } else if (!arg_has_type(node, a->type)) {
            qmp_error_set(err, QMP_ERROR_GENERIC,
                          "Invalid parameter type for '%s', expected: %s",
                          a->name, arg_type_name(a->type));
            return false;
        }
    }
    for (GList *l = names; l && !cmd->takes_any_args; l = l->next) {
        bool known = false;

        for (const QmpArg *a = cmd->args; a && a->name && !known; a++) {
            known = !strcmp(a->name, l->data);
        }
        if (!known) {
            qmp_error_set(err, QMP_ERROR_GENERIC,
                          "Parameter '%s' is unexpected", (char *)l->data);
            return false;
        }
    }
    return true;
}

static bool only_envelope_members(JsonObject *req, QmpError *err)
{
    g_autoptr(GList) names = json_object_get_members(req);

    for (GList *l = names; l; l = l->next) {
        if (strcmp(l->data, "execute") && strcmp(l->data, "arguments") &&
            strcmp(l->data, "id")) {
            qmp_error_set(err, QMP_ERROR_GENERIC,
                          "QMP input member '%s' is unexpected",
                          (char *)l->data);
            return false;
        }
    }
    return true;
}

/* Only qmp_capabilities before negotiation, and only then. */
static bool allowed_now(QmpClient *c, const char *name, QmpError *err)
{
    bool capabilities = !strcmp(name, "qmp_capabilities");

    if (!c->negotiated && !capabilities) {
        qmp_error_set(err, QMP_ERROR_COMMAND_NOT_FOUND,
                      "Expecting capabilities negotiation with "
                      "'qmp_capabilities'");
        return false;
    }
    if (c->negotiated && capabilities) {
        qmp_error_set(err, QMP_ERROR_COMMAND_NOT_FOUND,
                      "Capabilities negotiation is already complete, "
                      "command ignored");
        return false;
    }
    return true;
}

/* The request's envelope: execute, arguments, id and nothing else. */
static const QmpCommand *check_request(QmpClient *c, JsonObject *req,
                                       JsonObject **args, QmpError *err)
{
    JsonNode *exec = json_object_get_member(req, "execute");
    JsonNode *argn = json_object_get_member(req, "arguments");
    const char *name;
    const QmpCommand *cmd;

    if (!only_envelope_members(req, err)) {
        return NULL;
    }
    if (!exec) {
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      "QMP input lacks member 'execute'");
        return NULL;
    }
    if (!arg_has_type(exec, QMP_ARG_STR)) {
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      "QMP input member 'execute' must be a string");
        return NULL;
    }
    if (argn && !JSON_NODE_HOLDS_OBJECT(argn)) {
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      "QMP input member 'arguments' must be an object");
        return NULL;
    }
    *args = argn ? json_node_get_object(argn) : NULL;
    name = json_node_get_string(exec);
    if (!allowed_now(c, name, err)) {
        return NULL;
    }
    cmd = qmp_find_command(name);
    if (!cmd) {
        qmp_error_set(err, QMP_ERROR_COMMAND_NOT_FOUND,
                      "The command %s has not been found", name);
    }
    return cmd;
}

static void dispatch(QmpClient *c, JsonObject *req)
{
    JsonNode *id = json_object_get_member(req, "id");
    g_autoptr(JsonObject) empty = json_object_new();
    QmpError err = { 0 };
    JsonObject *args = NULL;
    const QmpCommand *cmd = check_request(c, req, &args, &err);
    JsonNode *ret = NULL;

    if (cmd && qmp_command_allowed(cmd, &err) &&
        check_args(cmd, args ? args : empty, &err)) {
        ret = cmd->fn(args ? args : empty, &err);
    }
    if (ret) {
        if (!strcmp(cmd->name, "qmp_capabilities")) {
            c->negotiated = true;
        }
        send_return(c, ret, id);
    } else {
        send_error(c, &err, id);
    }
    g_free(err.desc);
}

/* json-glib turns \u0000 into a NUL that silently ends the string. */
static bool has_nul_escape(const char *text)
{
    for (const char *p = text; *p; p++) {
        if (*p != '\\') {
            continue;
        }
        if (p[1] == 'u' && !strncmp(p + 2, "0000", 4)) {
            return true;
        }
        if (p[1]) {
            p++;    /* the escaped character, so "\\u0000" is not one */
        }
    }
    return false;
}

/* ... and lets a lone surrogate escape through as bytes that are not
 * UTF-8, which a reply would then carry to the client. */
static bool node_is_utf8(JsonNode *node)
{
    if (JSON_NODE_HOLDS_OBJECT(node)) {
        JsonObject *obj = json_node_get_object(node);
        g_autoptr(GList) names = json_object_get_members(obj);

        for (GList *l = names; l; l = l->next) {
            if (!g_utf8_validate(l->data, -1, NULL) ||
                !node_is_utf8(json_object_get_member(obj, l->data))) {
                return false;
            }
        }
    } else if (JSON_NODE_HOLDS_ARRAY(node)) {
        JsonArray *arr = json_node_get_array(node);

        for (guint i = 0; i < json_array_get_length(arr); i++) {
            if (!node_is_utf8(json_array_get_element(arr, i))) {
                return false;
            }
        }
    } else if (JSON_NODE_HOLDS_VALUE(node) &&
               json_node_get_value_type(node) == G_TYPE_STRING) {
        return g_utf8_validate(json_node_get_string(node), -1, NULL);
    }
    return true;
}

static void on_text(void *opaque, const char *text, JsonStreamError error)
{
    QmpClient *c = opaque;
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(GError) perr = NULL;
    QmpError err = { 0 };
    JsonNode *root;

    if (error) {
        qmp_error_set(&err, QMP_ERROR_GENERIC, "JSON parse error, %s",
                      error == JSON_STREAM_TOO_BIG ? "input too large"
                                                   : "nesting too deep");
    } else if (has_nul_escape(text)) {
        qmp_error_set(&err, QMP_ERROR_GENERIC,
                      "JSON parse error, \\u0000 is not allowed in a string");
    } else if (!json_parser_load_from_data(parser, text, -1, &perr)) {
        qmp_error_set(&err, QMP_ERROR_GENERIC, "JSON parse error, %s",
                      perr->message);
    } else if (!node_is_utf8(json_parser_get_root(parser))) {
        qmp_error_set(&err, QMP_ERROR_GENERIC,
                      "JSON parse error, a string is not valid UTF-8 (a "
                      "lone surrogate escape?)");
    } else if (!(root = json_parser_get_root(parser)) ||
               !JSON_NODE_HOLDS_OBJECT(root)) {
        qmp_error_set(&err, QMP_ERROR_GENERIC,
                      "QMP input must be a JSON object");
    } else {
        dispatch(c, json_node_get_object(root));
        return;
    }
    send_error(c, &err, NULL);
    g_free(err.desc);
}

static void client_free(QmpClient *c)
{
    if (c->watch) {
        g_source_remove(c->watch);
    }
    if (c->out_watch) {
        g_source_remove(c->out_watch);
    }
    g_string_free(c->out, TRUE);
    close(c->fd);
    json_stream_free(c->stream);
    g_free(c);
}

static gboolean client_readable(gint fd, GIOCondition cond, gpointer opaque)
{
    QmpClient *c = opaque;
    char buf[QMP_READ_CHUNK];
    ssize_t n = read(fd, buf, sizeof(buf));

    (void)cond;
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        return G_SOURCE_CONTINUE;
    }
    if (n <= 0) {
        c->watch = 0;
        g_ptr_array_remove(clients, c);
        client_free(c);
        return G_SOURCE_REMOVE;
    }
    if (!c->hung_up) {
        json_stream_feed(c->stream, buf, n);
    }
    return G_SOURCE_CONTINUE;
}

static void client_add(int fd)
{
    QmpClient *c = g_new0(QmpClient, 1);

    c->fd = fd;
    c->out = g_string_new(NULL);
    c->stream = json_stream_new(on_text, c);
    if (!clients) {
        clients = g_ptr_array_new();
    }
    g_ptr_array_add(clients, c);
    c->watch = g_unix_fd_add(fd, G_IO_IN | G_IO_HUP | G_IO_ERR,
                             client_readable, c);
    send_greeting(c);
}

static gboolean listener_readable(gint fd, GIOCondition cond, gpointer opaque)
{
    int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

    (void)cond, (void)opaque;
    if (cfd >= 0) {
        client_add(cfd);
    }
    return G_SOURCE_CONTINUE;
}

bool qmp_listen(const char *path, bool wait, GError **errp)
{
    int fd = unix_socket_listen(path, errp);
    QmpListener *l;

    if (fd < 0) {
        return false;
    }
    l = g_new0(QmpListener, 1);
    l->fd = fd;
    l->path = g_strdup(path);
    if (!listeners) {
        listeners = g_ptr_array_new();
    }
    g_ptr_array_add(listeners, l);
    if (wait) {
        listener_readable(fd, G_IO_IN, NULL);
    }
    l->watch = g_unix_fd_add(fd, G_IO_IN, listener_readable, l);
    return true;
}

bool qmp_connect(const char *path, GError **errp)
{
    int fd = unix_socket_connect(path, errp);

    if (fd < 0) {
        return false;
    }
    client_add(fd);
    return true;
}

bool qmp_attach_fd(int fd, GError **errp)
{
    int listening = 0;
    socklen_t len = sizeof(listening);
    QmpListener *l;

    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "descriptor %d is not a socket: %s",
                    fd, g_strerror(errno));
        return false;
    }
    if (!listening) {
        client_add(fd);
        return true;
    }
    l = g_new0(QmpListener, 1);         /* no path: nothing to unlink */
    l->fd = fd;
    if (!listeners) {
        listeners = g_ptr_array_new();
    }
    g_ptr_array_add(listeners, l);
    l->watch = g_unix_fd_add(fd, G_IO_IN, listener_readable, l);
    return true;
}

void qmp_cleanup(void)
{
    for (guint i = 0; clients && i < clients->len; i++) {
        client_free(g_ptr_array_index(clients, i));
    }
    g_clear_pointer(&clients, g_ptr_array_unref);
    for (guint i = 0; listeners && i < listeners->len; i++) {
        QmpListener *l = g_ptr_array_index(listeners, i);

        g_source_remove(l->watch);
        close(l->fd);
        if (l->path) {
            unix_socket_unlink(l->path);
        }
        g_free(l->path);
        g_free(l);
    }
    g_clear_pointer(&listeners, g_ptr_array_unref);
}

typedef struct QmpEvent {
    char *name;
    JsonObject *data;       /* may be NULL */
    gint64 time;            /* when it was raised */
} QmpEvent;

static void send_event(void *opaque)
{
    QmpEvent *e = opaque;

    for (guint i = 0; clients && i < clients->len; i++) {
        QmpClient *c = g_ptr_array_index(clients, i);
        JsonObject *ev, *ts;

        if (!c->negotiated) {
            continue;
        }
        ev = json_object_new();
        ts = json_object_new();
        json_object_set_string_member(ev, "event", e->name);
        if (e->data) {
            json_object_set_object_member(ev, "data",
                                          json_object_ref(e->data));
        }
        json_object_set_int_member(ts, "seconds", e->time / G_USEC_PER_SEC);
        json_object_set_int_member(ts, "microseconds",
                                   e->time % G_USEC_PER_SEC);
        json_object_set_object_member(ev, "timestamp", ts);
        client_write_object(c, ev);
    }
    if (e->data) {
        json_object_unref(e->data);
    }
    g_free(e->name);
    g_free(e);
}

/* Clients are the main thread's, so an event raised elsewhere goes there
 * to be sent. */
void qmp_event_emit(const char *name, JsonObject *data)
{
    QmpEvent *e = g_new(QmpEvent, 1);

    e->name = g_strdup(name);
    e->data = data;
    e->time = g_get_real_time();
    main_loop_run_or_post(send_event, e);
}

/* The monitor's own commands: the session, the version, the list. */

static JsonNode *qmp_capabilities(JsonObject *args, QmpError *err)
{
    JsonArray *enable = json_object_has_member(args, "enable") ?
                        json_object_get_array_member(args, "enable") : NULL;

    if (enable && json_array_get_length(enable)) {
        JsonNode *cap = json_array_get_element(enable, 0);

        if (!JSON_NODE_HOLDS_VALUE(cap) ||
            json_node_get_value_type(cap) != G_TYPE_STRING) {
            qmp_error_set(err, QMP_ERROR_GENERIC, "Invalid parameter type "
                          "for 'enable', expected: array of strings");
        } else {
            qmp_error_set(err, QMP_ERROR_GENERIC,
                          "Capability '%s' not available",
                          json_node_get_string(cap));
        }
        return NULL;
    }
    return qmp_return_empty();
}

static JsonNode *query_version(JsonObject *args, QmpError *err)
{
    (void)args, (void)err;
    return qmp_return_object(version_info());
}

/* query-commands keeps the order of the QMP reference
 * (docs/interop/qmp.md), which registration from constructors cannot;
 * a command the list does not name follows, by name. */
static const char *const listing_order[] = {
    "qmp_capabilities", "query-version", "query-commands", "query-status",
    "stop", "cont", "system_reset", "quit", "query-rx-filter", "qom-list",
    "qom-get", "netdev_add", "netdev_del", "x-query-net-stats",
    "x-query-guest-stats", "pmemsave", "migrate", "migrate-incoming",
    "query-migrate",
};

static guint listing_rank(const char *name)
{
    for (guint i = 0; i < G_N_ELEMENTS(listing_order); i++) {
        if (!strcmp(listing_order[i], name)) {
            return i;
        }
    }
    return G_N_ELEMENTS(listing_order);
}

static gint compare_listing(gconstpointer a, gconstpointer b)
{
    const QmpCommand *x = *(const QmpCommand *const *)a;
    const QmpCommand *y = *(const QmpCommand *const *)b;
    guint rx = listing_rank(x->name), ry = listing_rank(y->name);

    return rx != ry ? (rx < ry ? -1 : 1) : strcmp(x->name, y->name);
}

static void add_command(const QmpCommand *cmd, void *opaque)
{
    g_ptr_array_add(opaque, (gpointer)cmd);
}

static JsonNode *query_commands(JsonObject *args, QmpError *err)
{
    g_autoptr(GPtrArray) cmds = g_ptr_array_new();
    JsonArray *list = json_array_new();

    (void)args, (void)err;
    qmp_foreach_command(add_command, cmds);
    g_ptr_array_sort(cmds, compare_listing);
    for (guint i = 0; i < cmds->len; i++) {
        JsonObject *o = json_object_new();
        const QmpCommand *cmd = g_ptr_array_index(cmds, i);

        json_object_set_string_member(o, "name", cmd->name);
        json_array_add_object_element(list, o);
    }
    return qmp_return_array(list);
}

static const QmpArg capabilities_args[] = {
    { "enable", QMP_ARG_ARRAY, true }, { NULL, 0, false }
};

static const QmpCommand monitor_commands[] = {
    { "qmp_capabilities", capabilities_args, false, qmp_capabilities, true },
    { "query-version", NULL, false, query_version, true },
    { "query-commands", NULL, false, query_commands, true },
};

static void monitor_commands_register(void)
{
    qmp_register_commands(monitor_commands, G_N_ELEMENTS(monitor_commands));
}
illan_init(monitor_commands_register)
