// /mcp without a valid token: a 401 whose body is a JSON-RPC error carrying our message (what an
// MCP client shows), and a WWW-Authenticate challenge with no OAuth resource metadata — this
// server has no OAuth configuration, so nothing may point a client at an authorization server.
// Driven with the MCP SDK's client too: without an auth provider it reports our message; with one
// (as OAuth-capable clients have), discovery finds nothing here and no authorization is started.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ERROR_TABLE } from '../../src/errors.ts';
import { call, testServer } from '../helpers/http.ts';

const t = await testServer();
const url = new URL(`${t.url}/mcp`);
const BAD = `mbt_${'Q'.repeat(43)}`;
const message = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
const headers = { accept: 'application/json, text/event-stream' };

test('no token: 401, a JSON-RPC error with our message, a bare realm challenge', async () => {
  const r = await call(t.url, '/mcp', null, 'POST', message, headers);
  assert.equal(r.status, 401);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(r.headers.get('www-authenticate'), 'Bearer realm="membrane"');
  assert.deepEqual(r.body, {
    jsonrpc: '2.0',
    error: { code: ERROR_TABLE.UNAUTHENTICATED.mcpCode, message: 'UNAUTHENTICATED: an Authorization: Bearer <token> header is required (membrane token create)', data: { code: 'UNAUTHENTICATED' } },
    id: null,
  });
});

test('a bad token: error="invalid_token" with a description, still no resource_metadata', async () => {
  const r = await call(t.url, '/mcp', BAD, 'POST', message, headers);
  assert.equal(r.status, 401);
  const challenge = r.headers.get('www-authenticate') ?? '';
  assert.equal(challenge, 'Bearer realm="membrane", error="invalid_token", error_description="the bearer token is not valid (unknown or revoked)"');
  assert.doesNotMatch(challenge, /resource_metadata|authorization_uri|scope=/);
  assert.equal(r.body.error.message, 'UNAUTHENTICATED: the bearer token is not valid (unknown or revoked)');
  for (const wk of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
    assert.equal((await fetch(`${t.url}${wk}`)).status, 404, `${wk} must not exist: there is no OAuth here`);
  }
});

test('the /v1 routes keep their error shape with the same challenge', async () => {
  const r = await call(t.url, '/v1/whoami', BAD);
  assert.equal(r.status, 401);
  assert.equal(r.body.error.code, 'UNAUTHENTICATED');
  assert.match(r.headers.get('www-authenticate') ?? '', /^Bearer realm="membrane", error="invalid_token"/);
});

test('the SDK client without an auth provider shows our message', async () => {
  const client = new Client({ name: 'no-auth', version: '1' });
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${BAD}` } } });
  const err = await client.connect(transport).then(
    () => null,
    (e: unknown) => e,
  );
  await client.close().catch(() => undefined);
  assert.ok(err instanceof Error, 'connect must fail');
  assert.match(err.message, /the bearer token is not valid/);
});

test('the SDK client with an OAuth provider finds no authorization server and never starts authorization', async (c) => {
  const fetched: string[] = [];
  let redirected: URL | null = null;
  const provider: OAuthClientProvider = {
    get redirectUrl() {
      return 'http://127.0.0.1:1/callback';
    },
    get clientMetadata() {
      return { redirect_uris: ['http://127.0.0.1:1/callback'], client_name: 'probe' };
    },
    clientInformation: () => undefined,
    saveClientInformation: () => undefined,
    tokens: () => undefined,
    saveTokens: () => undefined,
    redirectToAuthorization: (u: URL) => {
      redirected = u;
    },
    saveCodeVerifier: () => undefined,
    codeVerifier: () => 'v',
  };
  const recording: typeof fetch = (input, init) => {
    fetched.push(`${init?.method ?? 'GET'} ${new URL(input instanceof Request ? input.url : String(input)).pathname}`);
    return fetch(input, init);
  };
  const client = new Client({ name: 'oauth-capable', version: '1' });
  const transport = new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: recording });
  const err = await client.connect(transport).then(
    () => null,
    (e: unknown) => e,
  );
  await client.close().catch(() => undefined);
  c.diagnostic(`the client asked: ${fetched.join(', ')}; it ended with: ${err instanceof Error ? err.message : String(err)}`);
  assert.ok(err instanceof Error, 'connect must fail');
  assert.equal(redirected, null, 'no authorization URL may be opened');
  assert.ok(fetched.includes('POST /mcp'), fetched.join(', '));
  assert.ok(!fetched.some((f) => f.includes('/authorize')), fetched.join(', '));
});

test('a refusal before routing (503 OVERLOADED) is a JSON-RPC error on /mcp too, and the usual shape elsewhere', async () => {
  const full = await testServer({ limits: { maxInFlight: 0 } });
  const r = await call(full.url, '/mcp', null, 'POST', message, headers);
  assert.equal(r.status, 503);
  assert.equal(r.headers.get('retry-after'), '1');
  assert.equal(r.body.jsonrpc, '2.0');
  assert.equal(r.body.error.code, ERROR_TABLE.OVERLOADED.mcpCode);
  assert.equal(r.body.error.data.code, 'OVERLOADED');
  const v1 = await call(full.url, '/v1/whoami', null);
  assert.equal(v1.status, 503);
  assert.equal(v1.body.error.code, 'OVERLOADED');
});
