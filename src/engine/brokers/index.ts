/**
 * The engine's brokers as one object: the engine database, the audit sink, the cadence, the
 * secrets and the hub that serves broker imports. The engine owns one; it outlives instances,
 * so revocations and rate windows survive restarts.
 *
 * Owns: opening the engine database lazily (a guest that never calls a broker never opens it),
 * and closing everything — secrets zeroized — on engine close.
 * Invariant: every broker call goes through `call` → `BrokerHub.call` → `Cadence.admit`.
 *
 * Does not protect against: an operator sharing one engine database between engines with
 * different audit keys (the chain then fails to verify, loudly).
 */

import { openDatabase, type Database } from '../../storage/sqlite.ts';
import { engineDatabaseFile } from '../../storage/audit.ts';
import type { Caller } from '../host-services.ts';
import { Cadence, type AuditSink, type CadenceOptions, type Principal } from './cadence.ts';
import { BrokerHub, type BrokerAnswer } from './hub.ts';
import { SecretStore, type SecretSpec } from './secrets.ts';

export interface BrokerOptions {
  /** Operator secrets (names → values); `SecretStore.fromEnv()` / `fromFile()` build these. */
  readonly secrets?: Readonly<Record<string, SecretSpec | string>>;
  readonly rate?: CadenceOptions['rate'];
  /** The engine database file. Default `$MEMBRANE_HOME/engine.sqlite`. */
  readonly databaseFile?: string;
  /** Where audit records go; default the tamper-evident log in the engine database. */
  readonly audit?: (db: () => Database) => AuditSink;
}

export class Brokers {
  readonly cadence: Cadence;
  private readonly audit: AuditSink;
  private readonly secrets: SecretStore;
  private readonly hub: BrokerHub;
  private database: Database | null = null;

  constructor(private readonly options: BrokerOptions, defaultAudit: (db: () => Database) => AuditSink) {
    const db = (): Database => this.db();
    this.secrets = new SecretStore(options.secrets ?? {});
    this.audit = (options.audit ?? defaultAudit)(db);
    this.cadence = new Cadence({ audit: this.audit, ...(options.rate ? { rate: options.rate } : {}) });
    this.hub = new BrokerHub({ cadence: this.cadence, secrets: this.secrets, db });
  }

  private db(): Database {
    this.database ??= openDatabase(this.options.databaseFile ?? engineDatabaseFile());
    return this.database;
  }

  call(caller: Caller, name: string, args: readonly Uint8Array[], cap: number): BrokerAnswer {
    return this.hub.call({ tenant: caller.tenant, instance: caller.instance, caps: caller.policy.caps }, name, args, cap);
  }

  /** An engine-level audit record (e.g. a policy fallback); details must not hold secrets. */
  record(event: { tenant: string; instance: string; kind: string; detail: Record<string, unknown> }): void {
    this.audit.append(event);
  }

  revoke(p: Principal): void {
    this.cadence.revoke(p);
    if (p.instance === undefined) this.secrets.revokeTenant(p.tenant);
  }

  restore(p: Principal): void {
    this.cadence.restore(p);
  }

  close(): void {
    this.secrets.zeroize();
    if (this.database?.open) this.database.close();
    this.database = null;
  }
}
