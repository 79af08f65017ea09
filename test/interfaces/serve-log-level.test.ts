// `membrane serve --log-level L` and the config's `server.logLevel`: the level decides which JSON
// lines reach stderr (the flag wins over the file); an unknown level is a usage error naming the
// accepted ones, in the flag and in the file alike.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { BIN, runCli } from '../helpers/cli.ts';
import { call } from '../helpers/http.ts';
import { tempDir } from '../helpers/tmp.ts';

const home = tempDir('membrane-loglevel-');
const env = { MEMBRANE_HOME: home, MEMBRANE_AUDIT_KEY: 'e'.repeat(64) };

/** Start serve, make two requests (one 404), SIGTERM it; its exit code and stderr lines. */
async function serveOnce(args: string[]): Promise<{ code: number | null; lines: any[] }> {
  const p = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d) => (stdout += d));
  p.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => p.on('close', (code) => resolve(code)));
  const killer = setTimeout(() => p.kill('SIGKILL'), 90_000);
  try {
    const url = await new Promise<string>((resolve, reject) => {
      p.stdout.on('data', () => {
        const m = /listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(stdout);
        if (m) resolve(m[1]!);
      });
      void exited.then(() => reject(new Error(`serve exited early: ${stderr}`)));
    });
    assert.equal((await call(url, '/health', null)).status, 200);
    assert.equal((await call(url, '/nope', null)).status, 404);
    p.kill('SIGTERM');
    const code = await exited;
    return { code, lines: stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
  } finally {
    clearTimeout(killer);
    if (p.exitCode === null) p.kill('SIGKILL');
  }
}

test('--log-level warn: no info lines (requests, listening, closed)', async () => {
  const r = await serveOnce(['--log-level', 'warn']);
  assert.equal(r.code, 0);
  assert.deepEqual(r.lines.filter((l) => l.level < 40), []);
});

test('default info: one request line per request, each with its requestId', async () => {
  const r = await serveOnce([]);
  const requests = r.lines.filter((l) => l.msg === 'request');
  assert.deepEqual(requests.map((l) => [l.route, l.status]), [['/health', 200], ['unmatched', 404]]);
  assert.ok(requests.every((l) => typeof l.requestId === 'string' && l.requestId.length > 0));
  assert.ok(r.lines.some((l) => l.msg === 'listening'));
});

test("config server.logLevel applies, and the flag wins over it", async () => {
  const file = join(home, 'quiet.toml');
  writeFileSync(file, '[server]\nlogLevel = "silent"\n');
  assert.deepEqual((await serveOnce(['--config', file])).lines, []);
  const loud = await serveOnce(['--config', file, '--log-level', 'debug']);
  assert.equal(loud.lines.filter((l) => l.msg === 'request').length, 2);
});

test('an unknown level is refused, in the flag (usage, exit 2) and in the file (exit 64)', async () => {
  const flag = await runCli(['serve', '--port', '0', '--log-level', 'loud'], env, 60_000);
  assert.equal(flag.code, 2, flag.stderr);
  assert.match(flag.stderr, /--log-level must be one of trace, debug, info, warn, error, silent/);
  const file = join(home, 'bad.toml');
  writeFileSync(file, '[server]\nlogLevel = "verbose"\n');
  const conf = await runCli(['serve', '--port', '0', '--config', file], env, 60_000);
  assert.equal(conf.code, 64, conf.stderr);
  assert.match(conf.stderr, /server\.logLevel/);
});
