// Identities: did:key against the W3C vector, did:web documents, key files kept private, and the CLI.
import assert from 'node:assert/strict';
import { chmodSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { KeyPair, didKey, publicKeyOfDidKey, didWebDocument, didWebId, verifyForDid, verifyRaw, createTenantIdentity, tenantIdentity, SIGNING_KEY_ENV } from '../../src/provenance/index.ts';
import { runCli } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

// The W3C did:key test vector (w3c-ccg/did-method-key, test-vectors/ed25519-x25519.json): the
// all-zero 32-byte seed, whose Ed25519 public key is 3b6a27bc…da29 (JWK x "O2onvM62…Z2ik").
const ZERO_SEED_DID = 'did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp';
const ZERO_SEED_PUB = '3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29';
// RFC 8032 §7.1 TEST 1: secret key and public key.
const RFC_SEED = '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60';
const RFC_PUB = 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a';

function freshHome(): string {
  const home = tempDir('membrane-identity-');
  process.env['MEMBRANE_HOME'] = home;
  delete process.env[SIGNING_KEY_ENV];
  return home;
}

test('did:key encodes the W3C Ed25519 vector from its seed and decodes back to its key', () => {
  const kp = new KeyPair(Buffer.alloc(32));
  assert.equal(Buffer.from(kp.publicKey).toString('hex'), ZERO_SEED_PUB);
  assert.equal(Buffer.from(kp.publicKey).toString('base64url'), 'O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik');
  assert.equal(didKey(kp.publicKey), ZERO_SEED_DID);
  assert.equal(Buffer.from(publicKeyOfDidKey(ZERO_SEED_DID)).toString('hex'), ZERO_SEED_PUB);
});

test('the RFC 8032 key pair derives its published public key and round-trips through did:key', () => {
  const kp = new KeyPair(Buffer.from(RFC_SEED, 'hex'));
  assert.equal(Buffer.from(kp.publicKey).toString('hex'), RFC_PUB);
  const did = didKey(kp.publicKey);
  assert.match(did, /^did:key:z6Mk[1-9A-HJ-NP-Za-km-z]{44}$/);
  assert.equal(Buffer.from(publicKeyOfDidKey(did)).toString('hex'), RFC_PUB);
});

test('did:key decoding refuses other prefixes, lengths and encodings', () => {
  const good = ZERO_SEED_DID;
  for (const bad of ['did:key:', 'did:key:x6Mk', good.replace('z6Mk', 'z6Ls'), `${good}1`, good.slice(0, -1), good.replace('did:key:', 'did:web:'), `${good.slice(0, -2)}0O`]) {
    assert.throws(() => publicKeyOfDidKey(bad), { code: 'POLICY_INVALID' }, bad);
  }
});

test('one signature verifies under did:key and under the did:web document, and not after an edit', () => {
  const kp = new KeyPair(Buffer.from(RFC_SEED, 'hex'));
  const data = Buffer.from('artifact manifest bytes');
  const sig = kp.sign(data);
  const doc = didWebDocument('Example.com:8443', kp.publicKey);
  assert.equal(doc.id, 'did:web:example.com%3A8443');
  assert.equal(doc.id, didWebId('example.com:8443'));
  assert.equal(doc.verificationMethod[0]!.type, 'Ed25519VerificationKey2020');
  assert.equal(doc.alsoKnownAs[0], didKey(kp.publicKey));
  const docs = new Map([[doc.id, JSON.parse(JSON.stringify(doc)) as unknown]]);
  assert.equal(verifyForDid(didKey(kp.publicKey), data, sig), true);
  assert.equal(verifyForDid(doc.id, data, sig, docs), true);
  const edited = Buffer.from('artifact manifest bytez');
  assert.equal(verifyForDid(didKey(kp.publicKey), edited, sig), false);
  assert.equal(verifyForDid(doc.id, edited, sig, docs), false);
  // Another key's did:key, a did:web with no document, or a document for another host: false.
  assert.equal(verifyForDid(ZERO_SEED_DID, data, sig), false);
  assert.equal(verifyForDid(doc.id, data, sig), false);
  assert.equal(verifyForDid('did:web:other.example', data, sig, new Map([['did:web:other.example', doc]])), false);
  // A method not listed under assertionMethod does not count.
  const unlisted = { ...doc, assertionMethod: [] };
  assert.equal(verifyForDid(doc.id, data, sig, new Map([[doc.id, unlisted]])), false);
  assert.equal(verifyRaw(kp.publicKey, data, `${sig.slice(0, -2)}AA`), false);
  assert.throws(() => didWebId('exa mple.com'), { code: 'POLICY_INVALID' });
  assert.throws(() => didWebId('example.com/../x'), { code: 'POLICY_INVALID' });
});

test('a tenant key file is created 0600 once, kept, and refused when group-readable or a link', () => {
  const home = freshHome();
  const a = createTenantIdentity('alice');
  assert.equal(a.created, true);
  const file = join(home, 'identities', 'alice.ed25519');
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(statSync(join(home, 'identities')).mode & 0o777, 0o700);
  const again = createTenantIdentity('alice');
  assert.equal(again.created, false);
  assert.equal(again.identity.did, a.identity.did);
  assert.equal(tenantIdentity('alice')?.did, a.identity.did);
  assert.equal(tenantIdentity('bob'), undefined);
  assert.doesNotMatch(JSON.stringify(a.identity), new RegExp(readFileSync(file, 'utf8').trim().slice(0, 20).replace(/[+/]/g, '.')));
  chmodSync(file, 0o640);
  assert.throws(() => tenantIdentity('alice'), (e: Error & { code?: string }) => e.code === 'POLICY_INVALID' && /group or others/.test(e.message) && !e.message.includes(home));
  chmodSync(file, 0o600);
  symlinkSync(file, join(home, 'identities', 'mallory.ed25519'));
  assert.throws(() => tenantIdentity('mallory'), /symbolic link/);
  assert.throws(() => createTenantIdentity('../x'), { code: 'POLICY_INVALID' });
});

test('MEMBRANE_SIGNING_KEY supplies the seed (base64 of 32 bytes) and a malformed one is refused without echoing it', () => {
  freshHome();
  process.env[SIGNING_KEY_ENV] = Buffer.alloc(32).toString('base64');
  try {
    assert.equal(tenantIdentity('anyone')?.did, ZERO_SEED_DID);
    process.env[SIGNING_KEY_ENV] = 'c2VjcmV0LXNlZWQ=';
    assert.throws(() => tenantIdentity('anyone'), (e: Error) => /base64 of a 32-byte/.test(e.message) && !e.message.includes('c2VjcmV0'));
  } finally {
    delete process.env[SIGNING_KEY_ENV];
  }
});

test('membrane identity create, show and did-web end to end', async () => {
  const home = tempDir('membrane-identity-cli-');
  const env = { MEMBRANE_HOME: home, [SIGNING_KEY_ENV]: '' };
  const shown0 = await runCli(['identity', 'show', '--tenant', 'alice'], env);
  assert.notEqual(shown0.code, 0);
  assert.match(shown0.stderr, /no identity yet/);
  const created = await runCli(['identity', 'create', '--tenant', 'alice', '--json'], env);
  assert.equal(created.code, 0, created.stderr);
  const c = JSON.parse(created.stdout) as { did: string; created: boolean };
  assert.equal(c.created, true);
  assert.match(c.did, /^did:key:z6Mk/);
  const shown = await runCli(['identity', 'show', '--tenant', 'alice'], env);
  assert.equal(shown.stdout.trim(), c.did);
  const web = await runCli(['identity', 'did-web', '--host', 'example.com', '--tenant', 'alice'], env);
  assert.equal(web.code, 0, web.stderr);
  const doc = JSON.parse(web.stdout) as { id: string; verificationMethod: { publicKeyMultibase: string }[] };
  assert.equal(doc.id, 'did:web:example.com');
  assert.equal(`did:key:${doc.verificationMethod[0]!.publicKeyMultibase}`, c.did);
  const usage = await runCli(['identity', 'create'], env);
  assert.equal(usage.code, 2);
});
