/*
 * The docs' qtest examples, run against the real illan.  Every ```qtest
 * block of README.md and docs/ gives the command line on its "$ " line
 * and then commands ("> ") each with the one line illan answers; this
 * test runs the command line, sends each command and fails naming the
 * doc's file and line when an answer differs.  An hcall written anywhere
 * else in the docs is an example no one runs, and fails too.
 */
#include "libqtest.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define REPLY_TIMEOUT_MS    10000
#define EXIT_TIMEOUT_S      30.0

typedef struct Exchange {
    char *command;
    char *reply;            /* NULL until the doc gives it */
    unsigned reply_line;
} Exchange;

typedef struct Example {
    char *file;             /* relative to the source root */
    unsigned line;          /* of the opening fence */
    char **argv;            /* the "$ " line; argv[0] is illan */
    GPtrArray *exchanges;
    char *malformed;        /* why it is not an example of the form */
} Example;

/* Every example found; the test cases point into it until exit. */
static GPtrArray *all_examples;

static Example *example_new(const char *file, unsigned line)
{
    Example *ex = g_new0(Example, 1);

    ex->file = g_strdup(file);
    ex->line = line;
    ex->exchanges = g_ptr_array_new();
    return ex;
}

static void set_malformed(Example *ex, const char *file, unsigned line,
                          const char *why)
{
    if (!ex->malformed) {
        ex->malformed = g_strdup_printf("%s:%u: %s", file, line, why);
    }
}

static bool runs_illan_over_stdio(char **argv)
{
    bool stdio = false;

    if (!argv[0] || (strcmp(argv[0], "illan") &&
                     strcmp(argv[0], "build/illan"))) {
        return false;
    }
    for (unsigned i = 1; argv[i] && argv[i + 1]; i++) {
        stdio |= !strcmp(argv[i], "-qtest") && !strcmp(argv[i + 1], "stdio");
    }
    return stdio;
}

/* One line inside a ```qtest block. */
static void example_line(Example *ex, const char *file, unsigned n,
                         const char *line)
{
    Exchange *last = ex->exchanges->len
        ? g_ptr_array_index(ex->exchanges, ex->exchanges->len - 1) : NULL;

    if (!ex->argv) {
        if (!g_str_has_prefix(line, "$ ") ||
            !g_shell_parse_argv(line + 2, NULL, &ex->argv, NULL) ||
            !runs_illan_over_stdio(ex->argv)) {
            set_malformed(ex, file, n, "the first line must be "
                          "\"$ build/illan ARGS -qtest stdio ...\"");
        }
    } else if (g_str_has_prefix(line, "> ")) {
        if (last && !last->reply) {
            set_malformed(ex, file, n, "the command before has no answer");
        }
        last = g_new0(Exchange, 1);
        last->command = g_strdup(line + 2);
        g_ptr_array_add(ex->exchanges, last);
    } else if (last && !last->reply) {
        last->reply = g_strdup(line);
        last->reply_line = n;
    } else {
        set_malformed(ex, file, n, "a line that is neither a command "
                      "(\"> \") nor the one answer to one");
    }
}

static void example_end(Example *ex, const char *file, unsigned n)
{
    Exchange *last = ex->exchanges->len
        ? g_ptr_array_index(ex->exchanges, ex->exchanges->len - 1) : NULL;

    if (!last || !last->reply) {
        set_malformed(ex, file, n, "the block ends without a command "
                      "and its answer");
    }
}

/* The run of backticks that opens or closes a fence, 0 for none. */
static size_t fence_len(const char *line)
{
    size_t n = strspn(line, "`");

    return n >= 3 ? n : 0;
}

/* Every ```qtest block of @rel, and every hcall written elsewhere. */
static void scan_doc(const char *root, const char *rel, GPtrArray *examples,
                     unsigned *blocks)
{
    g_autofree char *path = g_build_filename(root, rel, NULL);
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    Example *ex = NULL;
    size_t other_fence = 0;     /* the backticks that opened it */

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    for (unsigned i = 0; lines[i]; i++) {
        const char *line = lines[i];
        unsigned n = i + 1;

        if (ex && !strcmp(line, "```")) {
            example_end(ex, rel, n);
            g_ptr_array_add(examples, ex);
            ex = NULL;
        } else if (ex) {
            example_line(ex, rel, n, line);
        } else if (!other_fence && !strcmp(line, "```qtest")) {
            ex = example_new(rel, n);
            (*blocks)++;
        } else if (!other_fence && fence_len(line)) {
            other_fence = fence_len(line);
        } else if (other_fence && fence_len(line) == other_fence &&
                   !line[other_fence]) {
            other_fence = 0;
        } else if (strstr(line, "hcall 0x")) {
            Example *stray = example_new(rel, n);

            set_malformed(stray, rel, n, "an hcall outside a ```qtest "
                          "block, where no test runs it "
                          "(docs/devel/qtest.md#examples-in-the-docs)");
            g_ptr_array_add(examples, stray);
        }
    }
    if (ex) {
        set_malformed(ex, rel, g_strv_length(lines), "no closing ```");
        g_ptr_array_add(examples, ex);
    }
}

static gint by_name(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void scan_dir(const char *root, const char *rel, GPtrArray *examples,
                     unsigned *blocks)
{
    g_autofree char *path = g_build_filename(root, rel, NULL);
    g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    const char *name;

    g_assert_nonnull(dir);
    while ((name = g_dir_read_name(dir))) {
        g_ptr_array_add(names, g_strdup(name));
    }
    g_ptr_array_sort(names, by_name);
    for (unsigned i = 0; i < names->len; i++) {
        g_autofree char *child = g_build_filename(rel, names->pdata[i],
                                                  NULL);
        g_autofree char *full = g_build_filename(root, child, NULL);

        if (g_file_test(full, G_FILE_TEST_IS_DIR)) {
            scan_dir(root, child, examples, blocks);
        } else if (g_str_has_suffix(child, ".md")) {
            scan_doc(root, child, examples, blocks);
        }
    }
}

/* One line from illan's standard output, or NULL after the deadline. */
static char *read_reply(int fd, GString *buf)
{
    gint64 deadline = g_get_monotonic_time() +
                      REPLY_TIMEOUT_MS * (gint64)G_TIME_SPAN_MILLISECOND;

    for (;;) {
        char *nl = memchr(buf->str, '\n', buf->len);
        struct pollfd p = { .fd = fd, .events = POLLIN };
        gint64 left = deadline - g_get_monotonic_time();
        char chunk[4096];
        ssize_t got;

        if (nl) {
            char *line = g_strndup(buf->str, nl - buf->str);

            g_string_erase(buf, 0, nl - buf->str + 1);
            return line;
        }
        if (left <= 0 || poll(&p, 1, left / 1000 + 1) < 0) {
            return NULL;
        }
        got = read(fd, chunk, sizeof(chunk));
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            return NULL;
        }
        g_string_append_len(buf, chunk, got);
    }
}

typedef struct Child {
    GPid pid;
    int status;
} Child;

static bool child_exited(void *opaque)
{
    Child *c = opaque;

    return waitpid(c->pid, &c->status, WNOHANG) == c->pid;
}

static void fail(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

static void fail(const char *fmt, ...)
{
    va_list ap;
    g_autofree char *msg = NULL;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_printerr("%s\n", msg);
    g_test_message("%s", msg);
    g_test_fail();
}

static void run_example(gconstpointer data)
{
    const Example *ex = data;
    g_auto(GStrv) argv = NULL;
    g_autoptr(GString) buf = g_string_new(NULL);
    Child child;
    int in, out;
    bool ok = true;

    if (ex->malformed) {
        fail("%s", ex->malformed);
        return;
    }
    argv = g_strdupv(ex->argv);
    g_free(argv[0]);
    argv[0] = g_strdup(illan_binary());
    g_assert_true(g_spawn_async_with_pipes(NULL, argv, NULL,
                                           G_SPAWN_DO_NOT_REAP_CHILD, NULL,
                                           NULL, &child.pid, &in, &out, NULL,
                                           NULL));
    for (unsigned i = 0; ok && i < ex->exchanges->len; i++) {
        const Exchange *x = g_ptr_array_index(ex->exchanges, i);
        g_autofree char *line = g_strconcat(x->command, "\n", NULL);
        g_autofree char *reply = NULL;

        ok = write(in, line, strlen(line)) == (ssize_t)strlen(line) &&
             (reply = read_reply(out, buf));
        if (g_strcmp0(reply, x->reply)) {
            fail("%s:%u: `%s` answered `%s`, the doc says `%s`", ex->file,
                 x->reply_line, x->command, reply ? reply : "nothing",
                 x->reply);
        }
    }
    /* End of input ends the run, with status 0. */
    close(in);
    if (!qtest_poll_until(child_exited, &child, EXIT_TIMEOUT_S)) {
        kill(child.pid, SIGKILL);
        waitpid(child.pid, NULL, 0);
        fail("%s:%u: illan did not exit at the end of its input",
             ex->file, ex->line);
    } else if (!WIFEXITED(child.status) || WEXITSTATUS(child.status)) {
        fail("%s:%u: illan exited with wait status %d", ex->file, ex->line,
             child.status);
    }
    close(out);
}

int main(int argc, char **argv)
{
    const char *root = g_getenv("ILLAN_SOURCE_ROOT");
    unsigned readme = 0, blocks = 0;

    g_test_init(&argc, &argv, NULL);
    /* An illan that dies fails its example, not the whole run. */
    signal(SIGPIPE, SIG_IGN);
    g_assert_nonnull(root);
    all_examples = g_ptr_array_new();
    scan_doc(root, "README.md", all_examples, &readme);
    scan_dir(root, "docs", all_examples, &blocks);
    /* The README's example and the qtest guide's must not vanish. */
    g_assert_cmpuint(readme, >=, 1);
    g_assert_cmpuint(blocks, >=, 2);
    for (unsigned i = 0; i < all_examples->len; i++) {
        const Example *ex = g_ptr_array_index(all_examples, i);
        g_autofree char *name = g_strdup_printf("/docs-examples/%s:%u",
                                                ex->file, ex->line);

        g_test_add_data_func(name, ex, run_example);
    }
    return g_test_run();
}
