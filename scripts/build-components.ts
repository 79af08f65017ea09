/**
 * Rebuilds the committed test components (test/fixtures/components/*.component.wasm) from
 * sources in the repository, offline, with the pinned jco-transpile's wasm-tools:
 * - `NAME.wat` (component text) → `NAME.component.wasm` (`parse`);
 * - `NAME.core.wat` (a core module) and `NAME.wit` (its world, also named NAME) →
 *   `NAME.component.wasm` (`parse`, `componentEmbed`, `componentNew`: the component's types come
 *   from the WIT, as a toolchain's bindings would make them);
 * - a C guest of test/fixtures/c (already built by scripts/build-c.ts) wrapped as a
 *   `wasi:cli/run` command component with the WASI preview 1 command adapter
 *   (`componentNew`; the adapter is test/fixtures/components/wasi_snapshot_preview1.command.wasm,
 *   from the @bytecodealliance/jco 1.35.0 tarball, Apache-2.0 WITH LLVM-exception, built from
 *   wasmtime's `wasi-preview1-component-adapter`).
 *
 *   node --import tsx scripts/build-components.ts [--check]
 *
 * With --check (`npm run check:components`) nothing is written: it exits 1 naming every
 * committed component that differs byte for byte from what its source builds to now.
 */

import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { componentEmbed, componentNew, parse } from '@bytecodealliance/jco-transpile/wasm-tools';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIR = 'test/fixtures/components';
const ADAPTER = `${DIR}/wasi_snapshot_preview1.command.wasm`;
/** The C guests wrapped as command components (the same programs the p1 tests run). */
const WRAPPED = ['hello', 'membomb', 'escape', 'sleeper', 'upper'] as const;

interface Build {
  readonly out: string;
  make(): Promise<Uint8Array>;
}

const builds: Build[] = [
  ...readdirSync(join(ROOT, DIR))
    .filter((f) => f.endsWith('.wat') && !f.endsWith('.core.wat'))
    .sort()
    .map((f): Build => ({ out: `${DIR}/${f.slice(0, -4)}.component.wasm`, make: () => parse(readFileSync(join(ROOT, DIR, f), 'utf8')) })),
  ...readdirSync(join(ROOT, DIR))
    .filter((f) => f.endsWith('.core.wat'))
    .sort()
    .map((f): Build => {
      const name = f.slice(0, -'.core.wat'.length);
      return {
        out: `${DIR}/${name}.component.wasm`,
        make: async () => {
          const core = await parse(readFileSync(join(ROOT, DIR, f), 'utf8'));
          const witSource = readFileSync(join(ROOT, DIR, `${name}.wit`), 'utf8');
          return componentNew(await componentEmbed({ binary: core, witSource, world: name }));
        },
      };
    }),
  ...WRAPPED.map((name): Build => ({
    out: `${DIR}/${name}.component.wasm`,
    make: () => componentNew(readFileSync(join(ROOT, `test/fixtures/c/${name}.wasm`)), [['wasi_snapshot_preview1', readFileSync(join(ROOT, ADAPTER))]]),
  })),
];

const check = process.argv.includes('--check');
const stale: string[] = [];
for (const b of builds) {
  const bytes = await b.make();
  if (!check) {
    writeFileSync(join(ROOT, b.out), bytes);
    console.log(`wrote ${b.out} (${bytes.length} bytes)`);
    continue;
  }
  let committed: Uint8Array | null = null;
  try {
    committed = readFileSync(join(ROOT, b.out));
  } catch {
    committed = null;
  }
  if (committed === null || Buffer.compare(Buffer.from(committed), Buffer.from(bytes)) !== 0) stale.push(b.out);
}
if (check) {
  if (stale.length > 0) {
    console.error(`stale or missing components (rebuild: node --import tsx scripts/build-components.ts):\n  ${stale.join('\n  ')}`);
    process.exit(1);
  }
  console.log(`${builds.length} components are current`);
}
