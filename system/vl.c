/*
 * main(): the QEMU-style command line, machine construction and the main
 * loop.  Every error is one line naming the option, then exit status 1;
 * SIGTERM and SIGINT end the process cleanly with status 0.
 */
#include "guest/guest.h"
#include "hw/boards.h"
#include "hw/ppc/spapr.h"
#include "hw/qdev.h"
#include "migration/migration.h"
#include "migration/savevm.h"
#include "monitor/qmp.h"
#include "net/net.h"
#include "qemu/main-loop.h"
#include "qemu/option.h"
#include "system/qtest.h"
#include "qemu/runstate.h"

#include <errno.h>
#include <glib-unix.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#define DEFAULT_RAM_SIZE (256ULL << 20)

typedef struct Config {
    const char *machine;
    const char *mem;
    const char *qtest;
    const char *qtest_log;
    const char *name;
    const char *incoming;
    const char *dump_vmstate;
    bool start_paused;
    GPtrArray *devices;
    GPtrArray *netdevs;
    GPtrArray *chardevs;
    GPtrArray *qmps;
    GPtrArray *mons;
    GPtrArray *accels;
    GPtrArray *displays;
    GPtrArray *audios;
    GPtrArray *guests;
} Config;

/* What an option does with its argument. */
typedef enum OptAction {
    OPT_SET,        /* the last one counts: a const char * in Config */
    OPT_APPEND,     /* each one counts: a GPtrArray * in Config */
    OPT_FLAG,       /* a bool in Config */
    OPT_IGNORE,     /* accepted for QEMU compatibility */
    OPT_VERSION,
    OPT_HELP,
} OptAction;

typedef struct CmdOption {
    const char *name;
    const char *arg;        /* NULL: takes no argument */
    const char *help;
    OptAction action;
    size_t field;           /* offset in Config, for SET/APPEND/FLAG */
} CmdOption;

#define CFG(f) offsetof(Config, f)

static const CmdOption cmd_options[] = {
    { "machine", "TYPE[,dumpdtb=FILE]", "select the machine type (-M help lists them)", OPT_SET, CFG(machine) },
    { "M", "TYPE[,dumpdtb=FILE]", "same as -machine", OPT_SET, CFG(machine) },
    { "m", "SIZE", "guest RAM size (default 256M; a bare number means MiB)", OPT_SET, CFG(mem) },
    { "device", "DRIVER[,prop=value...]", "add a device (-device help, -device DRIVER,help)", OPT_APPEND, CFG(devices) },
    { "netdev", "TYPE,id=ID[,...]", "add a network backend (-netdev help)", OPT_APPEND, CFG(netdevs) },
    { "qtest", "unix:PATH|stdio", "serve the qtest protocol on PATH (connecting to it) or stdio", OPT_SET, CFG(qtest) },
    { "qtest-log", "FILE|none", "log qtest traffic to FILE (default stderr)", OPT_SET, CFG(qtest_log) },
    { "chardev", "socket,id=ID,path=PATH", "define a socket character device", OPT_APPEND, CFG(chardevs) },
    { "mon", "chardev=ID,mode=control", "attach a QMP monitor to a character device", OPT_APPEND, CFG(mons) },
    { "qmp", "unix:PATH[,server=on][,wait=off]", "QMP monitor on a unix socket (server=on: listen)", OPT_APPEND, CFG(qmps) },
    { "display", "none", "no display (the only kind)", OPT_APPEND, CFG(displays) },
    { "audio", "none", "no audio (the only kind)", OPT_APPEND, CFG(audios) },
    { "guest", "ibmveth,dev=ID[,fwd=rxonly|txonly|macswap|tap,...]", "run a built-in guest model on a vCPU thread (-guest help, -guest ibmveth,help)", OPT_APPEND, CFG(guests) },
    { "accel", "qtest", "accelerator; repeat for a fallback list (only qtest exists)", OPT_APPEND, CFG(accels) },
    /* illan creates no default devices in any case. */
    { "nodefaults", NULL, "create no default devices", OPT_IGNORE, 0 },
    { "incoming", "URI|defer", "wait for a migration stream (file:PATH, unix:PATH, fd:N, exec:CMD), or for QMP migrate-incoming", OPT_SET, CFG(incoming) },
    { "dump-vmstate", "FILE", "write the device state descriptions (QEMU's JSON) to FILE and exit", OPT_SET, CFG(dump_vmstate) },
    { "S", NULL, "do not start the machine (run state prelaunch)", OPT_FLAG, CFG(start_paused) },
    { "name", "NAME[,process=PNAME]", "name the guest; process= also names the process", OPT_SET, CFG(name) },
    { "version", NULL, "print the version and exit", OPT_VERSION, 0 },
    { "h", NULL, "print this help and exit", OPT_HELP, 0 },
    { "help", NULL, "print this help and exit", OPT_HELP, 0 },
};

typedef struct Machine {
    SpaprMachineState *spapr;
    QTestServer *qtest;
    GMainLoop *loop;
    GPtrArray *monitors;    /* MonitorSpec *, from -qmp and -mon */
} Machine;

static void usage(void)
{
    printf("usage: illan [options]\n"
           "Emulates a pseries partition with a PAPR logical LAN device.\n\n");
    for (size_t i = 0; i < G_N_ELEMENTS(cmd_options); i++) {
        const CmdOption *o = &cmd_options[i];
        g_autofree char *lhs = g_strdup_printf("-%s%s%s", o->name,
                                               o->arg ? " " : "",
                                               o->arg ? o->arg : "");
        printf("  %-36s %s\n", lhs, o->help);
    }
    printf("\nExample:\n  illan -M pseries -device spapr-vlan,netdev=n0,"
           "use-rx-buffer-pools=on \\\n        -netdev TYPE,id=n0,...\n");
}

static const CmdOption *find_option(const char *word)
{
    const char *name = word + (word[1] == '-' ? 2 : 1);

    for (size_t i = 0; i < G_N_ELEMENTS(cmd_options); i++) {
        if (!strcmp(cmd_options[i].name, name)) {
            return &cmd_options[i];
        }
    }
    return NULL;
}

static void config_free(Config *cfg)
{
    GPtrArray *lists[] = { cfg->devices, cfg->netdevs, cfg->chardevs,
                           cfg->qmps,
                           cfg->mons, cfg->accels, cfg->displays,
                           cfg->audios, cfg->guests };

    for (size_t i = 0; i < G_N_ELEMENTS(lists); i++) {
        g_ptr_array_free(lists[i], TRUE);
    }
}

/* Sorts argv into @cfg; returns false with *errp set on a bad option,
 * or false with *errp NULL after printing -h or -version. */
static bool parse_argv(Config *cfg, int argc, char **argv, GError **errp)
{
    for (int i = 1; i < argc; i++) {
        const char *word = argv[i];
        const CmdOption *o = word[0] == '-' ? find_option(word) : NULL;
        const char *arg = NULL;

        if (!o) {
            g_set_error(errp, ILLAN_ERROR, 0, "%s: %s", word,
                        word[0] == '-' ? "invalid option (see -h)"
                                       : "unexpected argument (see -h)");
            return false;
        }
        if (o->arg) {
            if (i + 1 >= argc) {
                g_set_error(errp, ILLAN_ERROR, 0, "%s: requires an argument",
                            word);
                return false;
            }
            arg = argv[++i];
        }
        switch (o->action) {
        case OPT_SET:
            *(const char **)((char *)cfg + o->field) = arg;
            break;
        case OPT_APPEND:
            g_ptr_array_add(*(GPtrArray **)((char *)cfg + o->field),
                            (gpointer)arg);
            break;
        case OPT_FLAG:
            *(bool *)((char *)cfg + o->field) = true;
            break;
        case OPT_IGNORE:
            break;
        case OPT_VERSION:
            printf("illan version " ILLAN_VERSION "\n");
            return false;
        case OPT_HELP:
            usage();
            return false;
        }
    }
    return true;
}

/* Parses @arg of option @opt; errors are prefixed "-opt arg: ". */
static QemuOpts *parse_opt(const char *opt, const char *arg,
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

static bool opt_error(GError **errp, const char *opt, const char *arg,
                      const char *fmt, const char *detail)
{
    g_set_error(errp, ILLAN_ERROR, 0, fmt, detail);
    g_prefix_error(errp, "-%s %s: ", opt, arg);
    return false;
}

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
static const MachineClass *select_machine(const Config *cfg,
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
    opts = parse_opt("machine", cfg->machine, "type", known, errp);
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
        opt_error(errp, "machine", cfg->machine,
                  "unsupported machine type '%s' (-M help lists them)",
                  type ? type : "");
        return NULL;
    }
    accel = qemu_opt_get(opts, "accel");
    if (accel && strcmp(accel, "qtest")) {
        opt_error(errp, "machine", cfg->machine,
                  "accelerator '%s' is not available: illan has no vCPU; "
                  "use accel=qtest", accel);
        return NULL;
    }
    mopts->dumpdtb = g_strdup(qemu_opt_get(opts, "dumpdtb"));
    return mc;
}

static bool parse_mem(const Config *cfg, MachineOptions *mopts, GError **errp)
{
    static const char *const known[] = { "size", NULL };
    g_autoptr(QemuOpts) opts = NULL;
    const char *size;

    mopts->ram_size = DEFAULT_RAM_SIZE;
    if (!cfg->mem) {
        return true;
    }
    opts = parse_opt("m", cfg->mem, "size", known, errp);
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

/* Options that only accept "none", kept for QEMU command-line parity. */
static bool check_none_only(GPtrArray *args, const char *opt, GError **errp)
{
    for (guint i = 0; i < args->len; i++) {
        const char *arg = g_ptr_array_index(args, i);
        g_autoptr(QemuOpts) opts = parse_opt(opt, arg, "type", NULL, errp);
        const char *type;

        if (!opts) {
            return false;
        }
        type = qemu_opt_get(opts, "type");
        if (!type) {
            type = qemu_opt_get(opts, "driver");
        }
        if (qemu_opts_count(opts) != 1 || g_strcmp0(type, "none")) {
            return opt_error(errp, opt, arg, "only '%s' is supported",
                             "none");
        }
    }
    return true;
}

/* -accel: a fallback list; illan has only the qtest accelerator. */
static bool check_accels(GPtrArray *accels, GError **errp)
{
    static const char *const known[] = { "accel", NULL };
    bool found = false;

    for (guint i = 0; i < accels->len; i++) {
        const char *arg = g_ptr_array_index(accels, i);
        g_autoptr(QemuOpts) opts = parse_opt("accel", arg, "accel", known,
                                             errp);
        if (!opts) {
            return false;
        }
        found |= !g_strcmp0(qemu_opt_get(opts, "accel"), "qtest");
    }
    if (accels->len && !found) {
        const char *last = g_ptr_array_index(accels, accels->len - 1);
        return opt_error(errp, "accel", last,
                         "no accelerator in the list is available: illan has "
                         "no vCPU; add %s", "-accel qtest");
    }
    return true;
}

/* Where a QMP monitor lives: listen on a path, or connect to one. */
typedef struct MonitorSpec {
    char *option;           /* for errors: "-qmp ARG" or "-mon ARG" */
    char *path;
    bool server;
    bool wait;
} MonitorSpec;

static void monitor_spec_free(gpointer p)
{
    MonitorSpec *m = p;

    if (!m) {
        return;     /* a chardev id whose spec a -mon took */
    }
    g_free(m->option);
    g_free(m->path);
    g_free(m);
}

/* server=on listens (waiting for a first client unless wait=off);
 * without it illan connects, as QEMU does for libqtest's sockets. */
static bool socket_spec(const char *opt, const char *arg, const QemuOpts *o,
                        MonitorSpec *spec, GError **errp)
{
    const char *server = qemu_opt_get(o, "server");
    const char *wait = qemu_opt_get(o, "wait");
    bool wait_on = true;

    if (server && !qemu_parse_bool("server", server, &spec->server, errp)) {
        g_prefix_error(errp, "-%s %s: ", opt, arg);
        return false;
    }
    if (wait && !qemu_parse_bool("wait", wait, &wait_on, errp)) {
        g_prefix_error(errp, "-%s %s: ", opt, arg);
        return false;
    }
    spec->wait = spec->server && wait_on;
    spec->path = g_strdup(qemu_opt_get(o, "path"));
    return true;
}

/* -chardev socket,... + -mon chardev=...,mode=control pairs. */
static bool parse_mon_pairs(const Config *cfg, GPtrArray *specs,
                            GError **errp)
{
    static const char *const ck[] = { "backend", "id", "path", "server",
                                      "wait", NULL };
    static const char *const mk[] = { "chardev", "mode", "pretty", NULL };
    g_autoptr(GHashTable) ids = g_hash_table_new_full(
        g_str_hash, g_str_equal, g_free, monitor_spec_free);

    for (guint i = 0; i < cfg->chardevs->len; i++) {
        const char *arg = g_ptr_array_index(cfg->chardevs, i);
        g_autoptr(QemuOpts) o = parse_opt("chardev", arg, "backend", ck, errp);
        MonitorSpec *spec;
        const char *id;

        if (!o) {
            return false;
        }
        if (g_strcmp0(qemu_opt_get(o, "backend"), "socket")) {
            return opt_error(errp, "chardev", arg,
                             "backend '%s' is not supported: use socket",
                             qemu_opt_get(o, "backend"));
        }
        id = qemu_opt_get(o, "id");
        if (!id || !qemu_opt_get(o, "path")) {
            return opt_error(errp, "chardev", arg, "%s",
                             "socket needs id=ID and path=PATH");
        }
        if (g_hash_table_contains(ids, id)) {
            return opt_error(errp, "chardev", arg, "Duplicate ID '%s'", id);
        }
        spec = g_new0(MonitorSpec, 1);
        g_hash_table_insert(ids, g_strdup(id), spec);
        if (!socket_spec("chardev", arg, o, spec, errp)) {
            return false;
        }
    }
    for (guint i = 0; i < cfg->mons->len; i++) {
        const char *arg = g_ptr_array_index(cfg->mons, i);
        g_autoptr(QemuOpts) o = parse_opt("mon", arg, "chardev", mk, errp);
        const char *chardev, *mode;
        MonitorSpec *spec;
        gpointer key;

        if (!o) {
            return false;
        }
        chardev = qemu_opt_get(o, "chardev");
        mode = qemu_opt_get(o, "mode");
        if (!chardev || !g_hash_table_lookup_extended(ids, chardev, NULL,
                                                      (gpointer *)&spec)) {
            return opt_error(errp, "mon", arg,
                             "chardev '%s' is not defined by -chardev",
                             chardev ? chardev : "");
        }
        if (!spec) {
            return opt_error(errp, "mon", arg,
                             "chardev '%s' already has a monitor", chardev);
        }
        if (g_strcmp0(mode, "control")) {
            return opt_error(errp, "mon", arg,
                             "mode '%s' is not supported: use mode=control",
                             mode ? mode : "readline");
        }
        /* The monitor owns the spec now; the id stays, marked taken. */
        g_hash_table_steal_extended(ids, chardev, &key, NULL);
        g_hash_table_insert(ids, key, NULL);
        spec->option = g_strdup_printf("-mon %s", arg);
        g_ptr_array_add(specs, spec);
    }
    return true;
}

/* -qmp unix:PATH[,server=on][,wait=off] */
static bool parse_qmp_options(const Config *cfg, GPtrArray *specs,
                              GError **errp)
{
    static const char *const known[] = { "path", "server", "wait", NULL };

    for (guint i = 0; i < cfg->qmps->len; i++) {
        const char *arg = g_ptr_array_index(cfg->qmps, i);
        g_autoptr(QemuOpts) o = NULL;
        MonitorSpec *spec;

        if (!g_str_has_prefix(arg, "unix:")) {
            return opt_error(errp, "qmp", arg,
                             "'%s' is not a QMP channel: use unix:PATH", arg);
        }
        o = parse_opt("qmp", arg + strlen("unix:"), "path", known, errp);
        if (o && strcmp(qemu_opts_key(o, 0), "path")) {
            g_clear_pointer(&o, qemu_opts_free);
            g_set_error(errp, ILLAN_ERROR, 0, "the socket path must follow "
                        "unix:");
        }
        for (guint k = 1; o && k < qemu_opts_count(o); k++) {
            if (!strcmp(qemu_opts_key(o, k), "path")) {
                g_clear_pointer(&o, qemu_opts_free);
                g_set_error(errp, ILLAN_ERROR, 0, "Invalid parameter 'path' "
                            "(the path follows unix:)");
            }
        }
        if (!o) {
            g_prefix_error(errp, "-qmp %s: ", arg);
            return false;
        }
        spec = g_new0(MonitorSpec, 1);
        g_ptr_array_add(specs, spec);
        spec->option = g_strdup_printf("-qmp %s", arg);
        if (!socket_spec("qmp", arg, o, spec, errp)) {
            return false;
        }
    }
    return true;
}

static bool start_monitors(const GPtrArray *specs, GError **errp)
{
    for (guint i = 0; i < specs->len; i++) {
        const MonitorSpec *spec = g_ptr_array_index(specs, i);

        if (spec->server ? !qmp_listen(spec->path, spec->wait, errp)
                         : !qmp_connect(spec->path, errp)) {
            g_prefix_error(errp, "%s: ", spec->option);
            return false;
        }
    }
    return true;
}

/* -device X,help, -device help and -netdev help print and end the run. */
static bool print_help_requests(const Config *cfg, bool *printed,
                                GError **errp)
{
    for (guint i = 0; i < cfg->devices->len; i++) {
        const char *arg = g_ptr_array_index(cfg->devices, i);
        g_autoptr(QemuOpts) opts = parse_opt("device", arg, "driver", NULL,
                                             errp);
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
            return opt_error(errp, "device", arg, "%s",
                             "Parameter 'driver' is missing (-device help "
                             "lists the drivers)");
        }
        if (!strcmp(driver, "help") || !strcmp(driver, "?")) {
            device_class_print_list();
        } else if ((dc = device_class_find(driver))) {
            device_class_print_props(dc);
        } else {
            return opt_error(errp, "device", arg,
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
        opts = parse_opt("netdev", arg, "type", NULL, errp);
        if (!opts) {
            return false;
        }
        if (!qemu_opts_wants_help(opts)) {
            continue;
        }
        type = qemu_opt_get(opts, "type");
        if (!type || !net_print_netdev_help(type)) {
            return opt_error(errp, "netdev", arg, "%s",
                             "no such netdev type (-netdev help lists them)");
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

static bool create_netdevs(const Config *cfg, GError **errp)
{
    for (guint i = 0; i < cfg->netdevs->len; i++) {
        const char *arg = g_ptr_array_index(cfg->netdevs, i);
        g_autoptr(QemuOpts) opts = parse_opt("netdev", arg, "type", NULL,
                                             errp);

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

static bool apply_name(const char *arg, GError **errp)
{
    static const char *const known[] = { "guest", "process", "debug-threads",
                                         NULL };
    g_autoptr(QemuOpts) opts = parse_opt("name", arg, "guest", known, errp);
    const char *process;

    if (!opts) {
        return false;
    }
    process = qemu_opt_get(opts, "process");
    if (process) {
        prctl(PR_SET_NAME, process);
    }
    return true;
}

static gboolean on_quit_signal(gpointer opaque)
{
    (void)opaque;
    qemu_system_shutdown("host-signal");
    return G_SOURCE_CONTINUE;
}

/* The qtest client hanging up ends the run, as nothing else can drive an
 * emulator that has no CPU; like closing QEMU's window, a host UI event. */
static void on_qtest_closed(void *opaque)
{
    (void)opaque;
    qemu_system_shutdown("host-ui");
}

/* Called with every vCPU and I/O thread parked. */
static void reset_machine(void *opaque)
{
    spapr_machine_reset(((Machine *)opaque)->spapr);
    guest_machine_reset();
}

static void quit_main_loop(void *opaque)
{
    g_main_loop_quit(((Machine *)opaque)->loop);
}

/* Every option that is not the machine's, checked before anything is
 * built; netdevs are created here so that devices can name them. */
static bool check_options(const Config *cfg, Machine *m,
                          MachineOptions *mopts, GError **errp)
{
    return parse_mem(cfg, mopts, errp) &&
           check_none_only(cfg->displays, "display", errp) &&
           check_none_only(cfg->audios, "audio", errp) &&
           check_accels(cfg->accels, errp) &&
           parse_mon_pairs(cfg, m->monitors, errp) &&
           parse_qmp_options(cfg, m->monitors, errp) &&
           (!cfg->name || apply_name(cfg->name, errp)) &&
           create_netdevs(cfg, errp);
}

static bool create_devices(const Config *cfg, SpaprMachineState *spapr,
                           GError **errp)
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

/* After the devices, which the guests name; the models open their
 * devices here, as a guest's drivers do at boot. */
static bool create_guests(const Config *cfg, SpaprMachineState *spapr,
                          GError **errp)
{
    if (cfg->guests->len && cfg->incoming) {
        g_set_error(errp, ILLAN_ERROR, 0, "-guest cannot be combined with "
                    "-incoming: a built-in guest's state does not migrate");
        return false;
    }
    for (guint i = 0; i < cfg->guests->len; i++) {
        const char *arg = g_ptr_array_index(cfg->guests, i);

        if (!guest_add(spapr, arg, errp)) {
            g_prefix_error(errp, "-guest %s: ", arg);
            return false;
        }
    }
    return true;
}

static bool build_machine(const Config *cfg, Machine *m, bool *exit_now,
                          GError **errp)
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
    if (!check_options(cfg, m, &mopts, errp)) {
        goto out;
    }
    m->spapr = spapr_machine_new(mc, &mopts, errp);
    if (!m->spapr) {
        g_prefix_error(errp, "-m %s: ", cfg->mem ? cfg->mem : "256M");
        goto out;
    }
    if (!create_devices(cfg, m->spapr, errp)) {
        goto out;
    }
    ok = spapr_machine_done(m->spapr, exit_now, errp);
    if (!ok) {
        g_prefix_error(errp, "-machine %s: ", cfg->machine);
    }
out:
    g_free((char *)mopts.dumpdtb);
    return ok;
}

/* -qtest-log FILE|none; the default is stderr. */
static bool open_qtest_log(const char *arg, FILE **log, GError **errp)
{
    *log = stderr;
    if (!arg) {
        return true;
    }
    *log = strcmp(arg, "none") ? fopen(arg, "w") : NULL;
    if (strcmp(arg, "none") && !*log) {
        g_set_error(errp, ILLAN_ERROR, 0, "-qtest-log %s: %s", arg,
                    g_strerror(errno));
        return false;
    }
    return true;
}

static bool run(const Config *cfg, Machine *m, GError **errp)
{
    bool exit_now = false;
    FILE *log;

    if (!build_machine(cfg, m, &exit_now, errp)) {
        return false;
    }
    if (exit_now) {
        return true;
    }
    m->loop = g_main_loop_new(NULL, FALSE);
    runstate_set_handlers(&(RunstateHandlers){ reset_machine, quit_main_loop,
                                               m });
    /* Before any client can see us, so a signal never finds us without
     * a handler. */
    g_unix_signal_add(SIGTERM, on_quit_signal, m);
    g_unix_signal_add(SIGINT, on_quit_signal, m);
    spapr_machine_set_current(m->spapr);
    qmp_events_subscribe();
    migration_set_machine(spapr_ram(m->spapr), spapr_machine_type(m->spapr));
    if (!start_monitors(m->monitors, errp)) {
        return false;
    }
    if (cfg->qtest) {
        if (!open_qtest_log(cfg->qtest_log, &log, errp)) {
            return false;
        }
        m->qtest = qtest_server_start(cfg->qtest, log, m->spapr,
                                      on_qtest_closed, m, errp);
        if (!m->qtest) {
            g_prefix_error(errp, "-qtest %s: ", cfg->qtest);
            return false;
        }
    }
    spapr_machine_reset(m->spapr);
    if (!create_guests(cfg, m->spapr, errp) || !guest_start_all(errp)) {
        return false;
    }
    runstate_set(cfg->start_paused ? RUN_STATE_PRELAUNCH : RUN_STATE_RUNNING);
    if (cfg->incoming &&
        !migration_incoming_start(cfg->incoming, !cfg->start_paused, errp)) {
        g_prefix_error(errp, "-incoming %s: ", cfg->incoming);
        return false;
    }
    g_main_loop_run(m->loop);
    return true;
}

int main(int argc, char **argv)
{
    Config cfg = {
        .devices = g_ptr_array_new(), .netdevs = g_ptr_array_new(),
        .chardevs = g_ptr_array_new(), .mons = g_ptr_array_new(),
        .qmps = g_ptr_array_new(),
        .accels = g_ptr_array_new(), .displays = g_ptr_array_new(),
        .audios = g_ptr_array_new(), .guests = g_ptr_array_new(),
    };
    Machine m = { .monitors = g_ptr_array_new_with_free_func(
                      monitor_spec_free) };
    g_autoptr(GError) err = NULL;
    /* A client that hangs up must not kill us mid-reply. */
    signal(SIGPIPE, SIG_IGN);
    main_loop_init();
    if (parse_argv(&cfg, argc, argv, &err)) {
        run(&cfg, &m, &err);
    }
    if (!err) {
        err = migration_take_fatal_error();
    }
    /*
     * Every state but running holds the threads parked, so nothing runs
     * now; they leave the pause one by one and are joined: the vCPUs,
     * then the backends' I/O threads.  What they posted runs before the
     * monitor goes.
     */
    if (runstate_is_running()) {
        runstate_set(RUN_STATE_SHUTDOWN);
    }
    guest_stop_all();
    main_loop_cleanup();
    net_cleanup();
    guest_cleanup();
    qmp_cleanup();
    qmp_events_unsubscribe();
    spapr_machine_set_current(NULL);
    migration_cleanup();
    migration_set_machine(NULL, NULL);
    qtest_server_free(m.qtest);
    spapr_machine_free(m.spapr);
    g_ptr_array_free(m.monitors, TRUE);
    if (m.loop) {
        g_main_loop_unref(m.loop);
    }
    config_free(&cfg);
    if (err) {
        fprintf(stderr, "illan: %s\n", err->message);
        return 1;
    }
    return 0;
}
