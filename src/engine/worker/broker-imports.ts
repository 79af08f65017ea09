/**
 * The guest side of every broker import the main thread serves (`kv_*`, `queue_*`,
 * `secret_sign`, …): one generic adapter per catalog entry with an `abi`, so adding a broker
 * needs no worker code.
 *
 * Owns: copying the call's `(ptr, len)` strings out of guest memory, one `broker` host call with
 * them as blobs and the guest's `out_cap`, and writing an answer that fits into `out`. An
 * answer that does not fit comes back as its size only — the broker consumed nothing (DESIGN §4).
 * Invariant: the guest's pointers are read and written only through GuestMemory (a bad pointer is
 * INVALID, never a host fault); the tenant is not an argument — main knows the caller.
 *
 * Does not protect against: nothing beyond transport; the cadence and each broker's caps are
 * the main thread's (src/brokers/).
 */

import { CATALOG, MEMBRANE_MODULE, importKey, type BrokerAbi } from '../../policy/catalog.ts';
import { GUEST_ERR, MAX_REQUEST_BYTES } from '../../abi/command.ts';
import type { HostBridge } from './host-bridge.ts';
import { FaultError, type GuestMemory } from '../../abi/memory.ts';
import type { CallState } from '../../abi/signals.ts';

/** No single string argument may exceed this (each broker's own cap is checked by the cadence). */
const MAX_ARG_BYTES = MAX_REQUEST_BYTES;

const BROKERED: ReadonlyArray<readonly [string, BrokerAbi]> = CATALOG.filter((e) => e.module === MEMBRANE_MODULE && e.abi && e.status === 'linked').map(
  (e) => [e.name, e.abi!] as const,
);

export function brokerImports(link: readonly string[], host: HostBridge, memory: GuestMemory, state: CallState): Record<string, (...a: number[]) => number> {
  const linked = new Set(link);
  const out: Record<string, (...a: number[]) => number> = {};
  for (const [name, abi] of BROKERED) {
    if (!linked.has(importKey(MEMBRANE_MODULE, name))) continue;
    out[name] = (...a: number[]): number => {
      state.rethrow();
      const args: Uint8Array[] = [];
      for (let i = 0; i < abi.strings; i++) {
        const len = a[2 * i + 1]! >>> 0;
        if (len > MAX_ARG_BYTES) return GUEST_ERR.TOO_LARGE;
        try {
          args.push(memory.copy(a[2 * i]!, len));
        } catch (e) {
          if (e instanceof FaultError) return GUEST_ERR.INVALID;
          throw e;
        }
      }
      const cap = abi.out ? a[2 * abi.strings + 1]! >>> 0 : 0;
      const answer = host.call({ op: 'broker', name, cap }, args);
      if (!answer.ok) return answer.errno;
      if (abi.out && answer.payload && answer.value <= cap) {
        try {
          memory.write(a[2 * abi.strings]!, answer.payload);
        } catch (e) {
          if (e instanceof FaultError) return GUEST_ERR.INVALID;
          throw e;
        }
      }
      return answer.value;
    };
  }
  return out;
}
