// requireSigned with a did:web signer: the operator lists `did:web:HOST`; a module whose manifest
// that host's key signed runs — with the document supplied by the operator, or fetched from
// https://HOST/.well-known/did.json through the network guard from a server this test starts on
// 127.0.0.1 (a test CA, a name the test resolver maps to 127.0.0.1).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { KeyPair, didKey, didWebDocument } from '../../src/provenance/index.ts';
import { signArtifact } from '../../src/provenance/artifact.ts';
import { wat } from '../helpers/wat.ts';
import { testEngine } from '../helpers/engine.ts';
import { runCli } from '../helpers/cli.ts';
import { httpsServer, makeTestPki, tableResolver } from '../net/servers.ts';
import { tempDir } from '../helpers/tmp.ts';

const HOME = tempDir('membrane-did-web-');
process.env['MEMBRANE_HOME'] = HOME;
const keys = new KeyPair(Buffer.alloc(32, 7));
const signer = (host: string) => ({ keys, did: didKey(keys.publicKey), source: 'test' as const, host });

async function signedCount(host: string): Promise<{ bytes: Uint8Array; artifact: unknown; file: string }> {
  const bytes = await wat('count');
  const dir = tempDir('membrane-did-web-art-');
  writeFileSync(join(dir, 'count.wasm'), bytes);
  const { file, signed } = signArtifact(join(dir, 'count.wasm'), signer(host), { didWebHost: host });
  return { bytes, artifact: signed, file };
}

test('a manifest signed by a key in the operator-supplied did:web document runs', async () => {
  const { bytes, artifact } = await signedCount('example.com');
  const engine = testEngine({ requireSigned: ['did:web:example.com'], didDocuments: { 'did:web:example.com': didWebDocument('example.com', keys.publicKey) } });
  const r = await engine.run(bytes, { invoke: 'count', args: [10n], artifact });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  assert.equal(String(r.result), '45');
});

test('with didWebFetch, the document is fetched from the host through the network guard', async () => {
  const pki = makeTestPki();
  let served = 0;
  const server = await httpsServer(pki.leaf('signer.test'), (req, res) => {
    served++;
    if (req.url !== '/.well-known/did.json') return void res.writeHead(404).end();
    res.setHeader('content-type', 'application/did+json');
    res.end(JSON.stringify(didWebDocument(`signer.test:${server.port}`, keys.publicKey)));
  });
  after(() => server.close());
  const host = `signer.test:${server.port}`;
  const did = `did:web:signer.test%3A${server.port}`;
  const { bytes, artifact } = await signedCount(host);
  const net = { allowCidrs: ['127.0.0.1/32'], resolver: tableResolver({ 'signer.test': ['127.0.0.1'] }), ca: pki.ca };
  const engine = testEngine({ requireSigned: [did], didWebFetch: true, brokers: { net } });
  const r = await engine.run(bytes, { invoke: 'count', args: [5n], artifact });
  assert.equal(r.ok, true, JSON.stringify(r.error));
  const again = await engine.run(bytes, { invoke: 'count', args: [5n], artifact });
  assert.equal(again.ok, true);
  assert.equal(served, 1, 'the fetched document is cached');
  // Without didWebFetch nothing is fetched, and the refusal says what to do.
  const offline = testEngine({ requireSigned: [did], brokers: { net } });
  const refused = await offline.run(bytes, { invoke: 'count', args: [5n], artifact });
  assert.equal(refused.error?.code, 'NOT_CAPABLE');
  assert.match(refused.error!.message, /no DID document for did:web:signer\.test%3A\d+: supply it/);
  assert.equal(served, 1);
});

test('membrane run --require-signed did:web:HOST --did-doc FILE', async () => {
  const { file } = await signedCount('example.com');
  const docFile = join(tempDir('membrane-did-doc-'), 'did.json');
  writeFileSync(docFile, JSON.stringify(didWebDocument('example.com', keys.publicKey)));
  const module = file.replace(/\.manifest\.json$/, '');
  const env = { MEMBRANE_HOME: HOME };
  const ok = await runCli(['run', module, '--invoke', 'count', '--arg', '3', '--require-signed', 'did:web:example.com', '--artifact', file, '--did-doc', docFile], env);
  assert.equal(ok.code, 0, ok.stderr);
  const no = await runCli(['run', module, '--invoke', 'count', '--arg', '3', '--require-signed', 'did:web:example.com', '--artifact', file], env);
  assert.notEqual(no.code, 0);
  assert.match(no.stderr, /NOT_CAPABLE: refusing to run the module: no DID document for did:web:example\.com/);
});
