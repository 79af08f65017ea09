/**
 * Request bodies: read under a byte cap, parse as JSON, validate with a strict zod schema.
 *
 * Owns: the body caps (`MAX_BODY_BYTES`, `MAX_MODULE_BODY_BYTES`), the content-type rule (a body
 * must be `application/json`), and turning a zod failure into one BAD_REQUEST that names the
 * field. Invariant: no more than the cap is ever held in memory — a declared Content-Length over
 * the cap is refused before a byte is read, and a chunked body is cut off at the cap; reading then
 * stops (the socket is paused and closed by the caller after the 413 is written), so a flood costs
 * the server a bounded buffer, not the flood's size.
 *
 * Does not protect against: a slow client trickling a body under the cap (the server's request
 * timeout bounds that); JSON nesting depth (V8's parser is iterative enough for 1 MiB).
 */

import type { IncomingMessage } from 'node:http';
import type { z } from 'zod';
import { SandboxError } from '../../errors.ts';
import { httpError } from './respond.ts';

/** A JSON request body: 1 MiB by default. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Routes that take a base64 module: 16 MiB (a ~12 MiB wasm module). */
export const MAX_MODULE_BODY_BYTES = 16 * 1024 * 1024;

/** Thrown when a body passes its cap: the caller answers 413 and closes the connection. */
export class BodyTooLarge extends SandboxError {
  constructor(cap: number) {
    super('TOO_LARGE', `the request body is larger than ${cap} bytes`);
  }
}

/** Read the raw body, refusing as soon as it passes `cap`. An empty body is ''. */
export function readBody(req: IncomingMessage, cap: number): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > cap) {
    req.pause();
    return Promise.reject(new BodyTooLarge(cap));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err: Error | null): void => {
      if (done) return;
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      if (err) reject(err);
      else resolve(Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > cap) {
        chunks.length = 0;
        req.pause();
        finish(new BodyTooLarge(cap));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => finish(null);
    const onError = (): void => finish(httpError('BAD_REQUEST', 'the request body could not be read'));
    const onClose = (): void => finish(httpError('BAD_REQUEST', 'the request body ended early'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** `application/json`, optionally with a charset; anything else is 415. */
export function assertJsonType(req: IncomingMessage): void {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') throw httpError('UNSUPPORTED_MEDIA_TYPE', 'the request body must be application/json');
}

/** Read and parse a JSON body (an empty body is `{}`). */
export async function readJson(req: IncomingMessage, cap: number): Promise<unknown> {
  const declared = req.headers['content-length'];
  const chunked = req.headers['transfer-encoding'] !== undefined;
  if ((declared === undefined || declared === '0') && !chunked) return {};
  assertJsonType(req);
  const raw = await readBody(req, cap);
  if (raw.length === 0) return {};
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw httpError('BAD_REQUEST', 'the request body is not valid JSON');
  }
}

function where(path: readonly PropertyKey[]): string {
  return path.length === 0 ? 'the body' : path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.').replace(/\.\[/g, '[');
}

/** Validate against a strict schema; the first problem becomes a BAD_REQUEST naming the field. */
export function validate<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    const names = issue.keys.map((k) => `"${k.slice(0, 64)}"`).join(', ');
    throw httpError('BAD_REQUEST', `unknown field${issue.keys.length > 1 ? 's' : ''} ${names} in ${where(issue.path)}`);
  }
  throw httpError('BAD_REQUEST', `${where(issue.path)}: ${issue.message}`);
}
