/**
 * `vfs_query` as the engine serves it: a read-only SQL query over the calling guest's own VFS
 * database — its file, or the snapshot its worker sent of an in-memory one — bounded by the
 * calling call's deadline.
 *
 * Owns: choosing the source and the time left. Invariant: a guest queries only its own VFS (the
 * caller's spec names it; a guest never does); past the deadline nothing runs (TIMEOUT).
 *
 * Does not protect against: the query's own cost inside its time bound (storage/query.ts bounds it).
 */

import { GUEST_ERR } from '../abi/command.ts';
import type { QueryService } from '../storage/query.ts';
import type { Caller } from './bridge/host-services.ts';

export async function callerQuery(
  service: () => QueryService,
  caller: Caller,
  sql: string,
  snapshot: Uint8Array,
  deadline: number,
): Promise<{ ok: true; json: Uint8Array } | { ok: false; errno: number }> {
  const file = caller.spec.vfs?.file;
  if (!file) return { ok: false, errno: GUEST_ERR.DENIED };
  const left = Math.floor(deadline - performance.now());
  if (left <= 0) return { ok: false, errno: GUEST_ERR.TIMEOUT };
  const source = file === ':memory:' ? { bytes: snapshot } : { file };
  const r = await service().query(source, sql, { timeoutMs: left });
  return r.ok ? { ok: true, json: r.json } : { ok: false, errno: GUEST_ERR[r.code] };
}
