/**
 * Agent definitions: a Markdown file whose front matter (between `---` lines) names `id`,
 * `model`, `toolkits`, `tagline` and `profile`, and whose system prompt is the section under a
 * `## System prompt` heading (up to the next heading of level 1 or 2), else the whole body.
 *
 * Owns: parsing that format (a small subset of YAML: `key: value`, `key: [a, b]`, and `- item`
 * lists — no other YAML). The toolkits' index and `describe` tool are toolkits.ts's.
 * Invariant: a definition never yields an empty system prompt (POLICY_INVALID instead: an agent
 * is never run prompt-less); an unknown front-matter key or toolkit is an error naming it.
 *
 * Does not protect against: what the prompt says — it is the operator's or user's text.
 */

import { SandboxError } from '../errors.ts';
import { TOOLKITS } from './toolkits.ts';

export interface AgentDefinition {
  readonly id?: string;
  readonly model?: string;
  readonly toolkits: readonly string[];
  readonly tagline?: string;
  readonly profile?: string;
  readonly system: string;
}

const KEYS = ['id', 'model', 'toolkits', 'tagline', 'profile'] as const;
export const MAX_DEFINITION_BYTES = 256 * 1024;

function unquote(v: string): string {
  const t = v.trim();
  return (t.startsWith('"') && t.endsWith('"')) || (t.startsWith("'") && t.endsWith("'")) ? t.slice(1, -1) : t;
}

function frontMatter(lines: readonly string[], name: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  let listKey: string | null = null;
  for (const raw of lines) {
    if (raw.trim() === '' || raw.trimStart().startsWith('#')) continue;
    const item = /^\s+-\s+(.*)$/.exec(raw) ?? /^-\s+(.*)$/.exec(raw);
    if (item && listKey) {
      (out[listKey] as string[]).push(unquote(item[1]!));
      continue;
    }
    const kv = /^([A-Za-z_][\w-]*)\s*:\s*(.*)$/.exec(raw);
    if (!kv) throw new SandboxError('POLICY_INVALID', `${name}: cannot read the front-matter line "${raw.slice(0, 60)}"`);
    const key = kv[1]!;
    if (!(KEYS as readonly string[]).includes(key)) throw new SandboxError('POLICY_INVALID', `${name}: unknown front-matter key "${key.slice(0, 40)}" (known: ${KEYS.join(', ')})`);
    const value = kv[2]!.trim();
    listKey = null;
    if (value === '') {
      out[key] = [];
      listKey = key;
    } else if (value.startsWith('[') && value.endsWith(']')) {
      out[key] = value.slice(1, -1).split(',').map(unquote).filter(Boolean);
    } else out[key] = unquote(value);
  }
  return out;
}

/** Parse a definition's text (`name` is used in error messages only). */
export function parseDefinition(text: string, name = 'agent definition'): AgentDefinition {
  if (Buffer.byteLength(text) > MAX_DEFINITION_BYTES) throw new SandboxError('TOO_LARGE', `${name} is larger than ${MAX_DEFINITION_BYTES} bytes`);
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  let meta: Record<string, string | string[]> = {};
  let body = lines;
  if (lines[0]?.trim() === '---') {
    const end = lines.findIndex((l, i) => i > 0 && l.trim() === '---');
    if (end < 0) throw new SandboxError('POLICY_INVALID', `${name}: the front matter has no closing ---`);
    meta = frontMatter(lines.slice(1, end), name);
    body = lines.slice(end + 1);
  }
  const one = (k: string): string | undefined => {
    const v = meta[k];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw new SandboxError('POLICY_INVALID', `${name}: "${k}" must be a single value`);
    return v;
  };
  const kits = meta['toolkits'] === undefined ? [] : typeof meta['toolkits'] === 'string' ? [meta['toolkits']] : meta['toolkits'];
  for (const k of kits) if (!(TOOLKITS as readonly string[]).includes(k)) throw new SandboxError('POLICY_INVALID', `${name}: unknown toolkit "${k.slice(0, 40)}" (known: ${TOOLKITS.join(', ')})`);
  const heading = body.findIndex((l) => /^##\s+system prompt\s*$/i.test(l.trim()));
  let prompt: string[];
  if (heading >= 0) {
    const rest = body.slice(heading + 1);
    const next = rest.findIndex((l) => /^#{1,2}\s/.test(l));
    prompt = next < 0 ? rest : rest.slice(0, next);
  } else prompt = body;
  const system = prompt.join('\n').trim();
  if (system === '') throw new SandboxError('POLICY_INVALID', `${name}: no system prompt (put it under "## System prompt")`);
  const id = one('id');
  const model = one('model');
  const tagline = one('tagline');
  const profile = one('profile');
  return { ...(id ? { id } : {}), ...(model ? { model } : {}), toolkits: kits, ...(tagline ? { tagline } : {}), ...(profile ? { profile } : {}), system };
}
