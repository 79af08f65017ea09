/**
 * Where the agent loop (src/agent, a higher layer) plugs into the engine without the engine
 * importing it: `engine.agent` is whatever surface the agent module provided, built once per
 * engine and handed a port to the engine's remote brokers (the `llm` model call, `http_fetch`).
 *
 * Owns: the provider slot and the per-engine cache. `AgentSurface` is declared empty here and
 * filled in by src/agent through declaration merging, so its types live with the loop.
 * Invariant: the port reaches only `Brokers.net` — every call passes the broker cadence
 * (granted, revoked, rate, size) as the principal the caller names.
 *
 * Does not protect against: a provider that misuses the port — src/agent is trusted host code.
 */

import { SandboxError } from '../errors.ts';
import type { BrokerCaller } from '../brokers/index.ts';

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface AgentSurface {}

/** The engine's remote brokers, as the agent loop reaches them. */
export interface AgentPort {
  remote(caller: BrokerCaller, name: 'llm_complete' | 'http_fetch', args: readonly Uint8Array[], stop: AbortSignal, deadline?: number): Promise<Uint8Array | number>;
}

type Provider<E> = (engine: E, port: AgentPort) => AgentSurface & { closeAll(): Promise<void> };

let provider: Provider<never> | null = null;
const built = new WeakMap<object, AgentSurface & { closeAll(): Promise<void> }>();

/** Called by src/agent when it loads. */
export function provideAgent<E>(make: Provider<E>): void {
  provider = make as Provider<never>;
}

export function agentFor<E extends object>(engine: E, port: AgentPort): AgentSurface {
  let surface = built.get(engine);
  if (surface) return surface;
  if (!provider) throw new SandboxError('INTERNAL', 'the agent loop is not loaded (import membrane\'s package entry or src/agent)');
  surface = (provider as Provider<E>)(engine, port);
  built.set(engine, surface);
  return surface;
}

/** Engine close: stop the engine's live sessions (they end `stopped`, resumable from their VFS). */
export async function closeAgent(engine: object): Promise<void> {
  await built.get(engine)?.closeAll();
}
