/**
 * Test helper: a hijacked os_process child (test/fixtures/os-process/forger.mjs) served by the
 * parent's broker proxy exactly as lane.ts serves a real child (src/engine/os-process/
 * broker-proxy.ts), against real brokers (their cadence, stores and network guard) whose audit
 * records the test reads.
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after } from 'node:test';
import { Brokers, resolveHostFunctions, type BrokerOptions, type HostFailure, type HostFunctionsOptions } from '../../src/brokers/index.ts';
import { auditInDatabase } from '../../src/engine/audit-sink.ts';
import { brokerProxy, type ProxyCaller, type ProxyExtras } from '../../src/engine/os-process/broker-proxy.ts';
import { replyText } from '../../src/engine/os-process/protocol.ts';
import { startChild } from '../../src/engine/os-process/spawn.ts';
import type { StreamDesk } from '../../src/engine/os-process/stream.ts';
import type { CapWord } from '../../src/policy/profiles.ts';

export const FORGER = join(dirname(fileURLToPath(import.meta.url)), '../fixtures/os-process/forger.mjs');

export interface Record_ {
  tenant: string;
  instance: string;
  kind: string;
  detail: Record<string, unknown>;
}

/** Real brokers with a private engine database (removed after the file's tests) and an audit list; the embedder's host functions, if any. */
export function testBrokers(records: Record_[], options: BrokerOptions = {}, hostFunctions?: HostFunctionsOptions, onHostError?: (f: HostFailure) => void): Brokers {
  const dir = mkdtempSync(join(tmpdir(), 'membrane-forged-'));
  const brokers = new Brokers({ databaseFile: join(dir, 'engine.sqlite'), audit: () => ({ append: (e) => void records.push(e) }), ...options }, auditInDatabase, resolveHostFunctions(hostFunctions), onHostError ?? null);
  after(() => {
    brokers.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return brokers;
}

/** The caller lane.ts serves a call's child as. */
export const callerOf = (tenant: string, caps: readonly CapWord[], hostCaps: readonly string[] = []): ProxyCaller => ({ tenant, instance: 'os-run', policy: { caps }, hostCaps, marks: { tier: 'os_process' } });

export const b64 = (s: string): string => Buffer.from(s).toString('base64');
/** A forged `host` request line (`acme:x`.`fn` with a JSON argument). */
export const hostRequest = (id: number, cap: string, fn: string, json: string, extra: Record<string, unknown> = {}): string => JSON.stringify({ kind: 'host', id, cap, fn, args: b64(json), leftMs: 5_000, ...extra });
export const request = (id: number, name: string, args: string[], extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ kind: 'broker', id, name, args: args.map(b64), cap: 1 << 20, leftMs: 5_000, ...extra });

export interface ForgedOutcome {
  readonly answers: { id: number; ok: boolean; value?: number; errno?: number; payload?: string }[] | null;
  readonly error: unknown;
  readonly pid: number;
  readonly ms: number;
}

/** Run the forger on `script` as `caller`'s call, served by `brokers`: its answers, or the call's error. */
export async function forged(brokers: Brokers, caller: ProxyCaller, script: Record<string, unknown>, killAfterMs = 10_000, signal?: AbortSignal, extras: ProxyExtras = {}): Promise<ForgedOutcome> {
  const t0 = performance.now();
  const child = startChild({ entry: FORGER, readDirs: [], bwrap: null, addons: false, shareNet: false });
  const proxy = brokerProxy(child, brokers, caller, performance.now() + killAfterMs, extras);
  try {
    const out = await child.call(JSON.stringify(script), { killAfterMs, maxReplyBytes: 32 << 20, lines: 2, side: proxy.side, signal });
    const reply = JSON.parse(replyText(out) ?? 'null') as { result: { answers: ForgedOutcome['answers'] } };
    return { answers: reply.result.answers, error: null, pid: child.pid, ms: performance.now() - t0 };
  } catch (e) {
    return { answers: null, error: e, pid: child.pid, ms: performance.now() - t0 };
  } finally {
    proxy.end();
  }
}

export { gone, waitGone } from './os-pool.ts';
