/*
 * The command line's option parser and the validators behind -M, -m,
 * -global, -netdev and -device, fed an input of lines "-OPTION ARG".
 * The machine and its devices are built as main() builds them
 * (machine_init() and machine_init_devices()); netdevs stop at their
 * checks (net_netdev_check()) and get a backend that opens nothing, so
 * no socket is opened and no XDP program loaded, whatever the input
 * says.  -M ...,dumpdtb=FILE would write a file: such lines are skipped.
 */
#include "fuzz-machine.h"
#include "system/cmdline.h"
#include "system/machine-init.h"

#include <stdio.h>
#include <stdlib.h>

#define MAX_LINES   64

typedef struct Lines {
    const char *machine, *mem;
    GPtrArray *devices, *netdevs, *globals;
    GPtrArray *vectors;     /* the split input, which the above point into */
} Lines;

static bool no_other_options(void *opaque, GError **errp)
{
    (void)opaque, (void)errp;
    return true;
}

static void split(Lines *l, char *text)
{
    char **lines = g_strsplit(text, "\n", MAX_LINES + 1);

    for (unsigned i = 0; lines[i] && i < MAX_LINES; i++) {
        char *arg = strchr(lines[i], ' ');
        const char *opt = lines[i];

        if (!arg) {
            continue;
        }
        *arg++ = '\0';
        if (!strcmp(opt, "-M") || !strcmp(opt, "-machine")) {
            if (!strstr(arg, "dumpdtb")) {
                l->machine = arg;
            }
        } else if (!strcmp(opt, "-m")) {
            l->mem = arg;
        } else if (!strcmp(opt, "-device")) {
            g_ptr_array_add(l->devices, arg);
        } else if (!strcmp(opt, "-netdev")) {
            g_ptr_array_add(l->netdevs, arg);
        } else if (!strcmp(opt, "-global")) {
            g_ptr_array_add(l->globals, arg);
        }
    }
    g_ptr_array_add(l->vectors, lines);
}

/*
 * -netdev as create_netdevs() takes it, up to the open.  Help requests
 * go to machine_init() in @help: it answers them and, having printed,
 * stops before it would create any netdev.
 */
static void check_netdevs(GPtrArray *netdevs, GPtrArray *help)
{
    for (guint i = 0; i < netdevs->len; i++) {
        const char *arg = g_ptr_array_index(netdevs, i);
        GError *err = NULL;
        QemuOpts *opts = NULL;
        bool ok;

        if (!strcmp(arg, "help") || !strcmp(arg, "?")) {
            g_ptr_array_add(help, (gpointer)arg);
            continue;
        }
        opts = cmdline_parse_opt("netdev", arg, "type", NULL, &err);
        ok = opts != NULL;
        if (ok && qemu_opts_wants_help(opts)) {
            g_ptr_array_add(help, (gpointer)arg);
        } else if (ok) {
            ok = net_netdev_check(opts, &err);
            if (ok) {
                net_backend_new(qemu_opt_get(opts, "id"), &fuzz_sink_ops, NULL);
            }
        }
        fuzz_check(ok == (err == NULL), "-netdev: refused without an error, "
                   "or accepted with one");
        g_clear_error(&err);
        qemu_opts_free(opts);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* Help requests print; the fuzzer's own output is on stderr. */
    fuzz_check(freopen("/dev/null", "w", stdout) != NULL, "/dev/null");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = g_strndup((const char *)data, size);
    Lines l = { .machine = "pseries", .devices = g_ptr_array_new(),
                .netdevs = g_ptr_array_new(), .globals = g_ptr_array_new(),
                .vectors = g_ptr_array_new_with_free_func(
                    (GDestroyNotify)g_strfreev) };
    GPtrArray *empty = g_ptr_array_new(), *help = g_ptr_array_new();
    SpaprMachineState *spapr = NULL;
    bool exit_now = false, ok;
    GError *err = NULL;

    split(&l, text);
    check_netdevs(l.netdevs, help);
    {
        MachineInitConfig cfg = {
            .machine = l.machine, .mem = l.mem, .devices = l.devices,
            .netdevs = help, .guests = empty, .globals = l.globals,
            .check_other_options = no_other_options,
        };

        ok = machine_init(&cfg, &spapr, &exit_now, &err);
        if (ok && !exit_now) {
            ok = machine_init_devices(&cfg, spapr, &exit_now, &err);
        }
        if (ok && !exit_now) {
            spapr_machine_reset(spapr);
        }
    }
    fuzz_check(ok == (err == NULL), ok ? "accepted with an error"
                                       : "refused without an error");
    g_clear_error(&err);
    if (spapr) {
        spapr_machine_free(spapr);
    }
    net_cleanup();
    g_ptr_array_free(l.devices, TRUE);
    g_ptr_array_free(l.netdevs, TRUE);
    g_ptr_array_free(l.globals, TRUE);
    g_ptr_array_free(l.vectors, TRUE);
    g_ptr_array_free(empty, TRUE);
    g_ptr_array_free(help, TRUE);
    g_free(text);
    return 0;
}
