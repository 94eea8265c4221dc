/*
 * The command line's conventions, for main() and machine building alike:
 * an option's argument in QEMU's option syntax, and errors that start
 * with the option and its argument, "-device spapr-vlan,foo=1: ...".
 */
#ifndef SYSTEM_CMDLINE_H
#define SYSTEM_CMDLINE_H

#include "qemu/option.h"

/* Parses @arg of option @opt (@implied names a leading bare value); with
 * @known, any other key is an error, unless help was asked for. */
QemuOpts *cmdline_parse_opt(const char *opt, const char *arg,
                            const char *implied, const char *const *known,
                            GError **errp);
/* Sets *errp to @fmt with @detail, prefixed "-opt arg: "; returns
 * false. */
bool cmdline_opt_error(GError **errp, const char *opt, const char *arg,
                       const char *fmt, const char *detail);

#endif
