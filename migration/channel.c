/*
 * Migration channels.  Each URI becomes one file descriptor; exec: runs
 * the command through /bin/sh with the stream on its stdin or stdout,
 * and ends it when the stream has failed or the wait for it is given
 * up.
 * Descriptors are handed over in blocking mode: the stream is read and
 * written in whole buffers.
 */
#include "migration/channel.h"
#include "qemu/option.h"
#include "qemu/passed-fds.h"
#include "qemu/unix-socket.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long `migrate tcp:` waits on the main loop for a host to answer a
 * connect before it hands the connect over still in progress. */
#define TCP_CONNECT_WAIT_MS 1000
/* How long an exec: command no longer needed has to exit after SIGTERM,
 * before SIGKILL; and how often it is looked at meanwhile. */
#define EXEC_TERM_GRACE_MS  1000
#define EXEC_REAP_POLL_US   10000

struct MigrationChannel {
    int fd;
    GPid child;                 /* exec:, or 0 */
    int listen_fd;              /* unix: and tcp: incoming, until accepted */
    char *listen_path;          /* unix: only */
    JsonObject *listen_addr;    /* QEMU's SocketAddress of the listener */
    guint source;               /* the watch or idle that calls ready */
    MigrationChannelReady ready;
    void *opaque;
};

static MigrationChannel *channel_new(void)
{
    MigrationChannel *ch = g_new0(MigrationChannel, 1);

    ch->fd = ch->listen_fd = -1;
    return ch;
}

int migration_channel_fd(const MigrationChannel *ch)
{
    return ch->fd;
}

/* "PATH[,offset=N]" of a file: URI. */
static bool parse_file_uri(const char *rest, char **path, off_t *offset,
                           GError **errp)
{
    const char *comma = strstr(rest, ",offset=");
    uint64_t off = 0;

    if (comma && !qemu_parse_size("offset", comma + strlen(",offset="), 0,
                                  &off, errp)) {
        return false;
    }
    *path = comma ? g_strndup(rest, comma - rest) : g_strdup(rest);
    *offset = off;
    return true;
}

static bool open_file(MigrationChannel *ch, const char *rest, bool output,
                      GError **errp)
{
    g_autofree char *path = NULL;
    off_t offset;
    int flags = output ? O_WRONLY | O_CREAT : O_RDONLY;

    if (!parse_file_uri(rest, &path, &offset, errp)) {
        return false;
    }
    if (output && offset == 0) {
        flags |= O_TRUNC;
    }
    ch->fd = open(path, flags | O_CLOEXEC, 0644);
    if (ch->fd < 0 || lseek(ch->fd, offset, SEEK_SET) < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "cannot open '%s': %s", path,
                    g_strerror(errno));
        return false;
    }
    return true;
}

static void set_blocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);

    if (flags >= 0 && (flags & O_NONBLOCK)) {
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    }
}

/* fd:NAME takes a descriptor getfd named; fd:N one inherited for the
 * purpose.  Either is the channel's from then on, closed with it. */
static bool use_fd(MigrationChannel *ch, const char *rest, GError **errp)
{
    uint64_t n;

    if (!g_ascii_isdigit(rest[0])) {
        ch->fd = passed_fds_claim_named(rest, errp);
    } else if (!qemu_parse_uint64("fd", rest, &n, errp) || n > INT32_MAX) {
        g_clear_error(errp);
        g_set_error(errp, ILLAN_ERROR, 0, "Invalid file descriptor number "
                    "'%s'", rest);
    } else {
        ch->fd = passed_fds_claim_inherited(n, errp);
    }
    if (ch->fd >= 0) {
        set_blocking(ch->fd);
    }
    return ch->fd >= 0;
}

/* getaddrinfo() would take a number past 65535 modulo 65536. */
static bool port_in_range(const char *port, GError **errp)
{
    guint64 n;

    if (g_ascii_isdigit(port[0]) &&
        !g_ascii_string_to_unsigned(port, 10, 0, 65535, &n, NULL)) {
        g_set_error(errp, ILLAN_ERROR, 0, "port %s out of range", port);
        return false;
    }
    return true;
}

/* "HOST:PORT" or "[V6ADDR]:PORT", as QEMU splits them; an empty host
 * listens on every address. */
static bool split_inet(const char *rest, char **host, char **port,
                       GError **errp)
{
    const char *colon;

    if (strchr(rest, ',')) {
        g_set_error(errp, ILLAN_ERROR, 0, "tcp: illan takes no options "
                    "after the port");
        return false;
    }
    if (rest[0] == '[') {
        colon = strstr(rest, "]:");
        if (!colon || colon - rest < 2 || !colon[2]) {
            g_set_error(errp, ILLAN_ERROR, 0, "error parsing IPv6 address "
                        "'%s'", rest);
            return false;
        }
        *host = g_strndup(rest + 1, colon - rest - 1);
        *port = g_strdup(colon + 2);
        return port_in_range(*port, errp);
    }
    colon = strchr(rest, ':');
    if (!colon || !colon[1]) {
        g_set_error(errp, ILLAN_ERROR, 0, "error parsing address '%s'", rest);
        return false;
    }
    *host = g_strndup(rest, colon - rest);
    *port = g_strdup(colon + 1);
    return port_in_range(*port, errp);
}

static struct addrinfo *resolve(const char *host, const char *port,
                                int flags, GError **errp)
{
    struct addrinfo hints = { .ai_flags = flags,
                              .ai_socktype = SOCK_STREAM };
    struct addrinfo *res;
    int rc = getaddrinfo(*host ? host : NULL, port, &hints, &res);

    if (rc) {
        g_set_error(errp, ILLAN_ERROR, 0, "address resolution failed for "
                    "%s:%s: %s", host, port, gai_strerror(rc));
        return NULL;
    }
    return res;
}

/* Waits up to @budget_ms for a connect in progress: 1 connected, 0
 * still going, -1 failed (errno). */
static int connect_finished(int fd, int budget_ms)
{
    struct pollfd pfd = { .fd = fd, .events = POLLOUT };
    int err = 0, n;
    socklen_t len = sizeof(err);

    do {
        n = poll(&pfd, 1, budget_ms);
    } while (n < 0 && errno == EINTR);
    if (n == 0) {
        return 0;
    }
    if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) {
        return -1;
    }
    errno = err;
    return err ? -1 : 1;
}

/*
 * Each address in turn, as QEMU tries them, with a non-blocking connect.
 * The main loop waits at most TCP_CONNECT_WAIT_MS in all, which any host
 * that answers needs (a refusal moves on to the next address); a host
 * that has not answered by then gets its connect handed over in
 * progress: the kernel completes or abandons it, and the first write
 * waits for that, in whichever thread writes.
 */
static bool connect_tcp(MigrationChannel *ch, const char *rest,
                        GError **errp)
{
    g_autofree char *host = NULL, *port = NULL;
    gint64 deadline = g_get_monotonic_time() + TCP_CONNECT_WAIT_MS * 1000;
    struct addrinfo *res, *ai;
    int err = 0, done = -1;

    if (!split_inet(rest, &host, &port, errp) ||
        !(res = resolve(host, port, AI_ADDRCONFIG, errp))) {
        return false;
    }
    for (ai = res; ai && done < 0; ai = ai->ai_next) {
        int budget = MAX(0, (deadline - g_get_monotonic_time()) / 1000);

        ch->fd = socket(ai->ai_family,
                        SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (ch->fd < 0) {
            err = errno;
            continue;
        }
        if (connect(ch->fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            done = 1;
        } else if (errno == EINPROGRESS) {
            done = connect_finished(ch->fd, budget);
        }
        if (done < 0) {
            err = errno;
            close(ch->fd);
            ch->fd = -1;
        }
    }
    freeaddrinfo(res);
    if (done < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "Failed to connect to '%s:%s': %s",
                    host, port, g_strerror(err));
        return false;
    }
    set_blocking(ch->fd);
    return true;
}

/* {"type": "inet", "host", "port", "ipv4"|"ipv6": true}, numeric, as
 * QEMU's query-migrate shows a listener. */
static JsonObject *inet_address(int fd)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    JsonObject *addr;

    if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0 ||
        getnameinfo((struct sockaddr *)&sa, len, host, sizeof(host), serv,
                    sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV)) {
        return NULL;
    }
    addr = json_object_new();
    json_object_set_string_member(addr, "type", "inet");
    json_object_set_string_member(addr, "host", host);
    json_object_set_string_member(addr, "port", serv);
    json_object_set_boolean_member(addr, sa.ss_family == AF_INET6 ? "ipv6"
                                                                   : "ipv4",
                                   true);
    return addr;
}

/* Binds the first address that takes it (port 0: the kernel picks one);
 * an IPv6 listener takes IPv4 connections too, as QEMU's does. */
static int bind_listen(const struct addrinfo *ai)
{
    static const int on = 1, off = 0;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (ai->ai_family == AF_INET6) {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
    }
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 1) < 0) {
        int err = errno;

        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

static bool listen_tcp(MigrationChannel *ch, const char *rest, GError **errp)
{
    g_autofree char *host = NULL, *port = NULL;
    struct addrinfo *res, *ai;
    int err = 0;

    if (!split_inet(rest, &host, &port, errp) ||
        !(res = resolve(host, port, AI_PASSIVE, errp))) {
        return false;
    }
    for (ai = res; ai && ch->listen_fd < 0; ai = ai->ai_next) {
        ch->listen_fd = bind_listen(ai);
        err = errno;
    }
    freeaddrinfo(res);
    if (ch->listen_fd < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "Failed to listen on '%s:%s': %s",
                    host, port, g_strerror(err));
        return false;
    }
    ch->listen_addr = inet_address(ch->listen_fd);
    return true;
}

static JsonObject *unix_address(const char *path)
{
    JsonObject *addr = json_object_new();

    json_object_set_string_member(addr, "type", "unix");
    json_object_set_string_member(addr, "path", path);
    return addr;
}

JsonArray *migration_channel_socket_addresses(const MigrationChannel *ch)
{
    JsonArray *list;

    if (!ch || !ch->listen_addr) {
        return NULL;
    }
    list = json_array_new();
    json_array_add_object_element(list, json_object_ref(ch->listen_addr));
    return list;
}

static bool spawn_exec(MigrationChannel *ch, const char *cmd, bool output,
                       GError **errp)
{
    const char *argv[] = { "/bin/sh", "-c", cmd, NULL };

    if (!g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                  G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL,
                                  &ch->child, output ? &ch->fd : NULL,
                                  output ? NULL : &ch->fd, NULL, errp)) {
        return false;
    }
    return true;
}

/* Splits "proto:rest"; known but unsupported protocols get their own
 * message. */
static const char *uri_rest(const char *uri, const char *proto)
{
    size_t n = strlen(proto);

    return !strncmp(uri, proto, n) && uri[n] == ':' ? uri + n + 1 : NULL;
}

static bool unknown_protocol(const char *uri, GError **errp)
{
    static const char *const unsupported[] = { "vsock", "rdma" };

    for (size_t i = 0; i < G_N_ELEMENTS(unsupported); i++) {
        if (uri_rest(uri, unsupported[i])) {
            g_set_error(errp, ILLAN_ERROR, 0, "%s: migration is not supported "
                        "by illan (use file:, unix:, tcp:, fd: or exec:)",
                        unsupported[i]);
            return false;
        }
    }
    g_set_error(errp, ILLAN_ERROR, 0, "unknown migration protocol: %s", uri);
    return false;
}

MigrationChannel *migration_channel_open_outgoing(const char *uri,
                                                  GError **errp)
{
    MigrationChannel *ch = channel_new();
    const char *rest;
    bool ok;

    if ((rest = uri_rest(uri, "file"))) {
        ok = open_file(ch, rest, true, errp);
    } else if ((rest = uri_rest(uri, "unix"))) {
        ch->fd = unix_socket_connect(rest, errp);
        ok = ch->fd >= 0;
    } else if ((rest = uri_rest(uri, "tcp"))) {
        ok = connect_tcp(ch, rest, errp);
    } else if ((rest = uri_rest(uri, "fd"))) {
        ok = use_fd(ch, rest, errp);
    } else if ((rest = uri_rest(uri, "exec"))) {
        ok = spawn_exec(ch, rest, true, errp);
    } else {
        ok = unknown_protocol(uri, errp);
    }
    if (!ok) {
        migration_channel_close(ch, NULL, NULL, NULL);
        return NULL;
    }
    return ch;
}

static gboolean call_ready(gpointer opaque)
{
    MigrationChannel *ch = opaque;

    ch->source = 0;
    ch->ready(ch, ch->opaque);
    return G_SOURCE_REMOVE;
}

/* unix: and tcp: the first connection is the source; nobody else gets
 * in. */
static gboolean on_connect(gint fd, GIOCondition cond, gpointer opaque)
{
    MigrationChannel *ch = opaque;
    int conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

    (void)cond;
    if (conn < 0) {
        return G_SOURCE_CONTINUE;
    }
    close(ch->listen_fd);
    ch->listen_fd = -1;
    ch->fd = conn;
    ch->source = 0;
    ch->ready(ch, ch->opaque);
    return G_SOURCE_REMOVE;
}

MigrationChannel *migration_channel_open_incoming(const char *uri,
                                                  MigrationChannelReady ready,
                                                  void *opaque,
                                                  GError **errp)
{
    MigrationChannel *ch = channel_new();
    const char *rest;
    bool ok;

    ch->ready = ready;
    ch->opaque = opaque;
    if ((rest = uri_rest(uri, "unix"))) {
        ch->listen_fd = unix_socket_listen(rest, errp);
        if (ch->listen_fd >= 0) {
            ch->listen_path = g_strdup(rest);
            ch->listen_addr = unix_address(rest);
        }
        ok = ch->listen_fd >= 0;
    } else if ((rest = uri_rest(uri, "tcp"))) {
        ok = listen_tcp(ch, rest, errp);
    } else {
        if ((rest = uri_rest(uri, "file"))) {
            ok = open_file(ch, rest, false, errp);
        } else if ((rest = uri_rest(uri, "fd"))) {
            ok = use_fd(ch, rest, errp);
        } else if ((rest = uri_rest(uri, "exec"))) {
            ok = spawn_exec(ch, rest, false, errp);
        } else {
            ok = unknown_protocol(uri, errp);
        }
        if (ok) {
            ch->source = g_idle_add(call_ready, ch);
        }
    }
    if (ok && ch->listen_fd >= 0) {
        ch->source = g_unix_fd_add(ch->listen_fd, G_IO_IN, on_connect, ch);
    }
    if (!ok) {
        migration_channel_close(ch, NULL, NULL, NULL);
        return NULL;
    }
    return ch;
}

/* 1 reaped (with *status), 0 still running, -1 waitpid failed. */
static int try_reap(GPid child, int *status)
{
    pid_t r;

    do {
        r = waitpid(child, status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    return r == child ? 1 : r;
}

/* A command no longer needed gets SIGTERM, then, for one that ignores
 * it a grace later, SIGKILL, and is always reaped; QEMU instead waits
 * without limit on a closed channel (docs/system/migration.md).
 * Returns as try_reap() does. */
static int terminate_child(GPid child, int *status)
{
    gint64 deadline = g_get_monotonic_time() + EXEC_TERM_GRACE_MS * 1000;
    int done;
    pid_t r;

    kill(child, SIGTERM);
    while (!(done = try_reap(child, status)) &&
           g_get_monotonic_time() < deadline) {
        g_usleep(EXEC_REAP_POLL_US);
    }
    if (done) {
        return done;
    }
    kill(child, SIGKILL);
    do {
        r = waitpid(child, status, 0);
    } while (r < 0 && errno == EINTR);
    return r == child ? 1 : -1;
}

static bool wait_child(GPid child, MigrationChannelWait wait, void *opaque,
                       GError **errp)
{
    int status, done;

    while (!(done = try_reap(child, &status))) {
        if (!wait || !wait(opaque)) {
            done = terminate_child(child, &status);
            break;
        }
    }
    if (done < 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "exec: waiting for the command: %s",
                    g_strerror(errno));
        return false;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        g_set_error(errp, ILLAN_ERROR, 0, "exec: the command %s %d",
                    WIFEXITED(status) ? "exited with status"
                                      : "was killed by signal",
                    WIFEXITED(status) ? WEXITSTATUS(status)
                                      : WTERMSIG(status));
        return false;
    }
    return true;
}

bool migration_channel_close(MigrationChannel *ch, MigrationChannelWait wait,
                             void *opaque, GError **errp)
{
    bool ok = true;

    if (!ch) {
        return true;
    }
    if (ch->source) {
        g_source_remove(ch->source);
    }
    if (ch->fd >= 0 && close(ch->fd) < 0 && errno != EINTR) {
        g_set_error(errp, ILLAN_ERROR, 0, "closing the channel: %s",
                    g_strerror(errno));
        ok = false;
    }
    if (ch->listen_fd >= 0) {
        close(ch->listen_fd);
    }
    if (ch->listen_path) {
        unix_socket_unlink(ch->listen_path);
        g_free(ch->listen_path);
    }
    if (ch->listen_addr) {
        json_object_unref(ch->listen_addr);
    }
    if (ch->child) {
        ok = wait_child(ch->child, wait, opaque, ok ? errp : NULL) && ok;
    }
    g_free(ch);
    return ok;
}
