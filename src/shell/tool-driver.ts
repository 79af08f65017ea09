/**
 * A toolchain tool as one step of the in-sandbox shell (or any caller holding `engine.run`): the
 * clang driver's jobs run one by one (driver.ts), and their results fold into one RunResult, as if
 * one command had run.
 *
 * Owns: the folding — fuel summed, output concatenated, the last run's walls and warnings kept.
 * Invariant: every job is a separate sandboxed run through the caller's `run`, which applies the
 * caller's profile, VFS, deadline and tenant; nothing here runs code.
 *
 * Does not protect against: nothing of its own (see driver.ts for the plan's checks).
 */

import type { RunResult } from '../engine/results.ts';
import { drive, type ToolRun } from '../build/driver.ts';
import type { ToolName } from '../build/toolchain.ts';

const encoder = new TextEncoder();

export async function driveTool(
  name: string,
  args: readonly string[],
  run: (tool: ToolName, argv: readonly string[]) => Promise<RunResult>,
  removeTemporaries?: (paths: readonly string[]) => void,
): Promise<RunResult> {
  const runs: RunResult[] = [];
  const folded = await drive(name, args, async (tool, argv): Promise<ToolRun> => {
    const r = await run(tool, argv);
    runs.push(r);
    return { exitCode: r.exitCode ?? (r.ok ? 0 : 126), stdout: r.stdout, stderr: r.stderr, fuelUsed: r.fuelUsed, stopped: r.exitCode === undefined && !r.ok };
  }, removeTemporaries);
  const last = runs.at(-1)!;
  const ok = folded.exitCode === 0 && !folded.stopped;
  return {
    ...last,
    ok,
    exitCode: last.exitCode === undefined && !last.ok ? undefined : folded.exitCode,
    stdout: folded.stdout,
    stderr: folded.stderr,
    stdoutBytes: encoder.encode(folded.stdout),
    fuelUsed: folded.fuelUsed,
    durationMs: runs.reduce((n, r) => n + r.durationMs, 0),
    warnings: [...new Set(runs.flatMap((r) => r.warnings))],
  } as RunResult;
}
