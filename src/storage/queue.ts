/**
 * Per-tenant FIFO queues in the engine database (the `queue` broker's store).
 *
 * Owns: the `queue_messages` table and its limits — queue names 1..256 bytes, messages
 * ≤ 256 KiB, depth ≤ 1 000 per queue. Invariant: every statement is scoped by the tenant the
 * engine captured at start; push and pop are each one IMMEDIATE transaction, so concurrent
 * instances never pop the same message twice and order is arrival order.
 *
 * Does not protect against: a tenant filling its own queues (each is bounded by depth × size).
 */

import type { Database, Statement } from './sqlite.ts';

export const QUEUE_MAX_NAME_BYTES = 256;
export const QUEUE_MAX_MESSAGE_BYTES = 256 * 1024;
export const QUEUE_MAX_DEPTH = 1000;

export class QueueStore {
  private readonly len$: Statement<{ n: number }>;
  private readonly push$: Statement;
  private readonly head$: Statement<{ seq: number; message: Uint8Array }>;
  private readonly drop$: Statement;
  private readonly pushTx: (tenant: string, queue: string, message: Uint8Array) => boolean;
  private readonly popTx: (tenant: string, queue: string, cap: number) => { size: number; message: Uint8Array | null } | null;

  constructor(db: Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS queue_messages (
      seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, queue TEXT NOT NULL, message BLOB NOT NULL);
      CREATE INDEX IF NOT EXISTS queue_messages_fifo ON queue_messages (tenant, queue, seq)`);
    this.len$ = db.prepare('SELECT count(*) AS n FROM queue_messages WHERE tenant = ? AND queue = ?');
    this.push$ = db.prepare('INSERT INTO queue_messages (tenant, queue, message) VALUES (?, ?, ?)');
    this.head$ = db.prepare('SELECT seq, message FROM queue_messages WHERE tenant = ? AND queue = ? ORDER BY seq LIMIT 1');
    this.drop$ = db.prepare('DELETE FROM queue_messages WHERE seq = ?');
    this.pushTx = db.transaction((tenant: string, queue: string, message: Uint8Array): boolean => {
      if (this.len$.get(tenant, queue)!.n >= QUEUE_MAX_DEPTH) return false;
      this.push$.run(tenant, queue, message);
      return true;
    }).immediate;
    this.popTx = db.transaction((tenant: string, queue: string, cap: number) => {
      const head = this.head$.get(tenant, queue);
      if (!head) return null;
      if (head.message.byteLength > cap) return { size: head.message.byteLength, message: null };
      this.drop$.run(head.seq);
      return { size: head.message.byteLength, message: head.message };
    }).immediate;
  }

  /** 'TOO_LARGE' for a message over the cap, 'QUOTA' when the queue is full, null when queued. */
  push(tenant: string, queue: string, message: Uint8Array): 'TOO_LARGE' | 'QUOTA' | null {
    if (message.byteLength > QUEUE_MAX_MESSAGE_BYTES) return 'TOO_LARGE';
    return this.pushTx(tenant, queue, message) ? null : 'QUOTA';
  }

  /**
   * The oldest message, removed only if it fits `cap` bytes (otherwise left in place, with its
   * size: a consumer that must grow its buffer loses nothing); null when the queue is empty.
   */
  pop(tenant: string, queue: string, cap = Number.MAX_SAFE_INTEGER): { size: number; message: Uint8Array | null } | null {
    return this.popTx(tenant, queue, cap);
  }

  length(tenant: string, queue: string): number {
    return this.len$.get(tenant, queue)!.n;
  }
}
