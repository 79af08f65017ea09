// Builds dist/ from src/ with esbuild (a dependency of tsx) whenever a source file is newer than
// the outputs: dist/worker.cjs (the guest worker thread: plain JS, so a new worker boots in tens
// of milliseconds instead of the ~300 ms a TypeScript loader costs), dist/rewrite-worker.cjs (the
// module rewriter's thread), dist/cli.mjs (the CLI) and
// dist/query-child.mjs (the vfs_query child process, found beside the bundle that spawns it),
// and dist/js-lane-worker.cjs (the JS lane's worker thread; its TypeScript stripper is a wasm module
// read from @swc/wasm-typescript in node_modules at run time, so it has no bundle of its own).
// Outputs are written to a temporary name and renamed, so concurrent builders never see a torn file.
import { build } from 'esbuild';
import { readdirSync, statSync, renameSync, mkdirSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = dirname(dirname(fileURLToPath(import.meta.url)));

const TARGETS = [
  { entry: 'src/engine/worker/main.ts', out: 'dist/worker.cjs', format: 'cjs' },
  { entry: 'src/engine/rewrite/worker.ts', out: 'dist/rewrite-worker.cjs', format: 'cjs' },
  // The library and the CLI leave npm packages to node_modules (the package's dependencies).
  { entry: 'src/index.ts', out: 'dist/index.js', format: 'esm', packagesExternal: true },
  { entry: 'src/interfaces/cli/main.ts', out: 'dist/cli.mjs', format: 'esm', packagesExternal: true },
  { entry: 'src/storage/query-child.mjs', out: 'dist/query-child.mjs', format: 'esm' },
  { entry: 'src/lanes/js/worker.ts', out: 'dist/js-lane-worker.cjs', format: 'cjs' },
  // The os_process tier's child (src/engine/os-process/child.ts): npm packages from node_modules.
  { entry: 'src/engine/os-process/child.ts', out: 'dist/os-child.mjs', format: 'esm', packagesExternal: true },
];

function newestSource(dir) {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestSource(p));
    else if (e.name.endsWith('.ts') || e.name.endsWith('.mjs')) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

/** Rebuild stale outputs; returns absolute paths of the worker and CLI bundles. */
export async function ensureBuilt() {
  await buildStale(TARGETS);
  return outputs();
}

/** Only the JS lane's output (so the lane starts even while another target is broken). */
export async function ensureJsLaneBuilt() {
  await buildStale(TARGETS.filter((t) => t.out.startsWith('dist/js-')));
  return outputs();
}

async function buildStale(targets) {
  const newest = Math.max(newestSource(join(root, 'src')), statSync(fileURLToPath(import.meta.url)).mtimeMs);
  for (const t of targets) {
    const out = join(root, t.out);
    if (existsSync(out) && statSync(out).mtimeMs >= newest) continue;
    mkdirSync(dirname(out), { recursive: true });
    const tmp = `${out}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    await build({
      entryPoints: [join(root, t.entry)],
      outfile: tmp,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: t.format,
      // Native addons and tools stay in node_modules, resolved from the bundle's location.
      ...(t.packagesExternal ? { packages: 'external' } : { external: ['wabt', 'esbuild', 'tsx', 'better-sqlite3', 'better-sqlite3-12'] }),
      logLevel: 'error',
      ...(t.format === 'esm'
        ? { banner: { js: "import { createRequire as __membraneCreateRequire } from 'node:module'; const require = __membraneCreateRequire(import.meta.url);" } }
        : {
            // CommonJS has no import.meta: give modules that use import.meta.url the bundle's own URL.
            banner: { js: "const __membraneImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
            define: { 'import.meta.url': '__membraneImportMetaUrl' },
          }),
    });
    renameSync(tmp, out);
  }
}

function outputs() {
  return {
    worker: join(root, 'dist/worker.cjs'),
    rewriteWorker: join(root, 'dist/rewrite-worker.cjs'),
    cli: join(root, 'dist/cli.mjs'),
    jsWorker: join(root, 'dist/js-lane-worker.cjs'),
    osChild: join(root, 'dist/os-child.mjs'),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = await ensureBuilt();
  console.log(`built ${out.worker} and ${out.cli}`);
}
