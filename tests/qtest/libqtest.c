/*
 * libqtest for illan.  Like QEMU's, the test listens on two unix sockets
 * (qtest and QMP) and the emulator connects to them as a client.
 */
#include "hw/ppc/hcall.h"
#include "libqtest.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define QTEST_ACCEPT_TIMEOUT_MS 50000
#define QTEST_QUIT_TIMEOUT_MS   30000

struct QTestState {
    pid_t pid;
    int fd;
    int qmp_fd;
    GString *qmp_rx;
    GQueue events;              /* JsonObject *, oldest first */
    char *sock_path, *qmp_path;
    GString *rx;
    GHashTable *irq_level;      /* n -> level + 1 */
    GHashTable *irq_raises;     /* n -> count */
    const char *qmp_awaited;    /* what a QMP read waits for, for its
                                   deadline's message */
};

const char *illan_binary(void)
{
    const char *bin = g_getenv("ILLAN_BINARY");

    g_assert_nonnull(bin);
    return bin;
}

static int listen_unix(const char *path)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpuint(strlen(path), <, sizeof(addr.sun_path));
    strcpy(addr.sun_path, path);
    unlink(path);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), ==, 0);
    g_assert_cmpint(listen(fd, 1), ==, 0);
    return fd;
}

/* Accepts, but gives up if the child dies first. */
static int accept_child(int lfd, pid_t pid)
{
    for (int waited = 0; waited < QTEST_ACCEPT_TIMEOUT_MS; waited += 100) {
        struct pollfd p = { .fd = lfd, .events = POLLIN };
        int status;

        if (poll(&p, 1, 100) == 1) {
            return accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        }
        if (waitpid(pid, &status, WNOHANG) == pid) {
            g_error("illan exited before connecting (status 0x%x)", status);
        }
    }
    g_error("illan did not connect within %d ms", QTEST_ACCEPT_TIMEOUT_MS);
}

/* Data on @fd within QTEST_REPLY_S, else the test fails saying what it
 * waited for: a hung illan then stops the test with a reason, before
 * meson's timeout kills it with none. */
static void wait_readable(int fd, const char *what)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    int n;

    do {
        n = poll(&p, 1, (int)(QTEST_REPLY_S * 1000));
    } while (n < 0 && errno == EINTR);
    if (n == 0) {
        g_error("illan sent no %s within %.0f s", what, QTEST_REPLY_S);
    }
}

/* Whether a whole QMP line is buffered, or arrives within @timeout_s. */
static bool qmp_line_within(QTestState *s, double timeout_s)
{
    gint64 deadline = g_get_monotonic_time() + timeout_s * G_USEC_PER_SEC;

    while (!memchr(s->qmp_rx->str, '\n', s->qmp_rx->len)) {
        struct pollfd p = { .fd = s->qmp_fd, .events = POLLIN };
        gint64 left_ms = (deadline - g_get_monotonic_time()) / 1000;
        char buf[65536];
        ssize_t n;

        if (left_ms <= 0 || poll(&p, 1, left_ms) == 0) {
            return false;
        }
        n = read(s->qmp_fd, buf, sizeof(buf));
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            continue;
        }
        if (n <= 0) {
            g_error("QMP connection closed by illan");
        }
        g_string_append_len(s->qmp_rx, buf, n);
    }
    return true;
}

/* One CRLF-terminated line from the QMP socket, without its end. */
static char *qmp_read_line(QTestState *s)
{
    char *nl;

    while (!(nl = memchr(s->qmp_rx->str, '\n', s->qmp_rx->len))) {
        char buf[65536];
        ssize_t n;

        wait_readable(s->qmp_fd, s->qmp_awaited ? s->qmp_awaited
                                                : "QMP message");
        n = read(s->qmp_fd, buf, sizeof(buf));

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            g_error("QMP connection closed by illan");
        }
        g_string_append_len(s->qmp_rx, buf, n);
    }
    {
        size_t len = nl - s->qmp_rx->str;
        char *line;

        g_assert_true(len > 0 && s->qmp_rx->str[len - 1] == '\r');
        line = g_strndup(s->qmp_rx->str, len - 1);
        g_string_erase(s->qmp_rx, 0, len + 1);
        return line;
    }
}

JsonObject *qtest_qmp_receive(QTestState *s)
{
    g_autofree char *line = qmp_read_line(s);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) err = NULL;
    JsonNode *root;

    if (!json_parser_load_from_data(parser, line, -1, &err)) {
        g_error("QMP sent invalid JSON '%s': %s", line, err->message);
    }
    root = json_parser_get_root(parser);
    g_assert_true(JSON_NODE_HOLDS_OBJECT(root));
    return json_object_ref(json_node_get_object(root));
}

void qtest_qmp_send_raw(QTestState *s, const char *data, size_t len)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = write(s->qmp_fd, data + done, len - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        g_assert_cmpint(n, >, 0);
        done += n;
    }
}

/* The next reply; events that come first are kept for eventwait. */
JsonObject *qtest_qmp_reply(QTestState *s)
{
    for (;;) {
        JsonObject *msg;

        s->qmp_awaited = "QMP reply";
        msg = qtest_qmp_receive(s);
        s->qmp_awaited = NULL;
        if (!json_object_has_member(msg, "event")) {
            return msg;
        }
        g_queue_push_tail(&s->events, msg);
    }
}

JsonObject *qtest_qmp_reply_within(QTestState *s, double timeout_s)
{
    gint64 deadline = g_get_monotonic_time() + timeout_s * G_USEC_PER_SEC;

    for (;;) {
        JsonObject *msg;

        if (!qmp_line_within(s, (deadline - g_get_monotonic_time()) /
                                (double)G_USEC_PER_SEC)) {
            return NULL;
        }
        msg = qtest_qmp_receive(s);
        if (!json_object_has_member(msg, "event")) {
            return msg;
        }
        g_queue_push_tail(&s->events, msg);
    }
}

JsonObject *qtest_qmp(QTestState *s, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *cmd = NULL;

    va_start(ap, fmt);
    cmd = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    qtest_qmp_send_raw(s, cmd, strlen(cmd));
    return qtest_qmp_reply(s);
}

JsonNode *qtest_qmp_return(JsonObject *rsp)
{
    if (!json_object_has_member(rsp, "return")) {
        g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(),
                                                         rsp);
        g_autofree char *text = json_to_string(node, false);

        g_error("no return: %s", text);
    }
    return json_object_get_member(rsp, "return");
}

JsonObject *qtest_qmp_eventwait(QTestState *s, const char *event)
{
    for (GList *l = s->events.head; l; l = l->next) {
        if (!g_strcmp0(json_object_get_string_member(l->data, "event"),
                       event)) {
            JsonObject *ev = l->data;
            g_queue_delete_link(&s->events, l);
            return ev;
        }
    }
    g_autofree char *awaited = g_strdup_printf("event %s", event);

    s->qmp_awaited = awaited;
    for (;;) {
        JsonObject *msg = qtest_qmp_receive(s);

        if (!g_strcmp0(json_object_get_string_member_with_default(
                           msg, "event", ""), event)) {
            s->qmp_awaited = NULL;
            return msg;
        }
        g_queue_push_tail(&s->events, msg);
    }
}

bool qtest_qmp_event_pending(QTestState *s, const char *event)
{
    for (GList *l = s->events.head; l; l = l->next) {
        if (!g_strcmp0(json_object_get_string_member(l->data, "event"),
                       event)) {
            return true;
        }
    }
    return false;
}

/* Reads the greeting and leaves negotiation mode. */
static void qmp_handshake(QTestState *s)
{
    g_autoptr(JsonObject) greeting = qtest_qmp_receive(s);
    g_autoptr(JsonObject) rsp = NULL;

    g_assert_true(json_object_has_member(greeting, "QMP"));
    rsp = qtest_qmp(s, "{'execute': 'qmp_capabilities'}");
    g_assert_true(json_object_has_member(rsp, "return"));
}

QTestState *qtest_init(const char *extra_args)
{
    return qtest_init_wrapped(NULL, extra_args);
}

QTestState *qtest_init_wrapped(const char *wrapper, const char *extra_args)
{
    static int counter;
    QTestState *s = g_new0(QTestState, 1);
    g_autofree char *cmd = NULL;
    g_autofree char *rsp = NULL;
    int lfd, qmp_lfd;

    s->sock_path = g_strdup_printf("%s/qtest-%d-%d.sock", g_get_tmp_dir(),
                                   getpid(), counter);
    s->qmp_path = g_strdup_printf("%s/qtest-%d-%d.qmp", g_get_tmp_dir(),
                                  getpid(), counter++);
    s->rx = g_string_new(NULL);
    s->irq_level = g_hash_table_new(g_direct_hash, g_direct_equal);
    s->irq_raises = g_hash_table_new(g_direct_hash, g_direct_equal);
    lfd = listen_unix(s->sock_path);
    qmp_lfd = listen_unix(s->qmp_path);
    s->qmp_rx = g_string_new(NULL);
    cmd = g_strdup_printf("exec %s %s -qtest unix:%s -qtest-log %s "
                          "-chardev socket,path=%s,id=char0 "
                          "-mon chardev=char0,mode=control -display none "
                          "-audio none %s -accel qtest",
                          wrapper ? wrapper : "", illan_binary(),
                          s->sock_path,
                          g_getenv("QTEST_LOG") ? "/dev/fd/2" : "/dev/null",
                          s->qmp_path, extra_args ? extra_args : "");
    s->pid = fork();
    g_assert_cmpint(s->pid, >=, 0);
    if (s->pid == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    s->fd = accept_child(lfd, s->pid);
    g_assert_cmpint(s->fd, >=, 0);
    close(lfd);
    s->qmp_fd = accept_child(qmp_lfd, s->pid);
    g_assert_cmpint(s->qmp_fd, >=, 0);
    close(qmp_lfd);
    qmp_handshake(s);
    rsp = qtest_cmd(s, "endianness");
    g_assert_cmpstr(rsp, ==, "OK big");
    return s;
}

QTestState *qtest_initf(const char *fmt, ...)
{
    va_list ap;
    g_autofree char *args = NULL;

    va_start(ap, fmt);
    args = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    return qtest_init(args);
}

static void qtest_free(QTestState *s)
{
    close(s->fd);
    close(s->qmp_fd);
    g_string_free(s->qmp_rx, TRUE);
    g_queue_clear_full(&s->events, (GDestroyNotify)json_object_unref);
    unlink(s->sock_path);
    unlink(s->qmp_path);
    g_free(s->sock_path);
    g_free(s->qmp_path);
    g_string_free(s->rx, TRUE);
    g_hash_table_destroy(s->irq_level);
    g_hash_table_destroy(s->irq_raises);
    g_free(s);
}

void qtest_quit(QTestState *s)
{
    qtest_quit_signal(s, SIGTERM);
}

typedef struct ChildExit {
    pid_t pid;
    int status;
} ChildExit;

static bool child_exited(void *opaque)
{
    ChildExit *c = opaque;

    return waitpid(c->pid, &c->status, WNOHANG) == c->pid;
}

int qtest_quit_status(QTestState *s, int sig)
{
    ChildExit c = { .pid = s->pid };

    kill(s->pid, sig);
    if (!qtest_poll_until(child_exited, &c,
                          QTEST_QUIT_TIMEOUT_MS / 1000.0)) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        g_error("illan ignored signal %d for %d ms", sig,
                QTEST_QUIT_TIMEOUT_MS);
    }
    g_assert_true(WIFEXITED(c.status));
    qtest_free(s);
    return WEXITSTATUS(c.status);
}

void qtest_quit_signal(QTestState *s, int sig)
{
    g_assert_cmpint(qtest_quit_status(s, sig), ==, 0);
}

void qtest_send_raw(QTestState *s, const char *data, size_t len)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = write(s->fd, data + done, len - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        g_assert_cmpint(n, >, 0);
        done += n;
    }
}

/* Only the bytes each read appends are searched for the newline: a reply
 * of tens of MiB searched whole after every read would cost quadratic
 * time, and the server gives its exit-time flush only
 * QTEST_EXIT_FLUSH_MS. */
char *qtest_recv_raw_line(QTestState *s)
{
    size_t scanned = 0;
    char *nl;

    while (!(nl = memchr(s->rx->str + scanned, '\n',
                         s->rx->len - scanned))) {
        char buf[65536];
        ssize_t n;

        scanned = s->rx->len;

        wait_readable(s->fd, "qtest reply");
        n = read(s->fd, buf, sizeof(buf));

        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            g_error("qtest connection closed by illan");
        }
        g_string_append_len(s->rx, buf, n);
    }
    {
        char *line = g_strndup(s->rx->str, nl - s->rx->str);
        g_string_erase(s->rx, 0, nl - s->rx->str + 1);
        return line;
    }
}

bool qtest_reply_waiting(QTestState *s, double timeout_s)
{
    struct pollfd p = { .fd = s->fd, .events = POLLIN };
    int n;

    if (s->rx->len) {
        return true;
    }
    do {
        n = poll(&p, 1, (int)(timeout_s * 1000));
    } while (n < 0 && errno == EINTR);
    return n > 0;
}

static void note_irq(QTestState *s, const char *line)
{
    bool raise = g_str_has_prefix(line, "IRQ raise ");
    int n = atoi(line + strlen("IRQ raise "));
    gpointer key = GINT_TO_POINTER(n);

    g_assert_true(raise || g_str_has_prefix(line, "IRQ lower "));
    /* QEMU's libqtest keeps 256 lines and aborts on any other number. */
    g_assert_cmpint(n, >=, 0);
    g_assert_cmpint(n, <, QTEST_IRQ_LINES);
    g_hash_table_insert(s->irq_level, key, GINT_TO_POINTER(raise + 1));
    if (raise) {
        unsigned c = GPOINTER_TO_UINT(g_hash_table_lookup(s->irq_raises, key));
        g_hash_table_insert(s->irq_raises, key, GUINT_TO_POINTER(c + 1));
    }
}

char *qtest_recv_line(QTestState *s)
{
    for (;;) {
        char *line = qtest_recv_raw_line(s);

        if (!g_str_has_prefix(line, "IRQ ")) {
            return line;
        }
        note_irq(s, line);
        g_free(line);
    }
}

char *qtest_cmd(QTestState *s, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *line = NULL;
    g_autofree char *framed = NULL;

    va_start(ap, fmt);
    line = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    framed = g_strconcat(line, "\n", NULL);
    qtest_send_raw(s, framed, strlen(framed));
    return qtest_recv_line(s);
}

/* Sends a command that must answer "OK [value]"; returns the value. */
static uint64_t cmd_ok_value(QTestState *s, const char *cmd)
{
    g_autofree char *rsp = qtest_cmd(s, "%s", cmd);

    if (!g_str_has_prefix(rsp, "OK")) {
        g_error("'%s' failed: %s", cmd, rsp);
    }
    return rsp[2] ? g_ascii_strtoull(rsp + 3, NULL, 0) : 0;
}

#define DEFINE_RW(suffix, type)                                             \
    type qtest_read##suffix(QTestState *s, uint64_t addr)                   \
    {                                                                       \
        g_autofree char *c = g_strdup_printf("read" #suffix " 0x%" PRIx64,  \
                                             addr);                         \
        return (type)cmd_ok_value(s, c);                                    \
    }                                                                       \
    void qtest_write##suffix(QTestState *s, uint64_t addr, type val)        \
    {                                                                       \
        g_autofree char *c = g_strdup_printf("write" #suffix " 0x%" PRIx64  \
                                             " 0x%" PRIx64, addr,           \
                                             (uint64_t)val);                \
        cmd_ok_value(s, c);                                                 \
    }

DEFINE_RW(b, uint8_t)
DEFINE_RW(w, uint16_t)
DEFINE_RW(l, uint32_t)
DEFINE_RW(q, uint64_t)

void qtest_memread(QTestState *s, uint64_t addr, void *buf, size_t size)
{
    g_autofree char *rsp = qtest_cmd(s, "b64read 0x%" PRIx64 " %zu", addr,
                                     size);
    g_autofree guchar *data = NULL;
    gsize n;

    g_assert_true(g_str_has_prefix(rsp, "OK "));
    data = g_base64_decode(rsp + 3, &n);
    g_assert_cmpuint(n, ==, size);
    memcpy(buf, data, size);
}

void qtest_memwrite(QTestState *s, uint64_t addr, const void *buf,
                    size_t size)
{
    g_autofree char *enc = g_base64_encode(buf, size);
    g_autofree char *rsp = qtest_cmd(s, "b64write 0x%" PRIx64 " %zu %s",
                                     addr, size, enc);

    g_assert_cmpstr(rsp, ==, "OK");
}

void qtest_memset(QTestState *s, uint64_t addr, uint8_t byte, size_t size)
{
    g_autofree char *rsp = qtest_cmd(s, "memset 0x%" PRIx64 " %zu 0x%x",
                                     addr, size, byte);

    g_assert_cmpstr(rsp, ==, "OK");
}

int64_t qtest_clock_step(QTestState *s, int64_t ns)
{
    g_autofree char *c = g_strdup_printf("clock_step %" PRId64, ns);
    return (int64_t)cmd_ok_value(s, c);
}

int64_t qtest_clock_step_next(QTestState *s)
{
    return (int64_t)cmd_ok_value(s, "clock_step");
}

int64_t qtest_clock_set(QTestState *s, int64_t ns)
{
    g_autofree char *c = g_strdup_printf("clock_set %" PRId64, ns);
    return (int64_t)cmd_ok_value(s, c);
}

void qtest_irq_intercept_out(QTestState *s, const char *path)
{
    g_autofree char *c = g_strdup_printf("irq_intercept_out %s", path);
    cmd_ok_value(s, c);
}

void qtest_irq_intercept_in(QTestState *s, const char *path)
{
    g_autofree char *c = g_strdup_printf("irq_intercept_in %s", path);
    cmd_ok_value(s, c);
}

void qtest_set_irq_in(QTestState *s, const char *path, int n, int level)
{
    g_autofree char *c = g_strdup_printf("set_irq_in %s unnamed-gpio-in "
                                         "%d %d", path, n, level);
    cmd_ok_value(s, c);
}

bool qtest_get_irq(QTestState *s, int n)
{
    /* A round trip first, so every IRQ line sent so far has been read. */
    cmd_ok_value(s, "endianness");
    return GPOINTER_TO_INT(g_hash_table_lookup(s->irq_level,
                                               GINT_TO_POINTER(n))) == 2;
}

unsigned qtest_irq_raise_count(QTestState *s, int n)
{
    cmd_ok_value(s, "endianness");
    return GPOINTER_TO_UINT(g_hash_table_lookup(s->irq_raises,
                                                GINT_TO_POINTER(n)));
}

int64_t qtest_hcall(QTestState *s, uint64_t opcode, unsigned nargs,
                    const uint64_t *args, uint64_t *out, unsigned max_out)
{
    g_autoptr(GString) cmd = g_string_new(NULL);
    g_autofree char *rsp = NULL;
    g_auto(GStrv) words = NULL;
    int64_t ret;

    g_assert_cmpuint(nargs, <=, 9);
    g_string_printf(cmd, "hcall 0x%" PRIx64, opcode);
    for (unsigned i = 0; i < nargs; i++) {
        g_string_append_printf(cmd, " 0x%" PRIx64, args[i]);
    }
    rsp = qtest_cmd(s, "%s", cmd->str);
    words = g_strsplit(rsp, " ", -1);
    g_assert_cmpstr(words[0], ==, "OK");
    g_assert_nonnull(words[1]);
    ret = g_ascii_strtoll(words[1], NULL, 10);
    for (unsigned i = 0; out && i < max_out && words[2 + i]; i++) {
        out[i] = g_ascii_strtoull(words[2 + i], NULL, 16);
    }
    return ret;
}

void guest_alloc_init(QGuestAllocator *alloc, uint64_t start, uint64_t end)
{
    alloc->next = start;
    alloc->end = end;
}

uint64_t guest_alloc(QGuestAllocator *alloc, uint64_t size, uint64_t align)
{
    uint64_t addr = (alloc->next + align - 1) & ~(align - 1);

    g_assert_cmpuint(addr + size, <=, alloc->end);
    alloc->next = addr + size;
    return addr;
}

void qtest_tce_map(QTestState *s, uint32_t liobn, uint64_t ioba,
                   uint64_t gpa, uint64_t len, uint64_t perm)
{
    for (uint64_t off = 0; off < len; off += 4096) {
        int64_t ret = qtest_hcallv(s, H_PUT_TCE, liobn, ioba + off,
                                   ((gpa + off) & ~0xfffULL) | perm);
        g_assert_cmpint(ret, ==, 0);
    }
}

void qtest_kill(QTestState *s)
{
    int status;

    kill(s->pid, SIGKILL);
    g_assert_cmpint(waitpid(s->pid, &status, 0), ==, s->pid);
    g_assert_true(WIFSIGNALED(status));
    s->pid = 0;
    qtest_free(s);
}

pid_t qtest_pid(QTestState *s)
{
    return s->pid;
}

int illan_run(const char *args, char **out, char **err)
{
    g_autofree char *cmd = g_strdup_printf("%s %s", illan_binary(), args);
    g_auto(GStrv) argv = NULL;
    g_autoptr(GError) error = NULL;
    int status;

    g_assert_true(g_shell_parse_argv(cmd, NULL, &argv, &error));
    g_assert_true(g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                               out, err, &status, &error));
    g_assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

int qtest_bind_dgram(const char *path)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpuint(strlen(path), <, sizeof(addr.sun_path));
    strcpy(addr.sun_path, path);
    unlink(path);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), ==, 0);
    return fd;
}

void qtest_dgram_send(int fd, const char *path, const void *data,
                      size_t len)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };

    g_assert_cmpuint(strlen(path), <, sizeof(addr.sun_path));
    strcpy(addr.sun_path, path);
    g_assert_cmpint(sendto(fd, data, len, 0, (struct sockaddr *)&addr,
                           sizeof(addr)), ==, (ssize_t)len);
}

bool qtest_poll_until(QTestCondFn cond, void *opaque, double timeout_s)
{
    gint64 deadline = g_get_monotonic_time() +
                      (gint64)(timeout_s * G_USEC_PER_SEC);
    gulong pause_us = 1000;

    for (;;) {
        if (cond(opaque)) {
            return true;
        }
        if (g_get_monotonic_time() > deadline) {
            /* One last look: the deadline may have passed while the
             * machine was busy elsewhere, not because @cond failed. */
            return cond(opaque);
        }
        /* Not synchronisation: the pace of the polls. */
        g_usleep(pause_us);
        pause_us = MIN(pause_us * 2, 10000);
    }
}

void qtest_wait_until(QTestCondFn cond, void *opaque, double timeout_s,
                      const char *what_fmt, ...)
{
    va_list ap;
    g_autofree char *what = NULL;

    if (qtest_poll_until(cond, opaque, timeout_s)) {
        return;
    }
    va_start(ap, what_fmt);
    what = g_strdup_vprintf(what_fmt, ap);
    va_end(ap);
    g_error("waited %.0f s for %s", timeout_s, what);
}
