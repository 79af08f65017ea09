/**
 * Per-tenant FIFO queues in the engine database (the `queue` broker's store).
 *
 * Owns: the `queue_messages` and `queue_depths` tables and the queue limits — names 1..256
 * bytes, messages ≤ 256 KiB, depth ≤ 1 000 per queue, and per tenant at most `quotas.queues`
 * non-empty queue names (100) and `quotas.queueBytes` charged bytes across all its queues
 * (64 MiB: each message, its queue name and `STORE_ITEM_OVERHEAD`; store-quotas.ts). So a tenant's
 * queues hold at most names × depth messages and never more than the byte quota, whatever the
 * mix. Invariant: every statement is scoped by the tenant the engine captured at start; push and
 * pop are each one IMMEDIATE transaction that checks and moves the usage rows with the message,
 * so concurrent instances never pop the same message twice, order is arrival order, and the
 * quotas hold under any interleaving.
 *
 * Does not protect against: see store-quotas.ts (SQLite's overhead beyond the per-message charge;
 * the number of tenants).
 */

import type { Database, Statement } from './sqlite.ts';
import { STORE_ITEM_OVERHEAD, UsageTable, resolveStoreQuotas, type QuotaRefusal, type StoreQuotas } from './store-quotas.ts';

export const QUEUE_MAX_NAME_BYTES = 256;
export const QUEUE_MAX_MESSAGE_BYTES = 256 * 1024;
export const QUEUE_MAX_DEPTH = 1000;

/** What one message of `queue` holding `size` bytes is charged. */
function charge(queue: string, size: number): number {
  return size + Buffer.byteLength(queue, 'utf8') + STORE_ITEM_OVERHEAD;
}

export class QueueStore {
  private readonly depth$: Statement<{ n: number }>;
  private readonly push$: Statement;
  private readonly head$: Statement<{ seq: number; message: Uint8Array }>;
  private readonly drop$: Statement;
  private readonly bump$: Statement;
  private readonly empty$: Statement;
  private readonly usage: UsageTable;
  private readonly pushTx: (tenant: string, queue: string, message: Uint8Array) => QuotaRefusal | null;
  private readonly popTx: (tenant: string, queue: string, cap: number) => { size: number; message: Uint8Array | null } | null;

  constructor(db: Database, readonly quotas: StoreQuotas = resolveStoreQuotas()) {
    db.exec(`CREATE TABLE IF NOT EXISTS queue_messages (
      seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, queue TEXT NOT NULL, message BLOB NOT NULL);
      CREATE INDEX IF NOT EXISTS queue_messages_fifo ON queue_messages (tenant, queue, seq)`);
    // queue_depths: one row per non-empty queue (its depth), kept with queue_messages in the same
    // transactions; tenant_usage counts these rows (items) and the charged bytes.
    db.exec(`CREATE TABLE IF NOT EXISTS queue_depths (
      tenant TEXT NOT NULL, queue TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (tenant, queue)) WITHOUT ROWID`);
    db.transaction(() => {
      if (db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'tenant_usage_stores'").get() && db.prepare("SELECT 1 FROM tenant_usage_stores WHERE store = 'queue'").get()) return;
      db.exec('DELETE FROM queue_depths; INSERT INTO queue_depths (tenant, queue, n) SELECT tenant, queue, count(*) FROM queue_messages GROUP BY tenant, queue');
    }).immediate();
    this.usage = new UsageTable(db, 'queue', `SELECT d.tenant AS tenant, count(*) AS items,
      (SELECT coalesce(sum(length(m.message) + length(CAST(m.queue AS BLOB)) + ${STORE_ITEM_OVERHEAD}), 0) FROM queue_messages m WHERE m.tenant = d.tenant) AS bytes
      FROM queue_depths d GROUP BY d.tenant`);
    this.depth$ = db.prepare('SELECT n FROM queue_depths WHERE tenant = ? AND queue = ?');
    this.push$ = db.prepare('INSERT INTO queue_messages (tenant, queue, message) VALUES (?, ?, ?)');
    this.head$ = db.prepare('SELECT seq, message FROM queue_messages WHERE tenant = ? AND queue = ? ORDER BY seq LIMIT 1');
    this.drop$ = db.prepare('DELETE FROM queue_messages WHERE seq = ?');
    this.bump$ = db.prepare('INSERT INTO queue_depths (tenant, queue, n) VALUES (?, ?, ?) ON CONFLICT (tenant, queue) DO UPDATE SET n = n + excluded.n');
    this.empty$ = db.prepare('DELETE FROM queue_depths WHERE tenant = ? AND queue = ? AND n <= 0');
    this.pushTx = db.transaction((tenant: string, queue: string, message: Uint8Array): QuotaRefusal | null => {
      const depth = this.depth$.get(tenant, queue)?.n ?? 0;
      if (depth >= QUEUE_MAX_DEPTH) return { code: 'QUOTA', quota: 'queue-depth', limit: QUEUE_MAX_DEPTH };
      const used = this.usage.get(tenant);
      if (depth === 0 && used.items >= this.quotas.queues) return { code: 'QUOTA', quota: 'queue-names', limit: this.quotas.queues };
      const bytes = charge(queue, message.byteLength);
      if (used.bytes + bytes > this.quotas.queueBytes) return { code: 'QUOTA', quota: 'queue-bytes', limit: this.quotas.queueBytes };
      this.push$.run(tenant, queue, message);
      this.bump$.run(tenant, queue, 1);
      this.usage.add(tenant, depth === 0 ? 1 : 0, bytes);
      return null;
    }).immediate;
    this.popTx = db.transaction((tenant: string, queue: string, cap: number) => {
      const head = this.head$.get(tenant, queue);
      if (!head) return null;
      if (head.message.byteLength > cap) return { size: head.message.byteLength, message: null };
      this.drop$.run(head.seq);
      this.bump$.run(tenant, queue, -1);
      const emptied = this.empty$.run(tenant, queue).changes;
      this.usage.add(tenant, -emptied, -charge(queue, head.message.byteLength));
      return { size: head.message.byteLength, message: head.message };
    }).immediate;
  }

  /** 'TOO_LARGE' for a message over the cap, a QuotaRefusal when a quota is reached, null when queued. */
  push(tenant: string, queue: string, message: Uint8Array): 'TOO_LARGE' | QuotaRefusal | null {
    if (message.byteLength > QUEUE_MAX_MESSAGE_BYTES) return 'TOO_LARGE';
    return this.pushTx(tenant, queue, message);
  }

  /**
   * The oldest message, removed only if it fits `cap` bytes (otherwise left in place, with its
   * size: a consumer that must grow its buffer loses nothing); null when the queue is empty.
   */
  pop(tenant: string, queue: string, cap = Number.MAX_SAFE_INTEGER): { size: number; message: Uint8Array | null } | null {
    return this.popTx(tenant, queue, cap);
  }

  length(tenant: string, queue: string): number {
    return this.depth$.get(tenant, queue)?.n ?? 0;
  }

  /** Non-empty queues and bytes charged to `tenant` (see store-quotas.ts). */
  usageOf(tenant: string): { queues: number; bytes: number } {
    const u = this.usage.get(tenant);
    return { queues: u.items, bytes: u.bytes };
  }
}
