// Attack: slip an unsigned program past `requireSigned` by wrapping it as a component. An engine
// told to run only modules signed by a listed DID must refuse an unsigned component exactly as
// it refuses an unsigned core module — NOT_CAPABLE, audited, before anything is transpiled or runs —
// and run the same component when it comes with a valid signed manifest.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { KeyPair, didKey, SIGNING_KEY_ENV } from '../../src/provenance/index.ts';
import { signArtifact } from '../../src/provenance/artifact.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { testEngine } from '../helpers/engine.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-component-signed-');
delete process.env[SIGNING_KEY_ENV];
const hello = new Uint8Array(readFileSync(new URL('../fixtures/components/hello.component.wasm', import.meta.url)));
const alice = (() => {
  const keys = new KeyPair(Buffer.alloc(32, 3));
  return { keys, did: didKey(keys.publicKey), source: 'test' };
})();

test('requireSigned: an unsigned component is NOT_CAPABLE and audited; the signed one runs', async () => {
  const engine = testEngine({ requireSigned: [alice.did] });
  try {
    const unsigned = await engine.run(hello, { tenant: 'acme', id: 'unsigned-component' });
    assert.equal(unsigned.ok, false);
    assert.equal(unsigned.error?.code, 'NOT_CAPABLE', JSON.stringify(unsigned.error));
    assert.equal(unsigned.stdout, '');
    assert.equal(unsigned.fuelUsed, 0);

    const dir = tempDir('membrane-component-art-');
    writeFileSync(join(dir, 'hello.wasm'), hello);
    const { signed } = signArtifact(join(dir, 'hello.wasm'), alice);
    const ok = await engine.run(hello, { tenant: 'acme', artifact: signed });
    assert.equal(ok.ok, true, JSON.stringify(ok.error));
    assert.match(ok.stdout, /hello/i);

    const log = AuditLog.open();
    try {
      const refused = log.tail({ kind: 'artifact.refused', limit: 10 });
      assert.equal(refused.length, 1);
      assert.equal(refused[0]!.instance, 'unsigned-component');
    } finally {
      log.close();
    }
  } finally {
    await engine.close();
  }
});

test("a signed component's manifest declares the caps its imports need (kv for membrane:engine/kv)", () => {
  const dir = tempDir('membrane-component-caps-');
  writeFileSync(join(dir, 'kv.wasm'), readFileSync(new URL('../fixtures/components/kv.component.wasm', import.meta.url)));
  assert.deepEqual(signArtifact(join(dir, 'kv.wasm'), alice).signed.manifest.caps, ['kv']);
  // The network and fan-out interfaces declare theirs too: a signer sees `net` and `parallel`.
  for (const [name, caps] of [['http-get', ['net']], ['tcp-client', ['net']], ['many', ['parallel']]] as const) {
    writeFileSync(join(dir, `${name}.wasm`), readFileSync(new URL(`../fixtures/components/${name}.component.wasm`, import.meta.url)));
    assert.deepEqual(signArtifact(join(dir, `${name}.wasm`), alice).signed.manifest.caps, caps, name);
  }
});

test('requireSigned holds for engine.start with a component: unsigned is NOT_CAPABLE, audited, never transpiled; signed starts', async () => {
  const { transpileCount } = await import('../../src/lanes/component/index.ts');
  const engine = testEngine({ requireSigned: [alice.did] });
  const counter = new Uint8Array(readFileSync(new URL('../fixtures/components/counter.component.wasm', import.meta.url)));
  try {
    const before = transpileCount();
    await assert.rejects(engine.start('unsigned-instance', counter, { tenant: 'acme' }), (e: unknown) => (e as { code?: string }).code === 'NOT_CAPABLE');
    assert.equal(transpileCount(), before, 'an unsigned component is refused before jco sees it');
    assert.equal(engine.stats().instances, 0);

    const dir = tempDir('membrane-component-start-art-');
    writeFileSync(join(dir, 'counter.wasm'), counter);
    const { signed } = signArtifact(join(dir, 'counter.wasm'), alice);
    const inst = await engine.start('signed-instance', counter, { tenant: 'acme', artifact: signed });
    assert.equal((await inst.call('membrane:fixtures/tally#add', [2])).result, 2);
    await inst.stop();

    const log = AuditLog.open();
    try {
      assert.ok(log.tail({ kind: 'artifact.refused', limit: 10 }).some((e) => e.instance === 'unsigned-instance'));
    } finally {
      log.close();
    }
  } finally {
    await engine.close();
  }
});
