// A did:web document swap: the operator trusts did:web:example.com, and an attacker signs a module
// with a key of their own, naming example.com — then tries to get their key believed: a supplied
// document listing another key, a document for another DID filed under example.com, a host that
// serves a swapped document or redirects elsewhere, a host the network guard does not admit, an
// oversized document. Each is refused NOT_CAPABLE naming the reason, and audited; nothing runs.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { KeyPair, didKey, didWebDocument } from '../../src/provenance/index.ts';
import { signArtifact } from '../../src/provenance/artifact.ts';
import { AuditLog } from '../../src/storage/audit.ts';
import { wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';
import { httpsServer, makeTestPki, tableResolver, type TestServer } from '../net/servers.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-did-swap-');
const owner = new KeyPair(Buffer.alloc(32, 3));
const attacker = new KeyPair(Buffer.alloc(32, 4));
const pki = makeTestPki();
let server: TestServer;
let serve: (path: string) => { status: number; body: string; location?: string } = () => ({ status: 404, body: '' });

before(async () => {
  server = await httpsServer(pki.leaf('host.test'), (req, res) => {
    const a = serve(req.url ?? '');
    if (a.location) res.setHeader('location', a.location);
    res.writeHead(a.status).end(a.body);
  });
});
after(() => server.close());

async function signedBy(keys: KeyPair, host: string): Promise<{ bytes: Uint8Array; artifact: unknown }> {
  const bytes = await wat('count');
  const dir = tempDir('membrane-did-swap-art-');
  writeFileSync(join(dir, 'count.wasm'), bytes);
  return { bytes, artifact: signArtifact(join(dir, 'count.wasm'), { keys, did: didKey(keys.publicKey), source: 'test' }, { didWebHost: host }).signed };
}

function refusedRecords(): { reason: string }[] {
  const log = AuditLog.open();
  try {
    return log.tail({ kind: 'artifact.refused', limit: 1000 }).map((r) => r.detail as { reason: string });
  } finally {
    log.close();
  }
}

async function expectRefused(engine: ReturnType<typeof testEngine>, m: { bytes: Uint8Array; artifact: unknown }, why: RegExp): Promise<void> {
  const before = refusedRecords().length;
  const r = await engine.run(m.bytes, { invoke: 'count', args: [3n], artifact: m.artifact, tenant: 'acme' });
  assert.equal(r.ok, false);
  assert.equal(r.error?.code, 'NOT_CAPABLE');
  assert.match(r.error!.message, why);
  const after = refusedRecords();
  assert.equal(after.length, before + 1, 'the refusal is audited');
  assert.match(after[after.length - 1]!.reason, why);
}

test('supplied documents: another key, or a document for another DID, vouch for nothing', async () => {
  const forged = await signedBy(attacker, 'example.com');
  const engine = testEngine({ requireSigned: ['did:web:example.com'], didDocuments: { 'did:web:example.com': didWebDocument('example.com', owner.publicKey) } });
  await expectRefused(engine, forged, /signature does not verify under did:web:example\.com's DID document/);
  // The attacker's own document, filed under example.com, names another DID.
  const filed = testEngine({ requireSigned: ['did:web:example.com'], didDocuments: { 'did:web:example.com': didWebDocument('evil.test', attacker.publicKey) } });
  await expectRefused(filed, forged, /the DID document supplied for did:web:example\.com names another DID \(did:web:evil\.test\)/);
  // A signer the operator does not trust is refused before any document is looked at.
  const other = await signedBy(attacker, 'evil.test');
  await expectRefused(engine, other, /signed by did:web:evil\.test, which is not one of the engine's requireSigned DIDs/);
});

test('fetched documents: a swapped key, a foreign id, a redirect, an oversized body, a host the guard refuses', async () => {
  const host = `host.test:${server.port}`;
  const did = `did:web:host.test%3A${server.port}`;
  const forged = await signedBy(attacker, host);
  const net = { allowCidrs: ['127.0.0.1/32'], resolver: tableResolver({ 'host.test': ['127.0.0.1'] }), ca: pki.ca };
  const fresh = (): ReturnType<typeof testEngine> => testEngine({ requireSigned: [did], didWebFetch: true, brokers: { net } });

  serve = () => ({ status: 200, body: JSON.stringify(didWebDocument(host, owner.publicKey)) });
  await expectRefused(fresh(), forged, /signature does not verify under did:web:host\.test%3A\d+'s DID document/);
  serve = () => ({ status: 200, body: JSON.stringify(didWebDocument('evil.test', attacker.publicKey)) });
  await expectRefused(fresh(), forged, /the document at https:\/\/host\.test:\d+\/\.well-known\/did\.json names another DID/);
  serve = () => ({ status: 302, body: '', location: 'https://evil.test/.well-known/did.json' });
  await expectRefused(fresh(), forged, /answered HTTP 302|failed through the network guard/);
  serve = () => ({ status: 200, body: ' '.repeat(70 * 1024) + JSON.stringify(didWebDocument(host, attacker.publicKey)) });
  await expectRefused(fresh(), forged, /failed through the network guard: TOO_LARGE/);
  // Without the operator's allowCidrs, 127.0.0.1 is below the guard's floor: nothing is fetched.
  let asked = 0;
  serve = () => (asked++, { status: 200, body: JSON.stringify(didWebDocument(host, attacker.publicKey)) });
  const guarded = testEngine({ requireSigned: [did], didWebFetch: true, brokers: { net: { resolver: net.resolver, ca: pki.ca } } });
  await expectRefused(guarded, forged, /failed through the network guard: DENIED/);
  assert.equal(asked, 0, 'the guard refused before connecting');
});
