/**
 * The ambient `membrane` imports every core guest may link (DESIGN §4): `session_info`, `log`,
 * `clock_ms`. Split out of guest.ts for size.
 *
 * Owns: their behaviour. Invariant: `session_info` answers the session the main thread put in the
 * spec (id, tenant, profile — never a host path); a pointer out of range is the guest's error
 * value (-6, INVALID) or a dropped log line, never a host read outside its memory; a log line is
 * at most MAX_LOG_BYTES.
 *
 * Does not protect against: a guest that logs as much as its output cap allows.
 */

import { FaultError, type GuestMemory } from '../../abi/memory.ts';
import type { CallState } from '../../abi/signals.ts';
import type { CappedStream } from '../../wasi/index.ts';
import type { GuestSpec } from '../bridge/protocol.ts';
import type { HostBridge } from './host-bridge.ts';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false });
const MAX_LOG_BYTES = 64 * 1024;
const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;

/** What the ambient imports use of their guest. */
export interface AmbientGuest {
  readonly spec: GuestSpec;
  readonly memory: GuestMemory;
  readonly state: CallState;
  readonly host: HostBridge;
  readonly stderr: CappedStream;
}

export function membraneAmbient(g: AmbientGuest): Record<string, unknown> {
  let session: Uint8Array | null = null;
  return {
    session_info: (outPtr: number, outCap: number): number => {
      g.state.rethrow();
      session ??= encoder.encode(JSON.stringify(g.spec.session));
      if (session.length > outCap >>> 0) return session.length;
      try {
        g.memory.write(outPtr, session);
      } catch (e) {
        if (e instanceof FaultError) return -6;
        throw e;
      }
      return session.length;
    },
    log: (level: number, ptr: number, len: number): void => {
      g.state.rethrow();
      let bytes: Uint8Array;
      try {
        bytes = g.memory.copy(ptr, Math.min(len >>> 0, MAX_LOG_BYTES));
      } catch (e) {
        if (e instanceof FaultError) return;
        throw e;
      }
      const message = decoder.decode(bytes);
      const lv = Math.max(0, Math.min(LOG_LEVELS.length - 1, level | 0));
      if (g.spec.logSink === 'host') g.host.call({ op: 'log', level: lv, message });
      else g.stderr.writeText(`[${LOG_LEVELS[lv]}] ${message}\n`);
    },
    clock_ms: (): bigint => {
      g.state.rethrow();
      return BigInt(Date.now());
    },
  };
}
