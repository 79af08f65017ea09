/**
 * One model turn: an OpenAI-compatible chat-completions request with tool definitions, sent
 * through the engine's `llm` broker (src/brokers/llm.ts holds the endpoint and the key), and the
 * answer parsed into text, tool calls and token usage.
 *
 * Owns: the request shape, parsing the endpoint's JSON defensively (any field may be missing or
 * of the wrong type), and mapping the broker's guest error codes to SandboxError codes.
 * Invariant: this module never sees the key or the URL — it hands bytes to the broker port and
 * gets bytes (or an error number) back.
 *
 * Does not protect against: what the model says. Its text and tool calls are untrusted data; the
 * loop validates every tool call before running anything.
 */

import { SandboxError, type ErrorCode } from '../errors.ts';
import { GUEST_ERR } from '../abi/command.ts';
import type { AgentPort } from '../engine/agent-slot.ts';
import type { CapWord } from '../policy/profiles.ts';

export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly content: string | null;
  readonly tool_calls?: readonly ToolCall[];
  readonly tool_call_id?: string;
}

export interface ToolCall {
  readonly id: string;
  readonly type: 'function';
  readonly function: { readonly name: string; readonly arguments: string };
}

export interface ToolSpec {
  readonly type: 'function';
  readonly function: { readonly name: string; readonly description: string; readonly parameters: Record<string, unknown> };
}

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface Turn {
  readonly content: string | null;
  readonly toolCalls: readonly ToolCall[];
  readonly usage: Usage;
}

const CODE_OF: Readonly<Record<number, ErrorCode>> = {
  [GUEST_ERR.DENIED]: 'NOT_CAPABLE',
  [GUEST_ERR.RATE_LIMITED]: 'RATE_LIMITED',
  [GUEST_ERR.REVOKED]: 'REVOKED',
  [GUEST_ERR.TOO_LARGE]: 'TOO_LARGE',
  [GUEST_ERR.INVALID]: 'BAD_REQUEST',
  [GUEST_ERR.TIMEOUT]: 'TIMEOUT',
  [GUEST_ERR.UNAVAILABLE]: 'TIER_UNAVAILABLE',
  [GUEST_ERR.QUOTA]: 'RATE_LIMITED',
};

/** The longest an id of a tool call may be before the loop shortens it (it is echoed back). */
const MAX_CALL_ID = 128;

export interface ModelCaller {
  readonly tenant: string;
  readonly instance: string;
  readonly caps: readonly CapWord[];
}

export async function callModel(port: AgentPort, who: ModelCaller, body: { model?: string; messages: readonly ChatMessage[]; tools: readonly ToolSpec[] }, signal: AbortSignal): Promise<Turn> {
  const request = { ...(body.model ? { model: body.model } : {}), messages: body.messages, ...(body.tools.length ? { tools: body.tools, tool_choice: 'auto' } : {}) };
  const answer = await port.remote({ tenant: who.tenant, instance: who.instance, policy: { caps: who.caps } }, 'llm_complete', [new TextEncoder().encode(JSON.stringify(request))], signal);
  if (typeof answer === 'number') {
    const code = CODE_OF[answer] ?? 'INTERNAL';
    const why = answer === GUEST_ERR.UNAVAILABLE ? 'the model endpoint is unavailable (is llm.baseUrl / MEMBRANE_LLM_URL set?)' : `the model call failed (${code})`;
    throw new SandboxError(code, why, { broker: 'llm' });
  }
  return parseTurn(answer);
}

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);

export function parseTurn(bytes: Uint8Array): Turn {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new SandboxError('TIER_UNAVAILABLE', 'the model endpoint answered something that is not JSON', { broker: 'llm' });
  }
  const root = (typeof json === 'object' && json !== null ? json : {}) as { choices?: unknown; usage?: unknown };
  const choice = Array.isArray(root.choices) ? (root.choices[0] as { message?: unknown } | undefined) : undefined;
  const message = (typeof choice?.message === 'object' && choice.message !== null ? choice.message : null) as { content?: unknown; tool_calls?: unknown } | null;
  if (!message) throw new SandboxError('TIER_UNAVAILABLE', 'the model endpoint answered without a message', { broker: 'llm' });
  const u = (typeof root.usage === 'object' && root.usage !== null ? root.usage : {}) as Record<string, unknown>;
  const usage = { promptTokens: num(u['prompt_tokens']), completionTokens: num(u['completion_tokens']), totalTokens: num(u['total_tokens']) };
  if (usage.totalTokens === 0) usage.totalTokens = usage.promptTokens + usage.completionTokens;
  const toolCalls: ToolCall[] = [];
  if (Array.isArray(message.tool_calls)) {
    message.tool_calls.forEach((c: unknown, i: number) => {
      const call = (typeof c === 'object' && c !== null ? c : {}) as { id?: unknown; function?: { name?: unknown; arguments?: unknown } };
      const id = typeof call.id === 'string' && call.id.length > 0 ? call.id.slice(0, MAX_CALL_ID) : `call_${i}`;
      const name = typeof call.function?.name === 'string' ? call.function.name.slice(0, 64) : '';
      const args = call.function?.arguments;
      // Some endpoints send arguments as an object; the loop parses a string either way.
      const text = typeof args === 'string' ? args : args === undefined ? '{}' : JSON.stringify(args);
      toolCalls.push({ id, type: 'function', function: { name, arguments: text } });
    });
  }
  return { content: typeof message.content === 'string' ? message.content : null, toolCalls, usage };
}
