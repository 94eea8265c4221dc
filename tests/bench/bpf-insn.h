/*
 * Shorthand for the few BPF instructions the benchmark tools' programs
 * use, so that a program reads as a list of operations, not of struct
 * initialisers.  Jump offsets count instructions after the jump.
 */
#ifndef TESTS_BENCH_BPF_INSN_H
#define TESTS_BENCH_BPF_INSN_H

#include <linux/bpf.h>

#define INSN_MOV_REG(dst, src) \
    { .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = (dst), .src_reg = (src) }
#define INSN_MOV_IMM(dst, k) \
    { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = (dst), .imm = (k) }
#define INSN_ALU_IMM(op, dst, k) \
    { .code = BPF_ALU64 | (op) | BPF_K, .dst_reg = (dst), .imm = (k) }
#define INSN_ALU_REG(op, dst, src) \
    { .code = BPF_ALU64 | (op) | BPF_X, .dst_reg = (dst), .src_reg = (src) }
#define INSN_LOAD(size, dst, src, offset) \
    { .code = BPF_LDX | BPF_MEM | (size), .dst_reg = (dst), .src_reg = (src), \
      .off = (offset) }
#define INSN_STORE(size, dst, offset, src) \
    { .code = BPF_STX | BPF_MEM | (size), .dst_reg = (dst), .src_reg = (src), \
      .off = (offset) }
#define INSN_STORE_IMM(size, dst, offset, k) \
    { .code = BPF_ST | BPF_MEM | (size), .dst_reg = (dst), .off = (offset), \
      .imm = (k) }
#define INSN_JUMP_IMM(op, dst, k, offset) \
    { .code = BPF_JMP | (op) | BPF_K, .dst_reg = (dst), .imm = (k), \
      .off = (offset) }
#define INSN_JUMP_REG(op, dst, src, offset) \
    { .code = BPF_JMP | (op) | BPF_X, .dst_reg = (dst), .src_reg = (src), \
      .off = (offset) }
#define INSN_CALL(helper) { .code = BPF_JMP | BPF_CALL, .imm = (helper) }
#define INSN_EXIT { .code = BPF_JMP | BPF_EXIT }
/* A map's address: two instruction slots, the map named by its fd. */
#define INSN_LOAD_MAP(dst, map_fd) \
    { .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = (dst), \
      .src_reg = BPF_PSEUDO_MAP_FD, .imm = (map_fd) }, { 0 }

#endif
