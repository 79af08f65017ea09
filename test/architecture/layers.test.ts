// The dependency direction of STYLE.md, enforced: interfaces → agent → shell → engine (its bridge,
// worker and rewrite threads) → lanes/build/wasi/fabric → brokers/provenance → storage/net/wasm/abi →
// policy → errors; the worker talks to the host only through the protocol; and neither the import
// graph of the files nor that of the rooms has a cycle (type-only imports count: a type cycle is a
// design cycle).
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
  for (const m of text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) out.push(m[1]!);
  return out;
}

/** The rooms of src/, each with its layer; a room may import its own layer or a lower one. */
const ROOMS: readonly (readonly [prefix: string, layer: number])[] = [
  ['errors.ts', 0],
  ['policy/', 1],
  ['wasm/', 2],
  ['storage/', 2],
  ['net/', 2],
  ['abi/', 2],
  ['brokers/', 3],
  ['provenance/', 3],
  ['lanes/', 4],
  ['build/', 4],
  ['fabric/', 4],
  ['wasi/', 4],
  ['engine/', 5],
  ['shell/', 6],
  ['agent/', 7],
  ['interfaces/', 8],
  ['index.ts', 9],
];

/** Layer of a src-relative path; lower layers may not import higher ones. */
function layer(rel: string): number {
  const room = ROOMS.find(([prefix]) => (prefix.endsWith('/') ? rel.startsWith(prefix) : rel === prefix));
  if (!room) throw new Error(`no layer for ${rel}`);
  return room[1];
}

/** Every cycle of the graph, one per strongly connected component, as `a → b → … → a`. */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const members = new Set<string>();
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      members.add(w);
    } while (w !== v);
    const self = (graph.get(v) ?? []).includes(v);
    if (members.size > 1 || self) found.push(pathThrough(graph, v, members));
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** One concrete cycle through `start` inside its component (breadth-first, so the shortest). */
function pathThrough(graph: ReadonlyMap<string, readonly string[]>, start: string, members: ReadonlySet<string>): string {
  const from = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i]!;
    for (const w of graph.get(v) ?? []) {
      if (!members.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let at: string | undefined = v; at !== undefined && at !== start; at = from.get(at)) path.splice(1, 0, at);
        return [...path, start].join(' → ');
      }
      if (!from.has(w)) {
        from.set(w, v);
        queue.push(w);
      }
    }
  }
  return [...members].join(' → ');
}

const all = files(SRC).map((f) => ({ abs: f, rel: relative(SRC, f).split('\\').join('/') }));

/** src-relative file → the src files it imports (relative specifiers only). */
const graph = new Map(
  all.map((f) => [f.rel, imports(f.abs).filter((spec) => spec.startsWith('.')).map((spec) => relative(SRC, resolve(dirname(f.abs), spec)).split('\\').join('/'))] as const),
);

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
  const allowed = new Set(['errors.ts', 'policy/catalog.ts', 'policy/host-caps.ts', 'engine/bridge/protocol.ts', 'engine/bridge/channel.ts', 'engine/bridge/frames.ts', 'engine/bridge/held-frame.ts', 'engine/bridge/retry-hold.ts']);
  const bad: string[] = [];
  for (const f of all.filter((x) => x.rel.startsWith('engine/worker/') || x.rel.startsWith('wasi/'))) {
    for (const spec of imports(f.abs)) {
      if (!spec.startsWith('.')) {
        // node:vm only to give jco's component glue a context of its own, without the worker's globals.
        const vm = spec === 'node:vm' && f.rel === 'engine/worker/component-guest.ts';
        if (!['node:worker_threads', 'node:crypto'].includes(spec) && !vm) bad.push(`${f.rel} → ${spec}`);
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

test('the import graph has no cycle, type-only imports included', () => {
  assert.deepEqual(cycles(graph), []);
});

test('the rooms import one another without a cycle', () => {
  const room = (rel: string): string => rel.split('/')[0]!;
  const rooms = new Map<string, string[]>();
  for (const [from, targets] of graph) {
    const out = rooms.get(room(from)) ?? [];
    for (const t of targets) if (room(t) !== room(from) && !out.includes(room(t))) out.push(room(t));
    rooms.set(room(from), out);
  }
  assert.deepEqual(cycles(rooms), []);
});

test('the cycle check finds a cycle when there is one (two files, three files, a self-import)', () => {
  assert.deepEqual(cycles(new Map([['a', ['b']], ['b', ['c']], ['c', []]])), []);
  assert.deepEqual(cycles(new Map([['a', ['b']], ['b', ['a']]])), ['a → b → a']);
  assert.deepEqual(cycles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a', 'd']], ['d', []]])), ['a → b → c → a']);
  assert.deepEqual(cycles(new Map([['a', ['a']]])), ['a → a']);
});

test('every file of src/ is in a room, and every room has its header', () => {
  for (const f of all) layer(f.rel);
  // Every home DESIGN names is built now (provenance #18, agent #19, fabric #20): each index states what it holds.
  for (const home of ['provenance', 'agent', 'fabric']) {
    const text = readFileSync(join(SRC, home, 'index.ts'), 'utf8');
    assert.match(text, /^\/\*\*/, `${home}/index.ts states what lives there`);
  }
});
