/*
 * PAPR hypercall numbers and return codes, shared by the machine and by
 * the test programs that act as its guest.
 */
#ifndef HW_PPC_HCALL_H
#define HW_PPC_HCALL_H

/* Return codes, as the guest sees them in r3 (64-bit two's complement). */
#define H_SUCCESS        0
#define H_BUSY           1
#define H_CONSTRAINED    4
#define H_HARDWARE      (-1)
#define H_FUNCTION      (-2)
#define H_PRIVILEGE     (-3)
#define H_PARAMETER     (-4)
#define H_NOT_FOUND     (-7)
#define H_DROPPED      (-12)
#define H_DEST_PARM    (-14)
#define H_RESOURCE     (-16)

/* Opcodes. */
#define H_GET_TCE                  0x1C
#define H_PUT_TCE                  0x20
#define H_VIO_SIGNAL               0x104
#define H_REGISTER_LOGICAL_LAN     0x114
#define H_FREE_LOGICAL_LAN         0x118
#define H_ADD_LOGICAL_LAN_BUFFER   0x11C
#define H_SEND_LOGICAL_LAN         0x120
#define H_MULTICAST_CTRL           0x130
#define H_STUFF_TCE                0x138
#define H_PUT_TCE_INDIRECT         0x13C
#define H_CHANGE_LOGICAL_LAN_MAC   0x14C
#define H_FREE_LOGICAL_LAN_BUFFER  0x1D4
#define H_ILLAN_ATTRIBUTES         0x244
#define H_ADD_LOGICAL_LAN_BUFFERS  0x248

#endif
