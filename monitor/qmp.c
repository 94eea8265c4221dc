/*
 * The QMP monitor's transport and dispatch, and its own commands
 * (qmp_capabilities, query-version, query-commands).  Every client gets the
 * greeting at once, must negotiate with qmp_capabilities, and then gets
 * one reply per request and every event.  Input is split by json-stream
 * and parsed by json-glib; anything malformed is answered with an error,
 * and the client is only dropped when it hangs up.  Output is written by
 * util/json-writer.c, which always writes strict JSON; a reply's id is
 * copied from the request's text, so it comes back as the client wrote it.
 * Descriptors a client sends with SCM_RIGHTS wait for its next getfd.
 */
#include "monitor/qmp.h"
#include "monitor/json-stream.h"
#include "qemu/json-writer.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/option.h"
#include "qemu/passed-fds.h"
#include "qemu/qmp-registry.h"
#include "qemu/unix-socket.h"

#include <errno.h>
#include <glib-unix.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define QMP_READ_CHUNK  4096
/* Descriptors one message may carry, as QEMU's socket chardev takes. */
#define QMP_MAX_FDS     16
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
    bool oob;               /* out-of-band execution enabled */
    bool hung_up;           /* we gave up on it; the read side drops it */
    int msgfds[QMP_MAX_FDS];    /* the last SCM_RIGHTS received, for getfd */
    unsigned n_msgfds;
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

/* Queues @w's text as one line. */
static void client_write(QmpClient *c, JsonWriter *w)
{
    if (c->hung_up) {
        return;
    }
    g_string_append(c->out, json_writer_text(w));
    g_string_append(c->out, "\r\n");
    if (c->out->len > QMP_MAX_PENDING_OUTPUT) {
        hang_up(c);
        return;
    }
    client_flush(c);
}

/* {"qemu": {"major", "minor", "micro"}, "package"}: for the greeting and
 * query-version.  The numbers are the QEMU release whose interfaces
 * illan follows; the package names illan's own version. */
static JsonObject *version_info(void)
{
    JsonObject *ver = json_object_new(), *qemu = json_object_new();

    json_object_set_int_member(qemu, "micro", QMP_QEMU_VERSION_MICRO);
    json_object_set_int_member(qemu, "minor", QMP_QEMU_VERSION_MINOR);
    json_object_set_int_member(qemu, "major", QMP_QEMU_VERSION_MAJOR);
    json_object_set_object_member(ver, "qemu", qemu);
    json_object_set_string_member(ver, "package", "illan " ILLAN_VERSION);
    return ver;
}

/* Every monitor is a socket, where QEMU offers out-of-band execution. */
static void send_greeting(QmpClient *c)
{
    g_autoptr(JsonNode) version = json_node_new(JSON_NODE_OBJECT);
    JsonWriter *w = json_writer_new(false);

    json_node_take_object(version, version_info());

    json_writer_start_object(w, NULL);
    json_writer_start_object(w, "QMP");
    json_writer_node(w, "version", version);
    json_writer_start_array(w, "capabilities");
    json_writer_str(w, NULL, "oob");
    json_writer_end_array(w);
    json_writer_end_object(w);
    json_writer_end_object(w);
    client_write(c, w);
    json_writer_free(w);
}

/* @id is the request's "id" as the client wrote it, or NULL. */
static void send_error(QmpClient *c, const QmpError *err, const char *id)
{
    JsonWriter *w = json_writer_new(false);

    json_writer_start_object(w, NULL);
    json_writer_start_object(w, "error");
    json_writer_str(w, "class", err->cls);
    json_writer_str(w, "desc", err->desc);
    json_writer_end_object(w);
    if (id) {
        json_writer_raw(w, "id", id);
    }
    json_writer_end_object(w);
    client_write(c, w);
    json_writer_free(w);
}

static void send_return(QmpClient *c, JsonNode *value, const char *id)
{
    JsonWriter *w = json_writer_new(false);

    json_writer_start_object(w, NULL);
    json_writer_node(w, "return", value);
    if (id) {
        json_writer_raw(w, "id", id);
    }
    json_writer_end_object(w);
    client_write(c, w);
    json_writer_free(w);
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

/* json-glib clamps an integer beyond 64 bits to one that fits, so an
 * integer argument is also checked in the text the client wrote. */
static bool int_fits(const char *args_text, const char *name)
{
    g_autofree char *raw = json_stream_member_text(args_text, name);
    gint64 val;

    return raw && g_ascii_string_to_signed(raw, 10, G_MININT64, G_MAXINT64,
                                           &val, NULL);
}

/* Checks @args, written as @args_text, against the command's declared
 * arguments. */
static bool check_args(const QmpCommand *cmd, JsonObject *args,
                       const char *args_text, QmpError *err)
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
        } else if (!arg_has_type(node, a->type) ||
                   (a->type == QMP_ARG_INT && !int_fits(args_text, a->name))) {
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

/* The member that names the command: "execute", or "exec-oob" once the
 * client has enabled out-of-band execution; NULL with *err set if the
 * envelope holds anything else, or both. */
static const char *envelope_command_key(QmpClient *c, JsonObject *req,
                                        QmpError *err)
{
    g_autoptr(GList) names = json_object_get_members(req);
    const char *key = NULL;

    for (GList *l = names; l; l = l->next) {
        const char *name = l->data;

        if (!strcmp(name, "execute") ||
            (!strcmp(name, "exec-oob") && c->oob)) {
            if (key) {
                qmp_error_set(err, QMP_ERROR_GENERIC, "QMP input member "
                              "'%s' clashes with '%s'", name, key);
                return NULL;
            }
            key = name;
        } else if (strcmp(name, "arguments") && strcmp(name, "id")) {
            qmp_error_set(err, QMP_ERROR_GENERIC,
                          "QMP input member '%s' is unexpected", name);
            return NULL;
        }
    }
    if (!key) {
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      "QMP input lacks member 'execute'");
    }
    return key;
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

/* The request's envelope: execute (or exec-oob), arguments, id and
 * nothing else. */
static const QmpCommand *check_request(QmpClient *c, JsonObject *req,
                                       JsonObject **args, QmpError *err)
{
    const char *key = envelope_command_key(c, req, err);
    JsonNode *exec = key ? json_object_get_member(req, key) : NULL;
    JsonNode *argn = json_object_get_member(req, "arguments");
    const char *name;
    const QmpCommand *cmd;

    if (!key) {
        return NULL;
    }
    if (!arg_has_type(exec, QMP_ARG_STR)) {
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      "QMP input member '%s' must be a string", key);
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
        return NULL;
    }
    /* The commands QEMU runs out of band (migrate-pause, migrate-recover,
     * x-oob-test) act on postcopy and test machinery illan does not
     * have, so none of illan's does. */
    if (!strcmp(key, "exec-oob")) {
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      "The command %s does not support OOB", name);
        return NULL;
    }
    return cmd;
}

/* The client whose request runs, for qmp_capabilities. */
static QmpClient *current_client;

/* @text is the request as the client wrote it, for its "id" and
 * integers, which json-glib would change. */
static void dispatch(QmpClient *c, JsonObject *req, const char *text)
{
    g_autofree char *id = json_object_has_member(req, "id") ?
                          json_stream_member_text(text, "id") : NULL;
    g_autofree char *args_text = json_stream_member_text(text, "arguments");
    g_autoptr(JsonObject) empty = json_object_new();
    QmpError err = { 0 };
    JsonObject *args = NULL;
    const QmpCommand *cmd = check_request(c, req, &args, &err);
    JsonNode *ret = NULL;

    if (cmd && qmp_command_allowed(cmd, &err) &&
        check_args(cmd, args ? args : empty, args_text, &err)) {
        current_client = c;
        ret = cmd->fn(args ? args : empty, &err);
        current_client = NULL;
    }
    if (ret) {
        send_return(c, ret, id);
        json_node_unref(ret);
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

/* What the stream refused, in QEMU's words where it has them. */
static void parse_error(JsonStreamError error, const char *what, QmpError *err)
{
    switch (error) {
    case JSON_STREAM_TOO_BIG:
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      "JSON parse error, input too large");
        break;
    case JSON_STREAM_TOO_DEEP:
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      "JSON parse error, nesting too deep");
        break;
    case JSON_STREAM_LEXICAL:
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      "JSON parse error, stray '%.64s'", what);
        break;
    case JSON_STREAM_BAD_ESCAPE:
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      "JSON parse error, invalid escape sequence in string");
        break;
    case JSON_STREAM_BAD_UNICODE:
        qmp_error_set(err, QMP_ERROR_GENERIC, "JSON parse error, %s is not "
                      "a valid Unicode character", what);
        break;
    case JSON_STREAM_NUMBER_RANGE:
        qmp_error_set(err, QMP_ERROR_GENERIC, "JSON parse error, number "
                      "'%.64s' is beyond the range of a double", what);
        break;
    default:
        g_assert_not_reached();
    }
}

static void on_text(void *opaque, const char *text, JsonStreamError error)
{
    QmpClient *c = opaque;
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(GError) perr = NULL;
    QmpError err = { 0 };
    JsonNode *root;

    if (error) {
        parse_error(error, text, &err);
    } else if (has_nul_escape(text)) {
        qmp_error_set(&err, QMP_ERROR_GENERIC,
                      "JSON parse error, \\u0000 is not allowed in a string");
    } else if (!json_parser_load_from_data(parser, text, -1, &perr)) {
        qmp_error_set(&err, QMP_ERROR_GENERIC, "JSON parse error, %s",
                      perr->message);
    } else if (!(root = json_parser_get_root(parser)) ||
               !JSON_NODE_HOLDS_OBJECT(root)) {
        qmp_error_set(&err, QMP_ERROR_GENERIC,
                      "QMP input must be a JSON object");
    } else {
        dispatch(c, json_node_get_object(root), text);
        return;
    }
    send_error(c, &err, NULL);
    g_free(err.desc);
}

static void drop_msgfds(QmpClient *c)
{
    for (unsigned i = 0; i < c->n_msgfds; i++) {
        close(c->msgfds[i]);
    }
    c->n_msgfds = 0;
}

/* As QEMU's socket chardev: descriptors that come with a read replace
 * those an earlier read left unclaimed. */
static void keep_msgfds(QmpClient *c, struct msghdr *msg)
{
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm;
         cm = CMSG_NXTHDR(msg, cm)) {
        unsigned n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
            !n) {
            continue;
        }
        drop_msgfds(c);
        memcpy(c->msgfds, CMSG_DATA(cm), n * sizeof(int));
        c->n_msgfds = n;
    }
}

static ssize_t client_recv(QmpClient *c, char *buf, size_t len)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * QMP_MAX_FDS)];
        struct cmsghdr align;
    } control;
    struct iovec iov = { .iov_base = buf, .iov_len = len };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
                          .msg_control = control.buf,
                          .msg_controllen = sizeof(control.buf) };
    ssize_t n = recvmsg(c->fd, &msg, MSG_CMSG_CLOEXEC);

    if (n >= 0) {
        keep_msgfds(c, &msg);
    }
    return n;
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
    drop_msgfds(c);
    json_stream_free(c->stream);
    g_free(c);
}

static gboolean client_readable(gint fd, GIOCondition cond, gpointer opaque)
{
    QmpClient *c = opaque;
    char buf[QMP_READ_CHUNK];
    ssize_t n = client_recv(c, buf, sizeof(buf));

    (void)fd, (void)cond;
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

    g_autoptr(JsonNode) data = e->data ?
        json_node_init_object(json_node_alloc(), e->data) : NULL;
    JsonWriter *w = json_writer_new(false);

    json_writer_start_object(w, NULL);
    json_writer_start_object(w, "timestamp");
    json_writer_int(w, "seconds", e->time / G_USEC_PER_SEC);
    json_writer_int(w, "microseconds", e->time % G_USEC_PER_SEC);
    json_writer_end_object(w);
    json_writer_str(w, "event", e->name);
    if (data) {
        json_writer_node(w, "data", data);
    }
    json_writer_end_object(w);
    for (guint i = 0; clients && i < clients->len; i++) {
        QmpClient *c = g_ptr_array_index(clients, i);

        if (c->negotiated) {
            client_write(c, w);
        }
    }
    json_writer_free(w);
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

/* The one capability there is, "oob", is offered on every monitor. */
static JsonNode *qmp_capabilities(JsonObject *args, QmpError *err)
{
    JsonArray *enable = json_object_has_member(args, "enable") ?
                        json_object_get_array_member(args, "enable") : NULL;
    bool oob = false;

    for (guint i = 0; enable && i < json_array_get_length(enable); i++) {
        JsonNode *cap = json_array_get_element(enable, i);

        if (!JSON_NODE_HOLDS_VALUE(cap) ||
            json_node_get_value_type(cap) != G_TYPE_STRING) {
            qmp_error_set(err, QMP_ERROR_GENERIC, "Invalid parameter type "
                          "for 'enable[%u]', expected: string", i);
            return NULL;
        }
        if (strcmp(json_node_get_string(cap), "oob")) {
            qmp_error_set(err, QMP_ERROR_GENERIC, "Parameter 'enable[%u]' "
                          "does not accept value '%s'", i,
                          json_node_get_string(cap));
            return NULL;
        }
        oob = true;
    }
    current_client->negotiated = true;
    current_client->oob = oob;
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

/* The first descriptor of the client's last SCM_RIGHTS; the others
 * sent with it are closed, as QEMU does. */
static JsonNode *getfd(JsonObject *args, QmpError *err)
{
    g_autoptr(GError) gerr = NULL;
    QmpClient *c = current_client;
    int fd;

    if (!c->n_msgfds) {
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      "No file descriptor supplied via SCM_RIGHTS");
        return NULL;
    }
    fd = c->msgfds[0];
    for (unsigned i = 1; i < c->n_msgfds; i++) {
        close(c->msgfds[i]);
    }
    c->n_msgfds = 0;
    if (!passed_fds_add_named(json_object_get_string_member(args, "fdname"),
                              fd, &gerr)) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "%s", gerr->message);
        return NULL;
    }
    return qmp_return_empty();
}

static JsonNode *closefd(JsonObject *args, QmpError *err)
{
    g_autoptr(GError) gerr = NULL;

    if (!passed_fds_close_named(json_object_get_string_member(args, "fdname"),
                                &gerr)) {
        qmp_error_set(err, QMP_ERROR_GENERIC, "%s", gerr->message);
        return NULL;
    }
    return qmp_return_empty();
}

static const QmpArg fdname_args[] = {
    { "fdname", QMP_ARG_STR, false }, { NULL, 0, false }
};

static const QmpArg capabilities_args[] = {
    { "enable", QMP_ARG_ARRAY, true }, { NULL, 0, false }
};

static const QmpCommand monitor_commands[] = {
    { "qmp_capabilities", capabilities_args, false, qmp_capabilities, true },
    { "query-version", NULL, false, query_version, true },
    { "query-commands", NULL, false, query_commands, true },
    { "getfd", fdname_args, false, getfd, false },
    { "closefd", fdname_args, false, closefd, false },
};

static void monitor_commands_register(void)
{
    qmp_register_commands(monitor_commands, G_N_ELEMENTS(monitor_commands));
}
illan_init(monitor_commands_register)
