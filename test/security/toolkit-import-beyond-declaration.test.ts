// A toolkit importing beyond its declaration: its manifest declares a narrow set of caps (what
// the installer grants) but a module asks for more — a network fetch, a file system, an
// embedder's host function. The install fails to link (LINK_UNSATISFIED) naming the command, the
// import, the cap and the declared set; nothing of the toolkit is registered; the registered
// bytes are a copy, so a module swapped after the check is not the one that runs.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { CommandRegistry } from '../../src/engine/registry.ts';
import { installToolkit } from '../../src/engine/toolkit-install.ts';
import { SandboxError } from '../../src/errors.ts';
import { watText } from '../helpers/wat.ts';

const CAT = new Uint8Array(readFileSync(new URL('../../commands/bin/cat.wasm', import.meta.url)));
const ECHO = new Uint8Array(readFileSync(new URL('../../commands/bin/echo.wasm', import.meta.url)));
const FETCHER = `(module
  (import "membrane" "kv_get" (func (param i32 i32 i32 i32) (result i32)))
  (import "membrane" "http_fetch" (func (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")))`;
const HOST = `(module
  (import "acme:orders" "get" (func (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")))`;

function refusal(f: () => unknown): SandboxError {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof SandboxError, String(e));
    return e;
  }
  assert.fail('it installed');
}

test('a command importing a cap its toolkit did not declare fails to link, naming import, cap and declaration', async () => {
  const registry = new CommandRegistry();
  const fetcher = await watText(FETCHER);
  const e2 = refusal(() => installToolkit(registry, 'kvtools', ['kv'], { fetcher }));
  assert.equal(e2.code, 'LINK_UNSATISFIED');
  assert.match(e2.message, /toolkit "kvtools" command "fetcher" imports beyond its declaration: membrane\.http_fetch needs cap "net"/);
  assert.match(e2.message, /declares caps \[kv\], narrower than its module needs/);
  assert.doesNotMatch(e2.message, /kv_get/); // what the declaration covers is not blamed
  assert.deepEqual(e2.details['declared'], ['kv']);
  assert.deepEqual(e2.details['missing'], [{ import: 'membrane.http_fetch', cap: 'net', reason: 'outside the toolkit\'s declared caps' }]);
  // A file system reached through WASI needs vfs.
  const e3 = refusal(() => installToolkit(registry, 'printers', [], { mycat: CAT }));
  assert.match(e3.message, /wasi_snapshot_preview1\.path_open needs cap "vfs"/);
  assert.equal(registry.get('fetcher'), undefined);
  assert.equal(registry.get('mycat'), undefined);
});

test('an embedder host function outside the declaration is refused the same way', async () => {
  const lookup = await watText(HOST);
  const e = refusal(() => installToolkit(new CommandRegistry(), 'orders', ['kv'], { lookup }));
  assert.equal(e.code, 'LINK_UNSATISFIED');
  assert.match(e.message, /acme:orders\.get needs cap "acme:orders"/);
  // Declared, it installs.
  installToolkit(new CommandRegistry(), 'orders', ['kv', 'acme:orders'], { lookup });
});

test('one bad command installs none of the toolkit; an undeclarable set installs nothing', () => {
  const registry = new CommandRegistry();
  const e = refusal(() => installToolkit(registry, 'mixed', [], { 'say': ECHO, 'read': CAT }));
  assert.equal(e.code, 'LINK_UNSATISFIED');
  assert.equal(registry.get('say'), undefined, 'the good command was not registered either');
  const unknown = refusal(() => installToolkit(registry, 'bogus', ['vfs', 'root'], { say: ECHO }));
  assert.equal(unknown.code, 'POLICY_INVALID');
  assert.match(unknown.message, /unknown cap word: root/);
  assert.equal(registry.get('say'), undefined);
});

test('the checked module is the one that runs: the registry keeps a copy, and a later plain register drops the declaration', () => {
  const registry = new CommandRegistry();
  const bytes = new Uint8Array(ECHO);
  installToolkit(registry, 'talk', [], { say: bytes });
  bytes.fill(0);
  assert.deepEqual(registry.get('say'), ECHO);
  assert.deepEqual(registry.declarationOf('say'), { toolkit: 'talk', caps: [], hostCaps: [] });
  // The grant a caller passes on is cut to the declaration.
  const caller = { caps: ['vfs', 'kv', 'net'] as const, hostCaps: ['acme:orders'], timeoutMs: 5 };
  assert.deepEqual(registry.policyFor('say', caller), { caps: [], hostCaps: [], timeoutMs: 5 });
  registry.register('say', ECHO);
  assert.equal(registry.declarationOf('say'), undefined);
});
