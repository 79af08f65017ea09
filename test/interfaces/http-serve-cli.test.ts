// `membrane serve` and `membrane token` as an operator runs them: the URL line first, /health,
// a token created by the CLI, JSON log lines on stderr without a token in them, a --config file,
// and SIGTERM letting an in-flight exec finish before a clean exit.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { BIN, runCli } from '../helpers/cli.ts';
import { call } from '../helpers/http.ts';
import { tempDir } from '../helpers/tmp.ts';

const home = tempDir('membrane-serve-');
const env = { MEMBRANE_HOME: home, MEMBRANE_AUDIT_KEY: 'd'.repeat(64) };

test('membrane token create|list|revoke', async () => {
  const made = await runCli(['token', 'create', '--tenant', 'ops', '--profile', 'network', '--json'], env);
  assert.equal(made.code, 0, made.stderr);
  const t = JSON.parse(made.stdout);
  assert.match(t.token, /^mbt_[A-Za-z0-9_-]{43}$/);
  assert.equal(t.tenant, 'ops');
  assert.equal(t.profile, 'network');
  const list = await runCli(['token', 'list', '--json'], env);
  const listed = JSON.parse(list.stdout);
  assert.deepEqual(listed.map((x: any) => [x.id, x.revoked]), [[t.id, false]]);
  assert.ok(!list.stdout.includes(t.token), 'list never shows a token');
  assert.equal((await runCli(['token', 'revoke', t.id], env)).code, 0);
  assert.equal(JSON.parse((await runCli(['token', 'list', '--json'], env)).stdout)[0].revoked, true);
  assert.equal((await runCli(['token', 'revoke', 'tok_nope'], env)).code, 1);
  const bad = await runCli(['token', 'create', '--tenant', 'ops', '--profile', 'root'], env);
  assert.equal(bad.code, 64);
});

test('--config with an unknown key is refused, naming it', async () => {
  const file = join(home, 'bad.toml');
  writeFileSync(file, '[net]\nallowCidr = ["127.0.0.1/32"]\n');
  const r = await runCli(['serve', '--port', '0', '--config', file], env, 60_000);
  assert.equal(r.code, 64, r.stderr);
  assert.match(r.stderr, /unknown key "allowCidr" in net/);
  assert.equal(r.stdout, '');
});

test('membrane serve --port 0: URL line, /health, no token in the logs, SIGTERM drains an in-flight exec', async () => {
  const made = JSON.parse((await runCli(['token', 'create', '--tenant', 'acme', '--json'], env)).stdout);
  const config = join(home, 'serve.toml');
  writeFileSync(config, 'profile = "network"\n[server]\nhost = "127.0.0.1"\n[limits]\nbodyBytes = 65536\nmaxInstancesPerTenant = 2\n[limits.operatorLimits.compute]\ntimeoutMs = 8000\n');
  const p = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--config', config], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d) => (stdout += d));
  p.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => p.on('close', (code) => resolve(code)));
  const killer = setTimeout(() => p.kill('SIGKILL'), 120_000);
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const check = (): void => {
        const m = /^membrane serve: listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(stdout);
        if (m) resolve(m[1]!);
      };
      p.stdout.on('data', check);
      void exited.then(() => reject(new Error(`serve exited early: ${stderr}`)));
    });
    assert.deepEqual((await call(url, '/health', null)).body, { ok: true });
    assert.equal((await call(url, '/v1/whoami', `mbt_${'x'.repeat(43)}`)).status, 401);
    assert.deepEqual((await call(url, '/v1/whoami', made.token)).body, { tenant: 'acme', profile: 'compute' });
    // The config applies: the operator raised compute's timeout, and lowered the body cap.
    const profiles = await call(url, '/v1/profiles', made.token);
    assert.equal(profiles.body.profiles[0].timeoutMs, 8000);
    assert.equal((await call(url, '/v1/exec', made.token, 'POST', { code: 'x'.repeat(70_000), language: 'js' })).status, 413);
    const quick = await call(url, '/v1/exec', made.token, 'POST', { code: '1+1', language: 'js' });
    assert.equal(quick.body.result, 2, quick.text);
    // An exec that takes ~1.5 s is in flight when SIGTERM arrives: it finishes, then the server exits.
    const slow = call(url, '/v1/exec', made.token, 'POST', { code: 'let t = Date.now(); while (Date.now() - t < 1500) {} "finished"', language: 'js' });
    await new Promise((r) => setTimeout(r, 400));
    p.kill('SIGTERM');
    const answered = await slow;
    assert.equal(answered.status, 200, answered.text);
    assert.equal(answered.body.result, 'finished');
    assert.equal(await exited, 0, stderr);
    const lines = stderr.trim().split('\n').map((l) => JSON.parse(l));
    assert.ok(lines.some((l) => l.msg === 'draining'));
    assert.equal(lines[lines.length - 1].msg, 'closed');
    assert.ok(lines.some((l) => l.msg === 'request' && l.route === '/v1/exec' && l.tenant === 'acme'));
    assert.ok(!stderr.includes(made.token), 'the token appeared in the logs');
    assert.doesNotMatch(stderr, /mbt_[A-Za-z0-9_-]{20,}/);
    assert.equal(stdout.split('\n').filter(Boolean).length, 1, 'stdout holds only the URL line');
  } finally {
    clearTimeout(killer);
    if (p.exitCode === null) p.kill('SIGKILL');
  }
});
