// The JSON API end to end over 127.0.0.1: authentication, exec with the grant rule, runs, the
// instance lifecycle, audit (query, verify, stream), profiles, metrics and the OpenAPI document.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { wat } from '../helpers/wat.ts';
import { call, readAuditStream, testServer } from '../helpers/http.ts';

const t = await testServer();
const compute = t.token('acme', 'compute');
const b64 = async (name: string): Promise<string> => Buffer.from(await wat(name)).toString('base64');

test('no token, a bad token and a revoked token are 401 UNAUTHENTICATED; /health and /openapi.json are open', async () => {
  const none = await call(t.url, '/v1/whoami', null);
  assert.equal(none.status, 401);
  assert.equal(none.body.error.code, 'UNAUTHENTICATED');
  assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="membrane"');
  const bad = await call(t.url, '/v1/whoami', `mbt_${'A'.repeat(43)}`);
  assert.equal(bad.status, 401);
  assert.equal((await call(t.url, '/v1/instances', 'not-even-a-token')).status, 401);
  const created = t.server.api.tokens.create('acme', 'compute');
  assert.equal((await call(t.url, '/v1/whoami', created.token)).status, 200);
  assert.equal(t.server.api.tokens.revoke(created.id), true);
  const revoked = await call(t.url, '/v1/whoami', created.token);
  assert.equal(revoked.status, 401);
  assert.deepEqual(Object.keys(revoked.body), ['error']);
  assert.deepEqual((await call(t.url, '/health', null)).body, { ok: true });
  assert.equal((await call(t.url, '/openapi.json', null)).body.openapi, '3.1.0');
  assert.deepEqual((await call(t.url, '/v1/whoami', compute)).body, { tenant: 'acme', profile: 'compute' });
});

test('unknown route → 404, wrong method → 405 with Allow, both in the error shape', async () => {
  const nf = await call(t.url, '/v1/nothing-here', compute);
  assert.equal(nf.status, 404);
  assert.equal(nf.body.error.code, 'NOT_FOUND');
  const wm = await call(t.url, '/v1/exec', compute, 'GET');
  assert.equal(wm.status, 405);
  assert.equal(wm.body.error.code, 'METHOD_NOT_ALLOWED');
  assert.equal(wm.headers.get('allow'), 'POST');
});

test('POST /v1/exec js 1+1 → 2', async () => {
  const r = await call(t.url, '/v1/exec', compute, 'POST', { code: '1+1', language: 'js' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, true);
  assert.equal(r.body.result, 2);
  assert.equal(r.body.profile, 'compute');
  assert.equal(typeof r.body.poolHit, 'boolean');
});

test('capability_subset ["net"] on a compute token → 403 NOT_CAPABLE, one audit record in GET /v1/audit and on the stream', async () => {
  let refused: Awaited<ReturnType<typeof call>> | null = null;
  const streamed = await readAuditStream(t.url, compute, '', (rs) => rs.some((r) => r.kind === 'denied'), 10_000, async () => {
    refused = await call(t.url, '/v1/exec', compute, 'POST', { code: '1', language: 'js', capability_subset: ['net'] });
  });
  assert.ok(refused);
  const r = refused as Awaited<ReturnType<typeof call>>;
  assert.equal(r.status, 403);
  assert.equal(r.body.error.code, 'NOT_CAPABLE');
  assert.match(r.body.error.message, /"net"/);
  const denied = streamed.find((x) => x.kind === 'denied');
  assert.ok(denied, 'the denial arrived on the stream');
  assert.equal(denied.tenant, 'acme');
  assert.deepEqual(denied.detail.caps, ['net']);
  const listed = await call(t.url, '/v1/audit?kind=denied', compute);
  assert.equal(listed.status, 200);
  assert.ok(listed.body.records.some((x: any) => x.seq === denied.seq));
  const v = await call(t.url, '/v1/audit/verify', compute);
  assert.equal(v.body.ok, true);
  assert.ok(v.body.records >= 1);
});

test('?backlog=N sends the newest N records first', async () => {
  const recs = await readAuditStream(t.url, compute, '?backlog=1', (rs) => rs.length >= 1, 5_000);
  assert.equal(recs.length, 1);
  assert.equal(recs[0].tenant, 'acme');
});

test('timeout_ms 10000000 is clamped to the grant and the clamp reported', async () => {
  const r = await call(t.url, '/v1/exec', compute, 'POST', { code: '"x"', language: 'js', timeout_ms: 10_000_000 });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.result, 'x');
  assert.deepEqual(r.body.clamped, ['timeout_ms 10000000 clamped to 5000']);
});

test('POST /v1/runs with a small wasm → the run result object; GET /v1/runs lists it', async () => {
  const r = await call(t.url, '/v1/runs', compute, 'POST', { module: await b64('noop'), invoke: 'add', args: [2, 40] });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.ok, true);
  assert.equal(r.body.result, 42);
  for (const k of ['id', 'stdout', 'stderr', 'fuelUsed', 'durationMs', 'memoryBytes', 'profile', 'warnings']) assert.ok(k in r.body, k);
  const listed = await call(t.url, '/v1/runs', compute);
  assert.equal(listed.body.runs[0].id, r.body.id);
  const one = await call(t.url, `/v1/runs/${r.body.id}`, compute);
  assert.equal(one.body.result, 42);
  const cmd = await call(t.url, '/v1/runs', compute, 'POST', { command: 'echo', argv: ['hi', 'there'] });
  assert.equal(cmd.body.ok, true, cmd.text);
  assert.equal(cmd.body.stdout, 'hi there\n');
  // A network grant: compute's 1e9 fuel lasts ~150 ms of a bare loop once V8 has optimized it,
  // which would race the 200 ms deadline.
  const spin = await call(t.url, '/v1/runs', t.token('acme', 'network'), 'POST', { module: await b64('spin'), invoke: 'run', profile: 'network', timeout_ms: 200 });
  assert.equal(spin.status, 200);
  assert.equal(spin.body.ok, false);
  assert.equal(spin.body.error.code, 'TIMEOUT');
  const bad = await call(t.url, '/v1/runs', compute, 'POST', { module: Buffer.from('not wasm').toString('base64') });
  assert.equal(bad.body.ok, false);
  assert.equal(bad.body.error.code, 'INVALID_MODULE');
  assert.equal((await call(t.url, '/v1/runs', compute, 'POST', { command: 'no-such-command' })).status, 404);
});

test('an instance is started, called, listed, read and stopped', async () => {
  const started = await call(t.url, '/v1/instances', compute, 'POST', { id: 'p1', module: await b64('noop') });
  assert.equal(started.status, 201, started.text);
  assert.equal(started.body.id, 'p1');
  assert.equal(started.body.tenant, 'acme');
  assert.equal(started.body.state, 'running');
  assert.equal((await call(t.url, '/v1/instances', compute, 'POST', { id: 'p1', module: await b64('noop') })).status, 400);
  for (let i = 1; i <= 3; i++) {
    const c = await call(t.url, '/v1/instances/p1/call', compute, 'POST', { export: 'incr' });
    assert.equal(c.body.result, i, c.text);
  }
  const list = await call(t.url, '/v1/instances', compute);
  assert.deepEqual(list.body.instances.map((i: any) => [i.id, i.calls]), [['p1', 3]]);
  assert.equal((await call(t.url, '/v1/instances/p1', compute)).body.calls, 3);
  assert.deepEqual((await call(t.url, '/v1/instances/p1', compute, 'DELETE')).body, { stopped: true });
  assert.equal((await call(t.url, '/v1/instances/p1', compute)).status, 404);
  assert.deepEqual((await call(t.url, '/v1/instances', compute)).body.instances, []);
});

test('GET /v1/profiles: the ladder in order and the granted profile', async () => {
  const r = await call(t.url, '/v1/profiles', compute);
  assert.deepEqual(r.body.profiles.map((p: any) => p.name), ['compute', 'minimal', 'network', 'posix']);
  assert.equal(r.body.granted, 'compute');
  assert.deepEqual(r.body.profiles[0], { name: 'compute', memoryBytes: 64 * 1024 * 1024, timeoutMs: 5000, fuel: 1e9, caps: ['vfs'] });
});

test('/metrics shows requests, calls by kind and outcome, denials, fuel, durations and pool sizes', async () => {
  t.server.api.feed.poll();
  const r = await fetch(`${t.url}/metrics`);
  const text = await r.text();
  assert.match(r.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  assert.match(text, /membrane_http_requests_total\{route="\/v1\/exec",method="POST",status="200"\} [1-9]/);
  assert.match(text, /membrane_calls_total\{kind="exec",outcome="ok"\} [1-9]/);
  assert.match(text, /membrane_calls_total\{kind="run",outcome="TIMEOUT"\} 1/);
  assert.match(text, /membrane_calls_total\{kind="call",outcome="ok"\} 3/);
  assert.match(text, /membrane_denials_total\{broker="grant",code="NOT_CAPABLE"\} [1-9]/);
  assert.match(text, /membrane_fuel_used_total [1-9]/);
  assert.match(text, /membrane_call_duration_seconds_bucket\{(le="\+Inf",kind="exec"|kind="exec",le="\+Inf")\} [1-9]/);
  assert.match(text, /membrane_pool_live_workers \d+/);
  assert.match(text, /membrane_instances 0/);
  assert.match(text, /membrane_http_requests_in_flight 1/);
  assert.doesNotMatch(text, /acme/, 'no tenant name in metrics');
});

test('/openapi.json describes every implemented route, its body and the error shape', async () => {
  const doc = (await call(t.url, '/openapi.json', null)).body;
  const routes = t.server.api.routes();
  assert.ok(routes.length >= 20);
  for (const r of routes) {
    const path = r.path.endsWith('/*') ? `${r.path.slice(0, -2)}/{asset}` : r.path;
    const op = doc.paths[path]?.[r.method.toLowerCase()];
    assert.ok(op, `${r.method} ${r.path} is missing from the document`);
    if (r.body) assert.ok(op.requestBody.content['application/json'].schema.properties, `${r.method} ${r.path} lacks its body schema`);
    if (r.auth) assert.ok(op.responses['401'], `${r.method} ${r.path} lacks 401`);
  }
  assert.deepEqual(doc.components.schemas.Error.properties.error.required, ['code', 'message']);
  assert.equal(doc.paths['/v1/exec'].post.requestBody.content['application/json'].schema.additionalProperties, false);
});

test('the dashboard is served at / with its security headers', async () => {
  const r = await fetch(`${t.url}/`);
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type') ?? '', /text\/html/);
  assert.match(r.headers.get('content-security-policy') ?? '', /default-src 'self'/);
  assert.equal((await fetch(`${t.url}/dashboard/..%2f..%2fpackage.json`)).status, 404);
});

test('no log line carries a token, and every request has one line with method, route, status, ms, tenant', () => {
  const all = t.logs.join('');
  assert.ok(!all.includes(compute), 'the token leaked into the logs');
  assert.doesNotMatch(all, /mbt_[A-Za-z0-9_-]{20,}/);
  const lines = t.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
  const exec = lines.find((l) => l.route === '/v1/exec' && l.status === 200);
  assert.ok(exec);
  assert.equal(exec.method, 'POST');
  assert.equal(exec.tenant, 'acme');
  assert.equal(typeof exec.ms, 'number');
});

test('/mcp needs a token; with one, the request reaches the MCP handler with the token as the grant', async () => {
  assert.equal((await call(t.url, '/mcp', null, 'POST', { jsonrpc: '2.0', id: 1, method: 'tools/list' })).status, 401);
  const r = await call(t.url, '/mcp', compute, 'POST', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, { accept: 'application/json, text/event-stream' });
  assert.equal(r.status, 200, r.text);
  const names = r.body.result.tools.map((x: any) => x.name);
  assert.ok(names.includes('sandbox_execute'), r.text);
});
