/*
 * The qtest server without a machine (-M none): every verb still gets a
 * reply, memory behaves as unassigned (reads zeros, writes dropped), and
 * nothing needs RAM, devices or an interrupt controller.  The server runs
 * in-process on the default main context; the test is its client over a
 * real unix socket.
 */
#include "system/qtest.h"
#include "qemu/unix-socket.h"

#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define WAIT_US (5 * G_USEC_PER_SEC)

typedef struct Client {
    int fd;
    GString *rx;
    bool closed;
} Client;

static void on_closed(void *opaque)
{
    ((Client *)opaque)->closed = true;
}

/* Sends @line and runs the server until its reply line is back. */
static char *request(Client *c, const char *line)
{
    gint64 deadline = g_get_monotonic_time() + WAIT_US;
    g_autofree char *out = g_strconcat(line, "\n", NULL);
    char *nl;

    g_assert_cmpint(send(c->fd, out, strlen(out), MSG_NOSIGNAL), ==,
                    (ssize_t)strlen(out));
    while (!(nl = memchr(c->rx->str, '\n', c->rx->len))) {
        char buf[4096];
        ssize_t n;

        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, FALSE);
        n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0) {
            g_string_append_len(c->rx, buf, n);
        } else {
            g_assert_true(n < 0 && errno == EAGAIN);
            g_usleep(1000);
        }
    }
    {
        char *reply = g_strndup(c->rx->str, nl - c->rx->str);

        g_string_erase(c->rx, 0, nl - c->rx->str + 1);
        return reply;
    }
}

static void test_no_machine(void)
{
    static const struct {
        const char *cmd, *reply;
    } cases[] = {
        { "readb 0x0", "OK 0x0000000000000000" },
        { "readq 0x1000", "OK 0x0000000000000000" },
        { "writel 0x0 0x11223344", "OK" },
        { "readl 0x0", "OK 0x0000000000000000" },
        { "read 0x0 4", "OK 0x00000000" },
        { "b64read 0x0 3", "OK AAAA" },
        { "write 0x0 2 0xabcd", "OK" },
        { "b64write 0x0 3 ////", "OK" },
        { "memset 0x0 0x100000 0xff", "OK" },
        { "read 0x0 2", "OK 0x0000" },
        { "endianness", "OK big" },
        { "hcall 0x20 1", "FAIL no machine to call: -M none has no "
          "hypervisor" },
        { "irq_intercept_in xics", "FAIL Unknown device" },
        { "irq_intercept_out net0", "FAIL Unknown device" },
        { "set_irq_in xics unnamed-gpio-in 0 1", "FAIL Unknown device" },
        { "readb", "FAIL readb takes 1 to 1 arguments, not 0" },
    };
    g_autofree char *dir = g_dir_make_tmp("illan-test-qtest-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "qtest.sock", NULL);
    g_autofree char *spec = g_strconcat("unix:", path, NULL);
    GError *err = NULL;
    Client c = { .rx = g_string_new(NULL) };
    int listener = unix_socket_listen(path, &err);
    QTestServer *qs;

    g_assert_no_error(err);
    qs = qtest_server_start(spec, NULL, NULL, on_closed, &c, &err);
    g_assert_no_error(err);
    c.fd = accept(listener, NULL, NULL);
    g_assert_cmpint(c.fd, >=, 0);

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *reply = request(&c, cases[i].cmd);

        if (strcmp(reply, cases[i].reply)) {
            g_error("'%s' answered '%s', not '%s'", cases[i].cmd, reply,
                    cases[i].reply);
        }
    }
    close(c.fd);
    while (!c.closed) {
        g_main_context_iteration(NULL, TRUE);
    }
    qtest_server_free(qs);
    close(listener);
    unix_socket_unlink(path);
    g_rmdir(dir);
    g_string_free(c.rx, TRUE);
}

/* Fails the test unless disarmed within WAIT_US: a server that blocks
 * the thread it runs on cannot be caught by that thread.  Disarmed
 * through a pipe, which ThreadSanitizer sees as the ordering it is. */
typedef struct Watchdog {
    int fds[2];
    const char *what;
    GThread *thread;
} Watchdog;

static gpointer watchdog_run(gpointer opaque)
{
    Watchdog *w = opaque;
    struct pollfd p = { .fd = w->fds[0], .events = POLLIN };
    int n;

    do {
        n = poll(&p, 1, WAIT_US / 1000);
    } while (n < 0 && errno == EINTR);
    if (n == 0) {
        g_error("%s", w->what);
    }
    return NULL;
}

static void watchdog_arm(Watchdog *w, const char *what)
{
    g_assert_cmpint(pipe(w->fds), ==, 0);
    w->what = what;
    w->thread = g_thread_new("watchdog", watchdog_run, w);
}

static void watchdog_disarm(Watchdog *w)
{
    g_assert_cmpint(write(w->fds[1], "", 1), ==, 1);
    g_thread_join(w->thread);
    close(w->fds[0]);
    close(w->fds[1]);
}

/*
 * A client that sends requests and reads nothing: the server's thread
 * (the main loop) must not block on it, and once the client reads, every
 * reply is there, whole and in order.  16 replies of 2 MiB are far more
 * than a socket holds.
 */
static void test_unread_replies_block_nothing(void)
{
    enum { READS = 16, READ_SIZE = 0x100000 };
    static const char last[] = "\nOK big\n";
    g_autofree char *dir = g_dir_make_tmp("illan-test-qtest-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "qtest.sock", NULL);
    g_autofree char *spec = g_strconcat("unix:", path, NULL);
    g_autoptr(GString) requests = g_string_new(NULL);
    g_autoptr(GString) rx = g_string_new(NULL);
    GError *err = NULL;
    Client c = { 0 };
    int listener = unix_socket_listen(path, &err);
    g_auto(GStrv) lines = NULL;
    gint64 deadline;
    QTestServer *qs;
    Watchdog w;

    g_assert_no_error(err);
    qs = qtest_server_start(spec, NULL, NULL, on_closed, &c, &err);
    g_assert_no_error(err);
    c.fd = accept(listener, NULL, NULL);
    g_assert_cmpint(c.fd, >=, 0);
    for (int i = 0; i < READS; i++) {
        g_string_append_printf(requests, "read 0x0 0x%x\n", READ_SIZE);
    }
    g_string_append(requests, "endianness\n");
    g_assert_cmpint(send(c.fd, requests->str, requests->len, 0), ==,
                    (ssize_t)requests->len);

    watchdog_arm(&w, "the qtest server blocked its thread writing to a "
                 "client that reads nothing");
    while (g_main_context_iteration(NULL, FALSE)) {
        /* until the server has nothing left it can do */
    }
    watchdog_disarm(&w);

    /* The end only: a strlen() per turn would be quadratic in 32 MiB. */
    deadline = g_get_monotonic_time() + WAIT_US;
    while (rx->len < strlen(last) ||
           memcmp(rx->str + rx->len - strlen(last), last, strlen(last))) {
        char buf[65536];
        ssize_t n;

        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, FALSE);
        n = recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0) {
            g_string_append_len(rx, buf, n);
        } else {
            g_assert_true(n < 0 && errno == EAGAIN);
        }
    }
    lines = g_strsplit(rx->str, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, READS + 2);
    for (int i = 0; i < READS; i++) {
        g_assert_cmpuint(strlen(lines[i]), ==, 5 + 2 * READ_SIZE);
        g_assert_true(g_str_has_prefix(lines[i], "OK 0x0000"));
    }
    g_assert_cmpstr(lines[READS], ==, "OK big");
    g_assert_cmpstr(lines[READS + 1], ==, "");

    close(c.fd);
    while (!c.closed) {
        g_main_context_iteration(NULL, TRUE);
    }
    qtest_server_free(qs);
    close(listener);
    unix_socket_unlink(path);
    g_rmdir(dir);
}

/* The "null" channel takes its input from qtest_server_feed() (the fuzz
 * target's way in) and drops the replies; the log shows them. */
static void test_null_channel_feed(void)
{
    char *log = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&log, &len);
    QTestServer *qs = qtest_server_start("null", f, NULL, on_closed, NULL,
                                         NULL);

    g_assert_nonnull(qs);
    /* A line split across two feeds is one line. */
    qtest_server_feed(qs, "readb 0x0\nendian", 16);
    qtest_server_feed(qs, "ness\nnosuch\n", 12);
    qtest_server_free(qs);
    g_assert_nonnull(strstr(log, "] OK 0x0000000000000000\n"));
    g_assert_nonnull(strstr(log, "] OK big\n"));
    g_assert_nonnull(strstr(log, "] FAIL Unknown command 'nosuch'\n"));
    free(log);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qtest/no-machine", test_no_machine);
    g_test_add_func("/qtest/null-channel-feed", test_null_channel_feed);
    g_test_add_func("/qtest/unread-replies-block-nothing",
                    test_unread_replies_block_nothing);
    return g_test_run();
}
