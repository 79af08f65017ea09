/**
 * `GET /.well-known/did.json` under `membrane serve`, when the operator configured it
 * (`identity: { didWebHost, tenant }` in the config file): the did:web document publishing that
 * tenant's Ed25519 key (src/provenance/did.ts), so signatures by its did:key verify under
 * `did:web:HOST` too.
 *
 * Invariant: the document is built once at startup from the public key alone; without the
 * setting there is no such route (404), and a configured tenant without an identity stops the
 * server from starting (POLICY_INVALID) rather than serving nothing.
 *
 * Does not protect against: serving on a host other than the one named (a did:web resolver
 * fetches https://HOST/.well-known/did.json: TLS and the host name are the operator's proxy's).
 */

import { SandboxError } from '../../errors.ts';
import { didWebDocument } from '../../provenance/did.ts';
import { tenantIdentity } from '../../provenance/identity.ts';
import type { OperatorConfig } from '../config.ts';
import type { Answer, Route } from './router.ts';
import type { Api } from './state.ts';

export function didRoutes(config: OperatorConfig | null): Route<Api>[] {
  const setting = config?.identity;
  if (!setting) return [];
  const id = tenantIdentity(setting.tenant);
  if (!id) throw new SandboxError('POLICY_INVALID', `identity.tenant "${setting.tenant}" has no identity: membrane identity create --tenant ${setting.tenant}`);
  const doc = didWebDocument(setting.didWebHost, id.keys.publicKey);
  return [
    {
      method: 'GET',
      path: '/.well-known/did.json',
      auth: false,
      operationId: 'didDocument',
      summary: 'The did:web document',
      description: "The configured tenant's Ed25519 key as a did:web document (an Ed25519VerificationKey2020 method; alsoKnownAs its did:key).",
      responses: { 200: { type: 'object', additionalProperties: true } },
      handle: (): Answer => ({ status: 200, body: doc }),
    },
  ];
}
