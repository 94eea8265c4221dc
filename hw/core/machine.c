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

void machine_class_foreach(void (*fn)(const MachineClass *mc, void *opaque),
                           void *opaque)
{
    for (guint i = 0; machine_classes && i < machine_classes->len; i++) {
        fn(g_ptr_array_index(machine_classes, i), opaque);
    }
}

/* Newest first, as QEMU lists versioned machines. */
static gint compare_machines(gconstpointer a, gconstpointer b)
{
    const MachineClass *x = *(const MachineClass *const *)a;
    const MachineClass *y = *(const MachineClass *const *)b;
    return strcmp(y->name, x->name);
}

void machine_class_print_list(void)
{
    printf("Supported machines are:\n");
    if (!machine_classes) {
        return;
    }
    g_ptr_array_sort(machine_classes, compare_machines);
    for (guint i = 0; i < machine_classes->len; i++) {
        const MachineClass *mc = g_ptr_array_index(machine_classes, i);

        if (mc->alias) {
            printf("%-20s %s (alias of %s)\n", mc->alias, mc->desc, mc->name);
        }
        printf("%-20s %s%s\n", mc->name, mc->desc,
               mc->is_default ? " (default)" : "");
    }
}
