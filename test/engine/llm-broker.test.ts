// llm_complete from a C guest against a small OpenAI-compatible server the test starts on
// 127.0.0.1: the host adds the key (which never reaches the guest), the operator's model and
// token limits win over the guest's, upstream failures become error codes.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { createEngine, type Engine } from '../../src/index.ts';
import { GUEST_ERR } from '../../src/abi/command.ts';
import { tempDir } from '../helpers/tmp.ts';

const guest = new Uint8Array(readFileSync(new URL('../fixtures/c/netfetch.wasm', import.meta.url)));
const KEY = 'sk-test-0123456789abcdef-never-leaks';
let server: Server;
let engine: Engine;
const seen: { auth: string | undefined; body: Record<string, unknown> }[] = [];

async function body(req: IncomingMessage): Promise<string> {
  let s = '';
  for await (const c of req) s += String(c);
  return s;
}

before(async () => {
  process.env['MEMBRANE_HOME'] = tempDir('membrane-llm-');
  server = createServer(async (req, res) => {
    const parsed = JSON.parse(await body(req)) as Record<string, unknown>;
    seen.push({ auth: req.headers.authorization, body: parsed });
    const last = (parsed['messages'] as { content: string }[]).at(-1)!.content;
    if (last === 'overload') {
      res.writeHead(429).end('{}');
      return;
    }
    if (last === 'huge') {
      res.end(JSON.stringify({ choices: [{ message: { content: 'x'.repeat(2 * 1024 * 1024) } }] }));
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', model: parsed['model'], choices: [{ index: 0, message: { role: 'assistant', content: `echo: ${last}` }, finish_reason: 'stop' }] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  engine = createEngine({ poolSize: 1, brokers: { llm: { baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: KEY, model: 'house-model', maxTokens: 256 } } });
});
after(async () => {
  await engine.close();
  server.close();
});

const ask = async (request: unknown): Promise<string> => {
  const r = await engine.run(guest, { profile: 'network', argv: ['llm', JSON.stringify(request)] });
  assert.equal(r.ok, true, r.error?.message);
  assert.ok(!JSON.stringify(r).includes(KEY), 'the key reached the guest or the result');
  return r.stdout;
};

test('a completion comes back as the endpoint\'s JSON; the host added the key and the operator\'s limits', async () => {
  const out = await ask({ messages: [{ role: 'user', content: 'hi' }], model: 'gpt-evil', max_tokens: 100_000, temperature: 0.2, api_key: 'mine', base_url: 'http://169.254.169.254/' });
  const answer = JSON.parse(out) as { model: string; choices: { message: { content: string } }[] };
  assert.equal(answer.choices[0]!.message.content, 'echo: hi');
  const last = seen.at(-1)!;
  assert.equal(last.auth, `Bearer ${KEY}`);
  assert.deepEqual(last.body, { model: 'house-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 256, stream: false, temperature: 0.2 });
});

test('upstream refusals and oversized answers are error codes', async () => {
  assert.equal(await ask({ messages: [{ role: 'user', content: 'overload' }] }), `error ${GUEST_ERR.RATE_LIMITED}\n`);
  assert.equal(await ask({ messages: [{ role: 'user', content: 'huge' }] }), `error ${GUEST_ERR.TOO_LARGE}\n`);
  assert.equal(await ask({ prompt: 'no messages' }), `error ${GUEST_ERR.INVALID}\n`);
});

test('without an operator endpoint, llm_complete is UNAVAILABLE', async () => {
  const bare = createEngine({ poolSize: 1 });
  try {
    const r = await bare.run(guest, { profile: 'network', argv: ['llm', '{"messages":[{"role":"user","content":"x"}]}'] });
    assert.equal(r.stdout, `error ${GUEST_ERR.UNAVAILABLE}\n`);
  } finally {
    await bare.close();
  }
});
