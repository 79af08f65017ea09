// Attack: run an unsigned module past `requireSigned` by fanning it out over inputs, or by handing
// the engine a copy of a registered command's bytes as if it were the operator's command. Every
// fan-out input is refused like `engine.run` (NOT_CAPABLE, audited); a signed module fans out with
// its manifest; and the operator's registered commands — the very buffers in the registry — still
// run under requireSigned, through fan-out and the shell, while a look-alike copy does not.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CommandRegistry } from '../../src/index.ts';
import { KeyPair, didKey, SIGNING_KEY_ENV } from '../../src/provenance/index.ts';
import { signArtifact } from '../../src/provenance/artifact.ts';
import { runShell } from '../../src/shell/run.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-fanout-signed-');
delete process.env[SIGNING_KEY_ENV];
const upper = new Uint8Array(readFileSync(new URL('../fixtures/c/upper.wasm', import.meta.url)));
const bob = (() => {
  const keys = new KeyPair(Buffer.alloc(32, 11));
  return { keys, did: didKey(keys.publicKey), source: 'test' };
})();
const registry = CommandRegistry.withBuiltins();
const engine = testEngine({ requireSigned: [bob.did], commands: registry, poolSize: 1 });
const text = (b: Uint8Array) => new TextDecoder().decode(b);

test('fan-out of an unsigned module: every input NOT_CAPABLE and audited; with its signed manifest every input runs', async () => {
  const refused = await engine.fanout({ module: upper, inputs: ['a', 'b', 'c'], width: 2, tenant: 'fanner' });
  assert.deepEqual(refused.map((r) => (r.ok ? 'ran' : r.error.code)), ['NOT_CAPABLE', 'NOT_CAPABLE', 'NOT_CAPABLE']);
  const log = AuditLog.open();
  try {
    assert.equal(log.tail({ tenant: 'fanner', kind: 'artifact.refused', limit: 10 }).length, 3);
  } finally {
    log.close();
  }
  const dir = tempDir('membrane-fanout-art-');
  writeFileSync(join(dir, 'upper.wasm'), upper);
  const { signed } = signArtifact(join(dir, 'upper.wasm'), bob);
  const ran = await engine.fanout({ module: upper, artifact: signed, inputs: ['a', 'b'], tenant: 'fanner' });
  assert.deepEqual(ran.map((r) => (r.ok ? text(r.output) : r.error.code)), ['A', 'B']);
});

test("registered commands are the operator's: they run under requireSigned through fan-out and the shell; a copy of their bytes does not", async () => {
  const echoed = await engine.fanout({ command: 'echo', args: ['hi'], inputs: ['x'] });
  assert.deepEqual(echoed.map((r) => (r.ok ? text(r.output) : r.error.code)), ['hi\n']);
  const sh = await runShell(engine, registry, 'echo one | wc -c', { profile: 'minimal' });
  assert.equal(sh.exitCode, 0, sh.stderr);
  assert.match(sh.stdout, /^\s*4\s*$/);
  const copy = new Uint8Array(registry.get('echo')!);
  const r = await engine.run(copy, { argv: ['echo', 'sneaky'], tenant: 'copier' });
  assert.equal(r.error?.code, 'NOT_CAPABLE');
  assert.equal(r.stdout, '');
});
