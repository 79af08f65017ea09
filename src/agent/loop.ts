/**
 * The agent loop (DESIGN §13): call the model through the `llm` broker; run the tool calls it
 * asks for; append the results; repeat until it asks for none (`finished`) or calls `done`, or
 * `maxSteps` model turns have passed (`max_steps` — reported as such, never as success).
 *
 * Owns: the session state (store.ts `_session.json`, rewritten after every model turn and every
 * tool result, so `resume` after an engine restart continues from the last thing that happened),
 * the steps log (`_steps.jsonl`) and one audit record per tool call (`agent-step`: tool, sha256
 * of the arguments, duration, outcome), and the usage sums.
 * Invariant: the agent's grant must hold `llm` (the model call is a broker call like a guest's:
 * cadence, revocation, rate); tools come from the same grant (tools.ts). No record the loop
 * writes holds the endpoint's key: the key lives in the broker, which this module never reads.
 *
 * Does not protect against: the model spending its steps badly, or a tool call the engine was
 * killed during (on resume it is answered as an interrupted tool error, not re-run).
 */

import { randomUUID } from 'node:crypto';
import type { Engine } from '../engine/engine.ts';
import type { AgentPort } from '../engine/agent-slot.ts';
import { SandboxError, toSandboxError } from '../errors.ts';
import { checkName } from '../policy/names.ts';
import { resolvePolicy } from '../policy/resolve.ts';
import type { CapWord } from '../policy/profiles.ts';
import { callModel, type ChatMessage, type Usage } from './model.ts';
import { AgentStore, SESSION_FILE, STEPS_FILE } from './store.ts';
import { TOOLKITS, toolkitIndex } from './toolkits.ts';
import { DEFAULT_MAX_TOOL_OUTPUT_BYTES, TOOL_NAMES, digest, grantedTools, runTool, toolSpecs, type ToolName, type ToolOutcome } from './tools.ts';

export const DEFAULT_MAX_STEPS = 12;
export const DEFAULT_TOOL_TIMEOUT_MS = 150_000;
/** Bounds on what a caller may ask for (a runaway session is the operator's cost). */
export const MAX_MAX_STEPS = 1000;
export const MAX_TOOL_TIMEOUT_MS = 3_600_000;
/** The longest system prompt plus task accepted (they go to the model on every turn). */
export const MAX_PROMPT_BYTES = 256 * 1024;
const PREVIEW_CHARS = 400;

export type AgentOutcome = 'done' | 'finished' | 'max_steps' | 'stopped' | 'error';

export interface AgentRunOptions {
  readonly system: string;
  readonly task: string;
  /** Passed to the endpoint; the broker keeps the operator's model unless it allows this one. */
  readonly model?: string;
  /** Narrow the tools offered (names from TOOL_NAMES); never widens the grant. */
  readonly tools?: readonly string[];
  /** Toolkits (toolkits.ts) whose compact index goes in front of the system prompt; adds `describe`. */
  readonly toolkits?: readonly string[];
  /** Default `network` (the first profile granting `llm`). */
  readonly profile?: string;
  /** Narrow the profile's cap words (a subset, as everywhere). */
  readonly caps?: readonly string[];
  readonly tenant?: string;
  /** A named VFS; default `agent-<id>`. */
  readonly vfs?: string;
  readonly id?: string;
  readonly maxSteps?: number;
  readonly toolTimeoutMs?: number;
  readonly maxToolOutputBytes?: number;
  readonly onStep?: (event: AgentEvent) => void;
  readonly signal?: AbortSignal;
}

export interface StepRecord {
  readonly v: 1;
  readonly session: string;
  readonly turn: number;
  readonly index: number;
  readonly time: string;
  readonly tool: string;
  readonly argsSha256: string;
  readonly durationMs: number;
  readonly outcome: 'ok' | 'error';
  readonly code?: string;
}

export type AgentEvent =
  | { readonly kind: 'model'; readonly turn: number; readonly toolCalls: readonly string[]; readonly content: string | null; readonly usage: Usage }
  | ({ readonly kind: 'step'; readonly preview: string } & StepRecord)
  | { readonly kind: 'end'; readonly outcome: AgentOutcome; readonly result: string | null; readonly turns: number; readonly error?: { code: string; message: string } };

export interface AgentResult {
  readonly id: string;
  readonly vfs: string;
  readonly result: string | null;
  readonly outcome: AgentOutcome;
  /** Model turns taken. */
  readonly steps: number;
  readonly events: readonly AgentEvent[];
  readonly usage: Usage;
  readonly error?: { readonly code: string; readonly message: string };
}

/** Everything `resume` needs, kept in the agent's VFS (`_session.json`). */
export interface SessionState {
  v: 1;
  id: string;
  tenant: string;
  vfs: string;
  profile: string;
  caps: CapWord[];
  tools: ToolName[];
  model?: string;
  maxSteps: number;
  toolTimeoutMs: number;
  maxToolOutputBytes: number;
  messages: ChatMessage[];
  turn: number;
  steps: number;
  usage: Usage;
  status: 'running' | 'ended';
  outcome?: AgentOutcome;
  result?: string | null;
  error?: { code: string; message: string };
}

const bounded = (what: string, v: number | undefined, dflt: number, max: number): number => {
  if (v === undefined) return dflt;
  if (!Number.isSafeInteger(v) || v < 1 || v > max) throw new SandboxError('POLICY_INVALID', `${what} must be an integer from 1 to ${max}`);
  return v;
};

/** A new session's state from the caller's options (validated; nothing runs yet). */
export function newSession(engine: Engine, o: AgentRunOptions): SessionState {
  if (typeof o.system !== 'string' || o.system.trim() === '') throw new SandboxError('POLICY_INVALID', 'an agent needs a system prompt');
  if (typeof o.task !== 'string' || o.task.trim() === '') throw new SandboxError('POLICY_INVALID', 'an agent needs a task');
  if (Buffer.byteLength(o.system) + Buffer.byteLength(o.task) > MAX_PROMPT_BYTES) throw new SandboxError('TOO_LARGE', `the system prompt and task exceed ${MAX_PROMPT_BYTES} bytes`);
  const id = checkName('id', o.id ?? `a-${randomUUID().replace(/-/g, '').slice(0, 16)}`);
  const tenant = checkName('tenant', o.tenant ?? 'default');
  const policy = resolvePolicy({ profile: o.profile ?? 'network', ...(o.caps ? { caps: [...o.caps] } : {}) }, { ...engine.config, strictProfiles: true });
  if (!policy.caps.includes('llm')) throw new SandboxError('NOT_CAPABLE', 'the agent\'s grant does not hold llm: it cannot reach a model', { profile: policy.profile });
  for (const k of o.toolkits ?? []) if (!(TOOLKITS as readonly string[]).includes(k)) throw new SandboxError('POLICY_INVALID', `unknown toolkit "${String(k).slice(0, 32)}" (known: ${TOOLKITS.join(', ')})`);
  for (const t of o.tools ?? []) if (!(TOOL_NAMES as readonly string[]).includes(t)) throw new SandboxError('POLICY_INVALID', `unknown tool "${String(t).slice(0, 32)}" (known: ${TOOL_NAMES.join(', ')})`);
  return {
    v: 1,
    id,
    tenant,
    vfs: o.vfs ?? `agent-${id}`,
    profile: policy.profile,
    caps: [...policy.caps],
    tools: grantedTools(policy.caps, o.tools, o.toolkits),
    ...(o.model ? { model: o.model } : {}),
    maxSteps: bounded('maxSteps', o.maxSteps, DEFAULT_MAX_STEPS, MAX_MAX_STEPS),
    toolTimeoutMs: bounded('toolTimeoutMs', o.toolTimeoutMs, DEFAULT_TOOL_TIMEOUT_MS, MAX_TOOL_TIMEOUT_MS),
    maxToolOutputBytes: bounded('maxToolOutputBytes', o.maxToolOutputBytes, DEFAULT_MAX_TOOL_OUTPUT_BYTES, 1024 * 1024),
    messages: [
      { role: 'system', content: o.toolkits?.length ? `${toolkitIndex(o.toolkits, engine.commands.names())}\n\n${o.system}` : o.system },
      { role: 'user', content: o.task },
    ],
    turn: 0,
    steps: 0,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    status: 'running',
  };
}

export function readSession(store: AgentStore): SessionState | null {
  const bytes = store.read(SESSION_FILE, 64 * 1024 * 1024);
  if (bytes === null) return null;
  try {
    const s = JSON.parse(Buffer.from(bytes).toString('utf8')) as SessionState;
    return s.v === 1 && typeof s.id === 'string' && Array.isArray(s.messages) ? s : null;
  } catch {
    return null;
  }
}

/**
 * Drive a session until it ends; `state` is updated in place and persisted as it goes. A resumed
 * session first answers tool calls its last turn left without a result (the engine stopped
 * during them) with an interrupted-tool error.
 */
export async function drive(engine: Engine, port: AgentPort, state: SessionState, store: AgentStore, hooks: { onEvent: (e: AgentEvent) => void; signal: AbortSignal }): Promise<void> {
  const save = (): void => store.replace(SESSION_FILE, JSON.stringify(state));
  const emit = (e: AgentEvent): void => {
    try {
      hooks.onEvent(e);
    } catch {
      // a subscriber's failure is not the session's
    }
  };
  const audit = (kind: string, detail: Record<string, unknown>): void => engine.audit({ tenant: state.tenant, instance: state.id, kind, detail });
  const step = (turn: number, index: number, tool: string, args: string, r: { ok: boolean; code?: string; durationMs: number; output: string }): void => {
    const rec: StepRecord = { v: 1, session: state.id, turn, index, time: new Date().toISOString(), tool: tool.slice(0, 64), argsSha256: digest(args), durationMs: r.durationMs, outcome: r.ok ? 'ok' : 'error', ...(r.code ? { code: r.code } : {}) };
    store.write(STEPS_FILE, `${JSON.stringify(rec)}\n`, true);
    audit('agent-step', { tool: rec.tool, argsSha256: rec.argsSha256, durationMs: rec.durationMs, outcome: rec.outcome, turn, index, ...(r.code ? { code: r.code } : {}) });
    state.steps++;
    emit({ kind: 'step', ...rec, preview: r.output.slice(0, PREVIEW_CHARS) });
  };
  const finish = (outcome: AgentOutcome, result: string | null, error?: { code: string; message: string }): void => {
    state.status = 'ended';
    state.outcome = outcome;
    state.result = result;
    if (error) state.error = error;
    save();
    audit('agent-end', { outcome, turns: state.turn, steps: state.steps, totalTokens: state.usage.totalTokens, ...(error ? { code: error.code } : {}) });
    emit({ kind: 'end', outcome, result, turns: state.turn, ...(error ? { error } : {}) });
  };

  // A turn whose tool calls the engine did not finish answering (it was killed): answer them now.
  const last = state.messages.at(-1);
  const pending = [...state.messages].reverse().find((m) => m.role === 'assistant');
  if (pending?.tool_calls?.length && last?.role !== 'user') {
    const answered = new Set(state.messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id));
    pending.tool_calls.forEach((c, i) => {
      if (answered.has(c.id)) return;
      const output = 'error CANCELLED: the engine stopped while this tool ran; it was not re-run';
      state.messages.push({ role: 'tool', tool_call_id: c.id, content: output });
      step(state.turn, i, c.function.name, c.function.arguments, { ok: false, code: 'CANCELLED', durationMs: 0, output });
    });
    save();
  }

  const specs = toolSpecs(state.tools);
  // A tool's own run gets what the profile allows a call, at most the tool bound (no clamp warning).
  const callMs = Math.min(state.toolTimeoutMs, resolvePolicy({ profile: state.profile }, engine.config).timeoutMs);
  while (state.turn < state.maxSteps) {
    if (hooks.signal.aborted) return finish('stopped', null);
    let turn;
    try {
      turn = await callModel(port, { tenant: state.tenant, instance: state.id, caps: state.caps }, { ...(state.model ? { model: state.model } : {}), messages: state.messages, tools: specs }, hooks.signal);
    } catch (e) {
      if (hooks.signal.aborted) return finish('stopped', null);
      const err = toSandboxError(e);
      return finish('error', null, { code: err.code, message: err.message });
    }
    state.turn++;
    for (const k of ['promptTokens', 'completionTokens', 'totalTokens'] as const) state.usage[k] += turn.usage[k];
    state.messages.push({ role: 'assistant', content: turn.content, ...(turn.toolCalls.length ? { tool_calls: turn.toolCalls } : {}) });
    save();
    emit({ kind: 'model', turn: state.turn, toolCalls: turn.toolCalls.map((c) => c.function.name), content: turn.content?.slice(0, PREVIEW_CHARS) ?? null, usage: turn.usage });
    if (turn.toolCalls.length === 0) return finish('finished', turn.content);
    let done: string | null = null;
    for (const [i, call] of turn.toolCalls.entries()) {
      const r: ToolOutcome =
        done !== null
          ? { ok: false, output: 'error BAD_REQUEST: done was already called', code: 'BAD_REQUEST', durationMs: 0 }
          : await runTool(
              { engine, port, store, vfs: state.vfs, tenant: state.tenant, instance: state.id, profile: state.profile, caps: state.caps, offered: state.tools, timeoutMs: state.toolTimeoutMs, callTimeoutMs: callMs, maxOutputBytes: state.maxToolOutputBytes, signal: hooks.signal },
              call.function.name,
              call.function.arguments,
            );
      state.messages.push({ role: 'tool', tool_call_id: call.id, content: r.output });
      step(state.turn, i, call.function.name, call.function.arguments, r);
      save();
      if (r.done !== undefined) done = r.done;
    }
    if (done !== null) return finish('done', done);
  }
  return finish('max_steps', null);
}
