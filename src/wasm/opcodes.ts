/**
 * The instruction table: every opcode Node 20's V8 accepts (plus a few newer ones whose encoding
 * is settled), its stable name, and the shape of its immediates.
 *
 * Owns: opcode keys. A one-byte opcode's key is the byte; a prefixed opcode's key is
 * `prefix << 16 | sub` (sub-opcodes are u32 LEB in the binary; all known ones are < 0x200).
 * Covered: MVP, sign extension, non-trapping float-to-int, bulk memory, reference types,
 * multi-value block types, SIMD and relaxed SIMD, threads/atomics, legacy exception handling
 * (try/catch/catch_all/delegate/rethrow/throw) and exnref (try_table/throw_ref), tail calls,
 * typed function references (call_ref, br_on_null, …).
 *
 * Invariant: the table is the single source of truth for immediate shapes; a decoder that
 * consults it either consumes the whole instruction or throws INVALID_MODULE.
 *
 * Does not protect against: GC (0xFB), stringref and stack-switching instructions: they are
 * unknown here, so a module using them is refused (Node 20 refuses them too without flags).
 */

/** Immediate shapes. */
export const Imm = {
  NONE: 0,
  /** Block type: 0x40, a value type, or an s33 type index. */
  BLOCK: 1,
  /** vec(label) then a default label. */
  BR_TABLE: 2,
  /** One u32 (label, function, local, global, table, tag, type, data or element index). */
  INDEX: 3,
  /** Two u32 (call_indirect type+table, memory.copy, table.init, …). */
  INDEX2: 4,
  /** align u32 (bit 6: a memory index follows), offset (u64 when memory64). */
  MEMARG: 5,
  I32: 6,
  I64: 7,
  F32: 8,
  F64: 9,
  /** select with vec(value type). */
  SELECT_T: 10,
  /** ref.null's heap type. */
  HEAP_TYPE: 11,
  /** try_table: block type, vec(catch clause). */
  TRY_TABLE: 12,
  /** A single reserved zero byte (atomic.fence). */
  ZERO_BYTE: 13,
  /** 16 raw bytes: v128.const, i8x16.shuffle. */
  BYTES16: 14,
  /** A lane index byte. */
  LANE: 15,
  /** memarg then a lane index byte. */
  MEMARG_LANE: 16,
} as const;
export type Imm = (typeof Imm)[keyof typeof Imm];

/** Marks an unassigned opcode in the lookup arrays. */
export const UNKNOWN = 0xff;

export const PREFIX_GC = 0xfb;
export const PREFIX_MISC = 0xfc;
export const PREFIX_SIMD = 0xfd;
export const PREFIX_ATOMIC = 0xfe;

/** Opcode keys the rest of the folder refers to by name. */
export const Op = {
  UNREACHABLE: 0x00,
  BLOCK: 0x02,
  LOOP: 0x03,
  IF: 0x04,
  ELSE: 0x05,
  TRY: 0x06,
  END: 0x0b,
  CALL: 0x10,
  DELEGATE: 0x18,
  TRY_TABLE: 0x1f,
  LOCAL_GET: 0x20,
  LOCAL_TEE: 0x22,
  GLOBAL_SET: 0x24,
  MEMORY_SIZE: 0x3f,
  MEMORY_GROW: 0x40,
  I32_CONST: 0x41,
  I64_CONST: 0x42,
  I32_EQ: 0x46,
  I64_EQ: 0x51,
} as const;

export function opKey(prefix: number, sub: number): number {
  return (prefix << 16) | sub;
}

const SUB_LIMIT = 0x200;

/** Immediate kind per one-byte opcode, and per sub-opcode of each prefix (UNKNOWN if absent). */
export const SINGLE_IMM = new Uint8Array(256).fill(UNKNOWN);
export const PREFIXED_IMM: ReadonlyMap<number, Uint8Array> = new Map([
  [PREFIX_MISC, new Uint8Array(SUB_LIMIT).fill(UNKNOWN)],
  [PREFIX_SIMD, new Uint8Array(SUB_LIMIT).fill(UNKNOWN)],
  [PREFIX_ATOMIC, new Uint8Array(SUB_LIMIT).fill(UNKNOWN)],
]);
const NAMES = new Map<number, string>();

/** Registers consecutive opcodes from `start`; `-` in `names` skips a reserved code. */
function seq(prefix: number | null, start: number, imm: Imm, names: string): void {
  const table = prefix === null ? SINGLE_IMM : PREFIXED_IMM.get(prefix)!;
  let code = start;
  for (const name of names.trim().split(/\s+/)) {
    if (name !== '-') {
      table[code] = imm;
      NAMES.set(prefix === null ? code : opKey(prefix, code), name);
    }
    code++;
  }
}

const each = (prefix: string, ops: string): string =>
  ops
    .trim()
    .split(/\s+/)
    .map((op) => (op === '-' ? '-' : prefix + op))
    .join(' ');

const I_CMP = 'eq ne lt_s lt_u gt_s gt_u le_s le_u ge_s ge_u';
const F_CMP = 'eq ne lt gt le ge';
const I_ARITH = 'clz ctz popcnt add sub mul div_s div_u rem_s rem_u and or xor shl shr_s shr_u rotl rotr';
const F_ARITH = 'abs neg ceil floor trunc nearest sqrt add sub mul div min max copysign';

// Control, reference and parametric instructions.
seq(null, 0x00, Imm.NONE, 'unreachable nop');
seq(null, 0x02, Imm.BLOCK, 'block loop if');
seq(null, 0x05, Imm.NONE, 'else');
seq(null, 0x06, Imm.BLOCK, 'try');
seq(null, 0x07, Imm.INDEX, 'catch throw rethrow');
seq(null, 0x0a, Imm.NONE, 'throw_ref end');
seq(null, 0x0c, Imm.INDEX, 'br br_if');
seq(null, 0x0e, Imm.BR_TABLE, 'br_table');
seq(null, 0x0f, Imm.NONE, 'return');
seq(null, 0x10, Imm.INDEX, 'call');
seq(null, 0x11, Imm.INDEX2, 'call_indirect');
seq(null, 0x12, Imm.INDEX, 'return_call');
seq(null, 0x13, Imm.INDEX2, 'return_call_indirect');
seq(null, 0x14, Imm.INDEX, 'call_ref return_call_ref');
seq(null, 0x18, Imm.INDEX, 'delegate');
seq(null, 0x19, Imm.NONE, 'catch_all drop select');
seq(null, 0x1c, Imm.SELECT_T, 'select');
seq(null, 0x1f, Imm.TRY_TABLE, 'try_table');
seq(null, 0x20, Imm.INDEX, 'local.get local.set local.tee global.get global.set table.get table.set');
seq(null, 0xd0, Imm.HEAP_TYPE, 'ref.null');
seq(null, 0xd1, Imm.NONE, 'ref.is_null');
seq(null, 0xd2, Imm.INDEX, 'ref.func');
seq(null, 0xd3, Imm.NONE, 'ref.eq ref.as_non_null');
seq(null, 0xd5, Imm.INDEX, 'br_on_null br_on_non_null');

// Memory.
seq(
  null,
  0x28,
  Imm.MEMARG,
  `i32.load i64.load f32.load f64.load i32.load8_s i32.load8_u i32.load16_s i32.load16_u
   i64.load8_s i64.load8_u i64.load16_s i64.load16_u i64.load32_s i64.load32_u
   i32.store i64.store f32.store f64.store i32.store8 i32.store16 i64.store8 i64.store16 i64.store32`,
);
seq(null, 0x3f, Imm.INDEX, 'memory.size memory.grow');

// Numeric.
seq(null, 0x41, Imm.I32, 'i32.const');
seq(null, 0x42, Imm.I64, 'i64.const');
seq(null, 0x43, Imm.F32, 'f32.const');
seq(null, 0x44, Imm.F64, 'f64.const');
seq(
  null,
  0x45,
  Imm.NONE,
  `i32.eqz ${each('i32.', I_CMP)} i64.eqz ${each('i64.', I_CMP)} ${each('f32.', F_CMP)} ${each('f64.', F_CMP)}
   ${each('i32.', I_ARITH)} ${each('i64.', I_ARITH)} ${each('f32.', F_ARITH)} ${each('f64.', F_ARITH)}
   i32.wrap_i64 i32.trunc_f32_s i32.trunc_f32_u i32.trunc_f64_s i32.trunc_f64_u
   i64.extend_i32_s i64.extend_i32_u i64.trunc_f32_s i64.trunc_f32_u i64.trunc_f64_s i64.trunc_f64_u
   f32.convert_i32_s f32.convert_i32_u f32.convert_i64_s f32.convert_i64_u f32.demote_f64
   f64.convert_i32_s f64.convert_i32_u f64.convert_i64_s f64.convert_i64_u f64.promote_f32
   i32.reinterpret_f32 i64.reinterpret_f64 f32.reinterpret_i32 f64.reinterpret_i64
   i32.extend8_s i32.extend16_s i64.extend8_s i64.extend16_s i64.extend32_s`,
);

// 0xFC: saturating truncation, bulk memory, table instructions.
const FC = PREFIX_MISC;
seq(FC, 0, Imm.NONE, `${each('i32.', 'trunc_sat_f32_s trunc_sat_f32_u trunc_sat_f64_s trunc_sat_f64_u')}
  ${each('i64.', 'trunc_sat_f32_s trunc_sat_f32_u trunc_sat_f64_s trunc_sat_f64_u')}`);
seq(FC, 8, Imm.INDEX2, 'memory.init');
seq(FC, 9, Imm.INDEX, 'data.drop');
seq(FC, 10, Imm.INDEX2, 'memory.copy');
seq(FC, 11, Imm.INDEX, 'memory.fill');
seq(FC, 12, Imm.INDEX2, 'table.init');
seq(FC, 13, Imm.INDEX, 'elem.drop');
seq(FC, 14, Imm.INDEX2, 'table.copy');
seq(FC, 15, Imm.INDEX, 'table.grow table.size table.fill');

// 0xFD: SIMD.
const FD = PREFIX_SIMD;
seq(FD, 0, Imm.MEMARG, `v128.load v128.load8x8_s v128.load8x8_u v128.load16x4_s v128.load16x4_u
  v128.load32x2_s v128.load32x2_u v128.load8_splat v128.load16_splat v128.load32_splat v128.load64_splat v128.store`);
seq(FD, 12, Imm.BYTES16, 'v128.const i8x16.shuffle');
seq(FD, 14, Imm.NONE, 'i8x16.swizzle i8x16.splat i16x8.splat i32x4.splat i64x2.splat f32x4.splat f64x2.splat');
seq(FD, 21, Imm.LANE, `i8x16.extract_lane_s i8x16.extract_lane_u i8x16.replace_lane
  i16x8.extract_lane_s i16x8.extract_lane_u i16x8.replace_lane i32x4.extract_lane i32x4.replace_lane
  i64x2.extract_lane i64x2.replace_lane f32x4.extract_lane f32x4.replace_lane f64x2.extract_lane f64x2.replace_lane`);
seq(FD, 35, Imm.NONE, `${each('i8x16.', I_CMP)} ${each('i16x8.', I_CMP)} ${each('i32x4.', I_CMP)}
  ${each('f32x4.', F_CMP)} ${each('f64x2.', F_CMP)} ${each('v128.', 'not and andnot or xor bitselect any_true')}`);
seq(FD, 84, Imm.MEMARG_LANE, `${each('v128.', 'load8_lane load16_lane load32_lane load64_lane')}
  ${each('v128.', 'store8_lane store16_lane store32_lane store64_lane')}`);
seq(FD, 92, Imm.MEMARG, 'v128.load32_zero v128.load64_zero');
seq(FD, 94, Imm.NONE, `f32x4.demote_f64x2_zero f64x2.promote_low_f32x4
  ${each('i8x16.', 'abs neg popcnt all_true bitmask narrow_i16x8_s narrow_i16x8_u')}
  ${each('f32x4.', 'ceil floor trunc nearest')}
  ${each('i8x16.', 'shl shr_s shr_u add add_sat_s add_sat_u sub sub_sat_s sub_sat_u')}
  f64x2.ceil f64x2.floor ${each('i8x16.', 'min_s min_u max_s max_u')} f64x2.trunc i8x16.avgr_u
  i16x8.extadd_pairwise_i8x16_s i16x8.extadd_pairwise_i8x16_u
  i32x4.extadd_pairwise_i16x8_s i32x4.extadd_pairwise_i16x8_u`);
seq(FD, 128, Imm.NONE, `${each('i16x8.', `abs neg q15mulr_sat_s all_true bitmask narrow_i32x4_s narrow_i32x4_u
    extend_low_i8x16_s extend_high_i8x16_s extend_low_i8x16_u extend_high_i8x16_u
    shl shr_s shr_u add add_sat_s add_sat_u sub sub_sat_s sub_sat_u`)}
  f64x2.nearest ${each('i16x8.', `mul min_s min_u max_s max_u - avgr_u
    extmul_low_i8x16_s extmul_high_i8x16_s extmul_low_i8x16_u extmul_high_i8x16_u`)}`);
seq(FD, 160, Imm.NONE, each('i32x4.', `abs neg - all_true bitmask - -
  extend_low_i16x8_s extend_high_i16x8_s extend_low_i16x8_u extend_high_i16x8_u shl shr_s shr_u add - - sub - - -
  mul min_s min_u max_s max_u dot_i16x8_s -
  extmul_low_i16x8_s extmul_high_i16x8_s extmul_low_i16x8_u extmul_high_i16x8_u`));
seq(FD, 192, Imm.NONE, each('i64x2.', `abs neg - all_true bitmask - -
  extend_low_i32x4_s extend_high_i32x4_s extend_low_i32x4_u extend_high_i32x4_u shl shr_s shr_u add - - sub - - -
  mul eq ne lt_s gt_s le_s ge_s
  extmul_low_i32x4_s extmul_high_i32x4_s extmul_low_i32x4_u extmul_high_i32x4_u`));
seq(FD, 224, Imm.NONE, `${each('f32x4.', 'abs neg - sqrt add sub mul div min max pmin pmax')}
  ${each('f64x2.', 'abs neg - sqrt add sub mul div min max pmin pmax')}
  i32x4.trunc_sat_f32x4_s i32x4.trunc_sat_f32x4_u f32x4.convert_i32x4_s f32x4.convert_i32x4_u
  i32x4.trunc_sat_f64x2_s_zero i32x4.trunc_sat_f64x2_u_zero f64x2.convert_low_i32x4_s f64x2.convert_low_i32x4_u`);
seq(FD, 0x100, Imm.NONE, `i8x16.relaxed_swizzle
  i32x4.relaxed_trunc_f32x4_s i32x4.relaxed_trunc_f32x4_u i32x4.relaxed_trunc_f64x2_s_zero i32x4.relaxed_trunc_f64x2_u_zero
  f32x4.relaxed_madd f32x4.relaxed_nmadd f64x2.relaxed_madd f64x2.relaxed_nmadd
  i8x16.relaxed_laneselect i16x8.relaxed_laneselect i32x4.relaxed_laneselect i64x2.relaxed_laneselect
  f32x4.relaxed_min f32x4.relaxed_max f64x2.relaxed_min f64x2.relaxed_max
  i16x8.relaxed_q15mulr_s i16x8.relaxed_dot_i8x16_i7x16_s i32x4.relaxed_dot_i8x16_i7x16_add_s`);

// 0xFE: threads.
const FE = PREFIX_ATOMIC;
seq(FE, 0, Imm.MEMARG, 'memory.atomic.notify memory.atomic.wait32 memory.atomic.wait64');
seq(FE, 3, Imm.ZERO_BYTE, 'atomic.fence');
seq(FE, 0x10, Imm.MEMARG, `i32.atomic.load i64.atomic.load i32.atomic.load8_u i32.atomic.load16_u
  i64.atomic.load8_u i64.atomic.load16_u i64.atomic.load32_u
  i32.atomic.store i64.atomic.store i32.atomic.store8 i32.atomic.store16
  i64.atomic.store8 i64.atomic.store16 i64.atomic.store32
  ${['add', 'sub', 'and', 'or', 'xor', 'xchg', 'cmpxchg']
    .map((op) => `i32.atomic.rmw.${op} i64.atomic.rmw.${op} i32.atomic.rmw8.${op}_u i32.atomic.rmw16.${op}_u
      i64.atomic.rmw8.${op}_u i64.atomic.rmw16.${op}_u i64.atomic.rmw32.${op}_u`)
    .join(' ')}`);

/** The stable name of an opcode key, or undefined if the key is not an instruction. */
export function opName(key: number): string | undefined {
  return NAMES.get(key);
}

/** The immediate shape of an opcode key, or UNKNOWN. */
export function immediateOf(key: number): number {
  if (key < 0x100) return SINGLE_IMM[key] ?? UNKNOWN;
  const sub = key & 0xffff;
  return PREFIXED_IMM.get(key >>> 16)?.[sub] ?? UNKNOWN;
}

export interface OpcodeInfo {
  readonly key: number;
  readonly name: string;
  readonly imm: Imm;
}

/** Every known instruction, in key order (for tests and tooling). */
export function allOpcodes(): OpcodeInfo[] {
  return [...NAMES]
    .sort(([a], [b]) => a - b)
    .map(([key, name]) => ({ key, name, imm: immediateOf(key) as Imm }));
}
