/**
 * Durable per-tenant key-value data in the engine database (the `kv` broker's store).
 *
 * Owns: the `kv` table and its limits — keys 1..1024 bytes of UTF-8, values ≤ 1 MiB, ≤ 10 000
 * keys per tenant. Invariant: every statement is scoped by the tenant the caller passes (the
 * engine passes the one captured when the guest started; no import takes a tenant), so one
 * tenant's keys are unreachable from another's by construction.
 *
 * Does not protect against: a tenant filling its own quota; the engine database's total size
 * (bounded by tenants × quota).
 */

import type { Database, Statement } from './sqlite.ts';

export const KV_MAX_KEY_BYTES = 1024;
export const KV_MAX_VALUE_BYTES = 1024 * 1024;
export const KV_MAX_KEYS = 10_000;
/** At most this many keys in one list answer. */
export const KV_MAX_LIST = 1000;

export type KvRefusal = 'TOO_LARGE' | 'QUOTA' | 'INVALID';

export class KvStore {
  private readonly get$: Statement<{ value: Uint8Array }>;
  private readonly exists$: Statement<{ one: number }>;
  private readonly count$: Statement<{ n: number }>;
  private readonly put$: Statement;
  private readonly delete$: Statement;
  private readonly list$: Statement<{ key: string }>;
  private readonly putTx: (tenant: string, key: string, value: Uint8Array) => KvRefusal | null;
  private readonly deleteTx: (tenant: string, key: string) => boolean;

  constructor(db: Database) {
    // kv_counts keeps each tenant's key count in step with kv (same transactions), so the quota
    // check is one row read instead of a count over the tenant's keys.
    db.exec(`CREATE TABLE IF NOT EXISTS kv (
      tenant TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, updated INTEGER NOT NULL,
      PRIMARY KEY (tenant, key)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS kv_counts (tenant TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID`);
    this.get$ = db.prepare('SELECT value FROM kv WHERE tenant = ? AND key = ?');
    this.exists$ = db.prepare('SELECT 1 AS one FROM kv WHERE tenant = ? AND key = ?');
    this.count$ = db.prepare('SELECT coalesce((SELECT n FROM kv_counts WHERE tenant = ?), 0) AS n');
    const bump$ = db.prepare('INSERT INTO kv_counts (tenant, n) VALUES (?, ?) ON CONFLICT (tenant) DO UPDATE SET n = n + excluded.n');
    this.put$ = db.prepare('INSERT INTO kv (tenant, key, value, updated) VALUES (?, ?, ?, ?) ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value, updated = excluded.updated');
    this.delete$ = db.prepare('DELETE FROM kv WHERE tenant = ? AND key = ?');
    // Prefix match by range, so `%` and `_` in a prefix are plain characters.
    this.list$ = db.prepare('SELECT key FROM kv WHERE tenant = ? AND key >= ? AND key < ? ORDER BY key LIMIT ?');
    const tx = db.transaction((tenant: string, key: string, value: Uint8Array): KvRefusal | null => {
      const fresh = !this.exists$.get(tenant, key);
      if (fresh && this.count$.get(tenant)!.n >= KV_MAX_KEYS) return 'QUOTA';
      this.put$.run(tenant, key, value, Date.now());
      if (fresh) bump$.run(tenant, 1);
      return null;
    });
    this.putTx = tx.immediate;
    this.deleteTx = db.transaction((tenant: string, key: string): boolean => {
      const gone = this.delete$.run(tenant, key).changes > 0;
      if (gone) bump$.run(tenant, -1);
      return gone;
    }).immediate;
  }

  get(tenant: string, key: string): Uint8Array | null {
    return this.get$.get(tenant, key)?.value ?? null;
  }

  put(tenant: string, key: string, value: Uint8Array): KvRefusal | null {
    if (value.byteLength > KV_MAX_VALUE_BYTES) return 'TOO_LARGE';
    return this.putTx(tenant, key, value);
  }

  /** Whether the key existed. */
  delete(tenant: string, key: string): boolean {
    return this.deleteTx(tenant, key);
  }

  /** Keys starting with `prefix`, in order, at most KV_MAX_LIST. */
  list(tenant: string, prefix: string): string[] {
    return this.list$.all(tenant, prefix, `${prefix}\u{10FFFF}`, KV_MAX_LIST).map((r) => r.key);
  }

  count(tenant: string): number {
    return this.count$.get(tenant)!.n;
  }
}

/** A key is 1..KV_MAX_KEY_BYTES of UTF-8 without NUL. */
export function checkKey(key: string, bytes: number): KvRefusal | null {
  if (bytes === 0 || key.includes('\0')) return 'INVALID';
  if (bytes > KV_MAX_KEY_BYTES) return 'TOO_LARGE';
  return null;
}
