// The JS lane's TypeScript stripper (src/lanes/js/stripper.ts): swc's strip-only transform as a
// fuel-metered, memory-capped wasm guest. Positions are kept, code-generating syntax is refused
// with a clear SyntaxError, and its fuel is part of the call's.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';
import { JsLane } from '../../src/lanes/js/index.ts';
import { LaneMeter } from '../../src/lanes/js/meter.ts';
import { readFileSync } from 'node:fs';
import { STRIP_MEMORY_IMPORT, definedMemoryPages, extractStripperWasm, loadStripper, type StripperModule } from '../../src/lanes/js/strip-module.ts';
import { parseModule } from '../../src/wasm/module.ts';
import { Stripper, type StripResult } from '../../src/lanes/js/stripper.ts';
import type { ExecRequest } from '../../src/lanes/types.ts';

const MiB = 1024 * 1024;
let stripper: StripperModule;
const lane = new JsLane({ poolSize: 1, cacheDir: false });
const req = (code: string, language: 'js' | 'ts' = 'ts'): ExecRequest => ({ language, code, timeoutMs: 5000, fuel: 1e12, memoryBytes: 64 * MiB, caps: [] });

before(async () => {
  stripper = await loadStripper(createRequire(import.meta.url).resolve('@swc/wasm-typescript'), null);
});
after(() => lane.close());

/** Strip `source` in a fresh instance, as the lane does, with a call meter of its own. */
function strip(source: string, fuel = 1e12): { out: StripResult; fuelUsed: number } {
  const interrupt = new Int32Array(new SharedArrayBuffer(4));
  const call = new LaneMeter(interrupt);
  call.attach({ __membrane_fuel: new WebAssembly.Global({ value: 'i64', mutable: true }, 0n) });
  call.begin(fuel, performance.now() + 5000);
  const out = Stripper.create(stripper, interrupt, 64 * MiB).strip(source, call);
  return { out, fuelUsed: call.used() };
}
const code = (source: string): string => {
  const { out } = strip(source);
  assert.ok(out.ok, JSON.stringify(out));
  return out.code;
};

const CORPUS = [
  'const x: number = 2; x * 21',
  'let x = 1\ninterface I {}\n(function(){})()',
  'let y = 1\ntype T = string\n[1, 2].map(v => v)',
  'const a = b as unknown as string\n`t`',
  'function f<T>(this: unknown, a?: T, ...r: T[]): asserts a is T {}\nclass C implements I { declare x: number; private readonly y!: string; z?: () => void }',
  'let v = x!\nlet w = y satisfies Z;\nimport type { Q } from "q";\nexport type { R };\ndeclare const d: number;\nnamespace OnlyTypes { export type T = 1 }\ndeclare enum DE { A }\nabstract class AC { abstract m(): void }',
  'const f2 = async <T,>(x: T): Promise<T> => x;\nfunction over(a: string): void;\nfunction over(a: any) {}\nlet o = { m<T>(this: any): void {} }',
  'type 型 = { 名: string }\nlet é: 型 = "ü"; // ünïcödé\nconst z: Map<string, number> = new Map()',
  'const r: number = await Promise.resolve(1);\nr',
];

test('strip-only keeps every line and column: types become spaces (or an ASI-guarding ;) in place', () => {
  for (const source of CORPUS) {
    const out = code(source);
    assert.equal(out.length, source.length, source);
    for (let i = 0; i < source.length; i++) {
      if (source[i] === '\n' || out[i] === '\n') assert.equal(out[i], source[i], `newline moved at ${i} in ${JSON.stringify(source)}`);
      else assert.ok(out[i] === source[i] || out[i] === ' ' || out[i] === ';', `${JSON.stringify(out[i])} at ${i} in ${JSON.stringify(out)}`);
    }
  }
});

const THROWS_ON_LINE_5 = `interface Point {
  x: number;
}
function fail(p: Point): never {
  throw new Error('boom ' + p.x);
}
let stack: string = '';
try { fail({ x: 1 } as Point); } catch (e: unknown) { stack = (e as Error).stack ?? ''; }
stack`;

test('a TS snippet whose line 5 throws: the stripped code throws on line 5, and QuickJS says <snippet>:5', async () => {
  const lines = code(THROWS_ON_LINE_5).split('\n');
  assert.equal(lines.length, THROWS_ON_LINE_5.split('\n').length);
  assert.match(lines[4]!, /^\s+throw new Error\('boom ' \+ p\.x\);$/);
  assert.match(lines[7]!, /^try \{ fail\(\{ x: 1 \}\s+\); \}/);
  const r = await lane.exec(req(THROWS_ON_LINE_5));
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.match(String(r.result), /at fail \(<snippet>:5:/);
  assert.match(String(r.result), /<snippet>:8:/);
});

test('TypeScript that needs code generated is a GUEST_EXCEPTION SyntaxError naming the construct, line and column', async () => {
  const cases: [string, RegExp, number, number][] = [
    ['const a = 1;\nenum E { A, B }', /enum is not supported/, 2, 1],
    ['namespace N { export const x = 1 }', /namespace declaration is not supported/, 1, 1],
    ['class C {\n  constructor(public x: number) {}\n}', /parameter property is not supported/, 2, 22],
    ['let y = 1;\nlet x = <number>y;', /angle-bracket syntax/, 2, 9],
  ];
  for (const [source, what, line, column] of cases) {
    const r = await lane.exec(req(source));
    assert.equal(r.error?.code, 'GUEST_EXCEPTION', source);
    assert.match(r.error!.message, what);
    assert.match(r.error!.message, /the ts lane only erases types/);
    assert.equal(r.error?.details?.['name'], 'SyntaxError');
    assert.deepEqual(r.error?.details?.['stack'], [{ file: '<snippet>', line, column, function: '' }], source);
  }
});

test('type-only namespaces, declare enum, overloads and abstract members are erased and run', async () => {
  const r = await lane.exec(req('namespace T { export type X = 1 }\ndeclare enum D { A }\nabstract class A { abstract m(): number }\nclass B extends A { m(): number { return 7 } }\nnew B().m()'));
  assert.equal(r.result, 7, JSON.stringify(r.error));
});

test('stripping is fuel the call pays, the same on every run', async () => {
  const source = 'const xs: number[] = [1, 2, 3];\nxs.map((x: number): number => x * 2).reduce((a: number, b: number) => a + b, 0)';
  const a = strip(source);
  const b = strip(source);
  assert.ok(a.out.ok && a.fuelUsed > 0);
  assert.equal(a.fuelUsed, b.fuelUsed);
  const ts = await lane.exec(req(source));
  const js = await lane.exec(req(code(source), 'js'));
  assert.equal(ts.result, 12);
  assert.equal(js.result, 12);
  assert.ok(ts.fuelUsed > js.fuelUsed, `${ts.fuelUsed} > ${js.fuelUsed}`);
});

test('the stripper module has no memory of its own and imports only the glue, the fuel refill and its memory', () => {
  assert.deepEqual(WebAssembly.Module.exports(stripper.module).filter((e) => e.kind === 'memory').map((e) => e.name), ['memory']);
  const imports = WebAssembly.Module.imports(stripper.module);
  assert.deepEqual(imports.filter((i) => i.kind === 'memory'), [{ module: STRIP_MEMORY_IMPORT.module, name: STRIP_MEMORY_IMPORT.name, kind: 'memory' }]);
  assert.deepEqual([...new Set(imports.map((i) => i.module))].sort(), ['__wbindgen_placeholder__', 'membrane:fuel', 'membrane:strip']);
  assert.ok(WebAssembly.Module.exports(stripper.module).some((e) => e.name === '__membrane_fuel'));
  const stock = extractStripperWasm(readFileSync(createRequire(import.meta.url).resolve('@swc/wasm-typescript'), 'utf8'));
  assert.equal(definedMemoryPages(stock), parseModule(stock).memories[0]!.limits.min);
  assert.equal(stripper.initialPages, definedMemoryPages(stock));
});
