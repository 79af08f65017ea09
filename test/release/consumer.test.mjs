// The package as a user gets it: `npm pack` → `npm install ./membrane-*.tgz` into a fresh temp
// project → (a) a plain .mjs imports 'membrane' and runs a wasm call, a JS snippet, a TypeScript
// snippet (its stripper read from the installed @swc/wasm-typescript) and a Python snippet; (b) a strict NodeNext TypeScript consumer type-checks against the shipped declarations
// with skipLibCheck off; (c) `npx membrane` runs a module and answers --version/--help; a script
// that never closes its engine exits; and nothing is written into node_modules while it runs.
// Plain JavaScript, so any Node runs it without a loader: .ci/run runs
// it under Node 20, 22 and 24 (`npm run test:consumer`), each against the same tarball.
//
// Environment: MEMBRANE_TARBALL (a packed tarball; default: `npm pack` of this checkout). On Node
// 22+ the install is exactly a user's (better-sqlite3 13 ships its addon, no install script runs).
// On Node 20 the consumer also needs better-sqlite3 12 (docs/storage.md, "The SQLite binding"):
// installed with --ignore-scripts and given the checkout's compiled addon
// (MEMBRANE_SQLITE_BINDING overrides it), because its install script would try to download a
// prebuilt binary from GitHub (an off-machine call) or compile the same file again.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const nodeBin = dirname(process.execPath);
// npm and npx run under the Node being tested (first on PATH), as a user's would.
const env = { ...process.env, PATH: `${nodeBin}:${process.env.PATH ?? ''}`, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };
const npmCli = (() => {
  const npm = spawnSync('npm', ['prefix', '-g'], { env, encoding: 'utf8' });
  const global = npm.status === 0 ? npm.stdout.trim() : '';
  for (const candidate of [join(global, 'lib/node_modules/npm/bin/npm-cli.js'), join(dirname(process.execPath), '../lib/node_modules/npm/bin/npm-cli.js'), '/usr/lib/node_modules/npm/bin/npm-cli.js']) {
    if (existsSync(candidate)) return candidate;
  }
  return null;
})();

function npm(args, cwd) {
  assert.ok(npmCli, 'npm is required for this test (it ships with Node)');
  const r = spawnSync(process.execPath, [npmCli, ...args], { cwd, env, encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, `npm ${args.join(' ')} failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

let dir;
let tarball;
let snapshot;

/** Every file under node_modules with its size and mtime: nothing may change while membrane runs. */
function listFiles(root) {
  const out = new Map();
  (function walk(d) {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const s = statSync(p, { throwIfNoEntry: false });
        if (s) out.set(p.slice(root.length), `${s.size}:${s.mtimeMs}`);
      }
    }
  })(root);
  return out;
}

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'membrane-consumer-'));
  tarball = process.env.MEMBRANE_TARBALL;
  if (!tarball) {
    const name = npm(['pack', '--pack-destination', dir, '--silent'], repo).trim().split('\n').pop();
    tarball = join(dir, name);
  }
  const app = join(dir, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  const typesNode = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).devDependencies['@types/node'];
  if (Number(process.versions.node.split('.')[0]) >= 22) {
    npm(['install', '--prefer-offline', '--no-package-lock', tarball, `@types/node@${typesNode}`], app);
  } else {
    const v12 = JSON.parse(readFileSync(join(repo, 'node_modules/better-sqlite3-12/package.json'), 'utf8')).version;
    npm(['install', '--prefer-offline', '--ignore-scripts', '--no-package-lock', tarball, `@types/node@${typesNode}`, `better-sqlite3-12@npm:better-sqlite3@${v12}`], app);
    const binding = process.env.MEMBRANE_SQLITE_BINDING ?? join(repo, 'node_modules/better-sqlite3-12/build/Release/better_sqlite3.node');
    assert.ok(existsSync(binding), `no better-sqlite3 12 addon at ${binding}: run npm ci under this Node (${process.version}) first`);
    const release = join(app, 'node_modules/better-sqlite3-12/build/Release');
    mkdirSync(release, { recursive: true });
    copyFileSync(binding, join(release, 'better_sqlite3.node'));
  }
  snapshot = listFiles(join(app, 'node_modules'));
});

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the tarball carries the built package and nothing of the workshop', () => {
  const files = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' }).split('\n').filter(Boolean).map((f) => f.replace(/^package\//, ''));
  for (const need of ['package.json', 'README.md', 'LICENSE', 'bin/membrane.js', 'dist/index.js', 'dist/cli.mjs', 'dist/worker.cjs', 'dist/types/index.d.ts', 'dist/dashboard/app.js']) {
    assert.ok(files.includes(need), `the tarball lacks ${need}`);
  }
  const workshop = files.filter((f) => /^(src|test|bench|scripts|demo|\.ci|test-artifacts)\//.test(f) || f.endsWith('.ts') && !f.endsWith('.d.ts'));
  assert.deepEqual(workshop, [], 'sources, tests, benchmarks and CI stay out of the package');
  const pkg = JSON.parse(readFileSync(join(dir, 'app/node_modules/membrane/package.json'), 'utf8'));
  assert.equal(pkg.private, undefined, 'publishable');
  assert.equal(pkg.exports['.'].types, './dist/types/index.d.ts');
});

test('a plain .mjs imports it and runs a wasm call, a JS, a TypeScript and a Python snippet', () => {
  const app = join(dir, 'app');
  writeFileSync(
    join(app, 'main.mjs'),
    `import { createEngine, SandboxError } from 'membrane';
import { readFileSync } from 'node:fs';
// (module (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add))
const add = new Uint8Array([0,97,115,109,1,0,0,0,1,7,1,96,2,127,127,1,127,3,2,1,0,7,7,1,3,97,100,100,0,0,10,9,1,7,0,32,0,32,1,106,11]);
const engine = createEngine();
const r = await engine.run(add, { invoke: 'add', args: [40, 2] });
const echo = await engine.run(readFileSync(new URL('./node_modules/membrane/commands/bin/echo.wasm', import.meta.url)), { argv: ['hello', 'consumer'] });
const js = await engine.exec({ language: 'js', code: 'console.log([1, 2, 3].map((x) => x * 2).join(","))' });
const ts = await engine.exec({ language: 'ts', code: 'interface P { x: number } const p: P = { x: 21 }; p.x * 2' });
const py = await engine.exec({ language: 'python', code: 'print(sum(range(10)))' });
await engine.close();
console.log(JSON.stringify({ add: r.result, echo: echo.stdout, js: js.ok ? js.stdout : js.error, ts: ts.ok ? ts.result : ts.error, py: py.ok ? py.stdout : py.error, err: typeof SandboxError }));
`,
  );
  const r = spawnSync(process.execPath, ['main.mjs'], { cwd: app, env, encoding: 'utf8', timeout: 180_000 });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout.trim().split('\n').pop());
  assert.equal(out.add, 42);
  assert.equal(out.echo, 'hello consumer\n');
  assert.equal(out.js, '2,4,6\n');
  assert.equal(out.ts, 42, JSON.stringify(out.ts));
  assert.equal(out.py, '45\n');
  assert.equal(out.err, 'function');
});

test('a strict NodeNext TypeScript consumer type-checks with skipLibCheck off', () => {
  const app = join(dir, 'app');
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noUncheckedIndexedAccess: true, exactOptionalPropertyTypes: true, skipLibCheck: false, noEmit: true, types: ['node'] }, files: ['consumer.ts'] }),
  );
  writeFileSync(
    join(app, 'consumer.ts'),
    `import { createEngine, SandboxError, type RunResult, type EngineOptions, type ExecOutcome } from 'membrane';
const options: EngineOptions = {};
const engine = createEngine(options);
export async function main(bytes: Uint8Array): Promise<number> {
  const r: RunResult = await engine.run(bytes, { invoke: 'add', args: [1, 2], profile: 'compute' });
  const e: ExecOutcome = await engine.exec({ language: 'js', code: 'console.log(1)' });
  if (!r.ok && r.error) throw new SandboxError(r.error.code, r.error.message);
  await engine.close();
  return r.fuelUsed + (e.ok ? 1 : 0);
}
`,
  );
  const tsc = join(repo, 'node_modules/typescript/bin/tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: app, env, encoding: 'utf8' });
  assert.equal(r.status, 0, `tsc reported:\n${r.stdout}${r.stderr}`);
});

test('npx membrane runs a module from the consumer', () => {
  const app = join(dir, 'app');
  const npx = join(dirname(npmCli), 'npx-cli.js');
  const r = spawnSync(process.execPath, [npx, '--no-install', 'membrane', 'run', 'node_modules/membrane/commands/bin/echo.wasm', '--', 'from', 'npx'], { cwd: app, env, encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, 'from npx\n');
});

test('a script that never closes its engine exits on its own', () => {
  const app = join(dir, 'app');
  writeFileSync(
    join(app, 'no-close.mjs'),
    `import { createEngine } from 'membrane';
const engine = createEngine();
const r = await engine.exec({ language: 'js', code: 'console.log(6 * 7)' });
console.log(r.stdout.trim());
`,
  );
  const r = spawnSync(process.execPath, ['no-close.mjs'], { cwd: app, env, encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.signal, null, 'still running after 120 s: idle workers keep the process alive');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, '42\n');
});

test('npx membrane --version and run --help answer and exit 0', () => {
  const app = join(dir, 'app');
  const npx = join(dirname(npmCli), 'npx-cli.js');
  const version = spawnSync(process.execPath, [npx, '--no-install', 'membrane', '--version'], { cwd: app, env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(version.status, 0, version.stderr);
  const pkg = JSON.parse(readFileSync(join(app, 'node_modules/membrane/package.json'), 'utf8'));
  assert.ok(version.stdout.includes(pkg.version), version.stdout);
  const help = spawnSync(process.execPath, [npx, '--no-install', 'membrane', 'run', '--help'], { cwd: app, env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(help.status, 0, help.stderr);
  assert.match(help.stdout, /--timeout/);
});

test('nothing is written into node_modules at run time', () => {
  const now = listFiles(join(dir, 'app/node_modules'));
  const changed = [...new Set([...snapshot.keys(), ...now.keys()])].filter((f) => snapshot.get(f) !== now.get(f));
  assert.deepEqual(changed, []);
});
