/**
 * `/v1/audit`, `/v1/audit/verify` and `/v1/audit/stream`: a tenant's view of the audit log.
 *
 * Owns: the tenant filter on every audit read. Invariant: records are queried with the caller's
 * tenant as a SQL condition, never filtered after the fact, and the stream only receives records
 * of the caller's tenant (audit-feed.ts); `verify` reports on the whole chain (a yes/no and a seq,
 * no other tenant's content).
 *
 * Does not protect against: a tenant learning, from `verify`'s record count or a failing seq, how
 * busy the log is overall.
 */

import { validate } from './body.ts';
import { httpError } from './respond.ts';
import { principalOf } from './routes-instances.ts';
import type { Answer, Route } from './router.ts';
import { AUDIT_RECORD, AuditQuery, ERROR_SCHEMA, StreamQuery } from './schemas.ts';
import type { Api } from './state.ts';

export function auditRoutes(): Route<Api>[] {
  return [
    {
      method: 'GET',
      path: '/v1/audit',
      auth: true,
      summary: "The caller's tenant's newest audit records, oldest first (?kind=&limit=, default 100, at most 1000)",
      query: AuditQuery,
      responses: { 200: { type: 'object', properties: { records: { type: 'array', items: AUDIT_RECORD } }, required: ['records'] }, 400: ERROR_SCHEMA },
      handle: (ctx): Answer => {
        const q = validate(AuditQuery, Object.fromEntries(ctx.query));
        const records = ctx.state.audit.tail({ tenant: principalOf(ctx).tenant, limit: q.limit ?? 100, ...(q.kind !== undefined ? { kind: q.kind } : {}) });
        return { status: 200, body: { records } };
      },
    },
    {
      method: 'GET',
      path: '/v1/audit/verify',
      auth: true,
      summary: "Verify the audit log's HMAC chain",
      responses: {
        200: {
          oneOf: [
            { type: 'object', properties: { ok: { const: true }, records: { type: 'number' } }, required: ['ok', 'records'] },
            { type: 'object', properties: { ok: { const: false }, seq: { type: 'number' }, problem: { type: 'string' } }, required: ['ok', 'seq', 'problem'] },
          ],
        },
      },
      handle: (ctx): Answer => {
        principalOf(ctx);
        const v = ctx.state.audit.verify();
        return { status: 200, body: v.ok ? { ok: true, records: v.records } : { ok: false, seq: v.seq, problem: v.problem } };
      },
    },
    {
      method: 'GET',
      path: '/v1/audit/stream',
      auth: true,
      summary: "Server-sent events: each new audit record of the caller's tenant (event: audit); ?backlog=N first sends the newest N",
      query: StreamQuery,
      responses: { 200: 'text/event-stream', 503: ERROR_SCHEMA },
      handle: (ctx): Answer => {
        const q = validate(StreamQuery, Object.fromEntries(ctx.query));
        if (!ctx.state.feed.open(ctx.res, principalOf(ctx).tenant, q.backlog ?? 0)) throw httpError('OVERLOADED', 'too many open audit streams');
        return null;
      },
    },
  ];
}
