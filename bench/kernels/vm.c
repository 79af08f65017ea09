/* A register bytecode interpreter (switch dispatch) running a loop program: for i in [0, n):
   s = (s * 31 + i % 7) ^ (i << 3); plus an inner countdown every 16th i. The program is built at
   run time into a mutable array so the compiler cannot specialize the interpreter to it.
   Returns the final s. */
#include <stdint.h>

enum { HALT, LOADI, MOV, ADD, SUB, MUL, REM, XOR, SHL, AND, JMP, JLT, JNZ, JZ };

struct insn { uint8_t op, a, b, c; int32_t imm; };

static struct insn prog[64];
static int32_t regs[16];

static int emit(int pc, uint8_t op, uint8_t a, uint8_t b, uint8_t c, int32_t imm) {
  prog[pc] = (struct insn){ op, a, b, c, imm };
  return pc + 1;
}

/* r0 = i, r1 = n, r2 = s, r3..r6 scratch, r7 = inner counter, r8 = constant 1. */
static void assemble(int32_t n) {
  int pc = 0;
  pc = emit(pc, LOADI, 0, 0, 0, 0);
  pc = emit(pc, LOADI, 1, 0, 0, n);
  pc = emit(pc, LOADI, 2, 0, 0, 0);
  pc = emit(pc, LOADI, 8, 0, 0, 1);
  int top = pc;
  pc = emit(pc, JLT, 0, 1, 0, pc + 2);      /* if i < n goto body */
  pc = emit(pc, HALT, 0, 0, 0, 0);
  pc = emit(pc, LOADI, 3, 0, 0, 31);        /* body */
  pc = emit(pc, MUL, 2, 2, 3, 0);
  pc = emit(pc, LOADI, 4, 0, 0, 7);
  pc = emit(pc, REM, 5, 0, 4, 0);
  pc = emit(pc, ADD, 2, 2, 5, 0);
  pc = emit(pc, LOADI, 6, 0, 0, 3);
  pc = emit(pc, SHL, 6, 0, 6, 0);
  pc = emit(pc, XOR, 2, 2, 6, 0);
  pc = emit(pc, LOADI, 3, 0, 0, 15);
  pc = emit(pc, AND, 3, 0, 3, 0);
  int skip = pc;
  pc = emit(pc, JNZ, 3, 0, 0, 0);           /* patched: skip inner loop unless i % 16 == 0 */
  pc = emit(pc, LOADI, 7, 0, 0, 8);
  int inner = pc;
  pc = emit(pc, ADD, 2, 2, 7, 0);
  pc = emit(pc, SUB, 7, 7, 8, 0);
  pc = emit(pc, JNZ, 7, 0, 0, inner);
  prog[skip].imm = pc;
  pc = emit(pc, ADD, 0, 0, 8, 0);           /* i++ */
  pc = emit(pc, JMP, 0, 0, 0, top);
}

static int32_t interpret(void) {
  int pc = 0;
  for (;;) {
    const struct insn in = prog[pc++];
    switch (in.op) {
      case HALT: return regs[2];
      case LOADI: regs[in.a] = in.imm; break;
      case MOV: regs[in.a] = regs[in.b]; break;
      case ADD: regs[in.a] = (int32_t)((uint32_t)regs[in.b] + (uint32_t)regs[in.c]); break;
      case SUB: regs[in.a] = (int32_t)((uint32_t)regs[in.b] - (uint32_t)regs[in.c]); break;
      case MUL: regs[in.a] = (int32_t)((uint32_t)regs[in.b] * (uint32_t)regs[in.c]); break;
      case REM: regs[in.a] = regs[in.c] == 0 ? 0 : regs[in.b] % regs[in.c]; break;
      case XOR: regs[in.a] = regs[in.b] ^ regs[in.c]; break;
      case SHL: regs[in.a] = (int32_t)((uint32_t)regs[in.b] << (regs[in.c] & 31)); break;
      case AND: regs[in.a] = regs[in.b] & regs[in.c]; break;
      case JMP: pc = in.imm; break;
      case JLT: if (regs[in.a] < regs[in.b]) pc = in.imm; break;
      case JNZ: if (regs[in.a] != 0) pc = in.imm; break;
      case JZ: if (regs[in.a] == 0) pc = in.imm; break;
      default: return -1;
    }
  }
}

__attribute__((export_name("run"))) int32_t run(int32_t n) {
  assemble(n);
  return interpret();
}
