import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LazyJob, type JobHost, type ServeSlot } from '../../src/engine/bridge/job-host.ts';
import type { HostRequest } from '../../src/engine/bridge/protocol.ts';
import type { HostCall, WorkerHandle } from '../../src/engine/bridge/worker-handle.ts';

/** A full job that records what was asked of it. */
function recorder(): { make: (s: ServeSlot) => JobHost; made: ServeSlot[]; calls: string[] } {
  const made: ServeSlot[] = [];
  const calls: string[] = [];
  const make = (serving: ServeSlot): JobHost => {
    made.push(serving);
    return {
      serving,
      handle: (req) => (calls.push(`handle:${req.op}`), { v: 1, kind: 'host-reply', ok: true, value: 0 }) as never,
      end: () => void calls.push('end'),
      interrupt: () => void calls.push('interrupt'),
    };
  };
  return { make, made, calls };
}

const LOG = { op: 'log', level: 2, message: 'x' } as unknown as HostRequest;
const worker = {} as WorkerHandle;
const call = {} as HostCall;

test('a lazy job makes its full job at the first host call, once, around its own serve slot', async () => {
  const r = recorder();
  const job = new LazyJob(r.make);
  job.interrupt();
  assert.equal(r.made.length, 0, 'nothing is made for a job without host calls');
  await job.handle(LOG, [], worker, call);
  await job.handle(LOG, [], worker, call);
  assert.equal(r.made.length, 1);
  assert.equal(r.made[0], job.serving);
  job.interrupt();
  job.end();
  assert.deepEqual(r.calls, ['handle:log', 'handle:log', 'interrupt', 'end']);
});

test('a host call after the job ended is served by a full job that is already ended', async () => {
  const r = recorder();
  const job = new LazyJob(r.make);
  job.end();
  await job.handle(LOG, [], worker, call);
  assert.deepEqual(r.calls, ['end', 'handle:log']);
});
