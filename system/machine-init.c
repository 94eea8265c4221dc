/*
 * Building the machine the command line describes (see
 * include/system/machine-init.h).  The order is fixed, and it is also the
 * order in which errors are found: nothing is built before every option
 * has been checked, and devices come after the netdevs they name.
 */
#include "system/machine-init.h"
#include "guest/guest.h"
#include "hw/boards.h"
#include "hw/qdev.h"
#include "migration/savevm.h"
#include "net/net.h"
#include "system/cmdline.h"

#include <stdio.h>
#include <string.h>

static void machine_print_options(const MachineClass *mc)
{
    printf("%s options:\n"
           "  %-28s - write the device tree to FILE and exit\n"
           "  %-28s - accelerator (only qtest exists)\n",
           mc->name, "dumpdtb=<str>", "accel=<str>");
    for (const char *const *g = mc->compat_props; g && *g; g++) {
        printf("  pins %s\n", *g);
    }
}

/* -M: the machine type and its options; *help set for -M help (with the
 * machine returned for -M TYPE,help). */
static const MachineClass *select_machine(const MachineInitConfig *cfg,
                                          MachineOptions *mopts, bool *help,
                                          GError **errp)
{
    static const char *const known[] = { "type", "dumpdtb", "accel", NULL };
    g_autoptr(QemuOpts) opts = NULL;
    const MachineClass *mc;
    const char *type, *accel;

    if (!cfg->machine) {
        return machine_class_find(NULL);
    }
    opts = cmdline_parse_opt("machine", cfg->machine, "type", known, errp);
    if (!opts) {
        return NULL;
    }
    type = qemu_opt_get(opts, "type");
    mc = machine_class_find(type);
    if (qemu_opts_wants_help(opts)) {
        *help = true;
        return mc;
    }
    if (!mc) {
        cmdline_opt_error(errp, "machine", cfg->machine,
                          "unsupported machine type '%s' (-M help lists "
                          "them)", type ? type : "");
        return NULL;
    }
    accel = qemu_opt_get(opts, "accel");
    if (accel && strcmp(accel, "qtest")) {
        cmdline_opt_error(errp, "machine", cfg->machine,
                          "accelerator '%s' is not available: illan has "
                          "no vCPU; use accel=qtest", accel);
        return NULL;
    }
    if (mc->empty && qemu_opt_get(opts, "dumpdtb")) {
        cmdline_opt_error(errp, "machine", cfg->machine, "machine '%s' has "
                          "no device tree to dump (use -M pseries)",
                          mc->name);
        return NULL;
    }
    mopts->dumpdtb = g_strdup(qemu_opt_get(opts, "dumpdtb"));
    return mc;
}

static bool parse_mem(const MachineInitConfig *cfg, const MachineClass *mc,
                      MachineOptions *mopts, GError **errp)
{
    static const char *const known[] = { "size", NULL };
    g_autoptr(QemuOpts) opts = NULL;
    const char *size;

    mopts->ram_size = mc->default_ram_size;
    if (!cfg->mem) {
        return true;
    }
    opts = cmdline_parse_opt("m", cfg->mem, "size", known, errp);
    if (!opts) {
        return false;
    }
    size = qemu_opt_get(opts, "size");
    if (!size || !qemu_parse_size("size", size, 'M', &mopts->ram_size, errp)) {
        if (!size) {
            g_set_error(errp, ILLAN_ERROR, 0, "Parameter 'size' is missing");
        }
        g_prefix_error(errp, "-m %s: ", cfg->mem);
        return false;
    }
    return true;
}

/* -device X,help, -device help and -netdev help print and end the run. */
static bool print_help_requests(const MachineInitConfig *cfg, bool *printed,
                                GError **errp)
{
    for (guint i = 0; i < cfg->devices->len; i++) {
        const char *arg = g_ptr_array_index(cfg->devices, i);
        g_autoptr(QemuOpts) opts = cmdline_parse_opt("device", arg, "driver",
                                                     NULL, errp);
        const char *driver;
        const DeviceClass *dc;

        if (!opts) {
            return false;
        }
        if (!qemu_opts_wants_help(opts)) {
            continue;
        }
        driver = qemu_opt_get(opts, "driver");
        if (!driver) {
            return cmdline_opt_error(errp, "device", arg, "%s",
                                     "Parameter 'driver' is missing "
                                     "(-device help lists the drivers)");
        }
        if (!strcmp(driver, "help") || !strcmp(driver, "?")) {
            device_class_print_list();
        } else if ((dc = device_class_find(driver))) {
            device_class_print_props(dc);
        } else {
            return cmdline_opt_error(errp, "device", arg,
                                     "'%s' is not a valid device model name "
                                     "(-device help lists them)", driver);
        }
        *printed = true;
    }
    for (guint i = 0; i < cfg->netdevs->len; i++) {
        const char *arg = g_ptr_array_index(cfg->netdevs, i);
        g_autoptr(QemuOpts) opts = NULL;
        const char *type;

        if (!strcmp(arg, "help") || !strcmp(arg, "?")) {
            net_print_netdev_types();
            *printed = true;
            continue;
        }
        opts = cmdline_parse_opt("netdev", arg, "type", NULL, errp);
        if (!opts) {
            return false;
        }
        if (!qemu_opts_wants_help(opts)) {
            continue;
        }
        type = qemu_opt_get(opts, "type");
        if (!type || !net_print_netdev_help(type)) {
            return cmdline_opt_error(errp, "netdev", arg, "%s",
                                     "no such netdev type (-netdev help "
                                     "lists them)");
        }
        *printed = true;
    }
    for (guint i = 0; i < cfg->guests->len; i++) {
        const char *arg = g_ptr_array_index(cfg->guests, i);

        if (!guest_print_help(arg, printed, errp)) {
            g_prefix_error(errp, "-guest %s: ", arg);
            return false;
        }
    }
    return true;
}

/* -global DRIVER.PROP=VALUE, or driver=D,property=P,value=V. */
static bool add_global(const char *arg, GError **errp)
{
    static const char *const known[] = { "driver", "property", "value",
                                         NULL };
    const char *eq = strchr(arg, '=');
    const char *dot = memchr(arg, '.', eq ? (size_t)(eq - arg) : 0);
    g_autoptr(QemuOpts) opts = NULL;
    const char *driver, *prop, *value;

    if (!eq) {
        return cmdline_opt_error(errp, "global", arg, "%s", "expected "
                                 "DRIVER.PROPERTY=VALUE or driver=DRIVER,"
                                 "property=PROPERTY,value=VALUE");
    }
    if (dot) {
        /* The value is the rest of the text, commas and all. */
        g_autofree char *d = g_strndup(arg, dot - arg);
        g_autofree char *p = g_strndup(dot + 1, eq - dot - 1);

        return qdev_add_global(d, p, eq + 1, errp);
    }
    opts = cmdline_parse_opt("global", arg, NULL, known, errp);
    if (!opts) {
        return false;
    }
    driver = qemu_opt_get(opts, "driver");
    prop = qemu_opt_get(opts, "property");
    value = qemu_opt_get(opts, "value");
    if (!driver || !prop || !value) {
        return cmdline_opt_error(errp, "global", arg, "%s", "expected "
                                 "DRIVER.PROPERTY=VALUE or driver=DRIVER,"
                                 "property=PROPERTY,value=VALUE");
    }
    return qdev_add_global(driver, prop, value, errp);
}

static bool add_globals(const MachineInitConfig *cfg, GError **errp)
{
    for (guint i = 0; i < cfg->globals->len; i++) {
        const char *arg = g_ptr_array_index(cfg->globals, i);
        g_autoptr(GError) err = NULL;

        if (!add_global(arg, &err)) {
            /* cmdline_parse_opt's errors already name the option. */
            if (!g_str_has_prefix(err->message, "-global ")) {
                g_prefix_error(&err, "-global %s: ", arg);
            }
            g_propagate_error(errp, g_steal_pointer(&err));
            return false;
        }
    }
    return true;
}

static bool create_netdevs(const MachineInitConfig *cfg, GError **errp)
{
    for (guint i = 0; i < cfg->netdevs->len; i++) {
        const char *arg = g_ptr_array_index(cfg->netdevs, i);
        g_autoptr(QemuOpts) opts = cmdline_parse_opt("netdev", arg, "type",
                                                     NULL, errp);

        if (!opts) {
            return false;
        }
        if (!net_netdev_add(opts, errp)) {
            g_prefix_error(errp, "-netdev %s: ", arg);
            return false;
        }
    }
    return true;
}

static bool create_device(SpaprMachineState *spapr, const char *arg,
                          GError **errp)
{
    g_autoptr(QemuOpts) opts = qemu_opts_parse(arg, "driver", errp);
    const char *driver = opts ? qemu_opt_get(opts, "driver") : NULL;
    const DeviceClass *dc;
    DeviceState *dev;

    if (!opts) {
        return false;
    }
    if (!driver) {
        g_set_error(errp, ILLAN_ERROR, 0, "Parameter 'driver' is missing "
                    "(-device help lists the drivers)");
        return false;
    }
    dc = device_class_find(driver);
    if (!dc) {
        g_set_error(errp, ILLAN_ERROR, 0, "'%s' is not a valid device model "
                    "name (-device help lists them)", driver);
        return false;
    }
    dev = device_new(dc, errp);
    if (!dev) {
        return false;
    }
    for (guint i = 0; i < qemu_opts_count(opts); i++) {
        const char *key = qemu_opts_key(opts, i);

        if (strcmp(key, "driver") &&
            !device_set_prop(dev, key, qemu_opts_value(opts, i), errp)) {
            device_free(dev);
            return false;
        }
    }
    if (!spapr_machine_plug(spapr, dev, errp)) {
        device_free(dev);
        return false;
    }
    return true;
}

static bool create_devices(const MachineInitConfig *cfg,
                           SpaprMachineState *spapr, GError **errp)
{
    for (guint i = 0; i < cfg->devices->len; i++) {
        const char *arg = g_ptr_array_index(cfg->devices, i);

        if (!create_device(spapr, arg, errp)) {
            g_prefix_error(errp, "-device %s: ", arg);
            return false;
        }
    }
    return true;
}

bool machine_init(const MachineInitConfig *cfg, SpaprMachineState **spapr,
                  bool *exit_now, GError **errp)
{
    MachineOptions mopts = { 0 };
    const MachineClass *mc;
    bool help = false, ok = false;

    mc = select_machine(cfg, &mopts, &help, errp);
    if (help) {
        mc ? machine_print_options(mc) : machine_class_print_list();
        *exit_now = true;
        return true;
    }
    if (!mc) {
        return false;
    }
    qdev_set_globals(mc->compat_props);
    if (!add_globals(cfg, errp)) {
        return false;
    }
    if (cfg->dump_vmstate) {
        *exit_now = true;
        ok = qemu_dump_vmstate(cfg->dump_vmstate, mc->name, errp);
        if (!ok) {
            g_prefix_error(errp, "-dump-vmstate %s: ", cfg->dump_vmstate);
        }
        goto out;
    }
    if (!print_help_requests(cfg, exit_now, errp) || *exit_now) {
        ok = !*errp;
        goto out;
    }
    if (!parse_mem(cfg, mc, &mopts, errp) ||
        !cfg->check_other_options(cfg->opaque, errp) ||
        !create_netdevs(cfg, errp)) {
        goto out;
    }
    *spapr = spapr_machine_new(mc, &mopts, errp);
    if (!*spapr) {
        g_prefix_error(errp, "-m %s: ", cfg->mem ? cfg->mem : "256M");
        goto out;
    }
    ok = true;
out:
    g_free((char *)mopts.dumpdtb);
    return ok;
}

bool machine_init_devices(const MachineInitConfig *cfg,
                          SpaprMachineState *spapr, bool *exit_now,
                          GError **errp)
{
    if (!create_devices(cfg, spapr, errp)) {
        return false;
    }
    if (!spapr_machine_done(spapr, exit_now, errp)) {
        g_prefix_error(errp, "-machine %s: ", cfg->machine);
        return false;
    }
    return true;
}

bool machine_init_guests(const MachineInitConfig *cfg,
                         SpaprMachineState *spapr, GError **errp)
{
    for (guint i = 0; i < cfg->guests->len; i++) {
        const char *arg = g_ptr_array_index(cfg->guests, i);

        if (spapr_machine_class(spapr)->empty) {
            return cmdline_opt_error(errp, "guest", arg, "a built-in guest "
                                     "needs a device, and machine '%s' has "
                                     "none (use -M pseries)",
                                     spapr_machine_type(spapr));
        }
        if (!guest_add(spapr, arg, cfg->incoming != NULL, errp)) {
            g_prefix_error(errp, "-guest %s: ", arg);
            return false;
        }
    }
    return true;
}
