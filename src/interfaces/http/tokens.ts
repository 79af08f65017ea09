/**
 * Bearer tokens: `mbt_` + 43 base64url characters (32 random bytes), each mapped to a tenant,
 * a maximum profile and the embedder host caps it grants (`vendor:name`, none by default), stored
 * in `$MEMBRANE_HOME/tokens.sqlite` (0600).
 *
 * Owns: creating (the token is returned once and never stored: only its SHA-256), listing,
 * revoking, and checking a presented token. A check reads the database every time, so `membrane
 * token revoke` in another process takes effect on the next request.
 * Invariant: a token authenticates only if its hash is stored, not revoked, and the stored hash
 * equals the presented one under a constant-time comparison; the plaintext exists only in the
 * `create` answer and in the caller's request.
 *
 * Does not protect against: a token leaked by its holder (revoke it); someone who can write the
 * tokens file (they can add their own); timing of the indexed lookup itself (it is keyed by a
 * hash of 256 random bits, so nothing about a token is learnt from it).
 */

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import { SandboxError } from '../../errors.ts';
import { isProfileName, type ProfileName } from '../../policy/profiles.ts';
import { checkHostCapName, isHostCapName } from '../../policy/host-caps.ts';
import { membraneHome, openDatabase, type Database } from '../../storage/sqlite.ts';

export const TOKEN_PREFIX = 'mbt_';
/** 32 random bytes: a token cannot be guessed. */
export const TOKEN_BYTES = 32;
const TOKEN_PATTERN = /^mbt_[A-Za-z0-9_-]{43}$/;
/** Tenants are names like instance ids (the engine's pattern), short enough to label a record. */
const TENANT_PATTERN = /^[A-Za-z0-9._:@-]{1,64}$/;

export interface TokenInfo {
  readonly id: string;
  readonly tenant: string;
  readonly profile: ProfileName;
  /** Embedder host caps this token grants (absent from a server whose engine does not define them). */
  readonly hostCaps: readonly string[];
  readonly created: string;
  readonly revoked: boolean;
}

export interface CreatedToken {
  readonly id: string;
  readonly token: string;
  readonly tenant: string;
  readonly profile: ProfileName;
  readonly hostCaps: readonly string[];
}

interface Row {
  id: string;
  hash: Buffer;
  tenant: string;
  profile: string;
  host_caps: string;
  created: string;
  revoked: number;
}

/** Stored space-separated; anything that is not a host cap name is dropped on read. */
const hostCapsOf = (text: string): string[] => text.split(' ').filter((c) => isHostCapName(c));

export function tokensFile(home: string = membraneHome()): string {
  return join(home, 'tokens.sqlite');
}

function hashOf(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

export class TokenStore {
  readonly #db: Database;

  constructor(file: string = tokensFile()) {
    this.#db = openDatabase(file);
    this.#db.exec(`CREATE TABLE IF NOT EXISTS tokens (
      id TEXT PRIMARY KEY, hash BLOB NOT NULL UNIQUE, tenant TEXT NOT NULL, profile TEXT NOT NULL,
      created TEXT NOT NULL, revoked INTEGER NOT NULL DEFAULT 0) STRICT`);
    const columns = this.#db.prepare<{ name: string }>('SELECT name FROM pragma_table_info(\'tokens\')').all();
    if (!columns.some((c) => c.name === 'host_caps')) this.#db.exec("ALTER TABLE tokens ADD COLUMN host_caps TEXT NOT NULL DEFAULT ''");
  }

  close(): void {
    if (this.#db.open) this.#db.close();
  }

  create(tenant: string, profile: string, hostCaps: readonly string[] = []): CreatedToken {
    if (typeof tenant !== 'string' || !TENANT_PATTERN.test(tenant)) {
      throw new SandboxError('POLICY_INVALID', 'a tenant is 1-64 characters of [A-Za-z0-9._:@-]');
    }
    if (!isProfileName(profile)) throw new SandboxError('POLICY_INVALID', `unknown profile "${String(profile).slice(0, 64)}" (compute, minimal, network or posix)`);
    if (!Array.isArray(hostCaps)) throw new SandboxError('POLICY_INVALID', 'hostCaps must be an array of "vendor:name" caps');
    const caps = [...new Set(hostCaps.map((c) => checkHostCapName(c)))];
    const token = TOKEN_PREFIX + randomBytes(TOKEN_BYTES).toString('base64url');
    const id = `tok_${randomBytes(6).toString('hex')}`;
    this.#db.prepare('INSERT INTO tokens (id, hash, tenant, profile, host_caps, created) VALUES (?, ?, ?, ?, ?, ?)').run(id, hashOf(token), tenant, profile, caps.join(' '), new Date().toISOString());
    return { id, token, tenant, profile, hostCaps: caps };
  }

  list(): TokenInfo[] {
    return this.#db
      .prepare<Row>('SELECT id, hash, tenant, profile, host_caps, created, revoked FROM tokens ORDER BY created, id')
      .all()
      .map((r) => ({ id: r.id, tenant: r.tenant, profile: isProfileName(r.profile) ? r.profile : 'compute', hostCaps: hostCapsOf(r.host_caps), created: r.created, revoked: r.revoked !== 0 }));
  }

  /** Revoke by id; false when no such token. */
  revoke(id: string): boolean {
    return this.#db.prepare('UPDATE tokens SET revoked = 1 WHERE id = ?').run(id).changes > 0;
  }

  /** The grant a presented token carries, or null (unknown, malformed or revoked). */
  check(token: string): { id: string; tenant: string; profile: ProfileName; hostCaps: readonly string[] } | null {
    if (typeof token !== 'string' || !TOKEN_PATTERN.test(token)) return null;
    const presented = hashOf(token);
    const row = this.#db.prepare<Row>('SELECT id, hash, tenant, profile, host_caps, created, revoked FROM tokens WHERE hash = ?').get(presented);
    if (!row || !Buffer.isBuffer(row.hash) || row.hash.length !== presented.length) return null;
    if (!timingSafeEqual(row.hash, presented) || row.revoked !== 0 || !isProfileName(row.profile)) return null;
    return { id: row.id, tenant: row.tenant, profile: row.profile, hostCaps: hostCapsOf(row.host_caps) };
  }
}
