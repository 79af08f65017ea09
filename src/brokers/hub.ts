/**
 * The brokers served on the main thread for core-module guests: `kv`, `queue`, `secrets` (the
 * network brokers join with the net guard). One entry point, `call`, takes a catalog import name
 * and its string arguments as bytes, runs the cadence, then the broker.
 *
 * Owns: argument decoding and per-call size caps (DESIGN §4), the answer convention (bytes
 * only when they fit `cap`; otherwise the size, and nothing consumed — a queue message is popped
 * only when it fits), and the engine database handle the stores share.
 * Invariant: the tenant is the caller's captured tenant, never an argument; every call passes
 * `Cadence.admit` before it touches a store.
 *
 * Does not protect against: a guest that keeps asking for a bigger buffer — each ask is a
 * rate-limited call.
 */

import { SandboxError } from '../errors.ts';
import type { Database } from '../storage/sqlite.ts';
import { KV_MAX_KEY_BYTES, KV_MAX_VALUE_BYTES, KvStore, checkKey } from '../storage/kv.ts';
import { QUEUE_MAX_MESSAGE_BYTES, QUEUE_MAX_NAME_BYTES, QueueStore } from '../storage/queue.ts';
import type { QuotaRefusal, StoreQuotas } from '../storage/store-quotas.ts';
import { lookupImport, MEMBRANE_MODULE } from '../policy/catalog.ts';
import type { CapWord } from '../policy/profiles.ts';
import { GUEST_ERR } from '../abi/command.ts';
import type { Cadence, CallerOf } from './cadence.ts';
import type { SecretStore } from './secrets.ts';

export type BrokerAnswer = { readonly ok: true; readonly value: number; readonly payload?: Uint8Array } | { readonly ok: false; readonly errno: number };

const SECRET_MAX_NAME = 128;
const SECRET_MAX_MESSAGE = 1024 * 1024;

/** The largest request each call accepts (the cadence's size step). */
const MAX_REQUEST: Readonly<Record<string, number>> = {
  kv_get: KV_MAX_KEY_BYTES,
  kv_put: KV_MAX_KEY_BYTES + KV_MAX_VALUE_BYTES,
  kv_delete: KV_MAX_KEY_BYTES,
  kv_list: KV_MAX_KEY_BYTES,
  queue_push: QUEUE_MAX_NAME_BYTES + QUEUE_MAX_MESSAGE_BYTES,
  queue_pop: QUEUE_MAX_NAME_BYTES,
  queue_len: QUEUE_MAX_NAME_BYTES,
  secret_sign: SECRET_MAX_NAME + SECRET_MAX_MESSAGE,
};

const decoder = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

export interface HubDeps {
  readonly cadence: Cadence;
  readonly secrets: SecretStore;
  /** The engine database, opened on first use. */
  readonly db: () => Database;
  /** Per-tenant quotas of kv and queues (the operator's, resolved). */
  readonly quotas: StoreQuotas;
}

export class BrokerHub {
  private kvStore: KvStore | null = null;
  private queueStore: QueueStore | null = null;

  constructor(private readonly deps: HubDeps) {}

  private get kv(): KvStore {
    return (this.kvStore ??= new KvStore(this.deps.db(), this.deps.quotas));
  }

  private get queues(): QueueStore {
    return (this.queueStore ??= new QueueStore(this.deps.db(), this.deps.quotas));
  }

  /** Whether `name` is a broker import this hub serves. */
  static serves(name: string): boolean {
    return Object.hasOwn(MAX_REQUEST, name);
  }

  /** The largest request `name` accepts (the cadence's size step), or null when the hub does not serve it. */
  static requestCap(name: string): number | null {
    return Object.hasOwn(MAX_REQUEST, name) ? MAX_REQUEST[name]! : null;
  }

  call(caller: CallerOf, name: string, args: readonly Uint8Array[], cap: number): BrokerAnswer {
    const entry = lookupImport(MEMBRANE_MODULE, name);
    if (!entry?.abi || !BrokerHub.serves(name) || args.length !== entry.abi.strings) return { ok: false, errno: GUEST_ERR.INVALID };
    const bytes = args.reduce((n, a) => n + a.byteLength, 0);
    const refused = this.deps.cadence.admit(caller, entry.grant as CapWord, name, { bytes, max: MAX_REQUEST[name]! });
    if (refused !== null) return { ok: false, errno: refused };
    try {
      return this.run(caller, name, args, cap);
    } catch (e) {
      if (e instanceof BadArgument) return { ok: false, errno: GUEST_ERR.INVALID };
      throw e;
    }
  }

  private run(caller: CallerOf, name: string, args: readonly Uint8Array[], cap: number): BrokerAnswer {
    const tenant = caller.tenant;
    const err = (code: keyof typeof GUEST_ERR): BrokerAnswer => ({ ok: false, errno: GUEST_ERR[code] });
    // A store's refusal; a quota's is audited (once per window: see Cadence.quota).
    const refused = (r: 'TOO_LARGE' | 'INVALID' | QuotaRefusal): BrokerAnswer => {
      if (typeof r === 'string') return err(r);
      this.deps.cadence.quota(caller, name.startsWith('kv_') ? 'kv' : 'queue', name, r.quota, r.limit);
      return err('QUOTA');
    };
    const bytesOut = (payload: Uint8Array): BrokerAnswer => (payload.byteLength > cap ? { ok: true, value: payload.byteLength } : { ok: true, value: payload.byteLength, payload });
    switch (name) {
      case 'kv_get':
      case 'kv_put':
      case 'kv_delete': {
        const key = text(args[0]!);
        const bad = checkKey(key, args[0]!.byteLength);
        if (bad) return err(bad);
        if (name === 'kv_get') {
          const v = this.kv.get(tenant, key);
          return v ? bytesOut(v) : err('NOT_FOUND');
        }
        if (name === 'kv_put') {
          const refusal = this.kv.put(tenant, key, args[1]!.slice());
          return refusal ? refused(refusal) : { ok: true, value: 0 };
        }
        return this.kv.delete(tenant, key) ? { ok: true, value: 0 } : err('NOT_FOUND');
      }
      case 'kv_list':
        return bytesOut(encoder.encode(JSON.stringify(this.kv.list(tenant, text(args[0]!)))));
      case 'queue_push':
      case 'queue_pop':
      case 'queue_len': {
        const queue = text(args[0]!);
        if (queue === '' || queue.includes('\0')) return err('INVALID');
        if (name === 'queue_len') return { ok: true, value: this.queues.length(tenant, queue) };
        if (name === 'queue_push') {
          const refusal = this.queues.push(tenant, queue, args[1]!.slice());
          return refusal ? refused(refusal) : { ok: true, value: 0 };
        }
        const got = this.queues.pop(tenant, queue, cap);
        if (!got) return err('NOT_FOUND');
        return got.message ? { ok: true, value: got.size, payload: got.message } : { ok: true, value: got.size };
      }
      case 'secret_sign': {
        const mac = this.deps.secrets.sign(tenant, text(args[0]!), args[1]!);
        return mac ? bytesOut(mac) : err('NOT_FOUND');
      }
      default:
        throw new SandboxError('INTERNAL', 'a broker import without a broker');
    }
  }
}

class BadArgument extends Error {}

function text(bytes: Uint8Array): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new BadArgument();
  }
}
