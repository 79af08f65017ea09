/**
 * The agent's tools: `shell` (the in-sandbox shell on the agent's VFS), `vfs_read`, `vfs_write`,
 * `vfs_list`, `exec` (a snippet through engine.exec), `fetch` (the net broker), `describe` (a
 * toolkit command's usage, toolkits.ts) and `done`.
 *
 * Owns: which tools a grant offers (like the import object: a tool exists only when its cap
 * word is granted — TOOL_CAPS), their JSON schemas, argument validation, running one call under
 * a hard deadline, and the cap on what goes back to the model.
 * Invariant: a call to a tool that was not offered, or with arguments that are not a JSON object
 * of the right shape, runs nothing and answers a tool error. Every call ends by `timeoutMs`: its
 * work is aborted (exec: the engine's signal; shell: its own script deadline, set to the same
 * bound) and the loop goes on whether or not the work has wound down. The model names VFS paths,
 * code and URLs — never a host path, a tenant or a profile: those come from the agent's grant.
 *
 * Does not protect against: a shell command writing the loop's own files (store.ts), and the
 * content the tools return — it is data for the model, which may be steered by it (the tools'
 * reach, not the model's judgement, is the wall).
 */

import { createHash } from 'node:crypto';
import type { Engine } from '../engine/engine.ts';
import type { AgentPort } from '../engine/agent-slot.ts';
import { SandboxError, toSandboxError } from '../errors.ts';
import { GUEST_ERR } from '../abi/command.ts';
import { VfsError } from '../storage/index.ts';
import type { CapWord } from '../policy/profiles.ts';
import { runShell } from '../shell/index.ts';
import { AgentStore, RESERVED_FILES, locate } from './store.ts';
import type { ToolSpec } from './model.ts';
import { describeCommand } from './toolkits.ts';

export const TOOL_NAMES = ['shell', 'vfs_read', 'vfs_write', 'vfs_list', 'exec', 'fetch', 'describe', 'done'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

/** The cap words a tool needs; `done` needs none. */
export const TOOL_CAPS: Readonly<Record<ToolName, readonly CapWord[]>> = {
  shell: ['vfs', 'commands'],
  vfs_read: ['vfs'],
  vfs_write: ['vfs'],
  vfs_list: ['vfs'],
  exec: ['vfs', 'exec'],
  fetch: ['net'],
  // Offered only to a session with toolkits (grantedTools).
  describe: ['commands'],
  done: [],
};

export const EXEC_LANGUAGES = ['python', 'js', 'ts', 'c'] as const;
/** What the model gets back from one tool call, at most (the rest is cut and marked). */
export const DEFAULT_MAX_TOOL_OUTPUT_BYTES = 16 * 1024;
const MAX_WRITE_BYTES = 1024 * 1024;

const str = (description: string): Record<string, unknown> => ({ type: 'string', description });
const obj = (properties: Record<string, unknown>, required: string[]): Record<string, unknown> => ({ type: 'object', properties, required, additionalProperties: false });

const SPECS: Readonly<Record<ToolName, { description: string; parameters: Record<string, unknown> }>> = {
  shell: { description: 'Run a script in the sandbox shell (sh-like: pipes, &&, ||, ;, redirections) on your workspace. Commands: cat, wc, grep, head, tail, sort, uniq, ls, echo, seq, tr, cp, mv, rm, mkdir, base64, sha256sum.', parameters: obj({ script: str('the script') }, ['script']) },
  vfs_read: { description: 'Read a text file of your workspace.', parameters: obj({ path: str('a workspace path, e.g. notes.txt or /tmp/x') }, ['path']) },
  vfs_write: { description: 'Write (or append to) a file of your workspace; parent directories are made.', parameters: obj({ path: str('a workspace path'), content: str('the text'), append: { type: 'boolean' } }, ['path', 'content']) },
  vfs_list: { description: 'List a directory of your workspace.', parameters: obj({ path: str('a directory, default /') }, []) },
  exec: { description: 'Run a snippet (python, js, ts or c) in a fresh sandbox on your workspace; give code, or the path of a workspace file to run.', parameters: obj({ language: { type: 'string', enum: [...EXEC_LANGUAGES] }, code: str('the source'), path: str('a workspace file to run instead of code') }, []) },
  fetch: { description: 'HTTP request to a public URL.', parameters: obj({ url: str('http(s) URL'), method: str('GET by default'), body: str('request body') }, ['url']) },
  describe: { description: 'The usage of a command of your toolkits.', parameters: obj({ name: str('a command name from the toolkit index') }, ['name']) },
  done: { description: 'Finish: give the final answer.', parameters: obj({ result: str('the final answer') }, ['result']) },
};

/** The tools a grant offers, in TOOL_NAMES order; `wanted` narrows (never widens); `describe` only with toolkits. */
export function grantedTools(caps: readonly CapWord[], wanted?: readonly string[], toolkits: readonly string[] = []): ToolName[] {
  return TOOL_NAMES.filter((t) => TOOL_CAPS[t].every((c) => caps.includes(c)) && (t !== 'describe' || toolkits.length > 0) && (wanted === undefined || t === 'done' || wanted.includes(t)));
}

export function toolSpecs(tools: readonly ToolName[]): ToolSpec[] {
  return tools.map((name) => ({ type: 'function', function: { name, ...SPECS[name] } }));
}

export interface ToolContext {
  readonly engine: Engine;
  readonly port: AgentPort;
  readonly store: AgentStore;
  readonly vfs: string;
  readonly tenant: string;
  readonly instance: string;
  readonly profile: string;
  readonly caps: readonly CapWord[];
  readonly offered: readonly ToolName[];
  /** The hard bound of one tool call. */
  readonly timeoutMs: number;
  /** The deadline handed to the work itself: the hard bound, at most the profile's time per call. */
  readonly callTimeoutMs: number;
  readonly maxOutputBytes: number;
  /** The session's stop: aborts a tool in flight. */
  readonly signal: AbortSignal;
}

export interface ToolOutcome {
  readonly ok: boolean;
  /** What goes back to the model (capped). */
  readonly output: string;
  readonly code?: string;
  readonly done?: string;
  readonly durationMs: number;
}

export const digest = (text: string): string => createHash('sha256').update(text).digest('hex');

export function capText(text: string, max: number): string {
  const bytes = Buffer.from(text);
  if (bytes.length <= max) return text;
  return `${bytes.subarray(0, max).toString('utf8').replace(/\uFFFD$/, '')}\n[membrane: tool output truncated at ${max} bytes]`;
}

type Args = Record<string, unknown>;

function parseArgs(raw: string): Args {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw new SandboxError('BAD_REQUEST', 'the tool arguments are not valid JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new SandboxError('BAD_REQUEST', 'the tool arguments must be a JSON object');
  return v as Args;
}

function text(a: Args, key: string, required: boolean): string | undefined {
  const v = a[key];
  if (v === undefined && !required) return undefined;
  if (typeof v !== 'string') throw new SandboxError('BAD_REQUEST', `argument "${key}" must be a string`);
  return v;
}

function vfsPath(a: Args, key = 'path', required = true): string {
  const p = text(a, key, required) ?? '/';
  if (p.length === 0 || p.length > 4096 || p.includes('\0')) throw new SandboxError('BAD_REQUEST', `argument "${key}" is not a usable path`);
  return p;
}

const LANGUAGE_OF: Readonly<Record<string, (typeof EXEC_LANGUAGES)[number]>> = { py: 'python', js: 'js', mjs: 'js', ts: 'ts', c: 'c' };

/** Run one call under the hard deadline; never throws. */
export async function runTool(ctx: ToolContext, name: string, rawArgs: string): Promise<ToolOutcome> {
  const t0 = performance.now();
  const end = (ok: boolean, output: string, extra: { code?: string; done?: string } = {}): ToolOutcome => ({ ok, output: capText(output, ctx.maxOutputBytes), ...extra, durationMs: Math.round(performance.now() - t0) });
  if (!(ctx.offered as readonly string[]).includes(name)) {
    return end(false, `error NOT_CAPABLE: there is no tool "${name.slice(0, 64)}" here; the tools are ${ctx.offered.join(', ')}`, { code: 'NOT_CAPABLE' });
  }
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const onStop = (): void => abort.abort();
  ctx.signal.addEventListener('abort', onStop);
  const stopped = new Promise<never>((_, reject) => {
    const fail = (): void => reject(ctx.signal.aborted ? new SandboxError('CANCELLED', 'the session was stopped') : new SandboxError('TIMEOUT', `the tool ran past its ${ctx.timeoutMs} ms budget and was stopped`));
    abort.signal.addEventListener('abort', fail, { once: true });
    timer = setTimeout(() => abort.abort(), ctx.timeoutMs);
  });
  stopped.catch(() => {}); // settles when the work is aborted after it ended, too

  try {
    const args = parseArgs(rawArgs);
    const r = await Promise.race([dispatch(ctx, name as ToolName, args, abort.signal), stopped]);
    return end(r.ok, r.output, r.done !== undefined ? { done: r.done } : r.code ? { code: r.code } : {});
  } catch (e) {
    const err = e instanceof VfsError ? new SandboxError('BAD_REQUEST', `${e.code}`) : toSandboxError(e);
    return end(false, `error ${err.code}: ${err.message}`, { code: err.code });
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener('abort', onStop);
    abort.abort();
  }
}

async function dispatch(ctx: ToolContext, name: ToolName, a: Args, signal: AbortSignal): Promise<{ ok: boolean; output: string; code?: string; done?: string }> {
  switch (name) {
    case 'done':
      return { ok: true, output: 'done', done: text(a, 'result', false) ?? '' };
    case 'describe': {
      const name = text(a, 'name', true)!;
      const d = describeCommand(name, ctx.engine.commands.names());
      return d === null ? { ok: false, output: `error NOT_FOUND: no command "${name.slice(0, 64)}"`, code: 'NOT_FOUND' } : { ok: true, output: d };
    }
    case 'vfs_read': {
      const bytes = ctx.store.read(vfsPath(a));
      if (bytes === null) return { ok: false, output: 'error NOT_FOUND: no such file', code: 'NOT_FOUND' };
      return { ok: true, output: Buffer.from(bytes).toString('utf8') };
    }
    case 'vfs_write': {
      const path = vfsPath(a);
      const content = text(a, 'content', true)!;
      const at = locate(path);
      if (at.volume === 'workspace' && RESERVED_FILES.includes(at.path)) return { ok: false, output: 'error NOT_CAPABLE: that file is the agent loop\'s own', code: 'NOT_CAPABLE' };
      if (Buffer.byteLength(content) > MAX_WRITE_BYTES) return { ok: false, output: `error TOO_LARGE: at most ${MAX_WRITE_BYTES} bytes per write`, code: 'TOO_LARGE' };
      const n = ctx.store.write(path, content, a['append'] === true);
      return { ok: true, output: `wrote ${n} bytes to ${path}` };
    }
    case 'vfs_list': {
      const entries = ctx.store.list(vfsPath(a, 'path', false));
      return { ok: true, output: entries.map((e) => (e.kind === 'dir' ? `${e.name}/` : `${e.name}\t${e.size ?? 0}`)).join('\n') };
    }
    case 'shell': {
      const script = text(a, 'script', true)!;
      const caps = ctx.caps.filter((c) => c !== 'llm');
      const r = await runShell(ctx.engine, ctx.engine.commands, script, { vfs: ctx.vfs, profile: ctx.profile, caps, tenant: ctx.tenant, timeoutMs: ctx.callTimeoutMs });
      const out = `exit ${r.exitCode}\n${r.stdout}${r.stderr ? `\n[stderr]\n${r.stderr}` : ''}`;
      return r.exitCode === 0 ? { ok: true, output: out } : { ok: false, output: out, ...(r.error ? { code: r.error.code } : {}) };
    }
    case 'exec': {
      let code = text(a, 'code', false);
      let language = text(a, 'language', false);
      const path = a['path'] === undefined ? undefined : vfsPath(a);
      if (code === undefined && path !== undefined) {
        const bytes = ctx.store.read(path);
        if (bytes === null) return { ok: false, output: 'error NOT_FOUND: no such file', code: 'NOT_FOUND' };
        code = Buffer.from(bytes).toString('utf8');
        language ??= LANGUAGE_OF[path.split('.').pop() ?? ''];
      }
      if (code === undefined) throw new SandboxError('BAD_REQUEST', 'exec needs code or path');
      if (!language || !(EXEC_LANGUAGES as readonly string[]).includes(language)) throw new SandboxError('BAD_REQUEST', `language must be one of ${EXEC_LANGUAGES.join(', ')}`);
      const caps = ctx.caps.filter((c) => c !== 'llm');
      const r = await ctx.engine.exec({ language, code, profile: ctx.profile, caps, tenant: ctx.tenant, vfs: ctx.vfs, timeoutMs: ctx.callTimeoutMs, signal });
      const parts = [r.ok ? 'ok' : `error ${r.error?.code}: ${r.error?.message}`];
      if (r.result !== undefined) parts.push(`result: ${JSON.stringify(r.result)}`);
      if (r.stdout) parts.push(`[stdout]\n${r.stdout}`);
      if (r.stderr) parts.push(`[stderr]\n${r.stderr}`);
      return { ok: r.ok, output: parts.join('\n'), ...(r.error ? { code: r.error.code } : {}) };
    }
    case 'fetch': {
      const url = text(a, 'url', true)!;
      const method = text(a, 'method', false) ?? 'GET';
      const body = text(a, 'body', false);
      const request = JSON.stringify({ url, method, ...(body !== undefined ? { body } : {}) });
      const who = { tenant: ctx.tenant, instance: ctx.instance, policy: { caps: ctx.caps } };
      const answer = await ctx.port.remote(who, 'http_fetch', [new TextEncoder().encode(request)], signal, performance.now() + ctx.timeoutMs);
      if (typeof answer === 'number') {
        const code = Object.entries(GUEST_ERR).find(([, v]) => v === answer)?.[0] ?? 'UNAVAILABLE';
        return { ok: false, output: `error ${code}: the fetch was refused or failed`, code };
      }
      const res = JSON.parse(new TextDecoder().decode(answer)) as { status?: number; body?: string };
      return { ok: true, output: `status ${res.status ?? 0}\n${res.body ?? ''}` };
    }
  }
}
