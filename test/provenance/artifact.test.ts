// Signed artifacts: sign → verify; one flipped asset byte or signature byte fails its half; the
// engine's requireSigned refuses unsigned and wrongly signed modules (NOT_CAPABLE), audited.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { KeyPair, didKey, SIGNING_KEY_ENV } from '../../src/provenance/index.ts';
import { signArtifact, verifyArtifact, capsOfModule, type SignedArtifact } from '../../src/provenance/artifact.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { testEngine } from '../helpers/engine.ts';
import { wat, watText } from '../helpers/wat.ts';
import { runCli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-artifact-');
process.env['MEMBRANE_HOME'] = HOME;
delete process.env[SIGNING_KEY_ENV];

const alice = (() => {
  const keys = new KeyPair(Buffer.alloc(32, 1));
  return { keys, did: didKey(keys.publicKey), source: 'test' };
})();
const mallory = (() => {
  const keys = new KeyPair(Buffer.alloc(32, 2));
  return { keys, did: didKey(keys.publicKey), source: 'test' };
})();

function flip(file: string, at = 0): void {
  const b = readFileSync(file);
  b[at] = b[at]! ^ 1;
  writeFileSync(file, b);
}

test('a signed module verifies; one flipped asset byte fails assetIntegrity; a flipped signature fails signature', async () => {
  const dir = tempDir('membrane-art-');
  const file = join(dir, 'kv.wasm');
  writeFileSync(file, await wat('kv-import'));
  const { file: manifest, signed } = signArtifact(file, alice, { version: '1.2.3' });
  assert.equal(manifest, `${file}.manifest.json`);
  assert.deepEqual(signed.manifest.caps, ['kv']);
  assert.equal(signed.manifest.name, 'kv');
  assert.equal(signed.manifest.assets[0]!.path, 'kv.wasm');
  assert.deepEqual(verifyArtifact(manifest), { signature: true, assetIntegrity: true, valid: true, signer: alice.did, reasons: [] });
  assert.equal(verifyArtifact(manifest, { trust: [mallory.did] }).signature, false);

  flip(file, 40);
  const tampered = verifyArtifact(manifest);
  assert.equal(tampered.signature, true);
  assert.equal(tampered.assetIntegrity, false);
  assert.equal(tampered.valid, false);
  assert.match(tampered.reasons.join('\n'), /kv\.wasm: sha256 differs/);
  flip(file, 40);
  assert.equal(verifyArtifact(manifest).valid, true);

  const env = JSON.parse(readFileSync(manifest, 'utf8')) as SignedArtifact;
  const sig = Buffer.from(env.signature, 'base64url');
  sig[10] = sig[10]! ^ 1;
  writeFileSync(manifest, JSON.stringify({ ...env, signature: sig.toString('base64url') }));
  const forged = verifyArtifact(manifest);
  assert.deepEqual([forged.signature, forged.assetIntegrity, forged.valid], [false, true, false]);

  // Editing a manifest field (widening caps) breaks the signature too.
  writeFileSync(manifest, JSON.stringify({ ...env, manifest: { ...env.manifest, caps: ['kv', 'net'] } }));
  assert.equal(verifyArtifact(manifest).signature, false);
});

test('a directory artifact lists every file; a missing file, a link or an escaping path fails its half', () => {
  const dir = tempDir('membrane-art-dir-');
  mkdirSync(join(dir, 'lib'));
  writeFileSync(join(dir, 'README'), 'hello');
  writeFileSync(join(dir, 'lib', 'data.bin'), Buffer.from([1, 2, 3]));
  const { file, signed } = signArtifact(dir, alice, { name: 'kit', caps: ['net'] });
  assert.deepEqual(signed.manifest.assets.map((a) => a.path), ['README', 'lib/data.bin']);
  assert.deepEqual(signed.manifest.caps, ['net']);
  assert.equal(verifyArtifact(file).valid, true);
  writeFileSync(join(dir, 'lib', 'data.bin'), Buffer.from([1, 2, 3, 4]));
  assert.match(verifyArtifact(file).reasons[0]!, /lib\/data\.bin: 4 bytes, the manifest says 3/);
  assert.throws(() => signArtifact(dir, alice, { caps: ['bogus'] }), /unknown cap word "bogus"/);
  symlinkSync('/etc/passwd', join(dir, 'link'));
  assert.throws(() => signArtifact(dir, alice), /symbolic link/);
  // A manifest naming ../outside is refused as a whole, signed or not.
  const env = JSON.parse(readFileSync(file, 'utf8')) as SignedArtifact;
  writeFileSync(file, JSON.stringify({ ...env, manifest: { ...env.manifest, assets: [{ path: '../outside', sha256: '0'.repeat(64), bytes: 0 }] } }));
  const r = verifyArtifact(file);
  assert.equal(r.valid, false);
  assert.match(r.reasons[0]!, /not a safe relative path/);
});

test('requireSigned: an unsigned, a wrongly signed and an altered module are refused NOT_CAPABLE and audited; a signed one runs', async () => {
  const engine = testEngine({ requireSigned: [alice.did] });
  const bytes = await wat('count');
  const dir = tempDir('membrane-art-run-');
  writeFileSync(join(dir, 'count.wasm'), bytes);
  const good = signArtifact(join(dir, 'count.wasm'), alice).signed;
  const bad = signArtifact(join(dir, 'count.wasm'), mallory).signed;

  const ok = await engine.run(bytes, { invoke: 'count', args: [10n], artifact: good, tenant: 'acme' });
  assert.equal(ok.ok, true, JSON.stringify(ok.error));
  assert.equal(String(ok.result), '45');

  const unsigned = await engine.run(bytes, { invoke: 'count', args: [10n], tenant: 'acme', id: 'unsigned-run' });
  assert.equal(unsigned.error?.code, 'NOT_CAPABLE');
  assert.match(unsigned.error!.message, /unsigned/);
  const wrong = await engine.run(bytes, { invoke: 'count', args: [10n], artifact: bad, tenant: 'acme' });
  assert.equal(wrong.error?.code, 'NOT_CAPABLE');
  assert.match(wrong.error!.message, /not one of the engine's requireSigned DIDs/);
  const other = await watText('(module (func (export "count") (param i64) (result i64) (i64.const 7)))');
  const swapped = await engine.run(other, { invoke: 'count', args: [10n], artifact: good, tenant: 'acme' });
  assert.equal(swapped.error?.code, 'NOT_CAPABLE');
  assert.match(swapped.error!.message, /sha256 is not among/);
  const forgedSig = { ...good, manifest: { ...good.manifest, assets: [{ path: 'count.wasm', sha256: (await import('node:crypto')).createHash('sha256').update(other).digest('hex'), bytes: other.length }] } };
  const forged = await engine.run(other, { invoke: 'count', args: [10n], artifact: forgedSig, tenant: 'acme' });
  assert.match(forged.error!.message, /signature does not verify/);
  await assert.rejects(engine.start('unsigned-instance', bytes, { tenant: 'acme' }), { code: 'NOT_CAPABLE' });

  const log = AuditLog.open();
  try {
    const refused = log.tail({ kind: 'artifact.refused', limit: 100 });
    assert.equal(refused.length, 5);
    assert.equal(refused[0]!.tenant, 'acme');
    assert.equal(refused[0]!.instance, 'unsigned-run');
    assert.match(String(refused[0]!.detail['reason']), /unsigned/);
    assert.equal(log.verify().ok, true);
  } finally {
    log.close();
  }
  assert.throws(() => testEngine({ requireSigned: ['did:web:example.com:users:alice'] }), { code: 'POLICY_INVALID' }); // path-form did:web is not supported
});

test('capsOfModule maps imports to cap words through the policy catalog', async () => {
  assert.deepEqual(capsOfModule(await wat('kv-import')), ['kv']);
  assert.deepEqual(capsOfModule(await wat('count')), []);
});

test('membrane sign and verify-artifact end to end, exit 1 on a tampered asset', async () => {
  const home = tempDir('membrane-sign-cli-');
  const env = { MEMBRANE_HOME: home, [SIGNING_KEY_ENV]: '' };
  const dir = tempDir('membrane-sign-cli-art-');
  const file = join(dir, 'kv.wasm');
  writeFileSync(file, await wat('kv-import'));
  const none = await runCli(['sign', file, '--tenant', 'alice'], env);
  assert.notEqual(none.code, 0);
  assert.match(none.stderr, /no identity yet/);
  assert.equal((await runCli(['identity', 'create', '--tenant', 'alice'], env)).code, 0);
  const signed = await runCli(['sign', file, '--tenant', 'alice', '--version', '2.0.0', '--caps', 'vfs', '--json'], env);
  assert.equal(signed.code, 0, signed.stderr);
  const s = JSON.parse(signed.stdout) as { manifest: string; signer: string; caps: string[] };
  assert.deepEqual(s.caps, ['vfs', 'kv']);
  const ok = await runCli(['verify-artifact', s.manifest, '--json'], env);
  assert.equal(ok.code, 0, ok.stderr);
  assert.deepEqual(JSON.parse(ok.stdout), { signature: true, assetIntegrity: true, valid: true, signer: s.signer, reasons: [] });
  flip(file, 20);
  const bad = await runCli(['verify-artifact', s.manifest], env);
  assert.equal(bad.code, 1);
  assert.match(bad.stdout, /signature: ok\nassetIntegrity: FAILED/);
});

test('an artifact signed as did:web verifies with its document (verify-artifact --did-doc) and not without', async () => {
  const home = tempDir('membrane-sign-didweb-');
  const env = { MEMBRANE_HOME: home, [SIGNING_KEY_ENV]: '' };
  const dir = tempDir('membrane-sign-didweb-art-');
  const file = join(dir, 'count.wasm');
  writeFileSync(file, await wat('count'));
  assert.equal((await runCli(['identity', 'create', '--tenant', 'alice'], env)).code, 0);
  const signed = await runCli(['sign', file, '--tenant', 'alice', '--did-web', 'example.com', '--json'], env);
  assert.equal(signed.code, 0, signed.stderr);
  assert.equal((JSON.parse(signed.stdout) as { signer: string }).signer, 'did:web:example.com');
  const doc = await runCli(['identity', 'did-web', '--host', 'example.com', '--tenant', 'alice'], env);
  const docFile = join(dir, 'did.json');
  writeFileSync(docFile, doc.stdout);
  const without = await runCli(['verify-artifact', `${file}.manifest.json`, '--json'], env);
  assert.equal(without.code, 1);
  assert.equal((JSON.parse(without.stdout) as { signature: boolean }).signature, false);
  const withDoc = await runCli(['verify-artifact', `${file}.manifest.json`, '--did-doc', docFile, '--json'], env);
  assert.equal(withDoc.code, 0, withDoc.stdout);
  assert.deepEqual(JSON.parse(withDoc.stdout), { signature: true, assetIntegrity: true, valid: true, signer: 'did:web:example.com', reasons: [] });
  // Another tenant's document under the same host name does not vouch for it.
  assert.equal((await runCli(['identity', 'create', '--tenant', 'bob'], env)).code, 0);
  writeFileSync(docFile, (await runCli(['identity', 'did-web', '--host', 'example.com', '--tenant', 'bob'], env)).stdout);
  assert.equal((await runCli(['verify-artifact', `${file}.manifest.json`, '--did-doc', docFile], env)).code, 1);
});

test('membrane run --require-signed refuses an unsigned module (exit 67, NOT_CAPABLE) and runs it with --artifact', async () => {
  const home = tempDir('membrane-run-signed-');
  const env = { MEMBRANE_HOME: home, [SIGNING_KEY_ENV]: '' };
  const dir = tempDir('membrane-run-signed-art-');
  const file = join(dir, 'count.wasm');
  writeFileSync(file, await wat('count'));
  const created = await runCli(['identity', 'create', '--tenant', 'alice', '--json'], env);
  const did = (JSON.parse(created.stdout) as { did: string }).did;
  assert.equal((await runCli(['sign', file, '--tenant', 'alice'], env)).code, 0);
  const args = ['run', file, '--invoke', 'count', '--arg', '10', '--require-signed', did];
  const refused = await runCli(args, env);
  assert.equal(refused.code, 67, refused.stderr);
  assert.match(refused.stderr, /NOT_CAPABLE: refusing to run the module: the module is unsigned/);
  const ran = await runCli([...args, '--artifact', `${file}.manifest.json`], env);
  assert.equal(ran.code, 0, ran.stderr);
  assert.equal(ran.stdout.trim(), '45');
});
