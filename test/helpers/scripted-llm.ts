/**
 * Test helper: a scripted OpenAI-compatible chat-completions server on 127.0.0.1. It plays one
 * conversation per scenario: the scenario is named by the task (the first user message), the
 * turn is the number of assistant messages already in the request — so it is stateless, and a
 * resumed session picks up its script where the conversation left off. Every request is kept
 * (with its Authorization header) for assertions.
 */

import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedCall {
  readonly name: string;
  /** An object is JSON-encoded; a string is sent as is (malformed JSON on purpose). */
  readonly args?: unknown;
}

export interface ScriptedTurn {
  readonly content?: string;
  readonly calls?: readonly ScriptedCall[];
  /** Answer after this long (a slow model). */
  readonly delayMs?: number;
}

export interface ChatRequest {
  readonly model?: string;
  readonly messages: readonly { role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string }[];
  readonly tools?: readonly { function: { name: string } }[];
}

export type Step = ScriptedTurn | ((request: ChatRequest) => ScriptedTurn);
/** A scenario: its turns in order; past the end, the last one repeats. */
export type Scenario = readonly Step[];

export interface ScriptedLlm {
  readonly url: string;
  readonly requests: { auth: string | undefined; body: ChatRequest }[];
  close(): Promise<void>;
}

async function read(req: IncomingMessage): Promise<string> {
  let s = '';
  for await (const c of req) s += String(c);
  return s;
}

/** The last tool result the model was sent. */
export function lastToolOutput(request: ChatRequest): string {
  return [...request.messages].reverse().find((m) => m.role === 'tool')?.content ?? '';
}

export async function scriptedLlm(scenarios: Readonly<Record<string, Scenario>>): Promise<ScriptedLlm> {
  const requests: ScriptedLlm['requests'] = [];
  // Delayed answers in flight: ended at close, so a slow turn never keeps the test process alive.
  const waits = new Set<() => void>();
  const wait = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        waits.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      waits.add(done);
    });
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = JSON.parse(await read(req)) as ChatRequest;
      requests.push({ auth: req.headers.authorization, body });
      const task = body.messages.find((m) => m.role === 'user')?.content ?? '';
      const name = Object.keys(scenarios).find((k) => task.startsWith(k));
      if (name === undefined) {
        res.writeHead(400).end('{"error":"no scenario"}');
        return;
      }
      const script = scenarios[name]!;
      const turn = body.messages.filter((m) => m.role === 'assistant').length;
      const step = script[Math.min(turn, script.length - 1)]!;
      const t = typeof step === 'function' ? step(body) : step;
      if (t.delayMs) await wait(t.delayMs);
      const calls = (t.calls ?? []).map((c, i) => ({ id: `call_${turn}_${i}`, type: 'function', function: { name: c.name, arguments: typeof c.args === 'string' ? c.args : JSON.stringify(c.args ?? {}) } }));
      const message = { role: 'assistant', content: t.content ?? null, ...(calls.length ? { tool_calls: calls } : {}) };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: `chat-${turn}`, object: 'chat.completion', model: body.model ?? 'scripted', choices: [{ index: 0, message, finish_reason: calls.length ? 'tool_calls' : 'stop' }], usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 } }));
    })().catch(() => res.writeHead(500).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise<void>((r) => {
      for (const done of [...waits]) done();
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}
