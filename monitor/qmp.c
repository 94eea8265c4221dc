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
 *
 * As in QEMU, the sockets are served by a monitor thread of their own, so
 * that an out-of-band request is answered at once even while an in-band
 * command holds the main thread (an open() that waits on a FIFO, say).
 * In-band requests run on the main thread, one at a time per client and
 * in the order sent; the monitor thread holds the ones behind.
 */
#include "monitor/qmp.h"
#include "monitor/json-stream.h"
#include "qemu/json-writer.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/option.h"
#include "qemu/passed-fds.h"
#include "qemu/qmp-registry.h"
#include "qemu/thread.h"
#include "qemu/unix-socket.h"

#include <errno.h>
#include <glib-unix.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define QMP_READ_CHUNK  4096
/* Descriptors one message may carry, as QEMU's socket chardev takes. */
#define QMP_MAX_FDS     16
/* Output a client may leave unread before it is hung up on: room for a
 * few replies that echo a 1 MiB input back, escaped. */
#define QMP_MAX_PENDING_OUTPUT  (16u << 20)
/* In-band requests held for a client before its socket is no longer
 * read, QEMU's QMP_REQ_QUEUE_LEN_MAX. */
#define QMP_MAX_HELD    8

/* Items handed from one thread to another: a queue under a lock, and an
 * eventfd that wakes the receiving thread's GMainContext. */
typedef struct Mailbox {
    QemuMutex lock;
    GQueue items;           /* under lock */
    int wake_fd;
    GSource *watch;
    void (*deliver)(gpointer item);
} Mailbox;

static gboolean mailbox_ready(gint fd, GIOCondition cond, gpointer opaque)
{
    Mailbox *mb = opaque;
    eventfd_t ignored;
    GQueue batch;

    (void)cond;
    eventfd_read(fd, &ignored);
    qemu_mutex_lock(&mb->lock);
    batch = mb->items;
    g_queue_init(&mb->items);
    qemu_mutex_unlock(&mb->lock);
    for (GList *l = batch.head; l; l = l->next) {
        mb->deliver(l->data);
    }
    g_queue_clear(&batch);
    return G_SOURCE_CONTINUE;
}

static GSource *watch_fd(GMainContext *ctx, int fd, GIOCondition cond,
                         GUnixFDSourceFunc fn, gpointer opaque)
{
    GSource *s = g_unix_fd_source_new(fd, cond);

    g_source_set_callback(s, (GSourceFunc)(void (*)(void))fn, opaque, NULL);
    g_source_attach(s, ctx);
    return s;
}

static void unwatch(GSource **s)
{
    if (*s) {
        g_source_destroy(*s);
        g_source_unref(*s);
        *s = NULL;
    }
}

static void mailbox_init(Mailbox *mb, GMainContext *ctx,
                         void (*deliver)(gpointer item))
{
    qemu_mutex_init(&mb->lock);
    g_queue_init(&mb->items);
    mb->deliver = deliver;
    mb->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    g_assert(mb->wake_fd >= 0);
    mb->watch = watch_fd(ctx, mb->wake_fd, G_IO_IN, mailbox_ready, mb);
}

static void mailbox_post(Mailbox *mb, gpointer item)
{
    qemu_mutex_lock(&mb->lock);
    g_queue_push_tail(&mb->items, item);
    eventfd_write(mb->wake_fd, 1);
    qemu_mutex_unlock(&mb->lock);
}

/* Once nothing posts any more: what was never delivered goes to @drop. */
static void mailbox_destroy(Mailbox *mb, GDestroyNotify drop)
{
    unwatch(&mb->watch);
    close(mb->wake_fd);
    g_queue_clear_full(&mb->items, drop);
    qemu_mutex_destroy(&mb->lock);
}

/* One JSON text from a client, read as a request or refused. */
typedef struct QmpRequest {
    char *text;             /* as the client wrote it: its id and integers,
                               which json-glib would change */
    JsonNode *root;         /* an object, or NULL with @err set */
    QmpError err;
} QmpRequest;

/* The monitor thread's, but for the descriptors (see there). */
typedef struct QmpClient {
    int fd;
    GSource *watch;         /* reading, or only awaiting the hang-up
                               while it is not read; NULL once closed */
    bool reading;           /* @watch reads */
    GSource *out_watch;     /* set while output waits for the socket */
    GString *out;
    JsonStream *stream;
    GQueue held;            /* QmpRequest *: in-band, not yet run */
    bool running;           /* one of its in-band requests is on the main
                               thread; the client stays until it is back */
    bool closed;            /* it hung up */
    bool negotiated;
    bool oob;               /* out-of-band execution enabled */
    bool hung_up;           /* we gave up on it; the read side drops it */
    QemuMutex fds_lock;     /* the monitor thread receives, getfd takes */
    int msgfds[QMP_MAX_FDS];    /* the last SCM_RIGHTS received */
    unsigned n_msgfds;
} QmpClient;

typedef struct QmpListener {
    int fd;
    GSource *watch;
    char *path;
} QmpListener;

/* An in-band request on its way to the main thread and back. */
typedef struct QmpJob {
    QmpClient *client;
    QmpRequest *req;
    bool negotiated, oob;   /* the session as the request found it, and
                               as qmp_capabilities leaves it */
    char *reply;            /* the answer's text */
} QmpJob;

/* What the main thread hands the monitor thread, in order. */
typedef enum MonitorMsgKind {
    MONITOR_ADD_CLIENT,
    MONITOR_ADD_LISTENER,
    MONITOR_JOB_DONE,
    MONITOR_EVENT,
    MONITOR_STOP,
} MonitorMsgKind;

typedef struct MonitorMsg {
    MonitorMsgKind kind;
    int fd;                 /* ADD_CLIENT */
    QmpListener *listener;  /* ADD_LISTENER */
    QmpJob *job;            /* JOB_DONE */
    char *text;             /* EVENT */
} MonitorMsg;

/* Started with the first monitor, stopped by qmp_cleanup() (main thread). */
static GThread *monitor_thread;
static GMainContext *monitor_ctx;
static GMainLoop *monitor_loop;
static Mailbox to_monitor;      /* MonitorMsg * */
static Mailbox to_main;         /* QmpJob * */

/* The monitor thread's while it runs; the main thread's after. */
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
 * watch, so a slow reader never holds up the other clients. */
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
                c->out_watch = watch_fd(monitor_ctx, c->fd, G_IO_OUT,
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
    unwatch(&c->out_watch);
    return G_SOURCE_REMOVE;
}

/* Queues @text as one line. */
static void client_write(QmpClient *c, const char *text)
{
    if (c->hung_up) {
        return;
    }
    g_string_append(c->out, text);
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

static char *writer_finish(JsonWriter *w)
{
    char *text = g_strdup(json_writer_text(w));

    json_writer_free(w);
    return text;
}

/* Every monitor is a socket, where QEMU offers out-of-band execution. */
static void send_greeting(QmpClient *c)
{
    g_autoptr(JsonNode) version = json_node_new(JSON_NODE_OBJECT);
    JsonWriter *w = json_writer_new(false);
    g_autofree char *text = NULL;

    json_node_take_object(version, version_info());

    json_writer_start_object(w, NULL);
    json_writer_start_object(w, "QMP");
    json_writer_node(w, "version", version);
    json_writer_start_array(w, "capabilities");
    json_writer_str(w, NULL, "oob");
    json_writer_end_array(w);
    json_writer_end_object(w);
    json_writer_end_object(w);
    text = writer_finish(w);
    client_write(c, text);
}

/* @id is the request's "id" as the client wrote it, or NULL. */
static char *error_text(const QmpError *err, const char *id)
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
    return writer_finish(w);
}

static char *return_text(JsonNode *value, const char *id)
{
    JsonWriter *w = json_writer_new(false);

    json_writer_start_object(w, NULL);
    json_writer_node(w, "return", value);
    if (id) {
        json_writer_raw(w, "id", id);
    }
    json_writer_end_object(w);
    return writer_finish(w);
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
static const char *envelope_command_key(bool oob, JsonObject *req,
                                        QmpError *err)
{
    g_autoptr(GList) names = json_object_get_members(req);
    const char *key = NULL;

    for (GList *l = names; l; l = l->next) {
        const char *name = l->data;

        if (!strcmp(name, "execute") ||
            (!strcmp(name, "exec-oob") && oob)) {
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
static bool allowed_now(bool negotiated, const char *name, QmpError *err)
{
    bool capabilities = !strcmp(name, "qmp_capabilities");

    if (!negotiated && !capabilities) {
        qmp_error_set(err, QMP_ERROR_COMMAND_NOT_FOUND,
                      "Expecting capabilities negotiation with "
                      "'qmp_capabilities'");
        return false;
    }
    if (negotiated && capabilities) {
        qmp_error_set(err, QMP_ERROR_COMMAND_NOT_FOUND,
                      "Capabilities negotiation is already complete, "
                      "command ignored");
        return false;
    }
    return true;
}

/* The request's envelope: execute (or exec-oob), arguments, id and
 * nothing else, in a session @negotiated (or not) with @oob (or not). */
static const QmpCommand *check_request(bool negotiated, bool oob,
                                       JsonObject *req, JsonObject **args,
                                       QmpError *err)
{
    const char *key = envelope_command_key(oob, req, err);
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
    if (!allowed_now(negotiated, name, err)) {
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

/* The job whose request runs on the main thread, for qmp_capabilities
 * and getfd. */
static QmpJob *current_job;

/* Main thread: runs @job's request and sends the job back with its
 * reply. */
static void run_job(gpointer opaque)
{
    QmpJob *job = opaque;
    JsonObject *req = json_node_get_object(job->req->root);
    const char *text = job->req->text;
    g_autofree char *id = json_object_has_member(req, "id") ?
                          json_stream_member_text(text, "id") : NULL;
    g_autofree char *args_text = json_stream_member_text(text, "arguments");
    g_autoptr(JsonObject) empty = json_object_new();
    QmpError err = { 0 };
    JsonObject *args = NULL;
    const QmpCommand *cmd = check_request(job->negotiated, job->oob, req,
                                          &args, &err);
    JsonNode *ret = NULL;
    MonitorMsg *done = g_new0(MonitorMsg, 1);

    if (cmd && qmp_command_allowed(cmd, &err) &&
        check_args(cmd, args ? args : empty, args_text, &err)) {
        current_job = job;
        ret = cmd->fn(args ? args : empty, &err);
        current_job = NULL;
    }
    if (ret) {
        job->reply = return_text(ret, id);
        json_node_unref(ret);
    } else {
        job->reply = error_text(&err, id);
    }
    g_free(err.desc);
    done->kind = MONITOR_JOB_DONE;
    done->job = job;
    mailbox_post(&to_monitor, done);
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

static QmpRequest *request_new(const char *text, JsonStreamError error)
{
    g_autoptr(JsonParser) parser = json_parser_new_immutable();
    g_autoptr(GError) perr = NULL;
    QmpRequest *req = g_new0(QmpRequest, 1);
    JsonNode *root;

    req->text = g_strdup(text);
    if (error) {
        parse_error(error, text, &req->err);
    } else if (has_nul_escape(text)) {
        qmp_error_set(&req->err, QMP_ERROR_GENERIC,
                      "JSON parse error, \\u0000 is not allowed in a string");
    } else if (!json_parser_load_from_data(parser, text, -1, &perr)) {
        qmp_error_set(&req->err, QMP_ERROR_GENERIC, "JSON parse error, %s",
                      perr->message);
    } else if (!(root = json_parser_get_root(parser)) ||
               !JSON_NODE_HOLDS_OBJECT(root)) {
        qmp_error_set(&req->err, QMP_ERROR_GENERIC,
                      "QMP input must be a JSON object");
    } else {
        req->root = json_node_ref(root);
    }
    return req;
}

static void request_free(gpointer opaque)
{
    QmpRequest *req = opaque;

    if (req->root) {
        json_node_unref(req->root);
    }
    g_free(req->err.desc);
    g_free(req->text);
    g_free(req);
}

/* As QEMU tells them apart: "exec-oob" without "execute", once the
 * session has enabled oob. */
static bool request_is_oob(QmpClient *c, QmpRequest *req)
{
    JsonObject *o = req->root ? json_node_get_object(req->root) : NULL;

    return c->oob && o && json_object_has_member(o, "exec-oob") &&
           !json_object_has_member(o, "execute");
}

/* Monitor thread: no command runs out of band, so the checks refuse an
 * out-of-band request before anything would run on this thread. */
static void answer_oob(QmpClient *c, QmpRequest *req)
{
    JsonObject *o = json_node_get_object(req->root);
    g_autofree char *id = json_object_has_member(o, "id") ?
                          json_stream_member_text(req->text, "id") : NULL;
    g_autofree char *text = NULL;
    JsonObject *args;
    QmpError err = { 0 };
    const QmpCommand *cmd = check_request(c->negotiated, c->oob, o, &args,
                                          &err);

    g_assert(!cmd);
    text = error_text(&err, id);
    client_write(c, text);
    g_free(err.desc);
    request_free(req);
}

static void client_free(QmpClient *c);
static gboolean client_readable(gint fd, GIOCondition cond, gpointer opaque);
static gboolean client_gone(gint fd, GIOCondition cond, gpointer opaque);

/* Whether the socket is read now.  As QEMU suspends its monitor, a
 * session without oob is not read past an in-band request until it is
 * answered: the descriptors a later read brings would replace those the
 * request came with.  One with oob is read while fewer than QMP_MAX_HELD
 * wait, so that an out-of-band request gets through. */
static bool client_wants_input(QmpClient *c)
{
    if (c->closed) {
        return false;
    }
    if (c->oob) {
        return c->held.length < QMP_MAX_HELD;
    }
    return !c->running && g_queue_is_empty(&c->held);
}

/* While its socket is not read, a client's hang-up is still noticed, as
 * QEMU's socket chardev notices it, so that what it left is dropped. */
static void client_update_watch(QmpClient *c)
{
    bool reading = client_wants_input(c);

    if (c->watch && (c->closed || c->reading != reading)) {
        unwatch(&c->watch);
    }
    if (!c->watch && !c->closed) {
        c->reading = reading;
        c->watch = reading ?
            watch_fd(monitor_ctx, c->fd, G_IO_IN | G_IO_HUP | G_IO_ERR,
                     client_readable, c) :
            watch_fd(monitor_ctx, c->fd, G_IO_HUP | G_IO_ERR, client_gone, c);
    }
}

/* Monitor thread: answers what needs no main thread and hands the next
 * in-band request to it, unless one is already there; reads the socket
 * again once few enough wait.  The requests of a client that hung up, or
 * that we gave up on, are dropped unrun, as QEMU drops its queue. */
static void client_run_held(QmpClient *c)
{
    if (c->closed || c->hung_up) {
        g_queue_clear_full(&c->held, request_free);
    }
    while (!c->running && !g_queue_is_empty(&c->held)) {
        QmpRequest *req = g_queue_pop_head(&c->held);
        QmpJob *job;

        if (!req->root) {
            g_autofree char *text = error_text(&req->err, NULL);

            client_write(c, text);
            request_free(req);
        } else if (request_is_oob(c, req)) {
            answer_oob(c, req);
        } else {
            job = g_new0(QmpJob, 1);
            job->client = c;
            job->req = req;
            job->negotiated = c->negotiated;
            job->oob = c->oob;
            c->running = true;
            mailbox_post(&to_main, job);
        }
    }
    if (c->closed && !c->running && g_queue_is_empty(&c->held)) {
        g_ptr_array_remove(clients, c);
        client_free(c);
    } else {
        client_update_watch(c);
    }
}

/* Monitor thread: an out-of-band request is answered as soon as it is
 * read; an in-band one waits behind those before it. */
static void on_text(void *opaque, const char *text, JsonStreamError error)
{
    QmpClient *c = opaque;
    QmpRequest *req = request_new(text, error);

    if (request_is_oob(c, req)) {
        answer_oob(c, req);
    } else {
        g_queue_push_tail(&c->held, req);
    }
}

static void job_done(QmpJob *job)
{
    QmpClient *c = job->client;

    c->negotiated = job->negotiated;
    c->oob = job->oob;
    client_write(c, job->reply);
    c->running = false;
    request_free(job->req);
    g_free(job->reply);
    g_free(job);
    client_run_held(c);
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
        qemu_mutex_lock(&c->fds_lock);
        drop_msgfds(c);
        memcpy(c->msgfds, CMSG_DATA(cm), n * sizeof(int));
        c->n_msgfds = n;
        qemu_mutex_unlock(&c->fds_lock);
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
    unwatch(&c->watch);
    unwatch(&c->out_watch);
    g_string_free(c->out, TRUE);
    close(c->fd);
    drop_msgfds(c);
    qemu_mutex_destroy(&c->fds_lock);
    json_stream_free(c->stream);
    g_queue_clear_full(&c->held, request_free);
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
        c->closed = true;
    } else if (!c->hung_up) {
        json_stream_feed(c->stream, buf, n);
    }
    /* Last: it may free the client, or replace this watch. */
    client_run_held(c);
    return G_SOURCE_CONTINUE;
}

static gboolean client_gone(gint fd, GIOCondition cond, gpointer opaque)
{
    QmpClient *c = opaque;

    (void)fd, (void)cond;
    c->closed = true;
    /* Last: it may free the client. */
    client_run_held(c);
    return G_SOURCE_REMOVE;
}

static void client_add(int fd)
{
    QmpClient *c = g_new0(QmpClient, 1);

    c->fd = fd;
    c->out = g_string_new(NULL);
    c->stream = json_stream_new(on_text, c);
    g_queue_init(&c->held);
    qemu_mutex_init(&c->fds_lock);
    g_ptr_array_add(clients, c);
    client_update_watch(c);
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

static void send_event_text(const char *text)
{
    for (guint i = 0; i < clients->len; i++) {
        QmpClient *c = g_ptr_array_index(clients, i);

        if (c->negotiated) {
            client_write(c, text);
        }
    }
}

static void monitor_deliver(gpointer opaque)
{
    MonitorMsg *m = opaque;

    switch (m->kind) {
    case MONITOR_ADD_CLIENT:
        client_add(m->fd);
        break;
    case MONITOR_ADD_LISTENER:
        g_ptr_array_add(listeners, m->listener);
        m->listener->watch = watch_fd(monitor_ctx, m->listener->fd, G_IO_IN,
                                      listener_readable, m->listener);
        break;
    case MONITOR_JOB_DONE:
        job_done(m->job);
        break;
    case MONITOR_EVENT:
        send_event_text(m->text);
        break;
    case MONITOR_STOP:
        g_main_loop_quit(monitor_loop);
        break;
    }
    g_free(m->text);
    g_free(m);
}

static gpointer monitor_run(gpointer opaque)
{
    (void)opaque;
    g_main_context_push_thread_default(monitor_ctx);
    g_main_loop_run(monitor_loop);
    g_main_context_pop_thread_default(monitor_ctx);
    return NULL;
}

/* Main thread: the monitor thread, the first time a monitor is made. */
static void monitor_start(void)
{
    if (monitor_thread) {
        return;
    }
    clients = g_ptr_array_new();
    listeners = g_ptr_array_new();
    monitor_ctx = g_main_context_new();
    monitor_loop = g_main_loop_new(monitor_ctx, FALSE);
    mailbox_init(&to_monitor, monitor_ctx, monitor_deliver);
    mailbox_init(&to_main, NULL, run_job);
    monitor_thread = g_thread_new("IO monitor", monitor_run, NULL);
}

static void monitor_post(MonitorMsgKind kind, int fd, QmpListener *l,
                         char *text)
{
    MonitorMsg *m = g_new0(MonitorMsg, 1);

    m->kind = kind;
    m->fd = fd;
    m->listener = l;
    m->text = text;
    mailbox_post(&to_monitor, m);
}

static void add_listener(int fd, const char *path)
{
    QmpListener *l = g_new0(QmpListener, 1);

    l->fd = fd;
    l->path = g_strdup(path);
    monitor_start();
    monitor_post(MONITOR_ADD_LISTENER, -1, l, NULL);
}

static void add_client(int fd)
{
    monitor_start();
    monitor_post(MONITOR_ADD_CLIENT, fd, NULL, NULL);
}

bool qmp_listen(const char *path, bool wait, GError **errp)
{
    int fd = unix_socket_listen(path, errp);

    if (fd < 0) {
        return false;
    }
    if (wait) {
        int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

        if (cfd >= 0) {
            add_client(cfd);
        }
    }
    add_listener(fd, path);
    return true;
}

bool qmp_connect(const char *path, GError **errp)
{
    int fd = unix_socket_connect(path, errp);

    if (fd < 0) {
        return false;
    }
    add_client(fd);
    return true;
}

bool qmp_attach_fd(int fd, GError **errp)
{
    int listening = 0;
    socklen_t len = sizeof(listening);

    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "descriptor %d is not a socket: %s",
                    fd, g_strerror(errno));
        return false;
    }
    if (listening) {
        add_listener(fd, NULL);     /* no path: nothing to unlink */
    } else {
        add_client(fd);
    }
    return true;
}

static void job_drop(gpointer opaque)
{
    QmpJob *job = opaque;

    request_free(job->req);
    g_free(job);
}

static void monitor_msg_drop(gpointer opaque)
{
    MonitorMsg *m = opaque;

    g_free(m->text);
    g_free(m);
}

/* What was handed over before this is delivered first: a command's
 * reply, the events it raised. */
static void monitor_stop(void)
{
    monitor_post(MONITOR_STOP, -1, NULL, NULL);
    g_thread_join(monitor_thread);
    monitor_thread = NULL;
    mailbox_destroy(&to_main, job_drop);
    mailbox_destroy(&to_monitor, monitor_msg_drop);
    g_main_loop_unref(monitor_loop);
    g_main_context_unref(monitor_ctx);
}

void qmp_cleanup(void)
{
    if (!monitor_thread) {
        return;
    }
    monitor_stop();
    for (guint i = 0; i < clients->len; i++) {
        client_free(g_ptr_array_index(clients, i));
    }
    g_clear_pointer(&clients, g_ptr_array_unref);
    for (guint i = 0; i < listeners->len; i++) {
        QmpListener *l = g_ptr_array_index(listeners, i);

        unwatch(&l->watch);
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

/* Main thread: written here, so that it keeps its place among the
 * replies of the commands that raised it. */
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
    if (monitor_thread) {
        monitor_post(MONITOR_EVENT, -1, NULL, writer_finish(w));
    } else {
        json_writer_free(w);
    }
    if (e->data) {
        json_object_unref(e->data);
    }
    g_free(e->name);
    g_free(e);
}

/* An event raised off the main thread goes there to be sent. */
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
    current_job->negotiated = true;
    current_job->oob = oob;
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

/* The first descriptor of the client's last SCM_RIGHTS (or -1); the
 * others sent with it are closed, as QEMU does. */
static int take_msgfd(QmpClient *c)
{
    int fd = -1;

    qemu_mutex_lock(&c->fds_lock);
    if (c->n_msgfds) {
        fd = c->msgfds[0];
        for (unsigned i = 1; i < c->n_msgfds; i++) {
            close(c->msgfds[i]);
        }
        c->n_msgfds = 0;
    }
    qemu_mutex_unlock(&c->fds_lock);
    return fd;
}

static JsonNode *getfd(JsonObject *args, QmpError *err)
{
    g_autoptr(GError) gerr = NULL;
    int fd = take_msgfd(current_job->client);

    if (fd < 0) {
        qmp_error_set(err, QMP_ERROR_GENERIC,
                      "No file descriptor supplied via SCM_RIGHTS");
        return NULL;
    }
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
