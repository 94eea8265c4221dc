/*
 * The record markers of QEMU's migration stream (QEVM version 3), shared
 * by the writer and reader of the stream and by what carries its
 * sections.
 */
#ifndef MIGRATION_STREAM_FORMAT_H
#define MIGRATION_STREAM_FORMAT_H

#define QEMU_VM_FILE_MAGIC          0x5145564d      /* "QEVM" */
#define QEMU_VM_FILE_VERSION_COMPAT 0x00000002
#define QEMU_VM_FILE_VERSION        0x00000003
#define QEMU_VM_EOF                 0x00
#define QEMU_VM_SECTION_START       0x01
#define QEMU_VM_SECTION_PART        0x02
#define QEMU_VM_SECTION_END         0x03
#define QEMU_VM_SECTION_FULL        0x04
#define QEMU_VM_VMDESCRIPTION       0x06
#define QEMU_VM_CONFIGURATION       0x07
#define QEMU_VM_COMMAND             0x08
#define QEMU_VM_SECTION_FOOTER      0x7e
#define MIG_CMD_SWITCHOVER_START    0x0b

#endif
