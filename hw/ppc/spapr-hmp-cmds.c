/*
 * The pseries machine's HMP commands: info qtree (the VIO bus and its
 * devices with their properties), info mtree (guest RAM in the system
 * address space), and device_add, which lists device types and their
 * properties but adds nothing: the VIO bus takes no hotplugged device.
 */
#include "hw/ppc/spapr.h"
#include "hw/ppc/spapr_vio.h"
#include "qemu/hmp-registry.h"
#include "qemu/module.h"

#include <string.h>

static void print_prop(DeviceState *dev, const Property *p, GString *out)
{
    g_autofree char *v = device_get_prop(dev, p->name, NULL);
    guint64 n;

    switch (p->type) {
    case PROP_BOOL:
        g_string_append_printf(out, "    %s = %s\n", p->name,
                               strcmp(v, "on") ? "false" : "true");
        break;
    case PROP_INT32:
    case PROP_UINT32:
        n = g_ascii_strtoull(v, NULL, 0);
        g_string_append_printf(out, "    %s = %s (0x%" G_GINT64_MODIFIER
                               "x)\n", p->name, v, n);
        break;
    default:
        g_string_append_printf(out, "    %s = \"%s\"\n", p->name, v);
    }
}

static void print_device(SpaprVioDevice *vdev, void *opaque)
{
    DeviceState *dev = &vdev->qdev;
    GString *out = opaque;

    g_string_append_printf(out, "  dev: %s, id \"%s\"\n", dev->klass->name,
                           dev->id);
    for (const Property *p = dev->klass->props; p && p->name; p++) {
        print_prop(dev, p, out);
    }
}

static void hmp_info_qtree(const char *args, GString *out)
{
    SpaprMachineState *spapr = spapr_machine_current();

    (void)args;
    if (!spapr) {
        return;
    }
    g_string_append(out, "bus: spapr-vio\n  type " TYPE_SPAPR_VIO_BUS "\n");
    spapr_vio_bus_foreach(spapr_vio_bus(spapr), print_device, out);
}

static void hmp_info_mtree(const char *args, GString *out)
{
    SpaprMachineState *spapr = spapr_machine_current();
    uint64_t size = spapr ? guest_ram_size(spapr_ram(spapr)) : 0;

    (void)args;
    g_string_append(out, "address-space: memory\n"
                    "  0000000000000000-ffffffffffffffff (prio 0, i/o): "
                    "system\n");
    if (size) {
        g_string_append_printf(out, "    0000000000000000-%016"
                               G_GINT64_MODIFIER "x (prio 0, ram): "
                               "ppc_spapr.ram\n", size - 1);
    }
    g_string_append(out, "\n");
}

static void list_device_type(const DeviceClass *dc, void *opaque)
{
    GString *out = opaque;

    g_string_append_printf(out, "%s:\n", dc->category ? dc->category
                                                      : "Uncategorized");
    g_string_append_printf(out, "name \"%s\"", dc->name);
    if (dc->bus_type) {
        g_string_append_printf(out, ", bus %s", dc->bus_type);
    }
    if (dc->desc) {
        g_string_append_printf(out, ", desc \"%s\"", dc->desc);
    }
    g_string_append(out, "\n\n");
}

/* As -device DRIVER,help: each property with the default a new device
 * gets, machine-type globals included. */
static void list_device_props(const DeviceClass *dc, GString *out)
{
    DeviceState *probe = device_new(dc, NULL);

    g_string_append_printf(out, "%s options:\n", dc->name);
    for (const Property *p = dc->props; p && p->name; p++) {
        g_autofree char *lhs = g_strdup_printf("%s=<%s>", p->name,
                                               prop_type_name(p->type));
        g_autofree char *def = probe && p->defval ?
            device_get_prop(probe, p->name, NULL) : NULL;

        g_string_append_printf(out, "  %-28s - %s (default: %s)\n", lhs,
                               p->description, def ? def : "unset");
    }
    device_free(probe);
}

/* The driver name of "DRIVER[,...]", unquoted, with ",," as a comma. */
static char *driver_name(const char *args, bool *help)
{
    g_autofree char *arg = g_strdup(args);
    GString *name = g_string_new(NULL);
    size_t len = strlen(arg);
    const char *c;

    if (len >= 2 && arg[0] == '"' && arg[len - 1] == '"') {
        arg[len - 1] = '\0';
        memmove(arg, arg + 1, len - 1);
    }
    for (c = arg; *c && !(*c == ',' && c[1] != ','); c++) {
        g_string_append_c(name, *c);
        c += *c == ',';
    }
    *help = *c == ',' && (!strcmp(c + 1, "help") || !strcmp(c + 1, "?"));
    return g_string_free(name, false);
}

static void hmp_device_add(const char *args, GString *out)
{
    bool help;
    g_autofree char *name = driver_name(args, &help);
    const DeviceClass *dc;

    if (!strcmp(name, "help") || !strcmp(name, "?")) {
        device_class_foreach(list_device_type, out);
        return;
    }
    dc = device_class_find(name);
    if (!dc) {
        g_string_append_printf(out, "Error: '%s' is not a valid device "
                               "model name\n", name);
    } else if (help) {
        list_device_props(dc, out);
    } else {
        g_string_append(out, "Error: Bus 'spapr-vio' does not support "
                        "hotplugging\n");
    }
}

static const HmpCommand spapr_hmp_commands[] = {
    { "info qtree", "", "show device tree", hmp_info_qtree },
    { "info mtree", "[-f][-d][-o][-D]", "show memory tree", hmp_info_mtree },
    { "device_add", "driver[,prop=value][,...]", "add device, like -device "
      "on the command line", hmp_device_add },
};

static void spapr_hmp_commands_register(void)
{
    hmp_register_commands(spapr_hmp_commands,
                          G_N_ELEMENTS(spapr_hmp_commands));
}
illan_init(spapr_hmp_commands_register)
