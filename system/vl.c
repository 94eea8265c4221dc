/*
 * main(): the QEMU-style command line, the main loop, signals and the
 * order of exit; the machine itself is built by system/machine-init.c.
 * Every error is one line naming the option, then exit status 1;
 * SIGTERM and SIGINT end the process cleanly with status 0.
 */
#include "guest/guest.h"
#include "hw/boards.h"
#include "hw/ppc/spapr.h"
#include "migration/migration.h"
#include "migration/savevm.h"
#include "monitor/qmp.h"
#include "net/announce.h"
#include "net/net.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/option.h"
#include "qemu/passed-fds.h"
#include "qemu/runstate.h"
#include "qemu/vm-name.h"
#include "hw/user-object.h"
#include "system/cmdline.h"
#include "system/machine-init.h"
#include "system/preconfig.h"
#include "system/process.h"
#include "system/qtest.h"
#include "trace/control.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <glib-unix.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

typedef struct Config {
    const char *machine;
    const char *mem;
    const char *qtest;
    const char *qtest_log;
    const char *name;
    const char *incoming;
    const char *dump_vmstate;
    const char *pidfile;
    const char *log_items;      /* -d */
    const char *log_file;       /* -D */
    const char *msg;
    bool start_paused;
    bool daemonize;
    bool preconfig;
    bool exit_with_parent;      /* from -run-with */
    GPtrArray *devices;
    GPtrArray *netdevs;
    GPtrArray *chardevs;
    GPtrArray *qmps;
    GPtrArray *mons;
    GPtrArray *accels;
    GPtrArray *displays;
    GPtrArray *audios;
    GPtrArray *guests;
    GPtrArray *globals;
    GPtrArray *run_withs;
    GPtrArray *vgas;
    GPtrArray *objects;
    GPtrArray *traces;
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
    { "chardev", "socket,id=ID,path=PATH|fd=N", "define a socket character device: connect to PATH (server=on: listen), or use inherited descriptor N", OPT_APPEND, CFG(chardevs) },
    { "mon", "chardev=ID,mode=control", "attach a QMP monitor to a character device", OPT_APPEND, CFG(mons) },
    { "qmp", "unix:PATH[,server=on][,wait=off]", "QMP monitor on a unix socket (server=on: listen)", OPT_APPEND, CFG(qmps) },
    { "display", "none", "no display (the only kind)", OPT_APPEND, CFG(displays) },
    { "vga", "none", "no video card (the only kind)", OPT_APPEND, CFG(vgas) },
    { "nographic", NULL, "accepted; does nothing: illan has no display and no serial console", OPT_IGNORE, 0 },
    { "audio", "none", "no audio (the only kind)", OPT_APPEND, CFG(audios) },
    { "guest", "ibmveth,dev=ID[,fwd=rxonly|txonly|macswap|tap,...]", "run a built-in guest model on a vCPU thread (-guest help, -guest ibmveth,help)", OPT_APPEND, CFG(guests) },
    { "accel", "qtest", "accelerator; repeat for a fallback list (only qtest exists)", OPT_APPEND, CFG(accels) },
    { "global", "DRIVER.PROP=VALUE", "default for a device property, applied after the machine type's (also driver=D,property=P,value=V)", OPT_APPEND, CFG(globals) },
    /* illan creates no default devices in any case. */
    { "nodefaults", NULL, "accepted; does nothing: illan creates no default devices", OPT_IGNORE, 0 },
    { "no-user-config", NULL, "accepted; does nothing: illan reads no configuration file", OPT_IGNORE, 0 },
    { "preconfig", NULL, "serve QMP before the devices are created, until QMP x-exit-preconfig", OPT_FLAG, CFG(preconfig) },
    { "run-with", "exit-with-parent=on|off", "exit-with-parent=on: end (as on SIGTERM) when the parent process ends", OPT_APPEND, CFG(run_withs) },
    { "daemonize", NULL, "run in the background once the monitors and qtest are up", OPT_FLAG, CFG(daemonize) },
    { "pidfile", "FILE", "write the process id to FILE, locked, removed at exit", OPT_SET, CFG(pidfile) },
    { "incoming", "URI|defer", "wait for a migration stream (file:PATH, unix:PATH, fd:N, exec:CMD), or for QMP migrate-incoming", OPT_SET, CFG(incoming) },
    { "dump-vmstate", "FILE", "write the device state descriptions (QEMU's JSON) to FILE and exit", OPT_SET, CFG(dump_vmstate) },
    { "S", NULL, "do not start the machine (run state prelaunch)", OPT_FLAG, CFG(start_paused) },
    { "object", "memory-backend-ram,id=ID,size=SIZE", "create an object, listed under /objects (nothing uses it)", OPT_APPEND, CFG(objects) },
    { "name", "NAME[,process=PNAME]", "name the guest; process= also names the process", OPT_SET, CFG(name) },
    { "trace", "[enable=]PATTERN|events=FILE|file=FILE|help", "trace events (-trace help lists them; docs/system/tracing.md)", OPT_APPEND, CFG(traces) },
    { "d", "ITEM[,...]", "log the items (-d help lists them; guest_errors: hcalls refused for the guest's mistakes)", OPT_SET, CFG(log_items) },
    { "D", "FILE", "write the log to FILE, emptied first, instead of stderr", OPT_SET, CFG(log_file) },
    { "msg", "timestamp=on|off", "timestamp=on: trace lines start with the thread id and the time (guest-name= is accepted and ignored)", OPT_SET, CFG(msg) },
    { "version", NULL, "print the version and exit", OPT_VERSION, 0 },
    { "h", NULL, "print this help and exit", OPT_HELP, 0 },
    { "help", NULL, "print this help and exit", OPT_HELP, 0 },
};

typedef struct Machine {
    const Config *cfg;
    const MachineInitConfig *mcfg;
    SpaprMachineState *spapr;
    GError *late_error;     /* finishing the machine at x-exit-preconfig */
    bool exit_now;          /* dumpdtb wrote the tree: nothing to run */
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
        printf("  %-40s %s\n", lhs, o->help);
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
                           cfg->audios, cfg->guests, cfg->globals,
                           cfg->run_withs, cfg->vgas,
                           cfg->objects, cfg->traces };

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

/* Options that only accept "none", kept for QEMU command-line parity. */
static bool check_none_only(GPtrArray *args, const char *opt, GError **errp)
{
    for (guint i = 0; i < args->len; i++) {
        const char *arg = g_ptr_array_index(args, i);
        g_autoptr(QemuOpts) opts = cmdline_parse_opt(opt, arg, "type", NULL,
                                                     errp);
        const char *type;

        if (!opts) {
            return false;
        }
        type = qemu_opt_get(opts, "type");
        if (!type) {
            type = qemu_opt_get(opts, "driver");
        }
        if (qemu_opts_count(opts) != 1 || g_strcmp0(type, "none")) {
            return cmdline_opt_error(errp, opt, arg, "only '%s' is supported",
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
        g_autoptr(QemuOpts) opts = cmdline_parse_opt("accel", arg, "accel",
                                                     known, errp);
        if (!opts) {
            return false;
        }
        found |= !g_strcmp0(qemu_opt_get(opts, "accel"), "qtest");
    }
    if (accels->len && !found) {
        const char *last = g_ptr_array_index(accels, accels->len - 1);
        return cmdline_opt_error(errp, "accel", last,
                                 "no accelerator in the list is available: "
                                 "illan has no vCPU; add %s", "-accel qtest");
    }
    return true;
}

/* Where a QMP monitor lives: listen on a path, or connect to one. */
typedef struct MonitorSpec {
    char *option;           /* for errors: "-qmp ARG" or "-mon ARG" */
    char *path;
    int fd;                 /* -chardev socket,fd=N; -1 for a path */
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
    spec->fd = -1;
    return true;
}

/* fd=N: a descriptor the parent left open for us (QEMU's Python
 * QEMUMachine passes one end of a socketpair). */
static bool parse_fd(const char *arg, const QemuOpts *o, MonitorSpec *spec,
                     GError **errp)
{
    uint64_t fd;

    if (!qemu_parse_uint64("fd", qemu_opt_get(o, "fd"), &fd, errp) ||
        fd > INT_MAX) {
        g_clear_error(errp);
        return cmdline_opt_error(errp, "chardev", arg, "%s", "fd= expects a "
                                 "descriptor number");
    }
    if (!passed_fds_take(fd)) {
        return cmdline_opt_error(errp, "chardev", arg, "descriptor is not "
                                 "open: %s", g_strerror(errno));
    }
    spec->fd = fd;
    return true;
}

/* -chardev socket,... + -mon chardev=...,mode=control pairs. */
static bool parse_mon_pairs(const Config *cfg, GPtrArray *specs,
                            GError **errp)
{
    static const char *const ck[] = { "backend", "id", "path", "fd",
                                      "server", "wait", NULL };
    static const char *const mk[] = { "chardev", "mode", "pretty", NULL };
    g_autoptr(GHashTable) ids = g_hash_table_new_full(
        g_str_hash, g_str_equal, g_free, monitor_spec_free);

    for (guint i = 0; i < cfg->chardevs->len; i++) {
        const char *arg = g_ptr_array_index(cfg->chardevs, i);
        g_autoptr(QemuOpts) o = cmdline_parse_opt("chardev", arg, "backend",
                                                  ck, errp);
        MonitorSpec *spec;
        const char *id;

        if (!o) {
            return false;
        }
        if (g_strcmp0(qemu_opt_get(o, "backend"), "socket")) {
            return cmdline_opt_error(errp, "chardev", arg,
                                     "backend '%s' is not supported: use "
                                     "socket", qemu_opt_get(o, "backend"));
        }
        id = qemu_opt_get(o, "id");
        if (!id || !qemu_opt_get(o, "path") == !qemu_opt_get(o, "fd")) {
            return cmdline_opt_error(errp, "chardev", arg, "%s",
                                     "socket needs id=ID and one of path=PATH "
                                     "and fd=N");
        }
        if (g_hash_table_contains(ids, id)) {
            return cmdline_opt_error(errp, "chardev", arg,
                                     "Duplicate ID '%s'", id);
        }
        spec = g_new0(MonitorSpec, 1);
        g_hash_table_insert(ids, g_strdup(id), spec);
        if (!socket_spec("chardev", arg, o, spec, errp)) {
            return false;
        }
        if (qemu_opt_get(o, "fd") && !parse_fd(arg, o, spec, errp)) {
            return false;
        }
    }
    for (guint i = 0; i < cfg->mons->len; i++) {
        const char *arg = g_ptr_array_index(cfg->mons, i);
        g_autoptr(QemuOpts) o = cmdline_parse_opt("mon", arg, "chardev", mk,
                                                  errp);
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
            return cmdline_opt_error(errp, "mon", arg,
                                     "chardev '%s' is not defined by -chardev",
                                     chardev ? chardev : "");
        }
        if (!spec) {
            return cmdline_opt_error(errp, "mon", arg,
                                     "chardev '%s' already has a monitor",
                                     chardev);
        }
        if (g_strcmp0(mode, "control")) {
            return cmdline_opt_error(errp, "mon", arg,
                                     "mode '%s' is not supported: use "
                                     "mode=control", mode ? mode : "readline");
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
            return cmdline_opt_error(errp, "qmp", arg,
                                     "'%s' is not a QMP channel: use "
                                     "unix:PATH", arg);
        }
        o = cmdline_parse_opt("qmp", arg + strlen("unix:"), "path", known,
                              errp);
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

        bool ok = spec->fd >= 0 ? qmp_attach_fd(spec->fd, errp) :
                  spec->server ? qmp_listen(spec->path, spec->wait, errp) :
                  qmp_connect(spec->path, errp);

        if (!ok) {
            g_prefix_error(errp, "%s: ", spec->option);
            return false;
        }
    }
    return true;
}

static bool apply_name(const char *arg, GError **errp)
{
    static const char *const known[] = { "guest", "process", "debug-threads",
                                         NULL };
    g_autoptr(QemuOpts) opts = cmdline_parse_opt("name", arg, "guest", known,
                                                 errp);
    const char *process;

    if (!opts) {
        return false;
    }
    qemu_set_vm_name(qemu_opt_get(opts, "guest"));
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
/* A reset reboots a guest taken over from QEMU; illan cannot reset the
 * CPU and firmware state it carried for it, so that state goes. */
static void reset_machine(void *opaque)
{
    spapr_machine_reset(((Machine *)opaque)->spapr);
    guest_machine_reset();
    qemu_loadvm_forget_carried();
}

static void quit_main_loop(void *opaque)
{
    g_main_loop_quit(((Machine *)opaque)->loop);
}

static bool apply_objects(GPtrArray *objects, GError **errp)
{
    for (guint i = 0; objects && i < objects->len; i++) {
        const char *arg = g_ptr_array_index(objects, i);

        if (!user_object_add_opts(arg, errp)) {
            g_prefix_error(errp, "-object %s: ", arg);
            return false;
        }
    }
    return true;
}

/* Every option that is not the machine's, checked before anything is
 * built (machine_init() calls this at that point). */
static bool check_other_options(void *opaque, GError **errp)
{
    const Machine *m = opaque;
    const Config *cfg = m->cfg;

    return check_none_only(cfg->displays, "display", errp) &&
           check_none_only(cfg->vgas, "vga", errp) &&
           check_none_only(cfg->audios, "audio", errp) &&
           check_accels(cfg->accels, errp) &&
           parse_mon_pairs(cfg, m->monitors, errp) &&
           parse_qmp_options(cfg, m->monitors, errp) &&
           (!cfg->name || apply_name(cfg->name, errp)) &&
           apply_objects(cfg->objects, errp);
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

/* The devices, the first reset, the guests and the run state: at once,
 * or when QMP x-exit-preconfig ends --preconfig. */
static bool finish_machine(Machine *m, GError **errp)
{
    const Config *cfg = m->cfg;

    if (!machine_init_devices(m->mcfg, m->spapr, &m->exit_now, errp)) {
        return false;
    }
    if (m->exit_now) {
        return true;
    }
    spapr_machine_reset(m->spapr);
    if (!machine_init_guests(m->mcfg, m->spapr, errp) ||
        !guest_start_all(errp)) {
        return false;
    }
    /* From prelaunch; RESUME reaches clients that are already talking
     * (--preconfig), as in QEMU. */
    if (!cfg->start_paused && !cfg->incoming) {
        vm_start();
    }
    if (cfg->incoming &&
        !migration_incoming_start(cfg->incoming, !cfg->start_paused, errp)) {
        g_prefix_error(errp, "-incoming %s: ", cfg->incoming);
        return false;
    }
    return true;
}

/* x-exit-preconfig: an error ends the run, as it would have on the
 * command line; the client gets it too. */
static bool exit_preconfig(void *opaque, GError **errp)
{
    Machine *m = opaque;

    if (!finish_machine(m, errp)) {
        m->late_error = g_error_copy(*errp);
        g_main_loop_quit(m->loop);
        return false;
    }
    if (m->exit_now) {
        g_main_loop_quit(m->loop);
    }
    return true;
}

/* As QEMU does once a stream has loaded: every NIC announces its MAC,
 * so that switches send the guest's frames here.  Only the destination
 * completes while still in inmigrate. */
static void announce_after_incoming(MigrationStatus status, void *opaque)
{
    (void)opaque;
    if (status == MIGRATION_STATUS_COMPLETED &&
        runstate_get() == RUN_STATE_INMIGRATE) {
        main_loop_run_or_post(announce_after_migration, NULL);
    }
}

/*
 * -incoming URI without -M or -m: the stream says which machine and how
 * much RAM, so its beginning is read before the machine is made (see
 * docs/system/migration.md, "Taking a guest over from QEMU").  Not with
 * -qtest: its client speaks first, and waits for us to connect.
 */
static bool arg_wants_help(const char *arg)
{
    g_autoptr(QemuOpts) opts = arg ? cmdline_parse_opt("", arg, "type", NULL,
                                                       NULL) : NULL;

    return opts && qemu_opts_wants_help(opts);
}

static bool args_want_help(const GPtrArray *args)
{
    for (guint i = 0; args && i < args->len; i++) {
        if (arg_wants_help(g_ptr_array_index(args, i))) {
            return true;
        }
    }
    return false;
}

/* Whether to wait for the stream before making the machine: not when
 * something must happen first (a client that speaks first, a parent
 * waiting for us to be up, QMP before the devices) or instead (help,
 * -dump-vmstate). */
static bool may_derive(const Config *cfg)
{
    return cfg->incoming && strcmp(cfg->incoming, "defer") &&
           (!cfg->machine || !cfg->mem) && !cfg->qtest && !cfg->daemonize &&
           !cfg->preconfig && !cfg->dump_vmstate &&
           !arg_wants_help(cfg->machine) && !arg_wants_help(cfg->mem) &&
           !args_want_help(cfg->devices) && !args_want_help(cfg->netdevs) &&
           !args_want_help(cfg->globals) && !args_want_help(cfg->guests);
}

/* *@interrupted: SIGINT or SIGTERM came while waiting; the run ends as
 * it would have once started. */
static bool derive_from_stream(const Config *cfg, char **machine, char **mem,
                               bool *interrupted, GError **errp)
{
    g_autofree char *type = NULL;
    uint64_t ram_size = 0;

    if (!may_derive(cfg)) {
        return true;
    }
    if (!migration_incoming_peek(cfg->incoming, &type, &ram_size,
                                 interrupted, errp)) {
        g_prefix_error(errp, "-incoming %s: ", cfg->incoming);
        return false;
    }
    if (*interrupted) {
        return true;
    }
    if (!cfg->machine && type) {
        if (!machine_class_find(type)) {
            g_set_error(errp, ILLAN_ERROR, 0, "-incoming %s: the stream is "
                        "from machine type '%s', which illan does not have "
                        "(-M help lists them)", cfg->incoming, type);
            return false;
        }
        *machine = g_steal_pointer(&type);
    }
    if (!cfg->mem && ram_size) {
        *mem = g_strdup_printf("%" G_GUINT64_FORMAT "B", ram_size);
    }
    return true;
}

/* An error in what the stream said is not in an option the user gave. */
static void prefix_derived(GError **errp, const char *machine,
                           const char *mem)
{
    if (machine && mem) {
        g_prefix_error(errp, "with the stream's -M %s -m %s: ", machine, mem);
    } else if (machine || mem) {
        g_prefix_error(errp, "with the stream's %s %s: ", machine ? "-M" : "-m",
                       machine ? machine : mem);
    }
}

static bool run(const Config *cfg, Machine *m, GError **errp)
{
    g_autofree char *derived_machine = NULL, *derived_mem = NULL;
    MachineInitConfig mcfg = {
        .machine = cfg->machine, .mem = cfg->mem, .incoming = cfg->incoming,
        .dump_vmstate = cfg->dump_vmstate, .devices = cfg->devices,
        .netdevs = cfg->netdevs, .guests = cfg->guests,
        .globals = cfg->globals,
        .check_other_options = check_other_options, .opaque = m,
    };
    bool exit_now = false;
    FILE *log;

    m->cfg = cfg;
    m->mcfg = &mcfg;
    /* Before anything can take long or a client can see us (the wait
     * for a stream below among them), so that a signal, the parent's
     * death too, always ends us cleanly. */
    if (cfg->exit_with_parent && !process_exit_with_parent(errp)) {
        g_prefix_error(errp, "-run-with exit-with-parent=on: ");
        return false;
    }
    if (!derive_from_stream(cfg, &derived_machine, &derived_mem,
                            &exit_now, errp) || exit_now) {
        return !*errp;
    }
    mcfg.machine = derived_machine ? derived_machine : cfg->machine;
    mcfg.mem = derived_mem ? derived_mem : cfg->mem;
    g_unix_signal_add(SIGTERM, on_quit_signal, m);
    g_unix_signal_add(SIGINT, on_quit_signal, m);
    if (!machine_init(&mcfg, &m->spapr, &exit_now, errp)) {
        prefix_derived(errp, derived_machine, derived_mem);
        return false;
    }
    if (exit_now) {
        return true;
    }
    m->loop = g_main_loop_new(NULL, FALSE);
    runstate_set_handlers(&(RunstateHandlers){ reset_machine, quit_main_loop,
                                               m });
    spapr_machine_set_current(m->spapr);
    qmp_events_subscribe();
    migration_set_machine(spapr_ram(m->spapr), spapr_machine_type(m->spapr));
    qemu_loadvm_set_machine_matcher(machine_class_same);
    qemu_loadvm_set_carried_check(spapr_check_carried, m->spapr);
    migration_add_notifier(announce_after_incoming, NULL);
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
    if (cfg->preconfig) {
        preconfig_enter(exit_preconfig, m);
    } else if (!finish_machine(m, errp) || m->exit_now) {
        return !*errp;
    }
    process_daemon_ready();
    g_main_loop_run(m->loop);
    return true;
}

/* -run-with: of QEMU's keys, only exit-with-parent means anything here. */
static bool parse_run_with(Config *cfg, GError **errp)
{
    for (guint i = 0; i < cfg->run_withs->len; i++) {
        const char *arg = g_ptr_array_index(cfg->run_withs, i);
        g_autoptr(QemuOpts) o = cmdline_parse_opt("run-with", arg, NULL, NULL,
                                                  errp);

        if (!o) {
            return false;
        }
        for (guint k = 0; k < qemu_opts_count(o); k++) {
            const char *key = qemu_opts_key(o, k);

            if (strcmp(key, "exit-with-parent")) {
                return cmdline_opt_error(errp, "run-with", arg, "'%s' is not "
                                         "supported: illan has only "
                                         "exit-with-parent=on|off", key);
            }
            if (!qemu_parse_bool(key, qemu_opts_value(o, k),
                                 &cfg->exit_with_parent, errp)) {
                g_prefix_error(errp, "-run-with %s: ", arg);
                return false;
            }
        }
    }
    return true;
}

/* -trace, in order, then -d's trace: items (as QEMU, so these win),
 * before anything a trace event reports on is made; as parse_argv()
 * does, false with *errp NULL after printing the list. */
static bool apply_traces(const Config *cfg, GError **errp)
{
    g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *file = NULL;
    bool help = false;

    /* As QEMU, the first help ends the run. */
    for (guint i = 0; i < cfg->traces->len && !help; i++) {
        const char *arg = g_ptr_array_index(cfg->traces, i);

        if (!trace_opt_parse(arg, &file, warnings, &help, errp)) {
            return false;
        }
    }
    if (cfg->log_items && !help) {
        qemu_log_enable_trace_items(cfg->log_items, "illan: ", warnings,
                                    &help);
    }
    for (guint i = 0; i < warnings->len; i++) {
        fprintf(stderr, "%s\n", (char *)g_ptr_array_index(warnings, i));
    }
    if (help) {
        return false;
    }
    if (file && !qemu_log_set_file(file, true, errp)) {
        g_prefix_error(errp, "-trace file=%s: ", file);
        return false;
    }
    return true;
}

/* -d's mask, -D and -msg, first, so that everything after may log;
 * *exit_now after -d help. */
static bool setup_log(const Config *cfg, bool *exit_now, GError **errp)
{
    /* guest-name is QEMU's, accepted: illan prints no guest name. */
    static const char *const known[] = { "timestamp", "guest-name", NULL };
    g_autoptr(QemuOpts) msg = NULL;
    const char *timestamp;
    bool on = false;

    *exit_now = false;
    if (cfg->msg) {
        msg = cmdline_parse_opt("msg", cfg->msg, NULL, known, errp);
        if (!msg) {
            return false;
        }
        timestamp = qemu_opt_get(msg, "timestamp");
        if (timestamp && !qemu_parse_bool("timestamp", timestamp, &on, errp)) {
            g_prefix_error(errp, "-msg %s: ", cfg->msg);
            return false;
        }
        qemu_log_set_timestamp(on);
    }
    if (cfg->log_items &&
        (!qemu_log_parse_items(cfg->log_items, exit_now, errp) || *exit_now)) {
        return !*errp;
    }
    if (cfg->log_file && !qemu_log_set_file(cfg->log_file, false, errp)) {
        g_prefix_error(errp, "-D %s: ", cfg->log_file);
        return false;
    }
    return true;
}

/* -daemonize and -pidfile, before anything is opened, so that the daemon
 * owns it all and the pid file names the daemon. */
static bool setup_process(Config *cfg, GError **errp)
{
    if (!parse_run_with(cfg, errp)) {
        return false;
    }
    if (cfg->daemonize && cfg->exit_with_parent) {
        g_set_error(errp, ILLAN_ERROR, 0, "-daemonize: cannot be combined "
                    "with -run-with exit-with-parent=on: the daemon outlives "
                    "its parent by design");
        return false;
    }
    if (cfg->daemonize && !process_daemonize(errp)) {
        g_prefix_error(errp, "-daemonize: ");
        return false;
    }
    if (cfg->pidfile && !process_pidfile_create(cfg->pidfile, errp)) {
        g_prefix_error(errp, "-pidfile %s: ", cfg->pidfile);
        return false;
    }
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
        .globals = g_ptr_array_new(), .run_withs = g_ptr_array_new(),
        .vgas = g_ptr_array_new(), .objects = g_ptr_array_new(),
        .traces = g_ptr_array_new(),
    };
    Machine m = { .monitors = g_ptr_array_new_with_free_func(
                      monitor_spec_free) };
    g_autoptr(GError) err = NULL;
    bool log_help = false;

    /* Before anything is opened: these are what fd:N may name. */
    passed_fds_record_inherited();
    process_note_parent();
    /* A client that hangs up must not kill us mid-reply. */
    signal(SIGPIPE, SIG_IGN);
    main_loop_init();
    if (parse_argv(&cfg, argc, argv, &err) &&
        setup_log(&cfg, &log_help, &err) && !log_help &&
        apply_traces(&cfg, &err) &&
        setup_process(&cfg, &err)) {
        run(&cfg, &m, &err);
    }
    if (!err) {
        err = g_steal_pointer(&m.late_error);
    }
    /* A stream still moving is cancelled or refused, its thread joined,
     * before anything it reads or writes goes away. */
    migration_shutdown();
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
    announce_cleanup();
    net_cleanup();
    guest_cleanup();
    qmp_cleanup();
    qmp_events_unsubscribe();
    spapr_machine_set_current(NULL);
    migration_cleanup();
    migration_set_machine(NULL, NULL);
    passed_fds_cleanup();
    qtest_server_free(m.qtest);
    spapr_machine_free(m.spapr);
    g_ptr_array_free(m.monitors, TRUE);
    if (m.loop) {
        g_main_loop_unref(m.loop);
    }
    config_free(&cfg);
    g_clear_error(&m.late_error);
    process_pidfile_remove();
    if (err) {
        fprintf(stderr, "illan: %s\n", err->message);
    }
    /* A daemon that never got ready: its parent exits with this status. */
    process_daemon_exit(err ? 1 : 0);
    return err ? 1 : 0;
}
