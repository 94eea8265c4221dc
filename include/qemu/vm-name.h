/* The guest's name from -name, as query-name reports it. */
#ifndef QEMU_VM_NAME_H
#define QEMU_VM_NAME_H

/* Keeps a copy of @name; NULL forgets it.  Main thread. */
void qemu_set_vm_name(const char *name);
/* NULL when -name gave none. */
const char *qemu_get_vm_name(void);

#endif
