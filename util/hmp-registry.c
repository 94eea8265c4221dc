/*
 * The HMP command registry (include/qemu/hmp-registry.h): filled by
 * constructors before main() runs, and read only after.
 */
#include "qemu/hmp-registry.h"

#include <string.h>

static GPtrArray *commands;     /* const HmpCommand *, not owned */

static gint by_name(gconstpointer a, gconstpointer b)
{
    const HmpCommand *x = *(const HmpCommand *const *)a;
    const HmpCommand *y = *(const HmpCommand *const *)b;

    return strcmp(x->name, y->name);
}

void hmp_register_commands(const HmpCommand *cmds, size_t n)
{
    if (!commands) {
        commands = g_ptr_array_new();
    }
    for (size_t i = 0; i < n; i++) {
        g_assert(!hmp_find_command(cmds[i].name));
        g_ptr_array_add(commands, (gpointer)&cmds[i]);
    }
    g_ptr_array_sort(commands, by_name);
}

const HmpCommand *hmp_find_command(const char *name)
{
    for (guint i = 0; commands && i < commands->len; i++) {
        const HmpCommand *cmd = g_ptr_array_index(commands, i);

        if (!strcmp(cmd->name, name)) {
            return cmd;
        }
    }
    return NULL;
}

void hmp_foreach_command(void (*fn)(const HmpCommand *cmd, void *opaque),
                         void *opaque)
{
    for (guint i = 0; commands && i < commands->len; i++) {
        fn(g_ptr_array_index(commands, i), opaque);
    }
}
