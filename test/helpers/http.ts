// Test helper: an in-process `startServer` on 127.0.0.1 with a private $MEMBRANE_HOME, a test
// engine (shared module cache), captured log lines, and small fetch wrappers.
import { join } from 'node:path';
import { after } from 'node:test';
import { startServer, type RunningServer, type ServerOptions } from '../../src/interfaces/http/server.ts';
import { testEngine } from './engine.ts';
import { tempDir } from './tmp.ts';

export interface TestServer {
  readonly server: RunningServer;
  readonly url: string;
  readonly home: string;
  /** Every log line the server wrote. */
  readonly logs: string[];
  token(tenant: string, profile?: string): string;
}

export async function testServer(options: Partial<ServerOptions> = {}): Promise<TestServer> {
  const home = tempDir('membrane-http-');
  process.env['MEMBRANE_AUDIT_KEY'] ??= 'c'.repeat(64);
  const databaseFile = join(home, 'engine.sqlite');
  const logs: string[] = [];
  const engine = options.engine ?? testEngine({ brokers: { databaseFile } });
  const server = await startServer({ port: 0, host: '127.0.0.1', home, databaseFile, engine, logger: { destination: { write: (l: string) => logs.push(l) } }, ...options });
  after(() => server.close());
  return { server, url: server.url, home, logs, token: (tenant, profile = 'compute') => server.api.tokens.create(tenant, profile).token };
}

export interface Reply {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** One JSON request; `body` is sent as JSON unless it is already a string. */
export async function call(url: string, path: string, token: string | null, method = 'GET', body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const r = await fetch(url + path, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  return { status: r.status, headers: r.headers, body: parsed, text };
}

/** Read server-sent audit events until `until` says stop (or the time runs out). */
export async function readAuditStream(url: string, token: string, query: string, until: (records: any[]) => boolean, limitMs = 10_000, onOpen?: () => Promise<void>): Promise<any[]> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), limitMs);
  const records: any[] = [];
  try {
    const r = await fetch(`${url}/v1/audit/stream${query}`, { headers: { authorization: `Bearer ${token}` }, signal: ac.signal });
    if (r.status !== 200 || !r.body) throw new Error(`stream answered ${r.status}`);
    if (onOpen) await onOpen();
    const decoder = new TextDecoder();
    let buf = '';
    for await (const chunk of r.body) {
      buf += decoder.decode(chunk as Uint8Array, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const frame = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = frame.split('\n').find((l) => l.startsWith('data: '));
        if (frame.includes('event: audit') && data) records.push(JSON.parse(data.slice(6)));
      }
      if (until(records)) break;
    }
  } catch (e) {
    if (!ac.signal.aborted) throw e;
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return records;
}

export interface SseFrame {
  readonly event: string;
  readonly id?: string;
  readonly data: string;
}

/** An open SSE response read frame by frame: `until` sees every frame so far; comments are skipped. */
export async function openSse(url: string, headers: Record<string, string>): Promise<{ status: number; frames: SseFrame[]; until(done: (frames: SseFrame[]) => boolean, limitMs?: number): Promise<SseFrame[]>; close(): void }> {
  const ac = new AbortController();
  const r = await fetch(url, { headers, signal: ac.signal });
  const frames: SseFrame[] = [];
  if (r.status !== 200 || !r.body) {
    ac.abort();
    return { status: r.status, frames, until: async () => frames, close: () => undefined };
  }
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  return {
    status: r.status,
    frames,
    async until(done, limitMs = 10_000) {
      const deadline = Date.now() + limitMs;
      while (!done(frames)) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`the stream did not get there within ${limitMs} ms (${frames.length} frames)`);
        let timer: NodeJS.Timeout | undefined;
        const chunk = await Promise.race([reader.read(), new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), left)))]);
        clearTimeout(timer);
        if (chunk === null) continue;
        if (chunk.done) throw new Error('the stream ended');
        buf += decoder.decode(chunk.value, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const lines = buf.slice(0, i).split('\n');
          buf = buf.slice(i + 2);
          if (lines.every((l) => l.startsWith(':'))) continue;
          const field = (name: string): string | undefined => lines.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
          const id = field('id');
          frames.push({ event: field('event') ?? 'message', data: field('data') ?? '', ...(id !== undefined ? { id } : {}) });
        }
      }
      return frames;
    },
    close: () => ac.abort(),
  };
}
