/**
 * `engine.exec({ language: 'c' | 'cpp', code })`: a C or C++ snippet compiled by the build lane
 * and its output run as a WASI guest — two steps, one call.
 *
 * Owns: the snippet's one budget across both steps (the caller's deadline covers the compile and
 * the run; fuel is counted in lane units, LANE_FUEL_UNIT wasm units each, like every exec lane, and
 * the run gets what the compile left), the run under the caller's grant (its caps, its VFS when
 * named), `context` as the program's stdin (JSON), and the outcome in the exec shape: `result` is
 * the exit status, a non-zero one is GUEST_EXIT, a compile error BUILD_FAILED with diagnostics.
 *
 * Invariant: the compile step runs with `vfs` only (build.ts); the built module then runs exactly
 * like `engine.run` of it — linked against the caller's grant and nothing more.
 *
 * Does not protect against: nothing of its own; each step is a sandboxed run.
 */

import type { BuildHost } from './host.ts';
import { SandboxError, toSandboxError } from '../errors.ts';
import { LANE_FUEL_UNIT, MAX_CODE_BYTES, type ExecOptions, type ExecOutcome } from '../lanes/exec.ts';
import { resolvePolicy } from '../policy/resolve.ts';
import { build, readyToolchain } from './build.ts';

export const NATIVE_LANGUAGES = ['c', 'cpp', 'c++'] as const;

export function isNativeLanguage(language: unknown): language is (typeof NATIVE_LANGUAGES)[number] {
  return (NATIVE_LANGUAGES as readonly unknown[]).includes(language);
}

export async function execNative(engine: BuildHost, opts: ExecOptions): Promise<ExecOutcome> {
  const t0 = performance.now();
  let profile = opts.profile ?? 'compute';
  let warnings: readonly string[] = [];
  const out = (r: Partial<ExecOutcome> & { ok: boolean }): ExecOutcome => ({
    stdout: '', stderr: '', fuelUsed: 0, poolHit: false,
    ...r, durationMs: performance.now() - t0, profile, warnings,
  });
  let release: (() => void) | null = null;
  try {
    if (typeof opts.code !== 'string') throw new SandboxError('POLICY_INVALID', 'code must be a string');
    if (Buffer.byteLength(opts.code) > MAX_CODE_BYTES) throw new SandboxError('POLICY_INVALID', `code is larger than ${MAX_CODE_BYTES} bytes`);
    let stdin = '';
    try {
      stdin = opts.context === undefined ? '' : JSON.stringify(opts.context);
    } catch {
      throw new SandboxError('POLICY_INVALID', 'context must be JSON-serializable');
    }
    const policy = resolvePolicy(opts, engine.config);
    profile = policy.profile;
    warnings = policy.warnings;
    const cxx = opts.language !== 'c';
    await readyToolchain(engine, policy); // the engine's, once: no tenant's turn is held while it warms
    // One fair turn for the compile, the link and the run (they are its steps, not admitted again).
    release = await engine.turn(opts.tenant ?? 'default', policy.timeoutMs, opts.signal);
    const deadline = performance.now() + policy.timeoutMs;
    const fuelBudget = policy.fuel * LANE_FUEL_UNIT;
    const built = await build(engine, {
      language: cxx ? 'c++' : 'c',
      sources: { [cxx ? 'main.cpp' : 'main.c']: opts.code },
      ...(opts.tenant !== undefined ? { tenant: opts.tenant } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
    }, { policy, fuel: fuelBudget });
    const compileFuel = built.fuelUsed;
    const laneFuel = (wasm: number): number => Math.ceil(wasm / LANE_FUEL_UNIT);
    if (!built.ok || !built.wasm) {
      // What the compiler printed is the caller's own diagnostics: stderr and the error's details.
      return out({ ok: false, stderr: built.stderr, fuelUsed: laneFuel(compileFuel), ...(built.error ? { error: built.error } : {}) });
    }
    const left = Math.floor(deadline - performance.now());
    if (left < 1) throw new SandboxError('TIMEOUT', `the call ran past its ${policy.timeoutMs} ms budget`, { timeoutMs: policy.timeoutMs });
    const r = await engine.runResolved(built.wasm, {
      stdin,
      id: 'main',
      ...(opts.tenant !== undefined ? { tenant: opts.tenant } : {}),
      ...(opts.vfs !== undefined ? { vfs: opts.vfs } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.onStdout ? { onStdout: opts.onStdout } : {}),
      ...(opts.onStderr ? { onStderr: opts.onStderr } : {}),
    }, { ...policy, timeoutMs: left, fuel: Math.max(1, fuelBudget - compileFuel) });
    warnings = [...new Set([...warnings, ...r.warnings])];
    return out({
      ok: r.ok,
      ...(r.exitCode !== undefined ? { result: r.exitCode } : {}),
      stdout: r.stdout,
      stderr: r.stderr,
      fuelUsed: laneFuel(compileFuel + r.fuelUsed),
      ...(r.error ? { error: r.error } : {}),
    });
  } catch (e) {
    return out({ ok: false, error: toSandboxError(e).toPublic() });
  } finally {
    release?.();
  }
}
