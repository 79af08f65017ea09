/**
 * Measures applyLimits (the space wall's load-time rewrite) on a large module.
 * Usage: node --import tsx bench/limits-rewrite.ts [module.wasm]
 *
 * Without an argument it synthesizes a ~5 MB module whose instruction mix resembles clang -O2
 * output (local.get, multi-byte i32.const, loads/stores with offsets, arithmetic, if/end, calls),
 * with a single memory.grow, so the time is dominated by scanning every body.
 * Prints the first (cold) call and the median of warm calls, next to V8's own compile time.
 */

import { readFileSync } from 'node:fs';
import { Writer, applyLimits, parseModule } from '../src/wasm/index.ts';

function synthesize(functions: number, statementsPerFunction: number): Uint8Array<ArrayBuffer> {
  let seed = 1;
  const rand = (n: number): number => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed % n;
  };
  const code = new Writer(8 << 20);
  code.u32(functions);
  const body = new Writer(1 << 16);
  for (let f = 0; f < functions; f++) {
    body.reset().u32(1).u32(2).u8(0x7f); // two i32 locals
    for (let s = 0; s < statementsPerFunction; s++) {
      body.u8(0x20).u32(0); // local.get 0
      body.u8(0x28).u32(2).u32(rand(4096)); // i32.load offset=…
      body.u8(0x41).s32(rand(200000) - 100000); // i32.const
      body.u8([0x6a, 0x6b, 0x6c, 0x71, 0x72, 0x73][rand(6)]!); // add sub mul and or xor
      body.u8(0x22).u32(1); // local.tee 1
      body.u8(0x41).s32(1 << rand(20)).u8(0x71); // i32.const mask; i32.and
      body.u8(0x04).u8(0x40); // if
      body.u8(0x20).u32(0).u8(0x20).u32(1).u8(0x36).u32(2).u32(rand(512) * 4); // i32.store
      if (rand(8) === 0) body.u8(0x20).u32(1).u8(0x10).u32(rand(functions)).u8(0x1a); // call; drop
      body.u8(0x0b); // end
    }
    if (f === functions - 1) body.u8(0x41).u32(1).u8(0x40).u8(0).u8(0x1a); // memory.grow; drop
    body.u8(0x20).u32(1).u8(0x0b);
    code.u32(body.length).bytes(body.finish());
  }
  const payload = code.finish();
  const m = new Writer(payload.length + 64);
  m.bytes(Uint8Array.of(0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00));
  m.u8(1).u32(6).u8(1).u8(0x60).u8(1).u8(0x7f).u8(1).u8(0x7f); // type (i32) -> i32
  const funcs = new Writer(functions + 8).u32(functions);
  for (let f = 0; f < functions; f++) funcs.u8(0);
  m.u8(3).u32(funcs.length).bytes(funcs.finish());
  m.u8(5).u32(3).u8(1).u8(0).u8(1); // memory 1
  m.u8(10).u32(payload.length).bytes(payload);
  return m.finish();
}

const path = process.argv[2];
const bytes = path === undefined ? synthesize(1000, 150) : new Uint8Array(readFileSync(path));
const m = parseModule(bytes);
const codeSection = m.sections.find((s) => s.name === 'code');
const opts = { maxMemoryPages: 256, maxTableElements: 10000, trapOnGrowFailure: true };

let t = performance.now();
const first = applyLimits(bytes, opts);
const cold = performance.now() - t;
const warm: number[] = [];
for (let i = 0; i < 15; i++) {
  t = performance.now();
  applyLimits(bytes, opts);
  warm.push(performance.now() - t);
}
warm.sort((a, b) => a - b);
t = performance.now();
new WebAssembly.Module(first.bytes);
const v8 = performance.now() - t;

const mb = (n: number): string => `${(n / 1e6).toFixed(2)} MB`;
console.log(`module ${mb(bytes.length)}, code section ${mb(codeSection === undefined ? 0 : codeSection.end - codeSection.offset)}, ${m.codes.length} bodies, ${first.growSites} grow site(s)`);
console.log(`applyLimits: first call ${cold.toFixed(1)} ms, warm median ${warm[7]!.toFixed(1)} ms`);
console.log(`V8 compile of the result (for scale): ${v8.toFixed(1)} ms`);
