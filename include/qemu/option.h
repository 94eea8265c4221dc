/*
 * QEMU's option syntax: "value,key=value,flag", with ",," standing for a
 * literal comma, on/off style booleans and sizes with binary suffixes.
 */
#ifndef QEMU_OPTION_H
#define QEMU_OPTION_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct QemuOpts QemuOpts;

/*
 * Parse @str into ordered key=value pairs.  A leading element without '='
 * becomes the value of @implied_key (when not NULL); any other bare element
 * is a flag and reads as "on".  One trailing ',' is allowed
 * ("id=n0," is "id=n0"), as in QEMU.
 */
QemuOpts *qemu_opts_parse(const char *str, const char *implied_key,
                          GError **errp);
void qemu_opts_free(QemuOpts *opts);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QemuOpts, qemu_opts_free)

guint qemu_opts_count(const QemuOpts *opts);
const char *qemu_opts_key(const QemuOpts *opts, guint i);
const char *qemu_opts_value(const QemuOpts *opts, guint i);
/* The value of the last occurrence of @key, or NULL. */
const char *qemu_opt_get(const QemuOpts *opts, const char *key);
/* True when @opts asks for help: a "help" or "?" element or implied value. */
bool qemu_opts_wants_help(const QemuOpts *opts);
/* Fail naming the first key not in the NULL-terminated @known list. */
bool qemu_opts_check_keys(const QemuOpts *opts, const char *const *known,
                          GError **errp);

/* Value parsers; errors name @name as the parameter. */
bool qemu_parse_bool(const char *name, const char *value, bool *out,
                     GError **errp);
/* Sizes: "4096", "64k", "1.5G", "0x1000"; @default_suffix applies to a bare
 * number (0 for bytes). */
bool qemu_parse_size(const char *name, const char *value, char default_suffix,
                     uint64_t *out, GError **errp);
/* Unsigned integer in base 0 (0x hex, leading 0 octal, else decimal). */
bool qemu_parse_uint64(const char *name, const char *value, uint64_t *out,
                       GError **errp);
bool qemu_parse_int64(const char *name, const char *value, int64_t *out,
                      GError **errp);

#define ILLAN_ERROR (illan_error_quark())
GQuark illan_error_quark(void);

#endif
