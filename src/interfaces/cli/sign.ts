/**
 * `membrane sign FILE.wasm|DIR --tenant T` and `membrane verify-artifact MANIFEST`: signed
 * artifact manifests (src/provenance/artifact.ts).
 *
 * Exit codes: `verify-artifact` exits 0 when valid and 1 when either half fails (nothing went
 * wrong with the command: the artifact did), like `audit verify`. A malformed manifest file is
 * reported the same way; an unreadable one is an error-table code.
 */

import { readFileSync } from 'node:fs';
import { SandboxError } from '../../errors.ts';
import { tenantIdentity } from '../../provenance/identity.ts';
import { keysOfDidDocument } from '../../provenance/did.ts';
import { signArtifact, verifyArtifact } from '../../provenance/artifact.ts';
import { UsageError, parse, printJson, str, strs } from './args.ts';
import { safeJson } from './audit.ts';

/** `verify-artifact` found the artifact invalid. */
export const INVALID_EXIT = 1;

export async function signCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { tenant: { type: 'string' }, name: { type: 'string' }, version: { type: 'string' }, caps: { type: 'string' }, 'did-web': { type: 'string' }, json: { type: 'boolean' } });
  if (positionals.length !== 1) throw new UsageError('sign takes exactly one FILE.wasm or DIR');
  const tenant = str(values['tenant']);
  if (tenant === undefined) throw new UsageError('sign needs --tenant T (whose identity signs)');
  const signer = tenantIdentity(tenant);
  if (!signer) throw new SandboxError('NOT_FOUND', `tenant "${tenant}" has no identity yet: membrane identity create --tenant ${tenant}`);
  const caps = str(values['caps'])?.split(',').map((c) => c.trim()).filter((c) => c !== '') ?? [];
  const name = str(values['name']);
  const version = str(values['version']);
  const didWebHost = str(values['did-web']);
  const { file, signed } = signArtifact(positionals[0]!, signer, { caps, ...(name !== undefined ? { name } : {}), ...(version !== undefined ? { version } : {}), ...(didWebHost !== undefined ? { didWebHost } : {}) });
  const summary = { manifest: file, signer: signed.manifest.signer, name: signed.manifest.name, version: signed.manifest.version, caps: signed.manifest.caps, assets: signed.manifest.assets.length };
  if (values['json'] === true) printJson(summary);
  else process.stdout.write(`signed ${summary.assets} asset(s) as ${summary.signer}: ${file}\n`);
  return 0;
}

/** `--did-doc FILE`s: each did:web document, keyed by its own id (membrane identity did-web prints one). */
export function readDidDocuments(files: readonly string[]): Map<string, unknown> {
  const documents = new Map<string, unknown>();
  for (const f of files) {
    let doc: unknown;
    try {
      doc = JSON.parse(readFileSync(f, 'utf8'));
    } catch {
      throw new SandboxError('POLICY_INVALID', `--did-doc ${f} is not a readable JSON file`);
    }
    documents.set(keysOfDidDocument(doc).id, doc);
  }
  return documents;
}

export async function verifyArtifactCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, { trust: { type: 'string', multiple: true }, 'did-doc': { type: 'string', multiple: true }, json: { type: 'boolean' } });
  if (positionals.length !== 1) throw new UsageError('verify-artifact takes exactly one MANIFEST file');
  const documents = readDidDocuments(strs(values['did-doc']));
  const trust = strs(values['trust']);
  const r = verifyArtifact(positionals[0]!, { documents, ...(trust.length > 0 ? { trust } : {}) });
  if (values['json'] === true) printJson(r);
  else {
    const mark = (b: boolean): string => (b ? 'ok' : 'FAILED');
    process.stdout.write(`signature: ${mark(r.signature)}\nassetIntegrity: ${mark(r.assetIntegrity)}\nvalid: ${r.valid}\n${r.signer ? `signer: ${safeJson(r.signer)}\n` : ''}${r.reasons.map((x) => `  ${safeJson(x)}\n`).join('')}`);
  }
  return r.valid ? 0 : INVALID_EXIT;
}
