/* Registration of types and hcalls at program start, before main() runs. */
#ifndef QEMU_MODULE_H
#define QEMU_MODULE_H

#define illan_init(fn) \
    static void __attribute__((constructor)) fn##_ctor(void) { fn(); }

#endif
