/*
 * The command line's conventions (include/system/cmdline.h).
 */
#include "system/cmdline.h"

QemuOpts *cmdline_parse_opt(const char *opt, const char *arg,
                            const char *implied, const char *const *known,
                            GError **errp)
{
    QemuOpts *opts = qemu_opts_parse(arg, implied, errp);

    if (opts && known && !qemu_opts_wants_help(opts) &&
        !qemu_opts_check_keys(opts, known, errp)) {
        g_clear_pointer(&opts, qemu_opts_free);
    }
    if (!opts) {
        g_prefix_error(errp, "-%s %s: ", opt, arg);
    }
    return opts;
}

bool cmdline_opt_error(GError **errp, const char *opt, const char *arg,
                       const char *fmt, const char *detail)
{
    g_set_error(errp, ILLAN_ERROR, 0, fmt, detail);
    g_prefix_error(errp, "-%s %s: ", opt, arg);
    return false;
}
