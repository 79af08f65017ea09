/**
 * Durable per-tenant key-value data in the engine database (the `kv` broker's store).
 *
 * Owns: the `kv` table and its limits — keys 1..1024 bytes of UTF-8, values ≤ 1 MiB, and per
 * tenant at most `quotas.kvKeys` keys (10 000) and `quotas.kvBytes` charged bytes (64 MiB: keys,
 * values and `STORE_ITEM_OVERHEAD` each; store-quotas.ts). Invariant: every statement is scoped by
 * the tenant the caller passes (the engine passes the one captured when the guest started; no
 * import takes a tenant), so one tenant's keys are unreachable from another's by construction; a
 * put or delete and its usage row change in one IMMEDIATE transaction, checked before the write.
 *
 * Does not protect against: see store-quotas.ts (SQLite's overhead beyond the per-key charge;
 * the number of tenants).
 */

import type { Database, Statement } from './sqlite.ts';
import { MAX_TENANT_KV_KEYS, STORE_ITEM_OVERHEAD, UsageTable, resolveStoreQuotas, type QuotaRefusal, type StoreQuotas } from './store-quotas.ts';

export const KV_MAX_KEY_BYTES = 1024;
export const KV_MAX_VALUE_BYTES = 1024 * 1024;
/** The default key quota (store-quotas.ts holds the defaults). */
export const KV_MAX_KEYS = MAX_TENANT_KV_KEYS;
/** At most this many keys in one list answer. */
export const KV_MAX_LIST = 1000;

export type KvRefusal = 'TOO_LARGE' | 'INVALID' | QuotaRefusal;

export class KvStore {
  private readonly get$: Statement<{ value: Uint8Array }>;
  private readonly size$: Statement<{ n: number }>;
  private readonly put$: Statement;
  private readonly delete$: Statement;
  private readonly list$: Statement<{ key: string }>;
  private readonly usage: UsageTable;
  private readonly putTx: (tenant: string, key: string, value: Uint8Array) => KvRefusal | null;
  private readonly deleteTx: (tenant: string, key: string) => boolean;

  constructor(db: Database, readonly quotas: StoreQuotas = resolveStoreQuotas()) {
    db.exec(`CREATE TABLE IF NOT EXISTS kv (
      tenant TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, updated INTEGER NOT NULL,
      PRIMARY KEY (tenant, key)) WITHOUT ROWID;
      DROP TABLE IF EXISTS kv_counts`);
    this.usage = new UsageTable(db, 'kv', `SELECT tenant, count(*) AS items, sum(length(CAST(key AS BLOB)) + length(value) + ${STORE_ITEM_OVERHEAD}) AS bytes FROM kv GROUP BY tenant`);
    this.get$ = db.prepare('SELECT value FROM kv WHERE tenant = ? AND key = ?');
    this.size$ = db.prepare('SELECT length(value) AS n FROM kv WHERE tenant = ? AND key = ?');
    this.put$ = db.prepare('INSERT INTO kv (tenant, key, value, updated) VALUES (?, ?, ?, ?) ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value, updated = excluded.updated');
    this.delete$ = db.prepare('DELETE FROM kv WHERE tenant = ? AND key = ?');
    // Prefix match by range, so `%` and `_` in a prefix are plain characters.
    this.list$ = db.prepare('SELECT key FROM kv WHERE tenant = ? AND key >= ? AND key < ? ORDER BY key LIMIT ?');
    this.putTx = db.transaction((tenant: string, key: string, value: Uint8Array): KvRefusal | null => {
      const old = this.size$.get(tenant, key);
      const used = this.usage.get(tenant);
      if (!old && used.items >= this.quotas.kvKeys) return { code: 'QUOTA', quota: 'kv-keys', limit: this.quotas.kvKeys };
      const delta = old ? value.byteLength - old.n : Buffer.byteLength(key, 'utf8') + value.byteLength + STORE_ITEM_OVERHEAD;
      if (delta > 0 && used.bytes + delta > this.quotas.kvBytes) return { code: 'QUOTA', quota: 'kv-bytes', limit: this.quotas.kvBytes };
      this.put$.run(tenant, key, value, Date.now());
      this.usage.add(tenant, old ? 0 : 1, delta);
      return null;
    }).immediate;
    this.deleteTx = db.transaction((tenant: string, key: string): boolean => {
      const old = this.size$.get(tenant, key);
      if (!old) return false;
      this.delete$.run(tenant, key);
      this.usage.add(tenant, -1, -(Buffer.byteLength(key, 'utf8') + old.n + STORE_ITEM_OVERHEAD));
      return true;
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
    return this.usage.get(tenant).items;
  }

  /** Keys held and bytes charged to `tenant` (see store-quotas.ts). */
  usageOf(tenant: string): { keys: number; bytes: number } {
    const u = this.usage.get(tenant);
    return { keys: u.items, bytes: u.bytes };
  }
}

/** A key is 1..KV_MAX_KEY_BYTES of UTF-8 without NUL. */
export function checkKey(key: string, bytes: number): 'TOO_LARGE' | 'INVALID' | null {
  if (bytes === 0 || key.includes('\0')) return 'INVALID';
  if (bytes > KV_MAX_KEY_BYTES) return 'TOO_LARGE';
  return null;
}
