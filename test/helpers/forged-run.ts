// Test helper: what a test posting raw run messages to a pool worker needs — a module answering
// a number, and a minimal guest spec (no VFS, no fuel metering, small walls) as the main thread
// would build it.
import type { GuestSpec } from '../../src/engine/bridge/protocol.ts';

/** A module whose `run` export answers `n`. */
export const answer = (n: number): string => `(module (memory 1) (func (export "run") (result i32) (i32.const ${n})))`;

/** A fresh minimal spec (session `forged` of tenant `mallory`). */
export function forgedSpec() {
  return {
    session: { id: 'forged', tenant: 'mallory', profile: 'compute' },
    link: [],
    maxMemoryPages: 16,
    importedMemory: null,
    growFailedExport: null,
    poolMemory: null,
    output: { limitBytes: 4096, failOnLimit: false },
    wasi: { argv: ['forged'], env: [], stdin: new Uint8Array(0) },
    logSink: 'stderr' as const,
    hostWaitMs: 5000,
    fuel: { metered: false, chunk: 1000 },
    vfs: null,
    depth: 0,
  } satisfies Partial<Record<keyof GuestSpec, unknown>>;
}
