/**
 * The agent loop (DESIGN §13) — not built yet; this room is where it will live.
 * `engine.agent.run({ system, task, model, profile, tenant, vfs, maxSteps, toolTimeoutMs })`: the
 * model called through the `llm` broker, tools built from the grant like imports (`shell`,
 * `vfs_read/write/list`, `exec`, `fetch`, `done`), each call time-bounded, every step in the
 * agent VFS's `_steps.jsonl` and the audit log; sessions and agent definitions on top.
 * Layer: above the engine and the shell (it drives both); only interfaces sit above it.
 */
export {};
