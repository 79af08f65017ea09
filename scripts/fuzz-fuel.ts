/**
 * Manual fuzzing of the fuel rewriter: the differential of test/wasm/fuel-fuzz.test.ts over many
 * fresh `wasm-opt --translate-to-fuzz` modules.
 *
 *   node --import tsx scripts/fuzz-fuel.ts [count=200] [--start=N] [--profile=mvp|post-mvp|reftypes]
 *                                          [--input-bytes=N] [--out=DIR]
 *
 * Seeds start..start+count-1 run under every profile (or the one named). A failing module is
 * written to DIR (default: a temp dir) as <profile>-<seed>.wasm with the reason, and the exit
 * status is 1. Modules this V8 does not compile are counted and skipped. Needs wasm-opt
 * (apt-get install binaryen); without it the script fails at once.
 */

import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkModule } from '../test/fixtures/fuel-fuzz/differential.ts';
import { PROFILES, profile, translateToFuzz, v8Accepts, wasmOptVersion } from '../test/fixtures/fuel-fuzz/ttf.ts';

function flag(name: string): string | undefined {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  return hit?.slice(name.length + 3);
}

const count = Number(process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 200);
const start = Number(flag('start') ?? 1_000_000);
const inputBytes = flag('input-bytes');
const profiles = (flag('profile') === undefined ? PROFILES : [profile(flag('profile')!)]).map((p) =>
  inputBytes === undefined ? p : { ...p, inputBytes: Number(inputBytes) },
);
if (!Number.isInteger(count) || count < 1 || !Number.isInteger(start) || start < 0) {
  console.error('usage: node --import tsx scripts/fuzz-fuel.ts [count] [--start=N] [--profile=NAME] [--input-bytes=N] [--out=DIR]');
  process.exit(2);
}

let version: string;
try {
  version = wasmOptVersion();
} catch (e) {
  console.error((e as Error).message);
  process.exit(1);
}
console.log(`${version}; seeds ${start}..${start + count - 1}; profiles ${profiles.map((p) => `${p.name} (${p.inputBytes} B)`).join(', ')}`);
let out: string | undefined = flag('out');
let failures = 0;
const t0 = performance.now();
for (const p of profiles) {
  let invalid = 0;
  let passed = 0;
  let calls = 0;
  let overflows = 0;
  for (let seed = start; seed < start + count; seed++) {
    const bytes = translateToFuzz(seed, p);
    if (!v8Accepts(bytes)) {
      invalid++;
      continue;
    }
    const v = checkModule(bytes);
    calls += v.calls;
    if (v.stackOverflow) overflows++;
    if (v.ok) {
      passed++;
      continue;
    }
    failures++;
    out ??= mkdtempSync(join(tmpdir(), 'membrane-fuel-fuzz-'));
    mkdirSync(out, { recursive: true });
    const file = join(out, `${p.name}-${seed}.wasm`);
    writeFileSync(file, bytes);
    writeFileSync(`${file}.txt`, `${v.problem}\n`);
    console.log(`FAIL ${p.name} seed ${seed} (${bytes.length} B): ${v.problem}\n     saved ${file}`);
  }
  console.log(`${p.name}: ${passed} passed, ${count - invalid - passed} failed, ${invalid} not accepted by V8 (skipped); ${calls} export calls; ${overflows} cut at a stack overflow`);
}
console.log(`${failures === 0 ? 'no differences' : `${failures} failing module(s)`} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
process.exitCode = failures === 0 ? 0 : 1;
