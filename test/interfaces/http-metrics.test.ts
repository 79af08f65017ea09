// /metrics through prom-client: the exposition parses under a strict format check (and promtool's,
// where installed), carries build info, process and event-loop metrics and the pool gauges,
// counts MCP tool calls by tool and outcome like HTTP calls, and two servers in one process keep
// separate counts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { call, testServer } from '../helpers/http.ts';
import { parseExposition, promtool, sampleValue } from '../helpers/prometheus.ts';
import { version } from '../../src/interfaces/version.ts';

const a = await testServer();
const b = await testServer();
const token = a.token('metrics-tenant', 'compute');
const mcpHeaders = { accept: 'application/json, text/event-stream' };

async function tool(name: string, args: Record<string, unknown>): Promise<any> {
  const r = await call(a.url, '/mcp', token, 'POST', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }, mcpHeaders);
  assert.equal(r.status, 200, r.text);
  return r.body.result;
}

async function scrape(url: string): Promise<{ text: string; type: string }> {
  const r = await fetch(`${url}/metrics`);
  assert.equal(r.status, 200);
  return { text: await r.text(), type: r.headers.get('content-type') ?? '' };
}

test('the exposition is well-formed: strict parser, and promtool check metrics when it is on PATH', async (t) => {
  assert.equal((await call(a.url, '/v1/exec', token, 'POST', { code: '1+1', language: 'js' })).status, 200);
  await tool('sandbox_execute', { code: '2+2', language: 'js' });
  const { text, type } = await scrape(a.url);
  assert.match(type, /^text\/plain; version=0\.0\.4; charset=utf-8$/);
  const families = parseExposition(text);
  for (const f of families.values()) {
    assert.ok(f.help && f.help.length > 0, `${f.name} has no HELP`);
    assert.notEqual(f.type, 'untyped', `${f.name} has no TYPE`);
  }
  const checked = promtool(text);
  if (checked === null) t.diagnostic('promtool is not on PATH: the strict parser stood in for `promtool check metrics`');
  else assert.ok(checked.ok, `promtool check metrics: ${checked.output}`);
});

test('build info, process and event-loop metrics, pool gauges', async () => {
  const families = parseExposition((await scrape(a.url)).text);
  assert.equal(sampleValue(families, 'membrane_build_info', { version: version(), node: process.version }), 1);
  for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'process_start_time_seconds', 'nodejs_eventloop_lag_seconds', 'nodejs_eventloop_lag_p99_seconds', 'nodejs_heap_size_used_bytes']) {
    assert.ok(families.has(name), `${name} is missing`);
  }
  const stats = a.server.api.engine.stats();
  assert.equal(sampleValue(families, 'membrane_pool_live_workers'), stats.liveWorkers);
  assert.equal(sampleValue(families, 'membrane_instances'), stats.instances);
  assert.equal(sampleValue(families, 'membrane_workers_replaced_total'), stats.workersReplaced);
  assert.equal(sampleValue(families, 'membrane_audit_streams'), 0);
});

test('MCP tool calls are counted by tool and outcome, and their requests like any other', async () => {
  const before = parseExposition((await scrape(a.url)).text);
  const okBefore = sampleValue(before, 'membrane_mcp_tool_calls_total', { tool: 'sandbox_execute', outcome: 'ok' }) ?? 0;
  const ok = await tool('sandbox_execute', { code: '40+2', language: 'js' });
  assert.equal(ok.structuredContent.result, 42);
  const refused = await tool('sandbox_execute', { code: '1', language: 'js', capability_subset: ['net'] });
  assert.equal(refused.isError, true);
  const failed = await tool('sandbox_execute', { code: 'while (true) {}', language: 'js', fuel: 100_000 });
  assert.equal(failed.structuredContent.ok, false);
  await tool('list_profiles', {});
  const after = parseExposition((await scrape(a.url)).text);
  assert.equal(sampleValue(after, 'membrane_mcp_tool_calls_total', { tool: 'sandbox_execute', outcome: 'ok' }), okBefore + 1);
  assert.equal(sampleValue(after, 'membrane_mcp_tool_calls_total', { tool: 'sandbox_execute', outcome: 'NOT_CAPABLE' }), 1);
  assert.equal(sampleValue(after, 'membrane_mcp_tool_calls_total', { tool: 'sandbox_execute', outcome: failed.structuredContent.error.code }), 1);
  assert.equal(sampleValue(after, 'membrane_mcp_tool_calls_total', { tool: 'list_profiles', outcome: 'ok' }), 1);
  assert.ok((sampleValue(after, 'membrane_mcp_tool_call_duration_seconds_count', { tool: 'sandbox_execute' }) ?? 0) >= 3);
  assert.ok((sampleValue(after, 'membrane_http_requests_total', { route: '/mcp', method: 'POST', status: '200' }) ?? 0) >= 4);
  assert.doesNotMatch(await (await fetch(`${a.url}/metrics`)).text(), /metrics-tenant/, 'no tenant name in metrics');
});

test('two servers in one process keep separate registries', async () => {
  const ta = parseExposition((await scrape(a.url)).text);
  const tb = parseExposition((await scrape(b.url)).text);
  assert.ok((sampleValue(ta, 'membrane_http_requests_total', { route: '/v1/exec', method: 'POST', status: '200' }) ?? 0) >= 1);
  assert.equal(sampleValue(tb, 'membrane_http_requests_total', { route: '/v1/exec', method: 'POST', status: '200' }), undefined);
  assert.equal(sampleValue(tb, 'membrane_mcp_tool_calls_total', { tool: 'sandbox_execute', outcome: 'ok' }), undefined);
  assert.ok(tb.has('process_cpu_user_seconds_total'), 'the process metrics appear on every server');
});
