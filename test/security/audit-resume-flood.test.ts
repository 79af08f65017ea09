// Attack: reconnect to the audit stream with `Last-Event-ID: 0` after the tenant's log has grown
// large, to make the server read and send the whole history at once (and again on every
// reconnect). The catch-up is bounded: at most MAX_RESUME_RECORDS records, after an
// `event: gap` frame naming where the skipped part ends; the rest is for GET /v1/audit to page.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_RESUME_RECORDS } from '../../src/interfaces/http/audit-feed.ts';
import { openSse, testServer } from '../helpers/http.ts';

const t = await testServer();
const token = t.token('flooder', 'compute');
const api = t.server.api;

test(`a resume from 0 over ${MAX_RESUME_RECORDS + 200} missed records sends a gap frame and the newest ${MAX_RESUME_RECORDS}`, async () => {
  const seqs: number[] = [];
  for (let i = 0; i < MAX_RESUME_RECORDS + 200; i++) seqs.push(api.audit.append({ tenant: 'flooder', kind: 'flood', detail: { i } }).seq);
  api.feed.poll();
  const s = await openSse(`${t.url}/v1/audit/stream`, { authorization: `Bearer ${token}`, 'last-event-id': '0' });
  const frames = await s.until((f) => f.filter((x) => x.event === 'audit').length >= MAX_RESUME_RECORDS, 30_000);
  await new Promise((r) => setTimeout(r, 300));
  s.close();
  assert.equal(frames[0]!.event, 'gap');
  const newest = seqs.slice(-MAX_RESUME_RECORDS);
  assert.deepEqual(JSON.parse(frames[0]!.data), { after: 0, resumedAfter: newest[0]! - 1 });
  const audits = frames.filter((f) => f.event === 'audit');
  assert.equal(audits.length, MAX_RESUME_RECORDS, 'no more than the bound');
  assert.deepEqual(audits.map((f) => Number(f.id)), newest);
});

test('a resume within the bound has no gap frame', async () => {
  const base = api.audit.append({ tenant: 'flooder', kind: 'mark', detail: {} }).seq;
  for (let i = 0; i < 10; i++) api.audit.append({ tenant: 'flooder', kind: 'flood', detail: { i } });
  api.feed.poll();
  const s = await openSse(`${t.url}/v1/audit/stream`, { authorization: `Bearer ${token}`, 'last-event-id': String(base) });
  const frames = await s.until((f) => f.length >= 10);
  s.close();
  assert.ok(frames.every((f) => f.event === 'audit'));
});
