// The component lane: a WASI preview 2 component runs `wasi:cli/run` in a worker, its core
// modules metered and capped like any guest, its imports checked against the membrane:engine
// world first (src/engine/component-lane.ts, src/policy/component-world.ts, src/wasi/p2).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { testEngine } from '../helpers/engine.ts';
import { cGuest } from '../helpers/wat.ts';
import { component } from '../helpers/components.ts';
import { componentImports, isComponent } from '../../src/wasm/component.ts';
import { checkComponentImport, checkComponentWorld } from '../../src/policy/component-world.ts';
import { transpileCount } from '../../src/lanes/component/index.ts';
import { SandboxError } from '../../src/errors.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-home-');
const engine = testEngine({ poolSize: 1 });

test('a wasi:cli/run component prints what the same program prints as a p1 module, and its fuel is counted', async () => {
  const c = await engine.run(component('hello'), { argv: ['one', 'two'], env: { WHO: 'component' } });
  assert.equal(c.ok, true, JSON.stringify(c.error));
  assert.equal(c.exitCode, 0);
  const p1 = await engine.run(cGuest('hello'), { argv: ['one', 'two'], env: { WHO: 'component' } });
  assert.equal(c.stdout, p1.stdout);
  assert.match(c.stdout, /^hello from a wasm guest\narg 1: one\narg 2: two\nWHO=component\n$/);
  assert.ok(c.fuelUsed > 0, `fuelUsed ${c.fuelUsed}`);
  assert.ok(c.memoryBytes > 0);
});

test('the same component uses the same fuel on every run (deterministic metering)', async () => {
  const a = await engine.run(component('hello'));
  const b = await engine.run(component('hello'));
  assert.equal(a.fuelUsed, b.fuelUsed);
});

test('a component is transpiled once: later runs reuse the cached glue', async () => {
  await engine.run(component('hello'));
  const before = transpileCount();
  const r = await engine.run(component('hello'));
  assert.equal(r.ok, true);
  assert.equal(transpileCount(), before);
});

test('membrane:engine/kv granted under minimal: a put and a get round trip', async () => {
  const r = await engine.run(component('kv'), { profile: 'minimal', tenant: 'kv-component' });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.stdout, 'started\nkv: hello from kv\n');
});

test('a fuel budget smaller than the program ends it FUEL_EXHAUSTED', async () => {
  const r = await engine.run(component('spin'), { fuel: 100_000 });
  assert.equal(r.error?.code, 'FUEL_EXHAUSTED');
  assert.equal(r.fuelUsed, 100_000);
});

test('the component reader: core modules are not components; imports are listed by name and kind', () => {
  assert.equal(isComponent(cGuest('hello')), false);
  assert.equal(isComponent(component('kv')), true);
  assert.deepEqual(componentImports(component('kv')).map((i) => `${i.name} ${i.kind}`), [
    'wasi:io/error@0.2.0 instance',
    'wasi:io/streams@0.2.0 instance',
    'wasi:cli/stdout@0.2.0 instance',
    'membrane:engine/kv@0.1.0 instance',
  ]);
  const cut = component('kv').slice(0, 40);
  assert.throws(() => componentImports(cut), (e: unknown) => e instanceof SandboxError && e.code === 'INVALID_MODULE');
});

test('the world: unknown interfaces, bare imports and other versions are outside it', () => {
  assert.equal(checkComponentImport('wasi:cli/stdout@0.2.3', 'instance', []), null);
  assert.equal(checkComponentImport('wasi:filesystem/types@0.2.0', 'instance', ['vfs']), null);
  assert.equal(checkComponentImport('wasi:filesystem/types@0.2.0', 'instance', [])?.cap, 'vfs');
  assert.match(checkComponentImport('wasi:cli/stdout@0.3.0', 'instance', [])?.reason ?? '', /version/);
  assert.match(checkComponentImport('acme:evil/backdoor@1.0.0', 'instance', ['vfs'])?.reason ?? '', /no capability/);
  assert.match(checkComponentImport('host-exec', 'func', ['vfs'])?.reason ?? '', /func import/);
  assert.equal(checkComponentImport('wasi:http/outgoing-handler@0.2.0', 'instance', ['net']), null);
  assert.equal(checkComponentImport('wasi:sockets/tcp@0.2.0', 'instance', ['net']), null);
  assert.match(checkComponentImport('wasi:sockets/udp@0.2.0', 'instance', ['net'])?.reason ?? '', /not linked in this version/);
  assert.throws(
    () => checkComponentWorld([{ name: 'membrane:engine/kv@0.1.0', kind: 'instance' }, { name: 'x:y/z@1.0.0', kind: 'instance' }], ['vfs']),
    (e: unknown) => e instanceof SandboxError && e.code === 'LINK_UNSATISFIED' && /2 imports/.test(e.message),
  );
});

test('wit/membrane.wit parses, names the world version the check accepts, and its kv is what the worker implements', async () => {
  const { componentEmbed } = await import('@bytecodealliance/jco-transpile/wasm-tools');
  const { readFileSync } = await import('node:fs');
  const { WORLD_VERSION } = await import('../../src/policy/component-world.ts');
  const wit = readFileSync(new URL('../../wit/membrane.wit', import.meta.url), 'utf8');
  for (const world of ['kv-command', 'query-command', 'shell-command', 'fetch-command']) {
    const embedded = await componentEmbed({ binary: new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]), witSource: wit, world });
    assert.ok(embedded.length > 8);
  }
  assert.match(wit, /^  query: func\(sql: string\) -> result<string, error-code>;$/m);
  assert.match(wit, new RegExp(`^package membrane:engine@${WORLD_VERSION.replace(/\./g, '\\.')};$`, 'm'));
  for (const fn of ['get', 'put', 'delete', 'keys']) assert.match(wit, new RegExp(`^  ${fn}: func\\(`, 'm'));
});

test('a component\'s output streams to onStdout as it is written, and the result still carries it all', async () => {
  const chunks: string[] = [];
  const r = await engine.run(component('hello'), { onStdout: (c) => chunks.push(c) });
  assert.equal(r.ok, true);
  assert.equal(chunks.join(''), 'hello from a wasm guest\n');
  assert.equal(r.stdout, 'hello from a wasm guest\n');
});

test('options the component lane does not carry yet are refused by name, not ignored', async () => {
  const receipt = await engine.run(component('hello'), { receipt: true });
  assert.equal(receipt.error?.code, 'POLICY_INVALID');
  assert.match(receipt.error?.message ?? '', /receipts/);
  const invoke = await engine.run(component('hello'), { invoke: 'run' });
  assert.equal(invoke.error?.code, 'POLICY_INVALID');
});

test('a component jco cannot parse is INVALID_MODULE (its transpile thread reports it), and the engine runs on', async () => {
  // A valid preamble and a well-formed section of a type jco rejects (id 0x7f).
  const bad = new Uint8Array([0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00, 0x7f, 0x01, 0x00]);
  const r = await engine.run(bad);
  assert.equal(r.error?.code, 'INVALID_MODULE', JSON.stringify(r.error));
  assert.equal((await engine.run(component('hello'))).ok, true);
});

test('membrane:engine/vfs-query under vfs answers a statement over the instance\'s own VFS; without vfs it is not linked', async () => {
  const r = await engine.run(component('query'));
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.deepEqual(JSON.parse(r.stdout), { columns: ['answer'], rows: [[42]] });
  const none = await engine.run(component('query'), { caps: [] });
  assert.equal(none.error?.code, 'LINK_UNSATISFIED');
  assert.match(none.error?.message ?? '', /membrane:engine\/vfs-query@0\.1\.0.*cap "vfs"/);
});

test('stdin reaches a component through wasi:cli/stdin (the upper-casing C program)', async () => {
  const r = await engine.run(component('upper'), { stdin: 'shout this\n' });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.stdout, 'SHOUT THIS\n');
});

test('membrane:engine/run-command under commands runs a registered command on the thread, its fuel billed to the component', async () => {
  const r = await engine.run(component('cmd'), { profile: 'minimal' });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(r.stdout, 'status 0\nfrom a component\n');
  const echo = await engine.run(new Uint8Array(readFileSync(new URL('../../commands/bin/echo.wasm', import.meta.url))), { argv: ['from', 'a component'] });
  assert.ok(r.fuelUsed > echo.fuelUsed, `component ${r.fuelUsed} vs echo alone ${echo.fuelUsed}`);
  // The command shares the component's budget: too little for both ends the component.
  const starved = await engine.run(component('cmd'), { profile: 'minimal', fuel: 500 });
  assert.equal(starved.error?.code, 'FUEL_EXHAUSTED');
});
