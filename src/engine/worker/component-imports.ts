/**
 * The brokered interfaces of the `membrane:engine` world for components (wit/membrane.wit):
 * `membrane:engine/kv` — the same `broker` host calls the core-module `kv_*` imports make
 * (broker-imports.ts) — and `membrane:engine/vfs-query` (the `vfs_query` host call against this
 * guest's own database), `http-fetch`, `browse-fetch` and `llm-complete` (the network and model
 * brokers behind the same guard and cadence as `http_fetch`, `browse_fetch`, `llm_complete`),
 * `run-command-many` (`run_command_many`: the fabric's fan-out), shaped as jco's glue calls them.
 *
 * Owns: turning a call's JS arguments into the broker's blobs and the answer (or a guest error
 * number) into the interface's value or its `error-code`.
 * Invariant: an interface is present only when the world check on the main thread accepted the
 * component's import of it under the grant (policy/component-world.ts); the main thread checks
 * the cap again on every call (the cadence). The tenant is never an argument.
 *
 * Does not protect against: nothing beyond transport — quotas and rate limits are the brokers'.
 */

import { GUEST_ERR, decodeResponse } from '../../abi/command.ts';
import { decodeManyResponse, encodeManyRequest } from '../../abi/many.ts';
import type { CallState } from '../../abi/signals.ts';
import { ownBytes } from '../../wasi/p2/index.ts';
import type { HostBridge } from './host-bridge.ts';

/** The kv broker's largest value (DESIGN §4: 1 MiB) plus room: a `get` answer always fits. */
const KV_OUT_CAP = (1 << 20) + 1024;
/** The first answer buffer of a brokered network call (a bigger answer is fetched at its size). */
const REMOTE_OUT_CAP = 2 << 20;
/** Interface, its function, the broker that serves it (the catalog's core-module import). */
const REMOTE: readonly (readonly [string, string, string])[] = [
  ['membrane:engine/http-fetch', 'fetch', 'http_fetch'],
  ['membrane:engine/browse-fetch', 'fetch', 'browse_fetch'],
  ['membrane:engine/llm-complete', 'complete', 'llm_complete'],
];
/** The same bound as the core-module `vfs_query` import (vfs-imports.ts). */
const MAX_SQL_BYTES = 64 * 1024;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

const ERROR_CODES: Readonly<Record<number, string>> = Object.freeze({
  [GUEST_ERR.DENIED]: 'denied',
  [GUEST_ERR.RATE_LIMITED]: 'rate-limited',
  [GUEST_ERR.REVOKED]: 'revoked',
  [GUEST_ERR.TOO_LARGE]: 'too-large',
  [GUEST_ERR.NOT_FOUND]: 'not-found',
  [GUEST_ERR.INVALID]: 'invalid',
  [GUEST_ERR.TIMEOUT]: 'timeout',
  [GUEST_ERR.UNAVAILABLE]: 'unavailable',
  [GUEST_ERR.QUOTA]: 'quota',
});
/** The interfaces' `error-code` cases by guest error number (run-command uses the same enum). */
export const COMMAND_ERRORS = ERROR_CODES;

/** What `vfs-query` needs of the guest's VFS: an in-memory one travels as a snapshot. */
export interface QueryVfs {
  readonly inMemory: boolean;
  serialize(): Uint8Array;
}

/**
 * One brokered remote call (`http_fetch`, `tcp_request`, `browse_fetch`, `llm_complete`): its answer, or the
 * guest error number. An answer too big for the first buffer is kept by the host and fetched
 * again at its size — nothing is redone.
 */
export function remoteCall(host: HostBridge, state: CallState, broker: string, blobs: readonly Uint8Array[]): Uint8Array | number {
  state.rethrow();
  let cap = REMOTE_OUT_CAP;
  for (let attempt = 0; attempt < 2; attempt++) {
    const answer = host.call({ op: 'broker', name: broker, cap }, blobs);
    if (!answer.ok) return answer.errno;
    if (answer.value > cap || !answer.payload) {
      cap = answer.value;
      continue;
    }
    return answer.payload;
  }
  return GUEST_ERR.UNAVAILABLE;
}

export function componentImports(linked: readonly string[], host: HostBridge, state: CallState, vfs: (() => QueryVfs) | null): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  if (linked.includes('membrane:engine/vfs-query') && vfs) {
    out['membrane:engine/vfs-query'] = {
      query: (sql: string): string => {
        state.rethrow();
        const bytes = encoder.encode(sql);
        if (bytes.length > MAX_SQL_BYTES) throw 'too-large';
        const v = vfs();
        const answer = host.call({ op: 'vfs_query', sql }, [v.inMemory ? v.serialize() : new Uint8Array(0)]);
        if (!answer.ok) throw ERROR_CODES[answer.errno] ?? 'unavailable';
        return decoder.decode(answer.payload ?? new Uint8Array(0));
      },
    };
  }
  // The brokered string → string calls: the core ABI's request and answer, unchanged.
  for (const [iface, fn, broker] of REMOTE) {
    if (!linked.includes(iface)) continue;
    out[iface] = {
      [fn]: (request: string): string => {
        const answer = remoteCall(host, state, broker, [encoder.encode(request)]);
        if (typeof answer === 'number') throw ERROR_CODES[answer] ?? 'unavailable';
        return decoder.decode(answer);
      },
    };
  }
  if (linked.includes('membrane:engine/run-command-many')) {
    // The core `run_command_many` host call: the cap `parallel`, the fabric's fan-out on the pool.
    out['membrane:engine/run-command-many'] = {
      run: (name: string, args: readonly string[], inputs: readonly unknown[], timeoutMs: number): { status: number; stdout: Uint8Array; stderr: Uint8Array; error: string }[] => {
        const request = encodeManyRequest([name, ...Array.from(args, String)], Array.from(inputs, ownBytes), timeoutMs >>> 0);
        const answer = remoteCall(host, state, 'run_command_many', [request]);
        if (typeof answer === 'number') throw ERROR_CODES[answer] ?? 'unavailable';
        const responses = decodeManyResponse(answer)?.map(decodeResponse);
        if (!responses || responses.some((r) => r === null)) throw 'invalid';
        return responses.map((r) => ({ status: r!.status, stdout: r!.stdout, stderr: r!.stderr, error: r!.error }));
      },
    };
  }
  if (linked.includes('membrane:engine/kv')) {
    const call = (name: string, args: Uint8Array[], cap = 0): Uint8Array | null => {
      state.rethrow();
      const answer = host.call({ op: 'broker', name, cap }, args);
      if (!answer.ok) throw ERROR_CODES[answer.errno] ?? 'unavailable';
      if (answer.value < 0) throw ERROR_CODES[answer.value] ?? 'unavailable';
      return answer.payload;
    };
    out['membrane:engine/kv'] = {
      get: (key: string): Uint8Array | undefined => {
        try {
          return call('kv_get', [encoder.encode(key)], KV_OUT_CAP) ?? new Uint8Array(0);
        } catch (e) {
          if (e === 'not-found') return undefined;
          throw e;
        }
      },
      put: (key: string, value: unknown): void => void call('kv_put', [encoder.encode(key), ownBytes(value)]),
      delete: (key: string): void => void call('kv_delete', [encoder.encode(key)]),
      keys: (prefix: string): string[] => {
        const raw = call('kv_list', [encoder.encode(prefix)], KV_OUT_CAP);
        const keys: unknown = JSON.parse(decoder.decode(raw ?? new Uint8Array(0)) || '[]');
        return Array.isArray(keys) ? keys.filter((k): k is string => typeof k === 'string') : [];
      },
    };
  }
  return out;
}
