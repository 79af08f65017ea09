/**
 * Test helper for the agent loop: a private MEMBRANE_HOME, a scripted model server and an engine
 * whose `llm` broker points at it with a recognisable key; the files a key must never reach.
 */

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after } from 'node:test';
import { AuditLog, createEngine, type Engine, type EngineOptions } from '../../src/index.ts';
import { openDatabase } from '../../src/storage/index.ts';
import { TEST_CACHE } from './engine.ts';
import { scriptedLlm, type Scenario, type ScriptedLlm } from './scripted-llm.ts';
import { tempDir } from './tmp.ts';

export const AGENT_KEY = 'sk-agent-test-7f3c9e1b2d4a6f80-must-never-leak';

export interface AgentFixture {
  readonly home: string;
  readonly llm: ScriptedLlm;
  readonly engine: Engine;
}

export async function agentFixture(scenarios: Readonly<Record<string, Scenario>>, options: EngineOptions = {}): Promise<AgentFixture> {
  const home = tempDir('membrane-agent-');
  process.env['MEMBRANE_HOME'] = home;
  const llm = await scriptedLlm(scenarios);
  const engine = createEngine({ poolSize: 1, cacheDir: TEST_CACHE, ...options, brokers: { ...options.brokers, llm: { baseUrl: llm.url, apiKey: AGENT_KEY, model: 'scripted-model' } } });
  after(async () => {
    await engine.close();
    await llm.close();
  });
  return { home, llm, engine };
}

/** The audit records of one kind (and instance), oldest first. */
export function auditRecords(home: string, kind: string, instance?: string): { instance: string; detail: Record<string, unknown> }[] {
  const log = new AuditLog(openDatabase(join(home, 'engine.sqlite')), {}, true, false);
  try {
    return log.tail({ kind, limit: 1000 }).filter((r) => instance === undefined || r.instance === instance).map((r) => ({ instance: r.instance, detail: r.detail as Record<string, unknown> }));
  } finally {
    log.close();
  }
}

/** Every file under MEMBRANE_HOME (VFS databases, their WAL, the engine database), as raw bytes. */
export function homeFiles(home: string): { file: string; bytes: Buffer }[] {
  const out: { file: string; bytes: Buffer }[] = [];
  const walk = (dir: string): void => {
    if (!existsSync(dir)) return;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.push({ file: p, bytes: readFileSync(p) });
    }
  };
  walk(home);
  return out;
}
