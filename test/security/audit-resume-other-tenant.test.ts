// Attack: a tenant reconnects to the audit stream with a Last-Event-ID (or ?after=) taken from
// below another tenant's records — 0, or a seq it saw nothing at — hoping the catch-up replays
// the whole log. The catch-up is a SQL query filtered by the caller's tenant: it gets its own
// records after that seq and nothing else, and the live tail stays filtered the same way.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openSse, testServer } from '../helpers/http.ts';

const t = await testServer();
const mallory = t.token('mallory', 'compute');
const api = t.server.api;

test("resuming from 0 or from a victim's seq replays only the caller's own records", async () => {
  const victim = Array.from({ length: 5 }, (_, i) => api.audit.append({ tenant: 'victim', kind: 'secret.thing', detail: { i } }).seq);
  const own = api.audit.append({ tenant: 'mallory', kind: 'mine', detail: {} }).seq;
  api.feed.poll();
  for (const from of [{ 'last-event-id': '0' }, { 'last-event-id': String(victim[0]! - 1) }]) {
    const s = await openSse(`${t.url}/v1/audit/stream`, { authorization: `Bearer ${mallory}`, ...from });
    assert.equal(s.status, 200);
    const frames = await s.until((f) => f.some((x) => x.event === 'audit'));
    // Give a wrong replay time to show up before looking.
    await new Promise((r) => setTimeout(r, 300));
    api.audit.append({ tenant: 'victim', kind: 'secret.live', detail: {} });
    const mine = api.audit.append({ tenant: 'mallory', kind: 'mine.live', detail: {} }).seq;
    api.feed.poll();
    await s.until((f) => f.some((x) => Number(x.id) === mine));
    s.close();
    assert.ok(frames.every((f) => f.event === 'audit' && JSON.parse(f.data).tenant === 'mallory'), JSON.stringify(frames));
    assert.ok(frames.some((f) => Number(f.id) === own));
    assert.ok(!frames.some((f) => victim.includes(Number(f.id))));
  }
});
