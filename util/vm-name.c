/* The guest's name (qemu/vm-name.h): set while the command line is read,
 * read by the monitor afterwards, both on the main thread. */
#include "qemu/vm-name.h"

#include <glib.h>

static char *vm_name;

void qemu_set_vm_name(const char *name)
{
    g_free(vm_name);
    vm_name = g_strdup(name);
}

const char *qemu_get_vm_name(void)
{
    return vm_name;
}
