/* The machine-type registry behind -M TYPE and -M help. */
#include "hw/boards.h"

#include <stdio.h>
#include <string.h>

static GPtrArray *machine_classes;

void machine_class_register(const MachineClass *mc)
{
    if (!machine_classes) {
        machine_classes = g_ptr_array_new();
    }
    g_ptr_array_add(machine_classes, (gpointer)mc);
}

const MachineClass *machine_class_find(const char *name)
{
    for (guint i = 0; machine_classes && i < machine_classes->len; i++) {
        const MachineClass *mc = g_ptr_array_index(machine_classes, i);

        if (name ? !strcmp(mc->name, name) || !g_strcmp0(mc->alias, name)
                 : mc->is_default) {
            return mc;
        }
    }
    return NULL;
}

bool machine_class_same(const char *a, const char *b)
{
    const MachineClass *mc = machine_class_find(a);

    return mc && mc == machine_class_find(b);
}

/* "pseries-10.1" is family "pseries", version 10.1; "none" has no
 * family.  Returns the length of the family name, 0 for none. */
static size_t machine_family(const char *name, unsigned *major,
                             unsigned *minor)
{
    const char *dash = strrchr(name, '-');

    if (!dash || sscanf(dash + 1, "%u.%u", major, minor) != 2) {
        return 0;
    }
    return dash - name;
}

/* Families first, by name; within one, newer versions first (10.1
 * before 9.2); then the standalone types by name. */
static gint compare_machines(gconstpointer a, gconstpointer b)
{
    const char *x = (*(const MachineClass *const *)a)->name;
    const char *y = (*(const MachineClass *const *)b)->name;
    unsigned xmaj = 0, xmin = 0, ymaj = 0, ymin = 0;
    size_t xf = machine_family(x, &xmaj, &xmin);
    size_t yf = machine_family(y, &ymaj, &ymin);
    int c;

    if (!xf != !yf) {
        return xf ? -1 : 1;
    }
    if (!xf) {
        return strcmp(x, y);
    }
    c = strncmp(x, y, MIN(xf, yf));
    if (c || xf != yf) {
        return c ? c : (xf < yf ? -1 : 1);
    }
    if (xmaj != ymaj) {
        return xmaj > ymaj ? -1 : 1;
    }
    return xmin == ymin ? 0 : xmin > ymin ? -1 : 1;
}

void machine_class_foreach(void (*fn)(const MachineClass *mc, void *opaque),
                           void *opaque)
{
    if (!machine_classes) {
        return;
    }
    g_ptr_array_sort(machine_classes, compare_machines);
    for (guint i = 0; i < machine_classes->len; i++) {
        fn(g_ptr_array_index(machine_classes, i), opaque);
    }
}

static void print_machine(const MachineClass *mc, void *opaque)
{
    (void)opaque;
    if (mc->alias) {
        printf("%-20s %s (alias of %s)\n", mc->alias, mc->desc, mc->name);
    }
    printf("%-20s %s%s\n", mc->name, mc->desc,
           mc->is_default ? " (default)" : "");
}

void machine_class_print_list(void)
{
    printf("Supported machines are:\n");
    machine_class_foreach(print_machine, NULL);
}
