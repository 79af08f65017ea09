// The audit stream resumes: every event carries `id: <seq>`; a client that reconnects with
// Last-Event-ID (what EventSource sends by itself) or ?after= gets exactly the records of its
// tenant it missed, in order, then the live tail — nothing skipped, nothing repeated.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { call, openSse, testServer } from '../helpers/http.ts';

const t = await testServer();
const token = t.token('sse-a', 'compute');
const api = t.server.api;

function append(tenant: string, n: number, tag: string): number[] {
  const seqs: number[] = [];
  for (let i = 0; i < n; i++) seqs.push(api.audit.append({ tenant, kind: 'test.resume', detail: { tag, i } }).seq);
  api.feed.poll();
  return seqs;
}

const auth = { authorization: `Bearer ${token}` };
const audits = (frames: { event: string }[]): number => frames.filter((f) => f.event === 'audit').length;

test('Last-Event-ID: the missed records of the tenant, then the live tail, none twice', async () => {
  const first = await openSse(`${t.url}/v1/audit/stream`, auth);
  assert.equal(first.status, 200);
  const live = append('sse-a', 2, 'live');
  const seen = await first.until((f) => audits(f) >= 2);
  assert.deepEqual(seen.map((f) => [f.event, Number(f.id)]), live.map((s) => ['audit', s]));
  assert.deepEqual(seen.map((f) => JSON.parse(f.data).seq), live);
  first.close();
  const last = seen.at(-1)!.id!;

  const missed = append('sse-a', 3, 'missed');
  append('sse-b', 2, 'other tenant');
  const again = await openSse(`${t.url}/v1/audit/stream`, { ...auth, 'last-event-id': last });
  const caught = await again.until((f) => audits(f) >= 3);
  assert.deepEqual(caught.map((f) => Number(f.id)), missed);
  const later = append('sse-a', 1, 'later');
  const all = await again.until((f) => audits(f) >= 4);
  assert.deepEqual(all.map((f) => Number(f.id)), [...missed, ...later]);
  assert.ok(all.every((f) => JSON.parse(f.data).tenant === 'sse-a'));
  again.close();
});

test('?after= resumes the same way; Last-Event-ID wins over it and over ?backlog', async () => {
  const seqs = append('sse-a', 3, 'after');
  const viaQuery = await openSse(`${t.url}/v1/audit/stream?after=${seqs[0]}`, auth);
  assert.deepEqual((await viaQuery.until((f) => audits(f) >= 2)).map((f) => Number(f.id)), seqs.slice(1));
  viaQuery.close();
  const both = await openSse(`${t.url}/v1/audit/stream?after=0&backlog=50`, { ...auth, 'last-event-id': String(seqs[1]) });
  const got = await both.until((f) => audits(f) >= 1);
  await new Promise((r) => setTimeout(r, 300));
  assert.deepEqual(got.map((f) => Number(f.id)), [seqs[2]]);
  both.close();
});

test('a resume point at the head sends nothing old; one past the head suppresses records up to it', async () => {
  const [head] = append('sse-a', 1, 'head');
  const atHead = await openSse(`${t.url}/v1/audit/stream`, { ...auth, 'last-event-id': String(head) });
  const [next] = append('sse-a', 1, 'next');
  assert.deepEqual((await atHead.until((f) => audits(f) >= 1)).map((f) => Number(f.id)), [next]);
  atHead.close();
  const ahead = await openSse(`${t.url}/v1/audit/stream`, { ...auth, 'last-event-id': String(next! + 2) });
  const skipped = append('sse-a', 3, 'ahead');
  const got = await ahead.until((f) => audits(f) >= 1);
  assert.deepEqual(got.map((f) => Number(f.id)), [skipped[2]]);
  ahead.close();
});

test('a Last-Event-ID that is not a seq is 400 BAD_REQUEST', async () => {
  for (const bad of ['abc', '-1', '1.5', '9'.repeat(17), '12abc']) {
    const r = await call(t.url, '/v1/audit/stream', token, 'GET', undefined, { 'last-event-id': bad });
    assert.equal(r.status, 400, bad);
    assert.equal(r.body.error.code, 'BAD_REQUEST');
    assert.match(r.body.error.message, /Last-Event-ID/);
  }
  assert.equal((await call(t.url, '/v1/audit/stream?after=x', token)).status, 400);
});
