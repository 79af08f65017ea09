/**
 * Load test of `membrane serve` (issue #7 must-show 5): drives `POST /v1/exec` and `POST /v1/runs`
 * at a fixed concurrency (default 64) for a fixed time (default 60 s) with a share of hostile
 * requests (default 10%: spinners, memory bombs, escape attempts, a grant escalation), then checks
 * that the server never crashed, that no response was a 5xx other than the declared overload
 * (503 OVERLOADED), and that `membrane audit verify` still passes. Prints p50/p99 latency per kind
 * against the same benign request sent one at a time before the load (the baseline, same run).
 *
 * Tenants (issue #20, fairness): the hostile share of the clients is one hostile tenant sending only
 * hostile requests; the other clients are honest tenants (HONEST_TENANTS of them) sending benign
 * ones. The honest clients first run alone for the same time (no hostile tenant), then with it:
 * the honest p99 under hostile load is printed against the honest p99 alone (target ≤ 3×).
 *
 * Everything runs on 127.0.0.1 against a server this script starts, in a private $MEMBRANE_HOME.
 * Knobs: LOAD_SECONDS (per phase), LOAD_CONCURRENCY, LOAD_HOSTILE (a fraction of the clients),
 * LOAD_PYTHON (a fraction of the honest requests).
 */

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Agent, request } from 'undici';
import { median, quantile, ROOT, watText } from './lib.ts';

const SECONDS = Number(process.env['LOAD_SECONDS'] ?? 60);
const CONCURRENCY = Number(process.env['LOAD_CONCURRENCY'] ?? 64);
const HOSTILE = Number(process.env['LOAD_HOSTILE'] ?? 0.1);
const PYTHON = Number(process.env['LOAD_PYTHON'] ?? 0.05);
const BIN = join(ROOT, 'bin/membrane.js');
const HONEST_TENANTS = 3;
/** A single request that takes longer than this is a failure of the server, not a slow answer. */
const REQUEST_DEADLINE_MS = 120_000;

interface Job {
  readonly kind: string;
  readonly hostile: boolean;
  readonly path: '/v1/exec' | '/v1/runs';
  readonly body: unknown;
}

const ADD_WAT = '(module (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add))';

function jobs(addModule: string, spinModule: string): { benign: Job[]; python: Job[]; hostile: Job[] } {
  const exec = (kind: string, hostile: boolean, language: string, code: string, extra: Record<string, unknown> = {}): Job => ({
    kind,
    hostile,
    path: '/v1/exec',
    body: { language, code, ...extra },
  });
  return {
    benign: [
      exec('exec js', false, 'js', 'const xs = [1, 2, 3, 4]; xs.map((x) => x * x).reduce((a, b) => a + b, 0)'),
      exec('exec ts', false, 'ts', 'const n: number = 6; n * 7'),
      { kind: 'run wasm', hostile: false, path: '/v1/runs', body: { module: addModule, invoke: 'add', args: [2, 3] } },
      { kind: 'run command', hostile: false, path: '/v1/runs', body: { command: 'echo', argv: ['hello'] } },
    ],
    python: [exec('exec python', false, 'python', 'print(1+1)')],
    hostile: [
      exec('hostile: js spinner', true, 'js', 'for(;;){}', { timeout_ms: 1000 }),
      exec('hostile: js memory bomb', true, 'js', 'let a=[]; for(;;) a.push(new Array(1e6).fill(1))', { timeout_ms: 3000 }),
      exec('hostile: js escape', true, 'js', "(function(){ try { return this.constructor.constructor('return process')().env } catch (e) { return String(e) } })()"),
      exec('hostile: js escalation', true, 'js', '1', { capability_subset: ['net'] }),
      exec('hostile: python spinner', true, 'python', 'while True: pass', { timeout_ms: 1000 }),
      exec('hostile: python escape', true, 'python', "import os\ntry:\n  print(os.system('id'))\nexcept Exception as e:\n  print(type(e).__name__)"),
      { kind: 'hostile: wasm spinner', hostile: true, path: '/v1/runs', body: { module: spinModule, invoke: 'run', timeout_ms: 500 } },
    ],
  };
}

function startServer(home: string): Promise<{ proc: ChildProcess; url: string; stderr: () => string }> {
  const proc = spawn(process.execPath, [BIN, 'serve', '--port', '0'], { env: { ...process.env, MEMBRANE_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-20_000)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`membrane serve did not start in 60 s:\n${err}`)), 60_000);
    const lines = createInterface({ input: proc.stdout! });
    lines.once('line', (line) => {
      clearTimeout(timer);
      const m = /listening on (http:\/\/\S+)/.exec(line);
      if (!m) reject(new Error(`unexpected first line from membrane serve: ${line}`));
      else resolve({ proc, url: m[1]!, stderr: () => err });
    });
    proc.once('exit', (code) => reject(new Error(`membrane serve exited (${code}) before listening:\n${err}`)));
  });
}

interface Outcome {
  readonly kind: string;
  readonly hostile: boolean;
  readonly status: number; // 0: no response (connection error, deadline)
  readonly code: string;
  readonly ms: number;
}

async function send(dispatcher: Agent, url: string, token: string, job: Job): Promise<Outcome> {
  const t = performance.now();
  try {
    const r = await request(url + job.path, {
      method: 'POST',
      dispatcher,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(job.body),
      headersTimeout: REQUEST_DEADLINE_MS,
      bodyTimeout: REQUEST_DEADLINE_MS,
    });
    const text = await r.body.text();
    let code = r.statusCode < 300 ? 'OK' : 'HTTP';
    try {
      const j = JSON.parse(text) as { error?: { code?: string } };
      if (j.error?.code) code = j.error.code;
    } catch {
      code = 'NOT_JSON';
    }
    return { kind: job.kind, hostile: job.hostile, status: r.statusCode, code, ms: performance.now() - t };
  } catch (e) {
    return { kind: job.kind, hostile: job.hostile, status: 0, code: (e as Error).name, ms: performance.now() - t };
  }
}

export async function httpLoad(): Promise<boolean> {
  const home = mkdtempSync(join(tmpdir(), 'membrane-load-'));
  process.env['MEMBRANE_AUDIT_KEY'] ??= randomBytes(32).toString('hex');
  const env = { ...process.env, MEMBRANE_HOME: home };
  const tokenFor = (tenant: string): string => {
    const tok = spawnSync(process.execPath, [BIN, 'token', 'create', '--tenant', tenant, '--profile', 'compute', '--json'], { env, encoding: 'utf8' });
    if (tok.status !== 0) throw new Error(`membrane token create failed: ${tok.stderr}`);
    return (JSON.parse(tok.stdout) as { token: string }).token;
  };
  const honestTokens = Array.from({ length: HONEST_TENANTS }, (_, i) => tokenFor(`honest-${i + 1}`));
  const hostileToken = tokenFor('hostile');
  const token = honestTokens[0]!;
  const addModule = Buffer.from(await watText(ADD_WAT)).toString('base64');
  const spinModule = Buffer.from(await watText(readFileSync(join(ROOT, 'test/fixtures/wat/spin.wat'), 'utf8'))).toString('base64');
  const { benign, python, hostile } = jobs(addModule, spinModule);
  const server = await startServer(home);
  const dispatcher = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 30_000 });
  let crashed: string | null = null;
  let stopping = false;
  server.proc.once('exit', (code, signal) => {
    if (!stopping) crashed = `exited with ${code ?? signal}`;
  });
  try {
    // Baseline: each benign kind alone, one request at a time, after a warm-up.
    const baseline = new Map<string, number>();
    for (const job of [...benign, ...python]) {
      for (let i = 0; i < 3; i++) await send(dispatcher, server.url, token, job);
      const ms: number[] = [];
      for (let i = 0; i < 15; i++) ms.push((await send(dispatcher, server.url, token, job)).ms);
      baseline.set(job.kind, median(ms));
    }
    const hostileClients = Math.round(CONCURRENCY * HOSTILE);
    const honestClients = CONCURRENCY - hostileClients;
    const honestJob = (): Job => {
      const from = Math.random() < PYTHON ? python : benign;
      return from[Math.floor(Math.random() * from.length)]!;
    };
    const phase = async (withHostile: boolean): Promise<Outcome[]> => {
      const out: Outcome[] = [];
      const end = performance.now() + SECONDS * 1000;
      const client = async (i: number): Promise<void> => {
        const hostileClient = i >= honestClients;
        const tok = hostileClient ? hostileToken : honestTokens[i % HONEST_TENANTS]!;
        while (performance.now() < end && crashed === null) {
          const job = hostileClient ? hostile[Math.floor(Math.random() * hostile.length)]! : honestJob();
          out.push(await send(dispatcher, server.url, tok, job));
        }
      };
      await Promise.all(Array.from({ length: withHostile ? CONCURRENCY : honestClients }, (_, i) => client(i)));
      return out;
    };
    console.log(`\nHTTP load — honest alone: ${honestClients} clients (${HONEST_TENANTS} honest tenants) for ${SECONDS} s, ${Math.round(PYTHON * 100)}% python`);
    const alone = await phase(false);
    report(alone, baseline, SECONDS);
    console.log(`\nHTTP load — ${CONCURRENCY} concurrent clients for ${SECONDS} s: ${honestClients} honest (${HONEST_TENANTS} tenants) + ${hostileClients} of one hostile tenant`);
    const outcomes = await phase(true);
    const health = await send(dispatcher, server.url, token, { kind: 'health', hostile: false, path: '/v1/exec', body: { language: 'js', code: '1+1' } });
    report(outcomes, baseline, SECONDS);
    const honestMs = (os: readonly Outcome[]): number[] => os.filter((o) => !o.hostile).map((o) => o.ms);
    const p99Alone = quantile(honestMs(alone), 0.99);
    const p99Loaded = quantile(honestMs(outcomes), 0.99);
    const honestRefused = outcomes.filter((o) => !o.hostile && o.status >= 400).length;
    const refusedAlone = alone.filter((o) => o.status >= 400).length;
    console.log(
      `  honest p99 under hostile load: ${p99Loaded.toFixed(1)} ms vs honest p99 alone: ${p99Alone.toFixed(1)} ms → ${(p99Loaded / p99Alone).toFixed(2)}× (target ≤ 3×); ` +
        `honest p50 ${median(honestMs(outcomes)).toFixed(1)} vs ${median(honestMs(alone)).toFixed(1)} ms; honest requests refused: ${honestRefused} under load, ${refusedAlone} alone`,
    );
    if (honestRefused) {
      const why = new Map<string, number>();
      for (const o of outcomes) if (!o.hostile && o.status >= 400) why.set(`${o.kind} → ${o.status} ${o.code}`, (why.get(`${o.kind} → ${o.status} ${o.code}`) ?? 0) + 1);
      console.log(`  honest refusals: ${[...why].map(([k, n]) => `${k} ×${n}`).join('; ')}`);
    }
    const bad5xx = outcomes.filter((o) => o.status >= 500 && !(o.status === 503 && o.code === 'OVERLOADED'));
    const noResponse = outcomes.filter((o) => o.status === 0);
    const overloaded = outcomes.filter((o) => o.code === 'OVERLOADED').length;
    stopping = true;
    server.proc.kill('SIGTERM');
    await new Promise((r) => (server.proc.exitCode !== null ? r(null) : server.proc.once('exit', r)));
    const verify = spawnSync(process.execPath, [BIN, 'audit', 'verify', '--json'], { env, encoding: 'utf8' });
    const verified = verify.status === 0;
    const exitCode = server.proc.exitCode;
    console.log(`  host crashes: ${crashed === null ? 0 : `1 (${crashed})`} · exit after SIGTERM: ${exitCode} · 5xx other than declared overload: ${bad5xx.length} · no response: ${noResponse.length} · declared overload (503): ${overloaded}`);
    console.log(`  server answered after the load: ${health.status === 200 ? 'yes' : `no (${health.status} ${health.code})`} · membrane audit verify: ${verify.stdout.trim() || verify.stderr.trim()}`);
    if (bad5xx.length) console.log(`  5xx codes: ${[...new Set(bad5xx.map((o) => `${o.kind} → ${o.status} ${o.code}`))].join('; ')}`);
    const ok = crashed === null && exitCode === 0 && bad5xx.length === 0 && noResponse.length === 0 && health.status === 200 && verified;
    console.log(`  verdict: ${ok ? 'PASS' : 'FAIL'}`);
    if (!ok) console.log(server.stderr().split('\n').slice(-20).join('\n'));
    return ok;
  } finally {
    if (server.proc.exitCode === null) server.proc.kill('SIGKILL');
    await dispatcher.close();
  }
}

function report(outcomes: readonly Outcome[], baseline: ReadonlyMap<string, number>, seconds: number): void {
  const kinds = [...new Set(outcomes.map((o) => o.kind))].sort();
  console.log(`  ${outcomes.length} requests, ${(outcomes.length / seconds).toFixed(1)}/s`);
  console.log(`  ${'kind'.padEnd(26)} ${'n'.padStart(6)} ${'p50 ms'.padStart(9)} ${'p99 ms'.padStart(9)} ${'alone p50'.padStart(10)} ${'ratio'.padStart(7)}  outcomes`);
  for (const k of kinds) {
    const os = outcomes.filter((o) => o.kind === k);
    const ms = os.map((o) => o.ms);
    const codes = new Map<string, number>();
    for (const o of os) codes.set(`${o.status} ${o.code}`, (codes.get(`${o.status} ${o.code}`) ?? 0) + 1);
    const alone = baseline.get(k);
    const p50 = median(ms);
    console.log(
      `  ${k.padEnd(26)} ${String(os.length).padStart(6)} ${p50.toFixed(1).padStart(9)} ${quantile(ms, 0.99).toFixed(1).padStart(9)} ${(alone === undefined ? '—' : alone.toFixed(1)).padStart(10)} ${(alone === undefined ? '' : `${(p50 / alone).toFixed(1)}×`).padStart(7)}  ${[...codes].map(([c, n]) => `${c}: ${n}`).join(', ')}`,
    );
  }
  const all = outcomes.map((o) => o.ms);
  console.log(`  ${'all'.padEnd(26)} ${String(all.length).padStart(6)} ${median(all).toFixed(1).padStart(9)} ${quantile(all, 0.99).toFixed(1).padStart(9)}`);
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = (await httpLoad()) ? 0 : 1;
