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
import { MAX_RESUME_RECORDS } from './audit-feed.ts';
import { AUDIT_RECORD, AuditQuery, AuditSeq, ERROR_SCHEMA, StreamQuery } from './schemas.ts';
import type { Api } from './state.ts';

/** A `Last-Event-ID` header: an audit seq this server sent, or 400. */
function lastEventId(header: string): number {
  const r = /^\d{1,16}$/.test(header) ? AuditSeq.safeParse(header) : null;
  if (!r?.success) throw httpError('BAD_REQUEST', 'Last-Event-ID: expected the seq of an audit event (a whole number)');
  return r.data;
}

export function auditRoutes(): Route<Api>[] {
  return [
    {
      method: 'GET',
      path: '/v1/audit',
      auth: true,
      operationId: 'listAuditRecords',
      summary: "The caller's tenant's newest audit records",
      description: 'The newest records of the caller’s tenant, oldest first; `kind` filters, `limit` is 1..1000 (default 100).',
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
      operationId: 'verifyAuditLog',
      summary: "Verify the audit log's HMAC chain",
      description: 'Checks the whole chain: `{ ok: true, records }`, or the first bad seq and what is wrong with it.',
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
      operationId: 'streamAuditRecords',
      summary: "Server-sent events: the caller's tenant's audit records as they are appended",
      description:
        'Each record is `event: audit`, `id: <seq>`, `data: <record JSON>`. `backlog=N` first sends the newest N. A client that reconnects with ' +
        '`Last-Event-ID` (or `after=`) gets the records after that seq first, then the live tail, none skipped or repeated; when more than ' +
        `${MAX_RESUME_RECORDS} were missed it gets \`event: gap\` (data \`{ after, resumedAfter }\`) and the newest ${MAX_RESUME_RECORDS} (GET /v1/audit for the rest).`,
      query: StreamQuery,
      parameters: [{ name: 'Last-Event-ID', in: 'header', required: false, description: 'the id of the last event received: resume after it', schema: { type: 'string', pattern: '^[0-9]{1,16}$' } }],
      responses: { 200: 'text/event-stream', 503: ERROR_SCHEMA },
      handle: (ctx): Answer => {
        const q = validate(StreamQuery, Object.fromEntries(ctx.query));
        const header = ctx.req.headers['last-event-id'];
        const after = typeof header === 'string' && header.trim() !== '' ? lastEventId(header.trim()) : q.after;
        const from = after !== undefined ? { after } : { backlog: q.backlog ?? 0 };
        if (!ctx.state.feed.open(ctx.res, principalOf(ctx).tenant, from)) throw httpError('OVERLOADED', 'too many open audit streams');
        return null;
      },
    },
  ];
}
