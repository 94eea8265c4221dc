/* The logical LAN's 64-bit buffer descriptor: control bits, a 24-bit
 * length and a 32-bit I/O address. */
#ifndef HW_NET_LLAN_BD_H
#define HW_NET_LLAN_BD_H

#include <stdint.h>

#define LLAN_BD_VALID           0x8000000000000000ULL
#define LLAN_BD_TOGGLE          0x4000000000000000ULL
#define LLAN_BD_LEN(bd)         ((uint32_t)((bd) >> 32) & 0xFFFFFF)
#define LLAN_BD_ADDR(bd)        ((bd) & 0xFFFFFFFFULL)
#define LLAN_BD(len, addr)      (LLAN_BD_VALID | (uint64_t)(len) << 32 | (addr))

#endif
