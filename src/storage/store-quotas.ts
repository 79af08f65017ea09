/**
 * Per-tenant quotas of the durable stores in the engine database (`kv`, `queue`) and the usage
 * table that enforces them.
 *
 * Owns: the defaults (stated once, here), `StoreQuotaOptions` → `resolveStoreQuotas()` →
 * `StoreQuotas` (the operator's engine options are the only way to change them), what a stored
 * item is charged (its bytes plus a fixed overhead for the row and its index entries, so a flood
 * of empty values or messages is bounded too), and the `tenant_usage` table: one row per tenant
 * and store holding its item count and charged bytes.
 *
 * Invariant: `tenant_usage` changes only inside the same IMMEDIATE transaction as the write it
 * accounts for, and every write checks it before writing — so a tenant's charged bytes never
 * pass its quota, however many instances write at once, and a quota check reads one row (never a
 * SUM over the tenant's data). A database from before this table is accounted once, when a store
 * first opens it (`backfill`).
 *
 * Does not protect against: SQLite's own overhead beyond the fixed per-item charge (free pages,
 * b-tree fill, the WAL — bounded by SQLite's checkpointing at about 4 MiB beyond the largest
 * transaction); many tenants (the total is tenants × quota: the operator's token list bounds
 * tenants); the audit log, which grows with denials (one per refused call at most, rate-bounded).
 */

import { SandboxError } from '../errors.ts';
import type { Database, Statement } from './sqlite.ts';

/** Keys one tenant may hold in `kv`. */
export const MAX_TENANT_KV_KEYS = 10_000;
/** Bytes one tenant's `kv` may hold: keys, values and `STORE_ITEM_OVERHEAD` per key. */
export const MAX_TENANT_KV_BYTES = 64 * 1024 * 1024;
/** Non-empty queue names one tenant may have at once. */
export const MAX_TENANT_QUEUES = 100;
/** Bytes one tenant's queues may hold together: messages, their queue name and `STORE_ITEM_OVERHEAD` each. */
export const MAX_TENANT_QUEUE_BYTES = 64 * 1024 * 1024;
/** What each stored key or message is charged beyond its own bytes (row header, rowid, index entry). */
export const STORE_ITEM_OVERHEAD = 64;

export type StoreName = 'kv' | 'queue';

export interface StoreQuotaOptions {
  /** Default MAX_TENANT_KV_KEYS. */
  readonly kvKeys?: number;
  /** Default MAX_TENANT_KV_BYTES. */
  readonly kvBytes?: number;
  /** Default MAX_TENANT_QUEUES. */
  readonly queues?: number;
  /** Default MAX_TENANT_QUEUE_BYTES. */
  readonly queueBytes?: number;
}

export type StoreQuotas = Readonly<Required<StoreQuotaOptions>>;

/** Which quota refused a write, for the caller's answer (`QUOTA`) and its audit record. */
export interface QuotaRefusal {
  readonly code: 'QUOTA';
  readonly quota: 'kv-keys' | 'kv-bytes' | 'queue-names' | 'queue-depth' | 'queue-bytes';
  readonly limit: number;
}

export function resolveStoreQuotas(o: StoreQuotaOptions = {}): StoreQuotas {
  const n = (name: keyof StoreQuotaOptions, dflt: number): number => {
    const v = o[name];
    if (v === undefined) return dflt;
    if (!Number.isSafeInteger(v) || v < 0) throw new SandboxError('POLICY_INVALID', `store quota ${name} must be a non-negative integer`, { option: name });
    return v;
  };
  return Object.freeze({
    kvKeys: n('kvKeys', MAX_TENANT_KV_KEYS),
    kvBytes: n('kvBytes', MAX_TENANT_KV_BYTES),
    queues: n('queues', MAX_TENANT_QUEUES),
    queueBytes: n('queueBytes', MAX_TENANT_QUEUE_BYTES),
  });
}

/** A tenant's row of one store: what it holds and is charged. */
export interface Usage {
  readonly items: number;
  readonly bytes: number;
}

/** The `tenant_usage` table for one store; use only inside the store's write transactions. */
export class UsageTable {
  readonly #get$: Statement<Usage>;
  readonly #add$: Statement;

  constructor(db: Database, readonly store: StoreName, backfill: string) {
    db.exec(`CREATE TABLE IF NOT EXISTS tenant_usage (
      tenant TEXT NOT NULL, store TEXT NOT NULL, items INTEGER NOT NULL, bytes INTEGER NOT NULL,
      PRIMARY KEY (tenant, store)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS tenant_usage_stores (store TEXT PRIMARY KEY) WITHOUT ROWID`);
    // `backfill` selects (tenant, items, bytes) from the store's own tables: run once per database.
    db.transaction(() => {
      if (db.prepare('SELECT 1 FROM tenant_usage_stores WHERE store = ?').get(store)) return;
      db.prepare('DELETE FROM tenant_usage WHERE store = ?').run(store);
      db.prepare(`INSERT INTO tenant_usage (tenant, store, items, bytes) SELECT tenant, ?, items, bytes FROM (${backfill})`).run(store);
      db.prepare('INSERT INTO tenant_usage_stores (store) VALUES (?)').run(store);
    }).immediate();
    this.#get$ = db.prepare('SELECT items, bytes FROM tenant_usage WHERE tenant = ? AND store = ?');
    this.#add$ = db.prepare(`INSERT INTO tenant_usage (tenant, store, items, bytes) VALUES (?, ?, ?, ?)
      ON CONFLICT (tenant, store) DO UPDATE SET items = items + excluded.items, bytes = bytes + excluded.bytes`);
  }

  get(tenant: string): Usage {
    return this.#get$.get(tenant, this.store) ?? { items: 0, bytes: 0 };
  }

  add(tenant: string, items: number, bytes: number): void {
    if (items !== 0 || bytes !== 0) this.#add$.run(tenant, this.store, items, bytes);
  }
}
