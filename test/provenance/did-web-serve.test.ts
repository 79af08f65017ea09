// `membrane serve` with `identity: { didWebHost, tenant }` answers GET /.well-known/did.json with
// the tenant's key; a signature by its did:key verifies under that document. Without the setting
// the route does not exist.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseConfig } from '../../src/interfaces/config.ts';
import { startServer } from '../../src/interfaces/http/server.ts';
import { createTenantIdentity, verifyForDid, SIGNING_KEY_ENV } from '../../src/provenance/index.ts';
import { testServer } from '../helpers/http.ts';
import { tempDir } from '../helpers/tmp.ts';

process.env['MEMBRANE_HOME'] = tempDir('membrane-did-serve-');
delete process.env[SIGNING_KEY_ENV];

test('GET /.well-known/did.json serves the configured tenant\'s did:web document', async () => {
  const { identity } = createTenantIdentity('alice');
  const t = await testServer({ config: parseConfig({ identity: { didWebHost: 'example.com', tenant: 'alice' } }, '.') });
  const r = await fetch(`${t.url}/.well-known/did.json`);
  assert.equal(r.status, 200);
  const doc = (await r.json()) as { id: string; alsoKnownAs: string[] };
  assert.equal(doc.id, 'did:web:example.com');
  assert.deepEqual(doc.alsoKnownAs, [identity.did]);
  const data = new TextEncoder().encode('signed by alice');
  assert.equal(verifyForDid(doc.id, data, identity.keys.sign(data), new Map([[doc.id, doc]])), true);
});

test('without the setting there is no did.json; a configured tenant without a key refuses to start', async () => {
  const t = await testServer();
  assert.equal((await fetch(`${t.url}/.well-known/did.json`)).status, 404);
  await assert.rejects(startServer({ port: 0, host: '127.0.0.1', config: parseConfig({ identity: { didWebHost: 'example.com', tenant: 'nobody' } }, '.') }), /identity.tenant "nobody" has no identity/);
});
