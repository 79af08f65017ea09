/**
 * Operator secrets for the `secrets` cap: `secret_sign(name, message)` → HMAC-SHA256. There is
 * no read operation of any kind.
 *
 * Owns: the secret bytes, in host memory only (Buffers outside the V8 heap's string table, never
 * converted to strings after loading), their tenant scoping, and zeroizing them (`zeroize()` on
 * engine close; `revokeTenant()` for secrets scoped to a revoked tenant only).
 * Invariant: a secret's bytes leave this module only as an HMAC output; names are the only thing
 * that may appear in errors, logs, `info()` or audit details.
 *
 * Does not protect against: an operator passing a secret some other way (env to a guest, a file
 * in a mount); the string the operator's own config held before `fromEnv`/`fromFile` (we copy it
 * into a Buffer and drop our reference, but cannot scrub a JS string).
 */

import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { SandboxError } from '../errors.ts';

export interface SecretSpec {
  /** The secret's bytes (a string is UTF-8 encoded). */
  readonly value: string | Uint8Array;
  /** Tenants allowed to sign with it; absent = every tenant granted `secrets`. */
  readonly tenants?: readonly string[];
}

const NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const ENV_PREFIX = 'MEMBRANE_SECRET_';

interface Held {
  readonly bytes: Buffer;
  readonly tenants: ReadonlySet<string> | null;
}

export class SecretStore {
  private readonly held = new Map<string, Held>();

  constructor(specs: Readonly<Record<string, SecretSpec | string>> = {}) {
    for (const [name, spec] of Object.entries(specs)) this.add(name, typeof spec === 'string' ? { value: spec } : spec);
  }

  /** `MEMBRANE_SECRET_<NAME>=value` variables of `env` (the operator's environment, not a guest's). */
  static fromEnv(env: NodeJS.ProcessEnv = process.env): Record<string, SecretSpec> {
    const out: Record<string, SecretSpec> = {};
    for (const [k, v] of Object.entries(env)) {
      if (k.startsWith(ENV_PREFIX) && v !== undefined && k.length > ENV_PREFIX.length) out[k.slice(ENV_PREFIX.length).toLowerCase()] = { value: v };
    }
    return out;
  }

  /** A JSON file `{ "name": "value" | { "value": "...", "tenants": [...] } }`. */
  static fromFile(path: string): Record<string, SecretSpec> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(path, 'utf8'));
    } catch {
      throw new SandboxError('POLICY_INVALID', 'the secrets file could not be read as JSON');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new SandboxError('POLICY_INVALID', 'the secrets file must hold a JSON object');
    const out: Record<string, SecretSpec> = {};
    for (const [name, v] of Object.entries(parsed as Record<string, unknown>)) {
      if (typeof v === 'string') out[name] = { value: v };
      else if (typeof v === 'object' && v !== null && typeof (v as { value?: unknown }).value === 'string') {
        const tenants = (v as { tenants?: unknown }).tenants;
        out[name] = { value: (v as { value: string }).value, ...(Array.isArray(tenants) ? { tenants: tenants.map(String) } : {}) };
      } else throw new SandboxError('POLICY_INVALID', `secret "${name.slice(0, 64)}" must be a string or { value, tenants? }`);
    }
    return out;
  }

  private add(name: string, spec: SecretSpec): void {
    if (!NAME.test(name)) throw new SandboxError('POLICY_INVALID', 'a secret name is 1-128 of [A-Za-z0-9_.-]', { name: name.slice(0, 64) });
    const bytes = Buffer.alloc(typeof spec.value === 'string' ? Buffer.byteLength(spec.value) : spec.value.byteLength);
    if (typeof spec.value === 'string') bytes.write(spec.value);
    else bytes.set(spec.value);
    this.held.set(name, { bytes, tenants: spec.tenants ? new Set(spec.tenants) : null });
  }

  /** HMAC-SHA256 of `message` under the named secret, or null when the tenant may not use it. */
  sign(tenant: string, name: string, message: Uint8Array): Uint8Array | null {
    const h = this.held.get(name);
    if (!h || (h.tenants && !h.tenants.has(tenant)) || h.bytes.byteLength === 0) return null;
    return new Uint8Array(createHmac('sha256', h.bytes).update(message).digest());
  }

  names(): string[] {
    return [...this.held.keys()].sort();
  }

  /** Zero and forget the secrets only this tenant could use. */
  revokeTenant(tenant: string): void {
    for (const [name, h] of this.held) {
      if (h.tenants && h.tenants.size === 1 && h.tenants.has(tenant)) {
        h.bytes.fill(0);
        this.held.delete(name);
      }
    }
  }

  zeroize(): void {
    for (const h of this.held.values()) h.bytes.fill(0);
    this.held.clear();
  }
}
