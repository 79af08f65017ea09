/**
 * `membrane identity create|show|did-web`: a tenant's Ed25519 identity (src/provenance/identity.ts).
 * `create` makes the key pair if the tenant has none (never replaces one); `show` prints its
 * did:key and public key; `did-web --host H` prints the `/.well-known/did.json` document that
 * publishes the same key as `did:web:H`.
 *
 * Invariant: nothing printed holds the seed.
 */

import { SandboxError } from '../../errors.ts';
import { createTenantIdentity, didWebDocument, multibaseKey, tenantIdentity, type Identity } from '../../provenance/index.ts';
import { UsageError, parse, printJson, str } from './args.ts';

function summary(id: Identity, tenant: string): Record<string, string> {
  return { tenant, did: id.did, publicKeyMultibase: multibaseKey(id.keys.publicKey), publicKeyHex: Buffer.from(id.keys.publicKey).toString('hex'), source: id.source };
}

function need(tenant: string): Identity {
  const id = tenantIdentity(tenant);
  if (!id) throw new SandboxError('NOT_FOUND', `tenant "${tenant}" has no identity yet: membrane identity create --tenant ${tenant}`);
  return id;
}

export async function identityCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  const { values, positionals } = parse(rest, { tenant: { type: 'string' }, host: { type: 'string' }, json: { type: 'boolean' } });
  if (positionals.length > 0) throw new UsageError(`identity ${sub ?? ''} takes no arguments`);
  const tenant = str(values['tenant']);
  const json = values['json'] === true;
  if (sub === 'create' || sub === 'show') {
    if (tenant === undefined) throw new UsageError(`identity ${sub} needs --tenant T`);
    const made = sub === 'create' ? createTenantIdentity(tenant) : { identity: need(tenant), created: false };
    const s = summary(made.identity, tenant);
    if (json) printJson(sub === 'create' ? { ...s, created: made.created } : s);
    else process.stdout.write(`${sub === 'create' ? (made.created ? 'created ' : 'exists  ') : ''}${s['did']}\n`);
    return 0;
  }
  if (sub === 'did-web') {
    const host = str(values['host']);
    if (host === undefined) throw new UsageError('identity did-web needs --host H (the document is served at https://H/.well-known/did.json)');
    printJson(didWebDocument(host, need(tenant ?? 'default').keys.publicKey));
    return 0;
  }
  throw new UsageError(sub === undefined ? 'identity needs a subcommand: create, show or did-web' : `unknown identity subcommand "${sub}" (create, show or did-web)`);
}
