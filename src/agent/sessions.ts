/**
 * Agent sessions on one engine: `run` (start and wait), `start` → id, `status`, `subscribe`
 * (live events, after a replay of those so far), `stop`, `resume` (from the VFS after an engine
 * restart) and a human-in-the-loop review queue (`putReview`, `takeReview`) persisted per session
 * in its VFS.
 *
 * Owns: the table of live sessions of this engine and their tenant checks: every call names a
 * tenant and a session of another tenant is NOT_FOUND, as if it did not exist.
 * Invariant: a session runs at most once at a time (resume of a running session is refused);
 * the VFS holds everything a restart needs, the table only what is live.
 *
 * Does not protect against: two engines on the same storage resuming one session at once.
 */

import type { Engine } from '../engine/engine.ts';
import type { AgentPort } from '../engine/agent-slot.ts';
import { SandboxError, toSandboxError } from '../errors.ts';
import { checkName } from '../policy/names.ts';
import { drive, newSession, readSession, type AgentEvent, type AgentResult, type AgentRunOptions, type SessionState } from './loop.ts';
import { AgentStore, REVIEWS_FILE } from './store.ts';

/** Events a live session keeps for late subscribers (older ones are in `_steps.jsonl`). */
const MAX_KEPT_EVENTS = 1000;
/** Items one session's review queue holds. */
export const MAX_REVIEWS = 256;
export const MAX_REVIEW_BYTES = 64 * 1024;
/** Sessions one engine runs at once (each holds a model call or a tool call in flight). */
export const MAX_LIVE_SESSIONS = 64;
/** Of those, one tenant's at most. */
export const MAX_LIVE_SESSIONS_PER_TENANT = 8;

export interface AgentStatus {
  readonly id: string;
  readonly tenant: string;
  readonly vfs: string;
  readonly status: 'running' | 'ended';
  readonly live: boolean;
  readonly outcome?: string;
  readonly result?: string | null;
  readonly turns: number;
  readonly steps: number;
  readonly maxSteps: number;
  readonly tools: readonly string[];
  readonly usage: SessionState['usage'];
  readonly error?: { code: string; message: string };
}

interface Live {
  readonly state: SessionState;
  readonly events: AgentEvent[];
  readonly listeners: Set<(e: AgentEvent) => void>;
  readonly abort: AbortController;
  readonly done: Promise<AgentResult>;
}

export interface SessionRef {
  readonly tenant?: string;
  /** The session's VFS when it is not `agent-<id>`. */
  readonly vfs?: string;
}

export class AgentSessions {
  private readonly live = new Map<string, Live>();

  constructor(
    private readonly engine: Engine,
    private readonly port: AgentPort,
  ) {}

  /** Run a session to its end. */
  async run(options: AgentRunOptions): Promise<AgentResult> {
    return this.begin(this.fresh(options), options).done;
  }

  /** Start a session; its id at once. */
  start(options: AgentRunOptions): string {
    return this.begin(this.fresh(options), options).state.id;
  }

  /** A new session's state; its VFS must not hold another tenant's session, nor one to resume. */
  private fresh(options: AgentRunOptions): SessionState {
    const state = newSession(this.engine, options);
    const store = AgentStore.open(state.vfs);
    try {
      const prior = readSession(store);
      if (prior && prior.tenant !== state.tenant) throw new SandboxError('NOT_CAPABLE', 'that VFS holds another tenant\'s agent session', { vfs: state.vfs });
      if (prior && prior.id === state.id && prior.status === 'running') throw new SandboxError('POLICY_INVALID', 'that session did not end: resume it instead', { id: state.id });
    } finally {
      store.close();
    }
    return state;
  }

  /** Continue a session from its VFS (after an engine restart, or one that was stopped). */
  resume(id: string, ref: SessionRef & { onStep?: (e: AgentEvent) => void; signal?: AbortSignal; maxSteps?: number } = {}): Promise<AgentResult> {
    checkName('id', id);
    if (this.live.has(id)) throw new SandboxError('POLICY_INVALID', 'the session is running', { id });
    const store = AgentStore.open(ref.vfs ?? `agent-${id}`);
    let state: SessionState | null;
    try {
      state = readSession(store);
    } finally {
      store.close();
    }
    if (!state || state.id !== id || state.tenant !== (ref.tenant ?? 'default')) throw new SandboxError('NOT_FOUND', 'no such agent session', { id });
    if (state.status === 'ended' && state.outcome !== 'stopped' && state.outcome !== 'max_steps') throw new SandboxError('POLICY_INVALID', `the session ended (${state.outcome})`, { id });
    state.status = 'running';
    delete state.outcome;
    delete state.error;
    if (ref.maxSteps !== undefined) state.maxSteps = Math.max(state.turn + 1, Math.min(ref.maxSteps, 1000));
    return this.begin(state, ref).done;
  }

  status(id: string, ref: SessionRef = {}): AgentStatus {
    const state = this.find(id, ref);
    return {
      id: state.id,
      tenant: state.tenant,
      vfs: state.vfs,
      status: state.status,
      live: this.live.has(id),
      ...(state.outcome ? { outcome: state.outcome } : {}),
      ...(state.result !== undefined ? { result: state.result } : {}),
      turns: state.turn,
      steps: state.steps,
      maxSteps: state.maxSteps,
      tools: state.tools,
      usage: { ...state.usage },
      ...(state.error ? { error: state.error } : {}),
    };
  }

  /** Live events: those so far, then each new one; returns the unsubscribe, or null when the session is not running here. */
  subscribe(id: string, listener: (e: AgentEvent) => void, ref: SessionRef = {}): (() => void) | null {
    this.find(id, ref);
    const live = this.live.get(id);
    if (!live) return null;
    for (const e of live.events) listener(e);
    live.listeners.add(listener);
    return () => live.listeners.delete(listener);
  }

  /** Stop a running session (its tool in flight is aborted); resolves when it has ended. */
  async stop(id: string, ref: SessionRef = {}): Promise<AgentStatus> {
    this.find(id, ref);
    const live = this.live.get(id);
    if (live) {
      live.abort.abort();
      await live.done.catch(() => {});
    }
    return this.status(id, ref);
  }

  /** Queue an item for a human (or the agent's operator) to review; persisted in the session's VFS. */
  putReview(id: string, item: unknown, ref: SessionRef = {}): number {
    const state = this.find(id, ref);
    const text = JSON.stringify(item ?? null);
    if (Buffer.byteLength(text) > MAX_REVIEW_BYTES) throw new SandboxError('TOO_LARGE', `a review item is at most ${MAX_REVIEW_BYTES} bytes`);
    return this.withReviews(state.vfs, (queue) => {
      if (queue.length >= MAX_REVIEWS) throw new SandboxError('RATE_LIMITED', `the review queue holds at most ${MAX_REVIEWS} items`);
      queue.push({ time: new Date().toISOString(), item: JSON.parse(text) as unknown });
      return queue.length;
    });
  }

  /** The oldest review item (removed), or null. */
  takeReview(id: string, ref: SessionRef = {}): { time: string; item: unknown } | null {
    const state = this.find(id, ref);
    return this.withReviews(state.vfs, (queue) => queue.shift() ?? null);
  }

  /** Stop every live session (engine close). */
  async closeAll(): Promise<void> {
    for (const l of this.live.values()) l.abort.abort();
    await Promise.all([...this.live.values()].map((l) => l.done.catch(() => {})));
  }

  private withReviews<T>(vfs: string, f: (queue: { time: string; item: unknown }[]) => T): T {
    const store = AgentStore.open(vfs);
    try {
      const bytes = store.read(REVIEWS_FILE, 64 * 1024 * 1024);
      const queue = bytes ? (JSON.parse(Buffer.from(bytes).toString('utf8')) as { time: string; item: unknown }[]) : [];
      const out = f(queue);
      store.replace(REVIEWS_FILE, JSON.stringify(queue));
      return out;
    } finally {
      store.close();
    }
  }

  /** A session of this tenant: live, else from its VFS; NOT_FOUND otherwise (another tenant's too). */
  private find(id: string, ref: SessionRef): SessionState {
    const tenant = ref.tenant ?? 'default';
    const notFound = (): SandboxError => new SandboxError('NOT_FOUND', 'no such agent session', { id: String(id).slice(0, 128) });
    try {
      checkName('id', id);
    } catch {
      throw notFound();
    }
    const live = this.live.get(id);
    if (live) {
      if (live.state.tenant !== tenant) throw notFound();
      return live.state;
    }
    let state: SessionState | null = null;
    try {
      const store = AgentStore.open(ref.vfs ?? `agent-${id}`);
      try {
        state = readSession(store);
      } finally {
        store.close();
      }
    } catch {
      throw notFound();
    }
    if (!state || state.id !== id || state.tenant !== tenant) throw notFound();
    return state;
  }

  private begin(state: SessionState, o: { onStep?: (e: AgentEvent) => void; signal?: AbortSignal }): Live {
    if (this.live.has(state.id)) throw new SandboxError('POLICY_INVALID', 'a session with this id is running', { id: state.id });
    if (this.live.size >= MAX_LIVE_SESSIONS) throw new SandboxError('OVERLOADED', `the engine already runs ${MAX_LIVE_SESSIONS} agent sessions`);
    if ([...this.live.values()].filter((l) => l.state.tenant === state.tenant).length >= MAX_LIVE_SESSIONS_PER_TENANT) {
      throw new SandboxError('OVERLOADED', `the tenant already runs ${MAX_LIVE_SESSIONS_PER_TENANT} agent sessions`);
    }
    const abort = new AbortController();
    if (o.signal) {
      if (o.signal.aborted) abort.abort();
      else o.signal.addEventListener('abort', () => abort.abort(), { once: true });
    }
    const events: AgentEvent[] = [];
    const listeners = new Set<(e: AgentEvent) => void>();
    const onEvent = (e: AgentEvent): void => {
      events.push(e);
      if (events.length > MAX_KEPT_EVENTS) events.shift();
      o.onStep?.(e);
      for (const l of listeners) l(e);
    };
    const store = AgentStore.open(state.vfs);
    const done = (async (): Promise<AgentResult> => {
      try {
        if (state.turn === 0 && state.steps === 0) this.engine.audit({ tenant: state.tenant, instance: state.id, kind: 'agent-start', detail: { profile: state.profile, tools: state.tools, maxSteps: state.maxSteps } });
        try {
          await drive(this.engine, this.port, state, store, { onEvent, signal: abort.signal });
        } catch (e) {
          // A storage or audit failure mid-session: the session ends `error` (its VFS may not say so).
          const err = toSandboxError(e);
          state.status = 'ended';
          state.outcome = 'error';
          state.error = { code: err.code, message: err.message };
          onEvent({ kind: 'end', outcome: 'error', result: null, turns: state.turn, error: state.error });
        }
        return {
          id: state.id,
          vfs: state.vfs,
          result: state.result ?? null,
          outcome: state.outcome ?? 'error',
          steps: state.turn,
          events: [...events],
          usage: { ...state.usage },
          ...(state.error ? { error: state.error } : {}),
        };
      } finally {
        store.close();
        this.live.delete(state.id);
      }
    })();
    done.catch(() => {}); // `start` callers do not wait; the outcome is in the status
    const live: Live = { state, events, listeners, abort, done };
    this.live.set(state.id, live);
    return live;
  }
}
