/*
 * The qtest line protocol: memory verbs, replies to malformed input, IRQ
 * interception and the virtual clock.
 */
#include "libqtest.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LAN "-nodefaults -device spapr-vlan"

static void test_memory_verbs(void)
{
    QTestState *s = qtest_init(LAN);
    uint8_t buf[16], back[16];
    g_autofree char *rsp = NULL;

    qtest_writeb(s, 0x1000, 0xab);
    g_assert_cmphex(qtest_readb(s, 0x1000), ==, 0xab);
    qtest_writew(s, 0x1002, 0x1234);
    g_assert_cmphex(qtest_readb(s, 0x1002), ==, 0x12);  /* big-endian */
    g_assert_cmphex(qtest_readw(s, 0x1002), ==, 0x1234);
    qtest_writel(s, 0x1004, 0xdeadbeef);
    g_assert_cmphex(qtest_readl(s, 0x1004), ==, 0xdeadbeef);
    qtest_writeq(s, 0x1008, 0x0123456789abcdefULL);
    g_assert_cmphex(qtest_readq(s, 0x1008), ==, 0x0123456789abcdefULL);

    rsp = qtest_cmd(s, "readb 0x1000");
    g_assert_cmpstr(rsp, ==, "OK 0x00000000000000ab");
    g_free(rsp);
    rsp = qtest_cmd(s, "read 0x1004 4");
    g_assert_cmpstr(rsp, ==, "OK 0xdeadbeef");
    g_free(rsp);
    /* Missing trailing digits read as zero. */
    rsp = qtest_cmd(s, "write 0x2000 3 0xaabb");
    g_assert_cmpstr(rsp, ==, "OK");
    g_free(rsp);
    rsp = qtest_cmd(s, "read 0x2000 3");
    g_assert_cmpstr(rsp, ==, "OK 0xaabb00");

    for (int i = 0; i < 16; i++) {
        buf[i] = i * 17;
    }
    qtest_memwrite(s, 0x3ffa, buf, sizeof(buf));   /* crosses a page */
    qtest_memread(s, 0x3ffa, back, sizeof(back));
    g_assert_cmpmem(buf, sizeof(buf), back, sizeof(back));
    qtest_memset(s, 0x3ffc, 0x5a, 4);
    g_assert_cmphex(qtest_readl(s, 0x3ffc), ==, 0x5a5a5a5a);
    g_assert_cmphex(qtest_readb(s, 0x4000), ==, buf[6]);
    qtest_quit(s);
}

/* As QEMU answers for unassigned memory: reads are zeros, writes are
 * dropped, both OK; the part of an access inside RAM still reaches it. */
static void test_outside_ram(void)
{
    QTestState *s = qtest_init(LAN " -m 64M");
    static const struct {
        const char *cmd, *reply;
    } cases[] = {
        { "readb 0x4000000", "OK 0x0000000000000000" },
        { "readq 0xfffffffffffffff8", "OK 0x0000000000000000" },
        { "writel 0x4000000 0x11223344", "OK" },
        { "readl 0x4000000", "OK 0x0000000000000000" },
        { "read 0x4000000 3", "OK 0x000000" },
        { "b64read 0x4000000 3", "OK AAAA" },
        { "write 0x4000000 2 0xffff", "OK" },
        { "b64write 0x4000000 3 ////", "OK" },
        { "memset 0x4000000 0x100000 0xff", "OK" },
        { "read 0x4000000 2", "OK 0x0000" },
        { "write 0xffffffffffffffff 2 0x0000", "OK" },
        { "read 0xffffffffffffffff 2", "OK 0x0000" },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *rsp = qtest_cmd(s, "%s", cases[i].cmd);
        if (strcmp(rsp, cases[i].reply)) {
            g_error("'%s' answered '%s', not '%s'", cases[i].cmd, rsp,
                    cases[i].reply);
        }
    }
    /* Straddling the end: the byte inside is written and read back, the
     * rest reads as zero. */
    qtest_writeq(s, 0x3ffffff, 0x0102030405060708ULL);
    g_assert_cmphex(qtest_readb(s, 0x3ffffff), ==, 0x01);
    g_assert_cmphex(qtest_readw(s, 0x3ffffff), ==, 0x0100);
    qtest_memset(s, 0x3fffffe, 0x5a, 8);
    g_assert_cmphex(qtest_readl(s, 0x3fffffc), ==, 0x00005a5a);
    g_assert_cmphex(qtest_readl(s, 0x3fffffe), ==, 0x5a5a0000);
    qtest_quit(s);
}

/* The largest transfer each way, in hex and in base64: the hex reply of
 * a 16 MiB read was once built a printf per byte, which the qtest fuzzer
 * found as a hang (14 s of CPU under ASan for two reads). */
static void test_largest_transfer(void)
{
    const size_t max = 16u << 20;
    QTestState *s = qtest_init(LAN " -m 64M");
    g_autofree uint8_t *pattern = g_malloc(max);
    g_autofree uint8_t *back = g_malloc(max);
    g_autofree char *rsp = NULL;
    g_autofree char *too_big = NULL;

    for (size_t i = 0; i < max; i++) {
        pattern[i] = (i * 7) ^ (i >> 11);
    }
    qtest_memwrite(s, 0x1000000, pattern, max);
    qtest_memread(s, 0x1000000, back, max);
    g_assert_true(memcmp(pattern, back, max) == 0);

    rsp = qtest_cmd(s, "read 0x1000000 0x%zx", max);
    g_assert_cmpuint(strlen(rsp), ==, strlen("OK 0x") + 2 * max);
    g_assert_true(g_str_has_prefix(rsp, "OK 0x"));
    for (size_t i = 0; i < max; i++) {
        const char *got = rsp + strlen("OK 0x") + 2 * i;

        if (g_ascii_xdigit_value(got[0]) != pattern[i] >> 4 ||
            g_ascii_xdigit_value(got[1]) != (pattern[i] & 15) ||
            g_ascii_isupper(got[0]) || g_ascii_isupper(got[1])) {
            g_error("byte %zu read as %.2s, not %02x", i, got, pattern[i]);
        }
    }
    too_big = qtest_cmd(s, "read 0x1000000 0x%zx", max + 1);
    g_assert_cmpstr(too_big, ==, "FAIL size must be 1 to 16777216 bytes");
    qtest_quit(s);
}

static void test_malformed_lines(void)
{
    static const char *const bad[] = {
        "bogus", "READB 0x0", "readb", "readb zz", "readb 0x",
        "readb  0x0", " readb 0x0", "readb 0x0 ", "readb -1",
        "writeb 0x0", "writeb 0x0 0x100", "writew 0x0 0x10000",
        "read 0x0 0", "read 0x0 99999999999", "write 0x0 2 0xzz",
        "write 0x0 2 1234", "b64write 0x0 4 !!!!", "memset 0x0 1 0x100",
        "clock_step abc", "clock_set", "clock_set -5", "hcall", "hcall xyz",
        "hcall 0x20 1 2 3 4 5 6 7 8 9 10", "hcall 0x20 0x1g",
        "irq_intercept_out nosuchdev", "irq_intercept_in nosuchdev",
        "set_irq_in xics unnamed-gpio-in 0x100 1",
        "set_irq_in xics unnamed-gpio-in 0x1100 1",
        "set_irq_in xics named 0 1", "endianness extra", " ",
        "readq 18446744073709551616",
    };
    QTestState *s = qtest_init(LAN);
    g_autofree char *rsp = NULL;

    g_assert_cmpuint(G_N_ELEMENTS(bad), >=, 20);
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *r = qtest_cmd(s, "%s", bad[i]);
        if (!g_str_has_prefix(r, "FAIL ")) {
            g_error("'%s' answered '%s', not FAIL", bad[i], r);
        }
    }
    /* A NUL byte inside a line. */
    qtest_send_raw(s, "readb\0 0x0\n", 11);
    rsp = qtest_recv_line(s);
    g_assert_true(g_str_has_prefix(rsp, "FAIL "));
    g_free(rsp);
    /* Short data words answer ERR, as in QEMU. */
    rsp = qtest_cmd(s, "write 0x0 1 0x");
    g_assert_cmpstr(rsp, ==, "ERR invalid argument size");
    g_free(rsp);
    /* Empty lines are ignored; the next command still gets its reply. */
    qtest_send_raw(s, "\n\r\n", 3);
    rsp = qtest_cmd(s, "endianness");
    g_assert_cmpstr(rsp, ==, "OK big");
    g_free(rsp);
    rsp = qtest_cmd(s, "nosuchverb 1 2");
    g_assert_cmpstr(rsp, ==, "FAIL Unknown command 'nosuchverb'");
    qtest_writeb(s, 0x10, 1);
    g_assert_cmphex(qtest_readb(s, 0x10), ==, 1);
    qtest_quit(s);
}

static void test_garbage_flood(void)
{
    QTestState *s = qtest_init(LAN);
    GRand *rand = g_rand_new_with_seed(42);
    g_autofree char *rsp = NULL;

    for (int i = 0; i < 200; i++) {
        char line[64];
        int len = g_rand_int_range(rand, 1, sizeof(line) - 1);

        for (int j = 0; j < len; j++) {
            line[j] = g_rand_int_range(rand, 1, 256);
            if (line[j] == '\n' || line[j] == '\r' || line[j] == ' ') {
                line[j] = 'x';
            }
        }
        line[len] = '\n';
        qtest_send_raw(s, line, len + 1);
        g_free(rsp);
        rsp = qtest_recv_line(s);
        g_assert_true(g_str_has_prefix(rsp, "FAIL "));
    }
    g_free(rsp);
    rsp = qtest_cmd(s, "endianness");
    g_assert_cmpstr(rsp, ==, "OK big");
    g_rand_free(rand);
    qtest_quit(s);
}

static void test_irq_intercept_in(void)
{
    QTestState *s = qtest_init(LAN);
    g_autofree char *rsp = NULL;

    /* qtest numbers source 0x1100 + N as N, below libqtest's 256. */
    g_assert_false(qtest_get_irq(s, 0));
    qtest_irq_intercept_in(s, "xics");
    qtest_irq_intercept_in(s, "/machine/xics");  /* same target: OK */
    qtest_set_irq_in(s, "xics", 0, 1);
    g_assert_true(qtest_get_irq(s, 0));
    g_assert_false(qtest_get_irq(s, 1));
    qtest_set_irq_in(s, "xics", 0, 1);     /* no change, no line */
    g_assert_cmpuint(qtest_irq_raise_count(s, 0), ==, 1);
    qtest_set_irq_in(s, "xics", 0, 0);
    g_assert_false(qtest_get_irq(s, 0));
    qtest_set_irq_in(s, "xics", 0, 5);
    g_assert_cmpuint(qtest_irq_raise_count(s, 0), ==, 2);
    /* The last source, 0x11ff. */
    qtest_set_irq_in(s, "xics", 255, 1);
    g_assert_true(qtest_get_irq(s, 255));
    g_assert_cmpuint(qtest_irq_raise_count(s, 255), ==, 1);
    rsp = qtest_cmd(s, "irq_intercept_out l-lan@71000000");
    g_assert_cmpstr(rsp, ==, "FAIL IRQ intercept already enabled");
    qtest_quit(s);
}

static void test_irq_intercept_out(void)
{
    QTestState *s = qtest_init(LAN ",id=net0");
    g_autofree char *rsp = NULL;

    rsp = qtest_cmd(s, "irq_intercept_out nosuch");
    g_assert_cmpstr(rsp, ==, "FAIL Unknown device");
    g_free(rsp);
    qtest_irq_intercept_out(s, "/machine/peripheral/net0");
    qtest_irq_intercept_out(s, "net0");
    rsp = qtest_cmd(s, "irq_intercept_in xics");
    g_assert_cmpstr(rsp, ==, "FAIL IRQ intercept already enabled");
    qtest_quit(s);
}

/* The exact line QEMU's libqtest parses: "IRQ raise N", N < 256. */
static void test_irq_line_format(void)
{
    QTestState *s = qtest_init(LAN);
    g_autofree char *irq = NULL, *ok = NULL;

    qtest_irq_intercept_in(s, "xics");
    qtest_send_raw(s, "set_irq_in xics unnamed-gpio-in 0xab 1\n", 39);
    irq = qtest_recv_raw_line(s);
    g_assert_cmpstr(irq, ==, "IRQ raise 171");
    ok = qtest_recv_raw_line(s);
    g_assert_cmpstr(ok, ==, "OK");
    qtest_quit(s);
}

static void test_clock(void)
{
    QTestState *s = qtest_init(LAN);
    g_autofree char *rsp = qtest_cmd(s, "clock_step");

    g_assert_cmpstr(rsp, ==, "FAIL cannot advance clock to the next deadline "
                    "because there is no pending deadline");
    g_assert_cmpint(qtest_clock_step(s, 1000), ==, 1000);
    g_assert_cmpint(qtest_clock_step(s, 0), ==, 1000);
    g_assert_cmpint(qtest_clock_set(s, 5000), ==, 5000);
    g_free(rsp);
    rsp = qtest_cmd(s, "clock_set 100");
    g_assert_cmpstr(rsp, ==, "FAIL 5000");
    g_free(rsp);
    rsp = qtest_cmd(s, "clock_step 9223372036854775807");
    g_assert_true(g_str_has_prefix(rsp, "FAIL "));
    g_assert_cmpint(qtest_clock_step(s, 1), ==, 5001);
    qtest_quit(s);
}

/*
 * -qtest stdio fed from a pipe that ends after its requests, as
 * `printf ... | illan -qtest stdio` is: every reply is written before
 * illan exits, even 32 MiB into a pipe that holds 64 KiB.
 */
static void test_stdio_replies_before_exit(void)
{
    static const char requests[] = "read 0x0 0x1000000\nendianness\n";
    const char *argv[] = { illan_binary(), "-qtest", "stdio",
                           "-qtest-log", "none", NULL };
    gint64 deadline = g_get_monotonic_time() + QTEST_WAIT_S * G_USEC_PER_SEC;
    g_autoptr(GString) out = g_string_new(NULL);
    g_autoptr(GError) err = NULL;
    int to_illan, from_illan, status;
    GPid pid;

    g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                           G_SPAWN_DO_NOT_REAP_CHILD, NULL,
                                           NULL, &pid, &to_illan,
                                           &from_illan, NULL, &err));
    g_assert_cmpint(write(to_illan, requests, strlen(requests)), ==,
                    (ssize_t)strlen(requests));
    close(to_illan);
    for (;;) {
        struct pollfd p = { .fd = from_illan, .events = POLLIN };
        gint64 left_ms = (deadline - g_get_monotonic_time()) / 1000;
        char buf[65536];
        ssize_t n;

        g_assert_cmpint(left_ms, >, 0);
        if (poll(&p, 1, left_ms) <= 0) {
            continue;
        }
        n = read(from_illan, buf, sizeof(buf));
        if (n == 0) {
            break;
        }
        g_assert_true(n > 0 || errno == EINTR);
        g_string_append_len(out, buf, MAX(n, 0));
    }
    close(from_illan);
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, 0);
    g_assert_cmpuint(out->len, ==, strlen("OK 0x") + 2 * 0x1000000 + 1 +
                     strlen("OK big\n"));
    g_assert_true(g_str_has_suffix(out->str, "\nOK big\n"));
}

/*
 * A reply far larger than the socket holds, unread when the run ends by
 * QMP quit or SIGTERM, still reaches a client that reads it then.
 */
static void assert_reply_survives_exit(bool by_quit)
{
    const size_t size = 16u << 20;
    QTestState *s = qtest_init(LAN " -m 64M");
    g_autofree char *rsp = NULL;

    qtest_send_raw(s, "read 0x0 0x1000000\n", strlen("read 0x0 0x1000000\n"));
    g_assert_true(qtest_reply_waiting(s, QTEST_WAIT_S));
    if (by_quit) {
        g_autoptr(JsonObject) ret = qtest_qmp(s, "{'execute': 'quit'}");

        g_assert_true(json_object_has_member(ret, "return"));
    } else {
        kill(qtest_pid(s), SIGTERM);
    }
    rsp = qtest_recv_raw_line(s);
    g_assert_cmpuint(strlen(rsp), ==, strlen("OK 0x") + 2 * size);
    qtest_quit(s);
}

static void test_reply_survives_quit(void)
{
    assert_reply_survives_exit(true);
}

static void test_reply_survives_sigterm(void)
{
    assert_reply_survives_exit(false);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qtest/protocol/memory", test_memory_verbs);
    g_test_add_func("/qtest/protocol/outside-ram", test_outside_ram);
    g_test_add_func("/qtest/protocol/largest-transfer",
                    test_largest_transfer);
    g_test_add_func("/qtest/protocol/malformed", test_malformed_lines);
    g_test_add_func("/qtest/protocol/garbage-flood", test_garbage_flood);
    g_test_add_func("/qtest/protocol/irq-intercept-in", test_irq_intercept_in);
    g_test_add_func("/qtest/protocol/irq-intercept-out",
                    test_irq_intercept_out);
    g_test_add_func("/qtest/protocol/irq-line-format", test_irq_line_format);
    g_test_add_func("/qtest/protocol/clock", test_clock);
    g_test_add_func("/qtest/protocol/stdio-replies-before-exit",
                    test_stdio_replies_before_exit);
    g_test_add_func("/qtest/protocol/reply-survives-quit",
                    test_reply_survives_quit);
    g_test_add_func("/qtest/protocol/reply-survives-sigterm",
                    test_reply_survives_sigterm);
    return g_test_run();
}
