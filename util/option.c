/*
 * QEMU's option syntax.  Parsing is split from interpretation so that every
 * option (-machine, -device, -netdev, -chardev, ...) shares one grammar and
 * one set of error messages.
 */
#include "qemu/option.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK(illan-error-quark, illan_error)

struct QemuOpts {
    GPtrArray *keys;
    GPtrArray *values;
    bool first_implied;     /* element 0 came from the implied key */
};

static QemuOpts *qemu_opts_new(void)
{
    QemuOpts *opts = g_new0(QemuOpts, 1);
    opts->keys = g_ptr_array_new_with_free_func(g_free);
    opts->values = g_ptr_array_new_with_free_func(g_free);
    return opts;
}

void qemu_opts_free(QemuOpts *opts)
{
    if (!opts) {
        return;
    }
    g_ptr_array_free(opts->keys, TRUE);
    g_ptr_array_free(opts->values, TRUE);
    g_free(opts);
}

/* Read up to the next lone ',' (or the end), turning ",," into ','. */
static char *read_escaped(const char **p)
{
    GString *out = g_string_new(NULL);
    const char *s = *p;

    while (*s) {
        if (*s == ',') {
            if (s[1] != ',') {
                break;
            }
            s++;
        }
        g_string_append_c(out, *s++);
    }
    *p = s;
    return g_string_free(out, FALSE);
}

QemuOpts *qemu_opts_parse(const char *str, const char *implied_key,
                          GError **errp)
{
    QemuOpts *opts = qemu_opts_new();
    const char *p = str;
    bool first = true;

    if (!*p) {
        g_set_error(errp, ILLAN_ERROR, 0, "Empty option");
        goto fail;
    }
    for (;;) {
        size_t keylen = strcspn(p, "=,");
        char *key, *value;

        if (p[keylen] == '=') {
            key = g_strndup(p, keylen);
            p += keylen + 1;
            value = read_escaped(&p);
            if (!*key) {
                g_set_error(errp, ILLAN_ERROR, 0,
                            "Expected a parameter name before '='");
                g_free(key);
                g_free(value);
                goto fail;
            }
        } else if (first && implied_key) {
            key = g_strdup(implied_key);
            value = read_escaped(&p);
            opts->first_implied = true;
        } else {
            if (keylen == 0) {
                g_set_error(errp, ILLAN_ERROR, 0,
                            "Expected a parameter name, found an empty one");
                goto fail;
            }
            key = g_strndup(p, keylen);
            value = g_strdup("on");
            p += keylen;
        }
        g_ptr_array_add(opts->keys, key);
        g_ptr_array_add(opts->values, value);
        first = false;
        if (!*p) {
            return opts;
        }
        p++; /* the separating ',' */
        /* One trailing ',' ends the list, as QEMU's parsers allow. */
        if (!*p) {
            return opts;
        }
    }
fail:
    qemu_opts_free(opts);
    return NULL;
}

guint qemu_opts_count(const QemuOpts *opts)
{
    return opts->keys->len;
}

const char *qemu_opts_key(const QemuOpts *opts, guint i)
{
    return g_ptr_array_index(opts->keys, i);
}

const char *qemu_opts_value(const QemuOpts *opts, guint i)
{
    return g_ptr_array_index(opts->values, i);
}

const char *qemu_opt_get(const QemuOpts *opts, const char *key)
{
    for (guint i = opts->keys->len; i-- > 0;) {
        if (!strcmp(qemu_opts_key(opts, i), key)) {
            return qemu_opts_value(opts, i);
        }
    }
    return NULL;
}

static bool is_help_word(const char *s)
{
    return !strcmp(s, "help") || !strcmp(s, "?");
}

bool qemu_opts_wants_help(const QemuOpts *opts)
{
    if (opts->first_implied && is_help_word(qemu_opts_value(opts, 0))) {
        return true;
    }
    for (guint i = 0; i < qemu_opts_count(opts); i++) {
        if (is_help_word(qemu_opts_key(opts, i))) {
            return true;
        }
    }
    return false;
}

bool qemu_opts_check_keys(const QemuOpts *opts, const char *const *known,
                          GError **errp)
{
    for (guint i = 0; i < qemu_opts_count(opts); i++) {
        const char *key = qemu_opts_key(opts, i);

        if (!g_strv_contains(known, key)) {
            g_set_error(errp, ILLAN_ERROR, 0, "Invalid parameter '%s'", key);
            return false;
        }
    }
    return true;
}

bool qemu_parse_bool(const char *name, const char *value, bool *out,
                     GError **errp)
{
    static const char *const yes[] = { "on", "yes", "true", NULL };
    static const char *const no[] = { "off", "no", "false", NULL };

    if (g_strv_contains(yes, value)) {
        *out = true;
        return true;
    }
    if (g_strv_contains(no, value)) {
        *out = false;
        return true;
    }
    g_set_error(errp, ILLAN_ERROR, 0,
                "Parameter '%s' expects 'on' or 'off', not '%s'", name, value);
    return false;
}

static int suffix_shift(char c)
{
    switch (g_ascii_toupper(c)) {
    case 'B': return 0;
    case 'K': return 10;
    case 'M': return 20;
    case 'G': return 30;
    case 'T': return 40;
    case 'P': return 50;
    case 'E': return 60;
    default: return -1;
    }
}

bool qemu_parse_size(const char *name, const char *value, char default_suffix,
                     uint64_t *out, GError **errp)
{
    bool hex = g_str_has_prefix(value, "0x") || g_str_has_prefix(value, "0X");
    int shift = default_suffix ? suffix_shift(default_suffix) : 0;
    const char *p;
    char *end;
    uint64_t whole, extra = 0;
    double frac = 0;
    bool has_frac = false;

    if (!g_ascii_isdigit(value[0])) {
        goto bad;
    }
    errno = 0;
    whole = g_ascii_strtoull(value, &end, hex ? 16 : 10);
    if (errno == ERANGE) {
        goto too_big;
    }
    if (end == value + (hex ? 2 : 0)) {
        goto bad;
    }
    p = end;
    if (!hex && *p == '.') {
        double scale = 0.1;

        if (!g_ascii_isdigit(*++p)) {
            goto bad;
        }
        for (; g_ascii_isdigit(*p); p++, scale /= 10) {
            frac += (*p - '0') * scale;
        }
        has_frac = true;
    }
    if (*p) {
        /* Hex numbers take no suffix: 'B' and 'E' would read as digits. */
        shift = hex ? -1 : suffix_shift(*p);
        if (shift < 0 || p[1]) {
            goto bad;
        }
    }
    /* A fraction of a byte is not a size. */
    if (has_frac && shift == 0) {
        goto bad;
    }
    if (shift && whole >> (64 - shift)) {
        goto too_big;
    }
    whole <<= shift;
    if (has_frac) {
        extra = (uint64_t)(frac * (double)(1ULL << shift));
    }
    if (whole + extra < whole) {
        goto too_big;
    }
    *out = whole + extra;
    return true;

too_big:
    g_set_error(errp, ILLAN_ERROR, 0,
                "Parameter '%s': size '%s' is too large (limit 2^64-1)",
                name, value);
    return false;
bad:
    g_set_error(errp, ILLAN_ERROR, 0,
                "Parameter '%s' expects a size (a number with an optional "
                "suffix B, k, M, G, T, P or E), not '%s'", name, value);
    return false;
}

/* Base 0 as strtoull/strtoll read it, but the whole string must be the
 * number: no leading blanks, no trailing garbage, no overflow. */
bool qemu_parse_uint64(const char *name, const char *value, uint64_t *out,
                       GError **errp)
{
    char *end;
    uint64_t v;

    errno = 0;
    if (g_ascii_isdigit(value[0]) &&
        (v = strtoull(value, &end, 0), !errno && !*end)) {
        *out = v;
        return true;
    }
    g_set_error(errp, ILLAN_ERROR, 0,
                "Parameter '%s' expects a non-negative integer, not '%s'",
                name, value);
    return false;
}

bool qemu_parse_int64(const char *name, const char *value, int64_t *out,
                      GError **errp)
{
    const char *digits = value + (value[0] == '-' || value[0] == '+');
    char *end;
    int64_t v;

    errno = 0;
    if (g_ascii_isdigit(digits[0]) &&
        (v = strtoll(value, &end, 0), !errno && !*end)) {
        *out = v;
        return true;
    }
    g_set_error(errp, ILLAN_ERROR, 0,
                "Parameter '%s' expects an integer, not '%s'", name, value);
    return false;
}
