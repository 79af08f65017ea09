// src/wasi/p2/http.ts on its own (a recorded `send` stands in for the broker): what a component
// can and cannot put in a request, when the request goes out, and what comes back.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { httpP2, MAX_REQUEST_BODY_BYTES, type HttpAnswer, type HttpRequestOut } from '../../src/wasi/p2/index.ts';

type Ctor = new (...a: unknown[]) => Record<string, (...a: unknown[]) => unknown>;
const enc = new TextEncoder();

function world(answer: HttpAnswer = { ok: true, status: 201, headers: [['content-type', 'text/plain']], body: enc.encode('made') }) {
  const sent: HttpRequestOut[] = [];
  const w = httpP2((r) => {
    sent.push(r);
    return answer;
  });
  const types = w['wasi:http/types']! as Record<string, Ctor & Record<string, (...a: unknown[]) => unknown>>;
  const handle = w['wasi:http/outgoing-handler']!['handle'] as (req: unknown, opts: unknown) => Record<string, (...a: unknown[]) => unknown>;
  return { sent, types, handle };
}

test('headers the host owns are forbidden; bad syntax is refused; the request owns its headers', () => {
  const { types } = world();
  const fields = new types['Fields']!();
  for (const name of ['Host', 'content-length', 'Transfer-Encoding', 'connection', 'proxy-authorization']) {
    assert.throws(() => fields['append']!(name, enc.encode('x')), (e: unknown) => (e as { tag: string }).tag === 'forbidden', name);
  }
  assert.throws(() => fields['append']!('bad name', enc.encode('x')), (e: unknown) => (e as { tag: string }).tag === 'invalid-syntax');
  assert.throws(() => fields['append']!('x-ok', enc.encode('a\r\nInjected: 1')), (e: unknown) => (e as { tag: string }).tag === 'invalid-syntax');
  fields['append']!('X-Token', enc.encode('t'));
  new types['OutgoingRequest']!(fields);
  assert.throws(() => fields['append']!('x-late', enc.encode('1')), (e: unknown) => (e as { tag: string }).tag === 'immutable');
});

test('the request goes out once, when the response is awaited, with the body finished after handle', () => {
  const { sent, types, handle } = world();
  const fields = types['Fields']!['fromList']!([['x-a', enc.encode('1')], ['x-a', enc.encode('2')]]);
  const req = new types['OutgoingRequest']!(fields);
  req['setMethod']!({ tag: 'put' });
  req['setScheme']!({ tag: 'HTTP' });
  req['setAuthority']!('api.example.test:8080');
  req['setPathWithQuery']!('/v1/x?y=1');
  const body = req['body']!() as Record<string, (...a: unknown[]) => unknown>;
  const future = handle(req, undefined);
  assert.equal(sent.length, 0, 'nothing is sent before the response is awaited');
  const stream = body['write']!() as Record<string, (...a: unknown[]) => unknown>;
  stream['blockingWriteAndFlush']!(enc.encode('payload'));
  types['OutgoingBody']!['finish']!(body, undefined);
  future['subscribe']!();
  const got = future['get']!() as { tag: string; val: { tag: string; val: Record<string, (...a: unknown[]) => unknown> } };
  assert.equal(sent.length, 1);
  assert.deepEqual({ ...sent[0]!, body: new TextDecoder().decode(sent[0]!.body!) }, { url: 'http://api.example.test:8080/v1/x?y=1', method: 'PUT', headers: { 'x-a': '1, 2' }, body: 'payload' });
  assert.equal(got.tag, 'ok');
  const response = got.val.val;
  assert.equal(response['status']!(), 201);
  const headers = response['headers']!() as Record<string, (...a: unknown[]) => unknown>;
  assert.throws(() => headers['append']!('x', enc.encode('y')), (e: unknown) => (e as { tag: string }).tag === 'immutable');
  const input = (response['consume']!() as Record<string, () => Record<string, (n: bigint) => Uint8Array>>)['stream']!();
  assert.equal(new TextDecoder().decode(input['blockingRead']!(100n)), 'made');
  assert.deepEqual(future['get']!(), { tag: 'err' }, 'a response is taken once');
  assert.equal(sent.length, 1);
});

test('no authority, CONNECT, a scheme other than http(s) and a body past the cap are refused without sending', () => {
  const { sent, types, handle } = world();
  const bare = new types['OutgoingRequest']!(new types['Fields']!());
  assert.throws(() => handle(bare, undefined), (e: unknown) => (e as { tag: string }).tag === 'HTTP-request-URI-invalid');
  const connect = new types['OutgoingRequest']!(new types['Fields']!());
  connect['setAuthority']!('a.example.test');
  connect['setMethod']!({ tag: 'connect' });
  assert.throws(() => handle(connect, undefined), (e: unknown) => (e as { tag: string }).tag === 'HTTP-request-method-invalid');
  const ftp = new types['OutgoingRequest']!(new types['Fields']!());
  ftp['setAuthority']!('a.example.test');
  ftp['setScheme']!({ tag: 'other', val: 'ftp' });
  assert.throws(() => handle(ftp, undefined), (e: unknown) => (e as { tag: string }).tag === 'HTTP-protocol-error');
  assert.throws(() => ftp['setAuthority']!('user@a.example.test'));
  const big = new types['OutgoingRequest']!(new types['Fields']!());
  big['setAuthority']!('a.example.test');
  const body = big['body']!() as Record<string, (...a: unknown[]) => unknown>;
  const future = handle(big, undefined);
  const stream = body['write']!() as Record<string, (...a: unknown[]) => unknown>;
  assert.throws(() => stream['blockingWriteAndFlush']!(new Uint8Array(MAX_REQUEST_BODY_BYTES + 1)), (e: unknown) => (e as { tag: string }).tag === 'last-operation-failed');
  assert.throws(() => types['OutgoingBody']!['finish']!(body, undefined), (e: unknown) => (e as { tag: string }).tag === 'HTTP-request-body-size');
  const got = future['get']!() as { val: { tag: string; val: { tag: string } } };
  assert.equal(got.val.tag, 'err');
  assert.equal(got.val.val.tag, 'HTTP-request-body-size');
  assert.equal(sent.length, 0);
});
