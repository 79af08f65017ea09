// WASI preview 1 conformance, as an outside yardstick: every program of the official wasi-testsuite
// (wasm32-wasip1, vendored in ./vendor) run through the plain `membrane run` CLI with its JSON
// expectations — args after `--`, each env pair as `--env K=V`, the `root` fixture directory as
// `--mount COPY:/` (a scratch copy per program, so write-back never dirties the extraction) —
// checking the exit code and, where given, stdout. All 72 must pass.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { after, test } from 'node:test';
import { runCli, type Ran } from '../helpers/cli.ts';
import { tempDir } from '../helpers/tmp.ts';

const ARCHIVE = new URL('./vendor/wasi-testsuite-wasip1.tar.gz', import.meta.url).pathname;
const SUITES = ['assemblyscript', 'c', 'rust'];
const EXPECTED_PROGRAMS = 72;
/** CLI processes at once: the suite shares two cores with other work. */
const CONCURRENCY = 3;

interface Expectation {
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
  readonly exit_code?: number;
  readonly stdout?: string;
  readonly root?: string;
  readonly dirs?: readonly string[];
}

const work = tempDir('membrane-wasi-testsuite-');
after(() => rmSync(work, { recursive: true, force: true }));

/** Unpack the vendored archive into the scratch directory; returns where `tests/` is. */
function extract(): string {
  const r = spawnSync('tar', ['-xzf', ARCHIVE, '-C', work], { encoding: 'utf8' });
  if (r.error) throw new Error(`the wasi-testsuite runner needs the system tool "tar": ${r.error.message}`);
  assert.equal(r.status, 0, `tar failed: ${r.stderr}`);
  return work;
}

interface Program {
  readonly name: string;
  readonly dir: string;
  readonly wasm: string;
  readonly spec: Expectation;
}

function programs(root: string): Program[] {
  const list: Program[] = [];
  for (const suite of SUITES) {
    const dir = join(root, 'tests', suite, 'testsuite', 'wasm32-wasip1');
    for (const f of readdirSync(dir).sort()) {
      if (!f.endsWith('.wasm')) continue;
      const json = join(dir, f.replace(/\.wasm$/, '.json'));
      const spec = existsSync(json) ? (JSON.parse(readFileSync(json, 'utf8')) as Expectation) : {};
      list.push({ name: `${suite}/${basename(f, '.wasm')}`, dir, wasm: join(dir, f), spec });
    }
  }
  return list;
}

function argvFor(p: Program, scratch: string): string[] {
  const args = ['run', p.wasm];
  const fixtures = [...(p.spec.root !== undefined ? [[p.spec.root, '/']] : []), ...(p.spec.dirs ?? []).map((d) => [d, `/${d}`])];
  for (const [name, guest] of fixtures as [string, string][]) {
    const copy = join(scratch, basename(name));
    cpSync(join(p.dir, name), copy, { recursive: true, verbatimSymlinks: true });
    args.push('--mount', `${copy}:${guest}`);
  }
  for (const [k, v] of Object.entries(p.spec.env ?? {})) args.push('--env', `${k}=${v}`);
  return [...args, '--', ...(p.spec.args ?? [])];
}

function verdict(p: Program, r: Ran): string | null {
  const want = p.spec.exit_code ?? 0;
  if (r.code !== want) return `exit ${r.code}, want ${want}\n--- stdout\n${r.stdout.slice(0, 2000)}\n--- stderr\n${r.stderr.slice(0, 2000)}`;
  if (p.spec.stdout !== undefined && r.stdout !== p.spec.stdout) return `stdout ${JSON.stringify(r.stdout.slice(0, 500))}, want ${JSON.stringify(p.spec.stdout)}`;
  return null;
}

test(`wasi-testsuite wasm32-wasip1: ${EXPECTED_PROGRAMS}/${EXPECTED_PROGRAMS} through plain membrane run`, { timeout: 900_000 }, async () => {
  const list = programs(extract());
  assert.equal(list.length, EXPECTED_PROGRAMS, 'the vendored suite holds 72 programs');
  const home = join(work, 'home');
  await runCli(['profiles'], { MEMBRANE_HOME: home }); // build the CLI bundle once, not in every worker
  const failures: string[] = [];
  let next = 0;
  const lane = async (): Promise<void> => {
    for (let i = next++; i < list.length; i = next++) {
      const p = list[i]!;
      const scratch = mkdtempSync(join(work, 'run-'));
      const r = await runCli(argvFor(p, scratch), { MEMBRANE_HOME: home }, 120_000);
      const why = verdict(p, r);
      if (why !== null) failures.push(`${p.name}: ${why}`);
      rmSync(scratch, { recursive: true, force: true });
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  const passed = list.length - failures.length;
  console.log(`wasi-testsuite wasm32-wasip1: ${passed}/${list.length} passed`);
  assert.deepEqual(failures, [], `${failures.length} programs failed:\n${failures.join('\n\n')}`);
});
