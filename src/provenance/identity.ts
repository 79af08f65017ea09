/**
 * Identities: a tenant's (and the engine's) Ed25519 key pair, its seed kept private.
 *
 * Owns: where a seed comes from. A tenant's: `MEMBRANE_SIGNING_KEY` (base64 of the 32-byte seed)
 * if set — then every tenant of this process signs with it — else
 * `$MEMBRANE_HOME/identities/TENANT.ed25519`. The engine's (receipts, audit checkpoints):
 * `MEMBRANE_ENGINE_SIGNING_KEY` if set, else `$MEMBRANE_HOME/engine.ed25519`. A file holds the
 * base64 seed and a newline, mode 0600 in 0700 directories, created with O_EXCL|O_NOFOLLOW
 * (written aside and linked into place, so two processes creating one agree on one key).
 *
 * Invariant: a seed never appears in a message, a log line or a return value other than the
 * `KeyPair` that holds it. A key file that is a link, not a regular file, not ours, or readable
 * by group/other is refused (POLICY_INVALID), never repaired: it may already have leaked.
 *
 * Does not protect against: another process of the same OS user (or root) reading the file; an
 * operator exporting the variable into a shell history.
 */

import { join } from 'node:path';
import { SandboxError } from '../errors.ts';
import { checkName } from '../policy/names.ts';
import { storageDir } from '../storage/sqlite.ts';
import { createKeyFileOnce, readKeyFileText } from '../storage/key-file.ts';
import { KeyPair, SEED_BYTES } from './keys.ts';
import { didKey } from './did.ts';

export const SIGNING_KEY_ENV = 'MEMBRANE_SIGNING_KEY';
export const ENGINE_KEY_ENV = 'MEMBRANE_ENGINE_SIGNING_KEY';
const BASE64 = /^[A-Za-z0-9+/]{43}=?$/;

/** Parse a base64 seed; the message names the source, never the value. */
export function parseSeed(text: string, source: string): Buffer {
  const t = text.trim();
  if (BASE64.test(t)) {
    const seed = Buffer.from(t, 'base64');
    if (seed.length === SEED_BYTES) return seed;
  }
  throw new SandboxError('POLICY_INVALID', `${source} must be the base64 of a ${SEED_BYTES}-byte Ed25519 seed`);
}

export interface Identity {
  readonly keys: KeyPair;
  readonly did: string;
  /** Where the seed came from, as an operator names it: the variable, or `$MEMBRANE_HOME/…`. */
  readonly source: string;
}

function identity(seed: Buffer, source: string): Identity {
  const keys = new KeyPair(seed);
  seed.fill(0);
  return { keys, did: didKey(keys.publicKey), source };
}

function readSeedFile(path: string, shown: string): Buffer | undefined {
  const text = readKeyFileText(path, `the key file ${shown}`);
  return text === undefined ? undefined : parseSeed(text, `the key file ${shown}`);
}

/** Write a fresh seed to `path` unless one is there (the loser of a race keeps the winner's). */
function createSeedFile(path: string): boolean {
  return createKeyFileOnce(path, SEED_BYTES, (seed) => seed.toString('base64'), 'the key file');
}

interface Where {
  readonly env: string;
  readonly path: () => string;
  readonly shown: string;
}

function tenantWhere(tenant: string): Where {
  checkName('tenant', tenant);
  return { env: SIGNING_KEY_ENV, path: () => join(storageDir('identities'), `${tenant}.ed25519`), shown: `$MEMBRANE_HOME/identities/${tenant}.ed25519` };
}

const ENGINE_WHERE: Where = { env: ENGINE_KEY_ENV, path: () => join(storageDir(), 'engine.ed25519'), shown: '$MEMBRANE_HOME/engine.ed25519' };

function load(where: Where, create: boolean): Identity | undefined {
  const env = process.env[where.env];
  if (env !== undefined && env !== '') return identity(parseSeed(env, where.env), where.env);
  const path = where.path();
  let seed = readSeedFile(path, where.shown);
  if (!seed && create) {
    createSeedFile(path); // false when another process won the race: its key is read below
    seed = readSeedFile(path, where.shown);
  }
  return seed ? identity(seed, where.shown) : undefined;
}

/** A tenant's identity, or undefined if it has none yet (and no MEMBRANE_SIGNING_KEY). */
export function tenantIdentity(tenant: string): Identity | undefined {
  return load(tenantWhere(tenant), false);
}

/**
 * Create a tenant's key pair. `created` is false when it already had one (kept, never replaced)
 * or MEMBRANE_SIGNING_KEY supplies it.
 */
export function createTenantIdentity(tenant: string): { identity: Identity; created: boolean } {
  const where = tenantWhere(tenant);
  const existing = load(where, false);
  if (existing) return { identity: existing, created: false };
  const created = createSeedFile(where.path());
  const id = load(where, false);
  if (!id) throw new SandboxError('INTERNAL', 'the key file vanished after it was created');
  return { identity: id, created };
}

/** The engine's identity (receipts, checkpoints), created on first use. */
export function engineIdentity(): Identity {
  const id = load(ENGINE_WHERE, true);
  if (!id) throw new SandboxError('INTERNAL', 'the engine key file vanished after it was created');
  return id;
}
