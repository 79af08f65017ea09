// The dependency direction of STYLE.md, enforced: interfaces → shell → engine/lanes → storage/net/wasm
// → policy → errors, and the worker talks to the host only through the protocol.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+'([^']+)'/gm)) out.push(m[1]!);
  for (const m of text.matchAll(/^\s*import\s+'([^']+)'/gm)) out.push(m[1]!);
  return out;
}

/** Layer of a src-relative path; lower layers may not import higher ones. */
function layer(rel: string): number {
  if (rel === 'errors.ts') return 0;
  if (rel.startsWith('policy/')) return 1;
  if (rel.startsWith('wasm/') || rel.startsWith('storage/') || rel.startsWith('net/') || rel.startsWith('abi/')) return 2;
  if (rel.startsWith('brokers/')) return 2.5;
  if (rel.startsWith('lanes/')) return 2.7;
  if (rel.startsWith('engine/') || rel.startsWith('wasi/')) return 3;
  if (rel.startsWith('shell/')) return 4;
  if (rel.startsWith('interfaces/')) return 5;
  if (rel === 'index.ts') return 6;
  throw new Error(`no layer for ${rel}`);
}

const all = files(SRC).map((f) => ({ abs: f, rel: relative(SRC, f).split('\\').join('/') }));

test('errors.ts imports nothing', () => {
  assert.deepEqual(imports(join(SRC, 'errors.ts')), []);
});

test('no module imports a higher layer', () => {
  const bad: string[] = [];
  for (const f of all) {
    for (const spec of imports(f.abs)) {
      if (!spec.startsWith('.')) continue;
      const target = relative(SRC, resolve(dirname(f.abs), spec)).split('\\').join('/');
      if (layer(target) > layer(f.rel)) bad.push(`${f.rel} → ${target}`);
    }
  }
  assert.deepEqual(bad, []);
});

test('worker code reaches the host only through the protocol, channel and frames (and its own VFS storage)', () => {
  const allowed = new Set(['errors.ts', 'policy/catalog.ts', 'engine/bridge/protocol.ts', 'engine/bridge/channel.ts', 'engine/bridge/frames.ts', 'engine/bridge/retry-hold.ts']);
  const bad: string[] = [];
  for (const f of all.filter((x) => x.rel.startsWith('engine/worker/') || x.rel.startsWith('wasi/'))) {
    for (const spec of imports(f.abs)) {
      if (!spec.startsWith('.')) {
        if (!['node:worker_threads', 'node:crypto'].includes(spec)) bad.push(`${f.rel} → ${spec}`);
        continue;
      }
      const target = relative(SRC, resolve(dirname(f.abs), spec)).split('\\').join('/');
      if (!target.startsWith('engine/worker/') && !target.startsWith('wasi/') && !target.startsWith('abi/') && !target.startsWith('storage/') && !allowed.has(target)) bad.push(`${f.rel} → ${target}`);
    }
  }
  assert.deepEqual(bad, []);
});

test('no source file passes ~400 lines, and each opens with a header comment', () => {
  for (const f of all) {
    const text = readFileSync(f.abs, 'utf8');
    assert.ok(text.split('\n').length <= 450, `${f.rel} has ${text.split('\n').length} lines`);
    if (!f.rel.endsWith('index.ts')) assert.match(text, /^\/\*\*|^\/\//, `${f.rel} lacks a module header`);
  }
});

test('no `any` at a boundary: the protocol, frames, channel and CLI never use it', () => {
  for (const rel of ['engine/bridge/protocol.ts', 'engine/bridge/frames.ts', 'engine/bridge/channel.ts', 'engine/worker/main.ts', 'interfaces/cli/args.ts', 'interfaces/cli/run.ts']) {
    assert.doesNotMatch(readFileSync(join(SRC, rel), 'utf8'), /:\s*any\b|as any\b|<any>/, rel);
  }
});
