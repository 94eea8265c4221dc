/*
 * Unit tests for the option parser and the value parsers (util/option.c).
 */
#include "qemu/option.h"

#include <glib.h>
#include <stdint.h>
#include <string.h>

/* Parse @str, expect success and return the options. */
static QemuOpts *parse_ok(const char *str, const char *implied_key)
{
    GError *err = NULL;
    QemuOpts *opts = qemu_opts_parse(str, implied_key, &err);

    g_assert_no_error(err);
    g_assert_nonnull(opts);
    return opts;
}

/* Parse @str, expect failure with a message containing @msg. */
static void parse_fails(const char *str, const char *implied_key,
                        const char *msg)
{
    GError *err = NULL;
    QemuOpts *opts = qemu_opts_parse(str, implied_key, &err);

    g_assert_null(opts);
    g_assert_error(err, ILLAN_ERROR, 0);
    g_assert_nonnull(strstr(err->message, msg));
    g_error_free(err);
}

static void test_parse_implied_key(void)
{
    g_autoptr(QemuOpts) opts = parse_ok("spapr-vlan,mac=52:54:00:12:34:56",
                                        "driver");

    g_assert_cmpuint(qemu_opts_count(opts), ==, 2);
    g_assert_cmpstr(qemu_opts_key(opts, 0), ==, "driver");
    g_assert_cmpstr(qemu_opts_value(opts, 0), ==, "spapr-vlan");
    g_assert_cmpstr(qemu_opts_key(opts, 1), ==, "mac");
    g_assert_cmpstr(qemu_opt_get(opts, "driver"), ==, "spapr-vlan");
    g_assert_cmpstr(qemu_opt_get(opts, "mac"), ==, "52:54:00:12:34:56");
    g_assert_null(qemu_opt_get(opts, "netdev"));
}

static void test_parse_implied_key_not_used_for_key_value(void)
{
    g_autoptr(QemuOpts) opts = parse_ok("id=x,spapr-vlan", "driver");

    g_assert_cmpuint(qemu_opts_count(opts), ==, 2);
    g_assert_null(qemu_opt_get(opts, "driver"));
    g_assert_cmpstr(qemu_opt_get(opts, "id"), ==, "x");
    /* Only the first element may be implied: a later bare one is a flag. */
    g_assert_cmpstr(qemu_opt_get(opts, "spapr-vlan"), ==, "on");
}

static void test_parse_no_implied_key_makes_flag(void)
{
    g_autoptr(QemuOpts) opts = parse_ok("spapr-vlan,id=x", NULL);

    g_assert_cmpstr(qemu_opts_key(opts, 0), ==, "spapr-vlan");
    g_assert_cmpstr(qemu_opts_value(opts, 0), ==, "on");
}

static void test_parse_comma_escape(void)
{
    g_autoptr(QemuOpts) opts = parse_ok("path=a,,b,id=x", NULL);

    g_assert_cmpuint(qemu_opts_count(opts), ==, 2);
    g_assert_cmpstr(qemu_opt_get(opts, "path"), ==, "a,b");
    g_assert_cmpstr(qemu_opt_get(opts, "id"), ==, "x");
}

static void test_parse_comma_escape_at_value_end(void)
{
    /* "1,," is the value "1,"; ",,," is an escaped comma then a separator */
    g_autoptr(QemuOpts) a = parse_ok("v=1,,", NULL);
    g_autoptr(QemuOpts) b = parse_ok("v=1,,,w=2", NULL);

    g_assert_cmpuint(qemu_opts_count(a), ==, 1);
    g_assert_cmpstr(qemu_opt_get(a, "v"), ==, "1,");
    g_assert_cmpuint(qemu_opts_count(b), ==, 2);
    g_assert_cmpstr(qemu_opt_get(b, "v"), ==, "1,");
    g_assert_cmpstr(qemu_opt_get(b, "w"), ==, "2");
}

static void test_parse_comma_escape_in_implied_value(void)
{
    g_autoptr(QemuOpts) opts = parse_ok("a,,", "driver");

    g_assert_cmpuint(qemu_opts_count(opts), ==, 1);
    g_assert_cmpstr(qemu_opt_get(opts, "driver"), ==, "a,");
}

static void test_parse_flag_has_no_escape(void)
{
    /* A flag name ends at the first ',', so "a,," leaves an empty element. */
    parse_fails("a,,", NULL, "found an empty one");
}

static void test_parse_bare_flag_reads_on(void)
{
    g_autoptr(QemuOpts) opts = parse_ok("spapr-vlan,debug,id=x", "driver");

    g_assert_cmpuint(qemu_opts_count(opts), ==, 3);
    g_assert_cmpstr(qemu_opts_key(opts, 1), ==, "debug");
    g_assert_cmpstr(qemu_opts_value(opts, 1), ==, "on");
}

static void test_parse_empty_value(void)
{
    g_autoptr(QemuOpts) opts = parse_ok("id=,x=1", NULL);

    g_assert_cmpstr(qemu_opt_get(opts, "id"), ==, "");
    g_assert_cmpstr(qemu_opt_get(opts, "x"), ==, "1");
}

static void test_opt_get_last_occurrence(void)
{
    g_autoptr(QemuOpts) opts = parse_ok("id=a,x=1,id=b", NULL);

    g_assert_cmpuint(qemu_opts_count(opts), ==, 3);
    g_assert_cmpstr(qemu_opts_value(opts, 0), ==, "a");
    g_assert_cmpstr(qemu_opt_get(opts, "id"), ==, "b");
}

static void test_parse_error_empty(void)
{
    parse_fails("", NULL, "Empty option");
    parse_fails("", "driver", "Empty option");
}

/* QEMU's parsers take one trailing ',' (its netdev-socket test passes
 * "-netdev stream,...,addr.path=P,"); it adds no element. */
static void test_parse_trailing_comma(void)
{
    g_autoptr(QemuOpts) a = parse_ok("spapr-vlan,", "driver");
    g_autoptr(QemuOpts) b = parse_ok("dgram,id=st0,", "type");
    g_autoptr(QemuOpts) c = parse_ok("id=a,,,", NULL);
    g_autoptr(QemuOpts) d = parse_ok("debug,", NULL);

    g_assert_cmpuint(qemu_opts_count(a), ==, 1);
    g_assert_cmpstr(qemu_opt_get(a, "driver"), ==, "spapr-vlan");
    g_assert_cmpuint(qemu_opts_count(b), ==, 2);
    g_assert_cmpstr(qemu_opt_get(b, "type"), ==, "dgram");
    g_assert_cmpstr(qemu_opt_get(b, "id"), ==, "st0");
    /* ",," is still an escaped comma: only the last ',' is the trailer. */
    g_assert_cmpuint(qemu_opts_count(c), ==, 1);
    g_assert_cmpstr(qemu_opt_get(c, "id"), ==, "a,");
    g_assert_cmpuint(qemu_opts_count(d), ==, 1);
    g_assert_cmpstr(qemu_opt_get(d, "debug"), ==, "on");
}

static void test_parse_error_two_trailing_commas(void)
{
    /* Only one: a second is an empty element. */
    parse_fails("spapr-vlan,id=x,debug,,", "driver", "found an empty one");
    parse_fails("debug,,", NULL, "found an empty one");
}

static void test_parse_error_empty_key(void)
{
    parse_fails("=x", NULL, "before '='");
    parse_fails("=x", "driver", "before '='");
    parse_fails("id=a,=x", NULL, "before '='");
}

static void test_parse_error_empty_element(void)
{
    parse_fails(",id=a", NULL, "found an empty one");
}

static bool wants_help(const char *str)
{
    g_autoptr(QemuOpts) opts = parse_ok(str, "driver");

    return qemu_opts_wants_help(opts);
}

static void test_wants_help(void)
{
    g_assert_true(wants_help("help"));
    g_assert_true(wants_help("?"));
    g_assert_true(wants_help("spapr-vlan,help"));
    g_assert_true(wants_help("spapr-vlan,?"));
    g_assert_false(wants_help("spapr-vlan"));
    g_assert_false(wants_help("spapr-vlan,id=helpful"));
    g_assert_false(wants_help("helper"));
    /* Only the implied value or a key asks for help, not other values. */
    g_assert_false(wants_help("spapr-vlan,id=help"));
    g_assert_false(wants_help("spapr-vlan,netdev=?"));
}

static void test_check_keys(void)
{
    static const char *const known[] = { "driver", "id", "mac", NULL };
    g_autoptr(QemuOpts) good = parse_ok("spapr-vlan,id=x,mac=1", "driver");
    g_autoptr(QemuOpts) bad = parse_ok("spapr-vlan,id=x,bogus=1,mac=1",
                                       "driver");
    GError *err = NULL;

    g_assert_true(qemu_opts_check_keys(good, known, &err));
    g_assert_no_error(err);
    g_assert_false(qemu_opts_check_keys(bad, known, &err));
    g_assert_error(err, ILLAN_ERROR, 0);
    g_assert_cmpstr(err->message, ==, "Invalid parameter 'bogus'");
    g_error_free(err);
}

static void assert_bool(const char *value, bool expected)
{
    GError *err = NULL;
    bool out = !expected;

    g_assert_true(qemu_parse_bool("flag", value, &out, &err));
    g_assert_no_error(err);
    g_assert_cmpint(out, ==, expected);
}

static void test_parse_bool(void)
{
    GError *err = NULL;
    bool out = true;

    assert_bool("on", true);
    assert_bool("yes", true);
    assert_bool("true", true);
    assert_bool("off", false);
    assert_bool("no", false);
    assert_bool("false", false);

    g_assert_false(qemu_parse_bool("use-rx-buffer-pools", "maybe", &out,
                                   &err));
    g_assert_error(err, ILLAN_ERROR, 0);
    g_assert_nonnull(strstr(err->message, "'use-rx-buffer-pools'"));
    g_assert_nonnull(strstr(err->message, "'maybe'"));
    g_assert_true(out);
    g_error_free(err);
}

static void test_parse_bool_rejects_case_and_empty(void)
{
    bool out;

    g_assert_false(qemu_parse_bool("flag", "", &out, NULL));
    g_assert_false(qemu_parse_bool("flag", "ON", &out, NULL));
    g_assert_false(qemu_parse_bool("flag", "1", &out, NULL));
}

static void assert_size(const char *value, char def, uint64_t expected)
{
    GError *err = NULL;
    uint64_t out = 0xdeadbeef;

    g_assert_true(qemu_parse_size("size", value, def, &out, &err));
    g_assert_no_error(err);
    g_assert_cmphex(out, ==, expected);
}

/* Expect a rejection whose message names the parameter and contains @msg. */
static void assert_size_fails(const char *value, const char *msg)
{
    GError *err = NULL;
    uint64_t out = 0xdeadbeef;

    g_assert_false(qemu_parse_size("mem", value, 0, &out, &err));
    g_assert_error(err, ILLAN_ERROR, 0);
    g_assert_nonnull(strstr(err->message, "'mem'"));
    g_assert_nonnull(strstr(err->message, msg));
    g_assert_cmphex(out, ==, 0xdeadbeef);
    g_error_free(err);
}

static void test_parse_size_suffixes(void)
{
    assert_size("4096", 0, 4096);
    assert_size("64k", 0, 64 * 1024);
    assert_size("64K", 0, 64 * 1024);
    assert_size("1M", 0, 1024 * 1024);
    assert_size("1.5G", 0, 3ULL << 29);
    assert_size("1T", 0, 1ULL << 40);
    assert_size("2P", 0, 2ULL << 50);
    assert_size("3E", 0, 3ULL << 60);
    assert_size("100B", 0, 100);
    assert_size("0", 0, 0);
}

static void test_parse_size_hex(void)
{
    assert_size("0x1000", 0, 0x1000);
    assert_size("0XfF", 0, 0xff);
    /* The default unit applies to a hex number too, as in QEMU. */
    assert_size("0x10", 'M', 16ULL << 20);
}

static void test_parse_size_default_suffix(void)
{
    assert_size("512", 'M', 512ULL << 20);
    assert_size("2", 'G', 2ULL << 30);
    /* An explicit suffix overrides the default. */
    assert_size("512k", 'M', 512ULL << 10);
    assert_size("512B", 'M', 512);
}

static void test_parse_size_limits(void)
{
    assert_size("15E", 0, 15ULL << 60);
    assert_size("18446744073709551615", 0, UINT64_MAX);
    assert_size("0xffffffffffffffff", 0, UINT64_MAX);
}

static void test_parse_size_rejects_garbage(void)
{
    assert_size_fails("", "expects a size");
    assert_size_fails("abc", "expects a size");
    assert_size_fails("12Q", "expects a size");
    assert_size_fails("1.5.5", "expects a size");
    assert_size_fails("-1", "expects a size");
    assert_size_fails("0x10k", "expects a size");
    assert_size_fails("0x", "expects a size");
    assert_size_fails("1.", "expects a size");
    assert_size_fails("1kk", "expects a size");
    assert_size_fails(" 1", "expects a size");
    assert_size_fails("1 ", "expects a size");
    /* A fraction of a byte is not a size. */
    assert_size_fails("1.5", "expects a size");
    assert_size_fails("1.5B", "expects a size");
}

static void test_parse_size_rejects_overflow(void)
{
    assert_size_fails("16E", "too large");
    assert_size_fails("16384P", "too large");
    assert_size_fails("99999999999999999999", "too large");
    assert_size_fails("18446744073709551616", "too large");
}

static void assert_u64(const char *value, uint64_t expected)
{
    GError *err = NULL;
    uint64_t out = 0xdeadbeef;

    g_assert_true(qemu_parse_uint64("n", value, &out, &err));
    g_assert_no_error(err);
    g_assert_cmphex(out, ==, expected);
}

static void assert_u64_fails(const char *value)
{
    GError *err = NULL;
    uint64_t out;

    g_assert_false(qemu_parse_uint64("count", value, &out, &err));
    g_assert_error(err, ILLAN_ERROR, 0);
    g_assert_nonnull(strstr(err->message, "'count'"));
    g_assert_nonnull(strstr(err->message, "non-negative integer"));
    g_error_free(err);
}

static void test_parse_uint64(void)
{
    assert_u64("0", 0);
    assert_u64("42", 42);
    assert_u64("0x2A", 42);
    assert_u64("052", 42);
    assert_u64("18446744073709551615", UINT64_MAX);
    assert_u64("0xffffffffffffffff", UINT64_MAX);
}

static void test_parse_uint64_rejects(void)
{
    assert_u64_fails("");
    assert_u64_fails("-1");
    assert_u64_fails("+1");
    assert_u64_fails("abc");
    assert_u64_fails("12abc");
    assert_u64_fails("0x");
    assert_u64_fails("08");
    assert_u64_fails(" 1");
    assert_u64_fails("18446744073709551616");
}

static void assert_i64(const char *value, int64_t expected)
{
    GError *err = NULL;
    int64_t out = 0xdeadbeef;

    g_assert_true(qemu_parse_int64("n", value, &out, &err));
    g_assert_no_error(err);
    g_assert_cmpint(out, ==, expected);
}

static void assert_i64_fails(const char *value)
{
    GError *err = NULL;
    int64_t out;

    g_assert_false(qemu_parse_int64("bootindex", value, &out, &err));
    g_assert_error(err, ILLAN_ERROR, 0);
    g_assert_nonnull(strstr(err->message, "'bootindex'"));
    g_assert_nonnull(strstr(err->message, "expects an integer"));
    g_error_free(err);
}

static void test_parse_int64(void)
{
    assert_i64("0", 0);
    assert_i64("-1", -1);
    assert_i64("+7", 7);
    assert_i64("0x10", 16);
    assert_i64("-0x10", -16);
    assert_i64("010", 8);
    assert_i64("-010", -8);
    assert_i64("9223372036854775807", INT64_MAX);
    assert_i64("-9223372036854775808", INT64_MIN);
}

static void test_parse_int64_rejects(void)
{
    assert_i64_fails("");
    assert_i64_fails("-");
    assert_i64_fails("--1");
    assert_i64_fails("abc");
    assert_i64_fails("1x");
    assert_i64_fails("-0x");
    assert_i64_fails("09");
    assert_i64_fails(" 1");
    assert_i64_fails("9223372036854775808");
    assert_i64_fails("-9223372036854775809");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    g_test_add_func("/option/parse/implied-key", test_parse_implied_key);
    g_test_add_func("/option/parse/implied-key-not-for-key-value",
                    test_parse_implied_key_not_used_for_key_value);
    g_test_add_func("/option/parse/no-implied-key-makes-flag",
                    test_parse_no_implied_key_makes_flag);
    g_test_add_func("/option/parse/comma-escape", test_parse_comma_escape);
    g_test_add_func("/option/parse/comma-escape-at-value-end",
                    test_parse_comma_escape_at_value_end);
    g_test_add_func("/option/parse/comma-escape-in-implied-value",
                    test_parse_comma_escape_in_implied_value);
    g_test_add_func("/option/parse/flag-has-no-escape",
                    test_parse_flag_has_no_escape);
    g_test_add_func("/option/parse/bare-flag-reads-on",
                    test_parse_bare_flag_reads_on);
    g_test_add_func("/option/parse/empty-value", test_parse_empty_value);
    g_test_add_func("/option/get/last-occurrence",
                    test_opt_get_last_occurrence);
    g_test_add_func("/option/parse/error/empty", test_parse_error_empty);
    g_test_add_func("/option/parse/trailing-comma",
                    test_parse_trailing_comma);
    g_test_add_func("/option/parse/error/two-trailing-commas",
                    test_parse_error_two_trailing_commas);
    g_test_add_func("/option/parse/error/empty-key",
                    test_parse_error_empty_key);
    g_test_add_func("/option/parse/error/empty-element",
                    test_parse_error_empty_element);
    g_test_add_func("/option/wants-help", test_wants_help);
    g_test_add_func("/option/check-keys", test_check_keys);
    g_test_add_func("/option/bool/values", test_parse_bool);
    g_test_add_func("/option/bool/rejects-case-and-empty",
                    test_parse_bool_rejects_case_and_empty);
    g_test_add_func("/option/size/suffixes", test_parse_size_suffixes);
    g_test_add_func("/option/size/hex", test_parse_size_hex);
    g_test_add_func("/option/size/default-suffix",
                    test_parse_size_default_suffix);
    g_test_add_func("/option/size/limits", test_parse_size_limits);
    g_test_add_func("/option/size/rejects-garbage",
                    test_parse_size_rejects_garbage);
    g_test_add_func("/option/size/rejects-overflow",
                    test_parse_size_rejects_overflow);
    g_test_add_func("/option/uint64/values", test_parse_uint64);
    g_test_add_func("/option/uint64/rejects", test_parse_uint64_rejects);
    g_test_add_func("/option/int64/values", test_parse_int64);
    g_test_add_func("/option/int64/rejects", test_parse_int64_rejects);

    return g_test_run();
}
