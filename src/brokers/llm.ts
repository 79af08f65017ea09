/**
 * The `llm` cap: `llm_complete(request_json, out)` → one OpenAI-compatible chat-completions call
 * to the endpoint the operator configured. The host holds the key; it never crosses the membrane.
 *
 * Owns: building the upstream request from an allowlist of the guest's fields (`messages`,
 * `model` when the operator allows it, `max_tokens` clamped, `temperature`, `top_p`, `stop`,
 * `tools` and `tool_choice` for tool calling — src/agent's loop uses them), the
 * `Authorization` header, the response cap (1 MiB) and deadline (60 s), a connection per call
 * (closed when the call ends, never pooled across calls), and errors that say nothing about the
 * endpoint or the key.
 * Invariant: the guest never chooses the URL, headers or key; the upstream answer is returned as
 * the JSON the endpoint sent, or an error code.
 *
 * Does not protect against: what the model says (its output is data for the guest), or the
 * endpoint itself — it is operator configuration, reached directly (not through the SSRF guard,
 * which exists for guest-chosen destinations).
 *
 * undici is imported on the first completion, not with this module, so a process that never
 * calls the endpoint does not pay its load.
 */

import type * as Undici from 'undici';
import { GUEST_ERR } from '../abi/command.ts';
import { SandboxError } from '../errors.ts';

export interface LlmOptions {
  /** e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`; `/chat/completions` is appended. */
  readonly baseUrl: string;
  /** Sent as `Authorization: Bearer …`; default from the operator's environment `MEMBRANE_LLM_KEY`. */
  readonly apiKey?: string;
  /** The model used when the guest names none (or when `models` does not allow its choice). */
  readonly model: string;
  /** Models a guest may pick; default only `model`. */
  readonly models?: readonly string[];
  readonly maxTokens?: number;
  readonly timeoutMs?: number;
  readonly maxResponseBytes?: number;
}

/**
 * The endpoint from the operator's environment — MEMBRANE_LLM_URL and MEMBRANE_LLM_MODEL (the key
 * is MEMBRANE_LLM_KEY, read by the broker) — for an engine whose options name none; null when
 * MEMBRANE_LLM_URL is unset. A URL that is not http(s) is POLICY_INVALID.
 */
export function llmOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): LlmOptions | null {
  const baseUrl = env['MEMBRANE_LLM_URL'];
  if (!baseUrl) return null;
  if (!/^https?:\/\/\S+$/.test(baseUrl)) throw new SandboxError('POLICY_INVALID', 'MEMBRANE_LLM_URL must be an http(s) URL');
  return { baseUrl, model: env['MEMBRANE_LLM_MODEL'] || 'default' };
}

let undiciLoad: Promise<typeof Undici> | undefined;
const undici = (): Promise<typeof Undici> => (undiciLoad ??= import('undici'));

export const LLM_MAX_REQUEST_BYTES = 512 * 1024;
const DEFAULT_MAX_TOKENS = 4096;

export class LlmBroker {
  private readonly key: Buffer | null;

  constructor(private readonly options: LlmOptions | null) {
    const key = options?.apiKey ?? process.env['MEMBRANE_LLM_KEY'];
    this.key = key ? Buffer.from(key) : null;
  }

  /** One completion; `signal` aborts it (and its socket), `limitMs` caps the operator's timeout. */
  async complete(raw: Uint8Array, signal: AbortSignal, limitMs = Infinity): Promise<Uint8Array | number> {
    const o = this.options;
    if (!o) return GUEST_ERR.UNAVAILABLE;
    let body: Record<string, unknown>;
    try {
      body = this.upstreamBody(JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw)) as unknown);
    } catch {
      return GUEST_ERR.INVALID;
    }
    const { Agent, request } = await undici();
    const cap = o.maxResponseBytes ?? 1024 * 1024;
    const timeout = AbortSignal.timeout(Math.max(1, Math.min(o.timeoutMs ?? 60_000, limitMs)));
    const both = AbortSignal.any([signal, timeout]);
    // A dispatcher of this call's own, destroyed when it ends: no socket outlives the call or is
    // pooled for another tenant's (the global one keeps idle sockets for seconds).
    const dispatcher = new Agent({ connections: 1, pipelining: 0 });
    try {
      const res = await request(`${o.baseUrl.replace(/\/+$/, '')}/chat/completions`, {
        dispatcher,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(this.key ? { authorization: `Bearer ${this.key.toString()}` } : {}) },
        body: JSON.stringify(body),
        signal: both,
      });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        size += (chunk as Buffer).length;
        if (size > cap) {
          res.body.destroy();
          return GUEST_ERR.TOO_LARGE;
        }
        chunks.push(chunk as Buffer);
      }
      if (res.statusCode === 429) return GUEST_ERR.RATE_LIMITED;
      if (res.statusCode >= 400) return res.statusCode < 500 ? GUEST_ERR.INVALID : GUEST_ERR.UNAVAILABLE;
      return new Uint8Array(Buffer.concat(chunks));
    } catch {
      if (timeout.aborted) return GUEST_ERR.TIMEOUT;
      if (signal.aborted) return GUEST_ERR.REVOKED;
      return GUEST_ERR.UNAVAILABLE;
    } finally {
      dispatcher.destroy().catch(() => {});
    }
  }

  /** Only fields a guest may set reach the endpoint. */
  private upstreamBody(x: unknown): Record<string, unknown> {
    const o = this.options!;
    if (typeof x !== 'object' || x === null || Array.isArray(x)) throw new Error('not an object');
    const g = x as Record<string, unknown>;
    const messages = g['messages'];
    if (!Array.isArray(messages) || messages.length === 0) throw new Error('no messages');
    for (const m of messages) {
      if (typeof m !== 'object' || m === null || typeof (m as { role?: unknown }).role !== 'string') throw new Error('bad message');
      const content = (m as { content?: unknown }).content;
      // An assistant turn that only asks for tools carries `content: null` and its `tool_calls`.
      const asksTools = Array.isArray((m as { tool_calls?: unknown }).tool_calls);
      if (typeof content !== 'string' && !Array.isArray(content) && !(asksTools && (content === null || content === undefined))) throw new Error('bad content');
    }
    const allowed = o.models ?? [o.model];
    const model = typeof g['model'] === 'string' && allowed.includes(g['model']) ? g['model'] : o.model;
    const limit = o.maxTokens ?? DEFAULT_MAX_TOKENS;
    const asked = typeof g['max_tokens'] === 'number' && g['max_tokens'] > 0 ? Math.floor(g['max_tokens']) : limit;
    const out: Record<string, unknown> = { model, messages, max_tokens: Math.min(asked, limit), stream: false };
    for (const k of ['temperature', 'top_p'] as const) if (typeof g[k] === 'number') out[k] = g[k];
    // Tool calling (OpenAI's `tools`/`tool_choice`): data for the model, passed through as given.
    if (Array.isArray(g['tools']) && g['tools'].length > 0) out['tools'] = g['tools'].filter((t) => typeof t === 'object' && t !== null && !Array.isArray(t));
    if (out['tools'] && (typeof g['tool_choice'] === 'string' || (typeof g['tool_choice'] === 'object' && g['tool_choice'] !== null))) out['tool_choice'] = g['tool_choice'];
    if (typeof g['stop'] === 'string' || (Array.isArray(g['stop']) && g['stop'].every((s) => typeof s === 'string'))) out['stop'] = g['stop'];
    return out;
  }

  zeroize(): void {
    this.key?.fill(0);
  }
}
