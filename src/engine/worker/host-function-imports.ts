/**
 * The guest side of the embedder's host functions (DESIGN §9): one import per linked
 * `vendor:name`.`fn` key of the link plan, all with the JSON byte ABI of docs/abi.md —
 * `(args_ptr, args_len, out_ptr, out_cap) → n`.
 *
 * Owns: copying the JSON argument out of guest memory, one `hostfn` host call, and writing an
 * answer that fits into `out` (an answer that does not fit comes back as its size; the host keeps
 * it for the retry with the same request, so the function does not run twice).
 * Invariant: only keys the linker put in the plan become imports (the linker admits a host
 * function only when its cap was granted); guest pointers are read and written only through
 * GuestMemory (a bad pointer is INVALID); the guest's words never name the tenant — main knows it.
 *
 * Does not protect against: nothing beyond transport; the cadence, the size caps, the deadline
 * and the function itself are the main thread's (src/brokers/host-functions.ts).
 */

import { GUEST_ERR } from '../../abi/command.ts';
import { FaultError, type GuestMemory } from '../../abi/memory.ts';
import type { CallState } from '../../abi/signals.ts';
import { MAX_HOST_PAYLOAD_BYTES, isHostCapName } from '../../policy/host-caps.ts';
import type { HostBridge } from './host-bridge.ts';

/** Whether a link key names a host function (`vendor:name.fn`). */
export function isHostFunctionKey(key: string): boolean {
  const dot = key.indexOf('.');
  return dot > 0 && isHostCapName(key.slice(0, dot));
}

/** Import module → field → implementation, for the host function keys in `link`. */
export function hostFunctionImports(link: readonly string[], host: HostBridge, memory: GuestMemory, state: CallState): Record<string, Record<string, (...a: number[]) => number>> {
  const out: Record<string, Record<string, (...a: number[]) => number>> = {};
  for (const key of link) {
    if (!isHostFunctionKey(key)) continue;
    const dot = key.indexOf('.');
    const cap = key.slice(0, dot);
    const fn = key.slice(dot + 1);
    (out[cap] ??= {})[fn] = (argPtr: number, argLen: number, outPtr: number, outCap: number): number => {
      state.rethrow();
      const len = argLen >>> 0;
      // Never copied: the host's cadence refuses (and audits) it by its length alone.
      if (len > MAX_HOST_PAYLOAD_BYTES) {
        const refused = host.call({ op: 'hostfn', cap, fn, out: 0, oversized: len }, []);
        return refused.ok ? GUEST_ERR.TOO_LARGE : refused.errno;
      }
      let args: Uint8Array;
      try {
        args = memory.copy(argPtr, len);
      } catch (e) {
        if (e instanceof FaultError) return GUEST_ERR.INVALID;
        throw e;
      }
      const cap32 = outCap >>> 0;
      const answer = host.call({ op: 'hostfn', cap, fn, out: cap32 }, [args]);
      if (!answer.ok) return answer.errno;
      if (answer.payload && answer.value <= cap32) {
        try {
          memory.write(outPtr, answer.payload);
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
