/**
 * The agent loop's public surface (DESIGN §13): `engine.agent.run/start/status/subscribe/stop/
 * resume/putReview/takeReview`, and agent definitions (Markdown with front matter).
 * Loading this module plugs the loop into every engine (engine/agent-slot.ts); the package entry
 * (src/index.ts) and the interfaces load it.
 * Layer: above the engine and the shell (it drives both); only interfaces sit above it.
 *
 * Does not protect against: see loop.ts and tools.ts — the model's choices are untrusted; the
 * grant, the tool deadlines and the output caps are the walls.
 */

import { provideAgent } from '../engine/agent-slot.ts';
import type { Engine } from '../engine/engine.ts';
import { AgentSessions } from './sessions.ts';

export { AgentSessions, MAX_LIVE_SESSIONS, MAX_LIVE_SESSIONS_PER_TENANT, MAX_REVIEWS, MAX_REVIEW_BYTES, type AgentStatus, type SessionRef } from './sessions.ts';
export { DEFAULT_MAX_STEPS, DEFAULT_TOOL_TIMEOUT_MS, MAX_MAX_STEPS, MAX_TOOL_TIMEOUT_MS, type AgentEvent, type AgentOutcome, type AgentResult, type AgentRunOptions, type StepRecord } from './loop.ts';
export { TOOL_NAMES, TOOL_CAPS, DEFAULT_MAX_TOOL_OUTPUT_BYTES, grantedTools, type ToolName } from './tools.ts';
export { STEPS_FILE, SESSION_FILE, REVIEWS_FILE } from './store.ts';
export { parseDefinition, type AgentDefinition } from './definition.ts';
export { TOOLKITS, SHELL_SYNOPSES, toolkitIndex, describeCommand } from './toolkits.ts';

declare module '../engine/agent-slot.ts' {
  interface AgentSurface extends AgentSessions {}
}

provideAgent<Engine>((engine, port) => new AgentSessions(engine, port));
