// Attack: grow /metrics without bound (and smuggle request data into it) by sending requests to
// ever-new paths with unusual methods, so every scrape gets bigger and slower. Labels are route
// templates (`unmatched` for anything no route serves), methods Node's parser knows, and status
// codes; and each labelled metric keeps at most MAX_SERIES label sets, folding the rest into one
// whose labels are all `other`.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { MAX_SERIES, Metrics } from '../../src/interfaces/http/metrics.ts';
import { testServer } from '../helpers/http.ts';
import { parseExposition } from '../helpers/prometheus.ts';

const t = await testServer();

test('300 requests to random paths add one series, and no path reaches the scrape', async () => {
  const paths: string[] = [];
  for (let i = 0; i < 300; i++) {
    const p = `/probe-${randomBytes(6).toString('hex')}`;
    paths.push(p);
    const method = ['GET', 'PURGE', 'PROPFIND', 'OPTIONS'][i % 4]!;
    const r = await fetch(`${t.url}${p}`, { method });
    await r.arrayBuffer();
    assert.equal(r.status, 404);
  }
  const text = await (await fetch(`${t.url}/metrics`)).text();
  const requests = parseExposition(text).get('membrane_http_requests_total')!;
  const unmatched = requests.samples.filter((s) => s.labels['route'] === 'unmatched');
  assert.deepEqual(unmatched.map((s) => s.labels['method']).sort(), ['GET', 'OPTIONS', 'PROPFIND', 'PURGE']);
  assert.equal(unmatched.reduce((n, s) => n + s.value, 0), 300);
  assert.ok(!paths.some((p) => text.includes(p)), 'a request path reached /metrics');
});

test(`past ${MAX_SERIES} label sets, new ones fold into "other"`, async () => {
  const m = new Metrics({ stats: () => ({ liveWorkers: 0, instances: 0, workersReplaced: 0 }), streams: () => 0 });
  for (let i = 0; i < MAX_SERIES + 300; i++) m.request(`/route-${i}`, 'GET', 200);
  m.toolCall('sandbox_execute', 'ok', 1);
  const fam = parseExposition(await m.render()).get('membrane_http_requests_total')!;
  assert.equal(fam.samples.length, MAX_SERIES + 1);
  const other = fam.samples.find((s) => s.labels['route'] === 'other');
  assert.deepEqual(other, { name: 'membrane_http_requests_total', labels: { route: 'other', method: 'other', status: 'other' }, value: 300 });
});
