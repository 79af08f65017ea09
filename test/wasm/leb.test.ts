import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Reader, Writer, u32Size } from '../../src/wasm/index.ts';
import { assertInvalid, hex } from './helpers.ts';

const reader = (s: string): Reader => new Reader(hex(s));

test('u32: values, non-minimal widths within 5 bytes, and the maximum', () => {
  assert.equal(reader('00').u32(), 0);
  assert.equal(reader('7f').u32(), 127);
  assert.equal(reader('8001').u32(), 128);
  assert.equal(reader('e58e26').u32(), 624485);
  assert.equal(reader('ffffffff0f').u32(), 0xffffffff);
  assert.equal(reader('8080808000').u32(), 0);
  const r = reader('e58e26 2a');
  r.u32();
  assert.equal(r.pos, 3);
});

test('u32: a 6th byte, unused bits in the 5th, and truncation are refused with offsets', () => {
  assertInvalid(() => reader('808080808000').u32(), 4, /too long/);
  assertInvalid(() => reader('ffffffff1f').u32(), 4, /unused bits/);
  assertInvalid(() => reader('8080').u32(), 2, /unexpected end/);
  assertInvalid(() => reader('').u32(), 0);
});

test('s32: sign extension at every width and the 5th-byte rule', () => {
  assert.equal(reader('7f').s32(), -1);
  assert.equal(reader('40').s32(), -64);
  assert.equal(reader('3f').s32(), 63);
  assert.equal(reader('c000').s32(), 64);
  assert.equal(reader('bf7f').s32(), -65);
  assert.equal(reader('8080808078').s32(), -2147483648);
  assert.equal(reader('ffffffff07').s32(), 2147483647);
  assert.equal(reader('ffffffff7f').s32(), -1);
  assertInvalid(() => reader('ffffffff0f').s32(), 4, /unused bits/);
  assertInvalid(() => reader('8080808070').s32(), 4, /unused bits/);
  assertInvalid(() => reader('ffffffffff').s32(), 4, /too long/);
});

test('s33: block-type range, including type indices above 2^31', () => {
  assert.equal(reader('40').s33(), -64);
  assert.equal(reader('8001').s33(), 128);
  assert.equal(reader('ffffffff0f').s33(), 2 ** 32 - 1);
  assert.equal(reader('8080808070').s33(), -(2 ** 32));
  assertInvalid(() => reader('8080808010').s33(), 4, /unused bits/);
  assertInvalid(() => reader('8080808060').s33(), 4, /unused bits/);
});

test('s64 and u64: the 10th byte may carry only the sign/top bit', () => {
  assert.equal(reader('808080808080808080 7f').s64(), -(2n ** 63n));
  assert.equal(reader('ffffffffffffffffff 00').s64(), 2n ** 63n - 1n);
  assert.equal(reader('7f').s64(), -1n);
  assertInvalid(() => reader('808080808080808080 01').s64(), 9, /unused bits/);
  assertInvalid(() => reader('808080808080808080 80 00').s64(), 9, /too long/);
  assert.equal(reader('ffffffffffffff0f').u64(), 2 ** 53 - 1);
  assertInvalid(() => reader('ffffffffffffffffff 02').u64(), 9, /unused bits/);
  assertInvalid(() => reader('ffffffffffffffffff 01').u64(), 0, /too large/);
});

test('skipLeb accepts exactly what the value readers accept, and stops at the same place', () => {
  const kinds: [number, boolean, (r: Reader) => unknown][] = [
    [32, false, (r) => r.u32()],
    [32, true, (r) => r.s32()],
    [33, true, (r) => r.s33()],
    [64, true, (r) => r.s64()],
  ];
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 0, maxLength: 12 }), fc.integer({ min: 0, max: 3 }), (bytes, k) => {
      const [bits, signed, read] = kinds[k]!;
      const outcome = (f: (r: Reader) => unknown): number | string => {
        const r = new Reader(bytes);
        try {
          f(r);
          return r.pos;
        } catch (e) {
          return (e as Error).message;
        }
      };
      assert.equal(outcome((r) => r.skipLeb(bits, signed)), outcome(read));
    }),
    { numRuns: 3000 },
  );
});

test('Writer round-trips LEB values at minimal width', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (u, s, big) => {
      const bytes = new Writer().u32(u).s32(s).s64(big).finish();
      const r = new Reader(bytes);
      assert.equal(r.u32(), u);
      assert.equal(r.pos, u32Size(u));
      assert.equal(r.s32(), s);
      assert.equal(r.s64(), big);
      assert.ok(r.atEnd());
    }),
    { numRuns: 500 },
  );
});

test('names: UTF-8 is decoded; overlong, surrogate and truncated sequences are refused', () => {
  const text = 'héllo ✓ 𝄞';
  const encoded = new Writer().name(text).finish();
  assert.equal(new Reader(encoded).name(), text);
  assert.equal(reader('03616263').name(), 'abc');
  assertInvalid(() => reader('02c080').name(), 1, /UTF-8/);
  assertInvalid(() => reader('03eda080').name(), 1, /UTF-8/);
  assertInvalid(() => reader('02e282').name(), 1, /UTF-8/);
  assertInvalid(() => reader('0180').name(), 1, /UTF-8/);
  assertInvalid(() => reader('0561').name(), 2, /unexpected end/);
});

test('vectors: a count larger than the remaining bytes is refused before allocating', () => {
  assertInvalid(() => reader('ffffffff0f00').vecCount(), 0, /vector length/);
  assert.deepEqual(reader('03 01 02 03').vec((r) => r.u8()), [1, 2, 3]);
});

test('offsets are absolute even in a reader over a sub-range', () => {
  const bytes = hex('00 00 00 00 80 80');
  const r = new Reader(bytes, 4, 6, 'code');
  const e = assertInvalid(() => r.u32(), 6);
  assert.equal(e.details['section'], 'code');
  const outer = new Reader(hex('0a 0b 0c 0d'), 0);
  outer.u8();
  const sub = outer.sub(2);
  assert.equal(sub.u8(), 0x0b);
  assert.equal(outer.pos, 3);
  assertInvalid(() => outer.sub(5), 3, /past the end/);
});

test('floats are kept as raw bytes (NaN payloads survive)', () => {
  const r = reader('0100c07f 0100000000 00f87f');
  assert.deepEqual([...r.f32()], [0x01, 0x00, 0xc0, 0x7f]);
  assert.deepEqual([...r.f64()], [0x01, 0, 0, 0, 0, 0, 0xf8, 0x7f]);
  assertInvalid(() => reader('0000').f32(), 2);
});
