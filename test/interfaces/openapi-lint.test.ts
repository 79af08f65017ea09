// The live /openapi.json of a server this test starts, linted once by Redocly (`recommended`, the
// rules `redocly lint` applies by default) and by Spectral (`spectral:oas`): 0 errors from each;
// warnings are counted and reported. Plus what generated clients rely on: the error code is the
// table's enum, audit `detail` is an object with documented fields, /mcp is POST only, and every
// operation has a tag, a unique operationId and a description.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import spectralCore, { type RulesetDefinition } from '@stoplight/spectral-core';
import spectralParsers from '@stoplight/spectral-parsers';
import spectralRulesets from '@stoplight/spectral-rulesets';
import { ERROR_CODES } from '../../src/errors.ts';
import { testServer } from '../helpers/http.ts';

const t = await testServer();
const response = await fetch(`${t.url}/openapi.json`);
const source = await response.text();
const doc = JSON.parse(source);

test('Redocly lint (recommended): 0 errors', async (c) => {
  const config = await createConfig({ extends: ['recommended'] });
  const problems = await lintFromString({ source, absoluteRef: `${t.url}/openapi.json`, config });
  const errors = problems.filter((p) => p.severity === 'error');
  const warnings = problems.filter((p) => p.severity === 'warn');
  c.diagnostic(`redocly: ${errors.length} errors, ${warnings.length} warnings${warnings.length ? ` (${[...new Set(warnings.map((w) => w.ruleId))].join(', ')})` : ''}`);
  assert.deepEqual(errors.map((e) => `${e.ruleId}: ${e.message} at ${e.location[0]?.pointer ?? '?'}`), []);
});

test('Spectral (spectral:oas): 0 errors', async (c) => {
  const { Spectral, Document } = spectralCore;
  const spectral = new Spectral();
  spectral.setRuleset({ extends: [[spectralRulesets.oas as RulesetDefinition, 'recommended']] });
  const results = await spectral.run(new Document(source, spectralParsers.Json, '/openapi.json'));
  const errors = results.filter((r) => r.severity === 0);
  const warnings = results.filter((r) => r.severity === 1);
  c.diagnostic(`spectral: ${errors.length} errors, ${warnings.length} warnings${warnings.length ? ` (${[...new Set(warnings.map((w) => String(w.code)))].join(', ')})` : ''}`);
  assert.deepEqual(errors.map((e) => `${String(e.code)}: ${e.message} at ${e.path.join('.')}`), []);
});

test('the error code is the error table as an enum, everywhere an error appears', () => {
  assert.deepEqual(doc.components.schemas.ErrorCode.enum, [...ERROR_CODES]);
  assert.ok(doc.components.schemas.ErrorCode.enum.includes('CANCELLED') && doc.components.schemas.ErrorCode.enum.includes('GUEST_EXCEPTION'));
  assert.deepEqual(doc.components.schemas.Error.properties.error.properties.code, { $ref: '#/components/schemas/ErrorCode' });
  assert.deepEqual(doc.components.schemas.CallError.properties.code, { $ref: '#/components/schemas/ErrorCode' });
  const exec = doc.paths['/v1/exec'].post.responses;
  assert.deepEqual(exec['403'].content['application/json'].schema, { $ref: '#/components/schemas/Error' });
  assert.match(exec['403'].description, /NOT_CAPABLE/);
  assert.equal(doc.components.schemas.ErrorCode.type, 'string');
});

test('audit detail is an object generated clients can use: open, with its known fields typed', () => {
  const detail = doc.components.schemas.AuditDetail;
  assert.equal(detail.type, 'object');
  assert.equal(detail.additionalProperties, true);
  for (const f of ['broker', 'op', 'code', 'why']) assert.equal(detail.properties[f].type, 'string', f);
  assert.deepEqual(doc.components.schemas.AuditRecord.properties.detail, { $ref: '#/components/schemas/AuditDetail' });
});

test('/mcp is documented as POST only, its refusals as JSON-RPC errors; GET and DELETE answer 405', async () => {
  assert.deepEqual(Object.keys(doc.paths['/mcp']), ['post']);
  const post = doc.paths['/mcp'].post;
  assert.equal(post.responses['401'].content['application/json'].schema.properties.jsonrpc.const, '2.0');
  assert.equal(post.responses['202'].content, undefined);
  for (const method of ['GET', 'DELETE']) {
    const r = await fetch(`${t.url}/mcp`, { method });
    assert.equal(r.status, 405);
    assert.equal(r.headers.get('allow'), 'POST');
    assert.equal(((await r.json()) as { error: { code: number } }).error.code, -32019);
  }
});

test('every operation has a tag from the list, a unique operationId, a summary and a description', () => {
  const tags = new Set(doc.tags.map((x: { name: string }) => x.name));
  const ids = new Set<string>();
  for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      assert.equal(op.tags.length, 1, `${method} ${path}`);
      assert.ok(tags.has(op.tags[0]), `${method} ${path}: tag ${op.tags[0]}`);
      assert.ok(!ids.has(op.operationId), `duplicate operationId ${op.operationId}`);
      ids.add(op.operationId);
      assert.ok(op.summary && op.description, `${method} ${path}`);
    }
  }
  assert.ok(doc.servers.length > 0 && doc.components.securitySchemes.bearer.scheme === 'bearer');
  assert.ok(doc.paths['/v1/audit/stream'].get.parameters.some((p: any) => p.in === 'header' && p.name === 'Last-Event-ID'));
});
