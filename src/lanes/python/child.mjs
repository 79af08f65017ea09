// The process one Python snippet runs in (plain JavaScript, so it starts without a TypeScript
// loader; scripts/bundle.mjs copies it to dist/ beside the bundles). DESIGN §8, layers 1–3 and 5
// live here; layer 4 (this process's own confinement) is the parent's job (spawn.ts).
//
// Owns: loading Pyodide from its package directory (never the network: no package is ever
// loaded), hardening it before any guest code exists, and running exactly ONE snippet. Speaks the
// versioned protocol of protocol.ts over the IPC channel: `{ v: 1, kind: 'ready' }` once
// hardened, then one `{ v: 1, kind: 'exec', ... }` in, `output` messages while it runs when the
// exec asks to stream (child-output.mjs), one `{ v: 1, kind: 'result', ... }` out, then exit. A
// child is never reused. The snippet itself is compiled and run, and its exception read, by the
// Python driver in child-driver.mjs; a top-level-await snippet is a task on Pyodide's event loop,
// awaited here, with a timer at the deadline (nothing refills fuel while it waits).
//
// Invariant, before any guest code runs: `jsglobals` is an empty null-prototype object; the `js`
// and `pyodide_js` modules are unregistered and absent from `sys.modules` (no module holds a
// JsProxy); emscripten's `_emscripten_system` import returns -1; the heap cannot grow past the
// call's memory cap (`emscripten_resize_heap` refuses, and the call then ends MEMORY_LIMIT even if
// the snippet catches the MemoryError); the process's resident set cannot grow by more than the
// call's memory (checked every millisecond of running Python); JavaScript errors carry no stack
// frames and `Error.prepareStackTrace`/`captureStackTrace`/`stackTraceLimit` are fixed, so no
// V8 CallSite or host path reaches Python; the wasm is the fuel-instrumented module
// (when given) whose refill enforces the call's budget and deadline. The process was started
// with `--disallow-code-generation-from-strings`, so a host `Function`/`eval` reached through a
// proxy throws. Errors carry the snippet's frames only, never a host stack or host path (the
// paths this process knows are replaced in everything it reports).
//
// Powers (layer 6): when the call grants caps with lane powers, a character device
// `/dev/membrane` exists in Pyodide's in-memory FS and the `membrane` module has one attribute
// per such cap; a power call writes its JSON request to the device and reads the answer, and the
// device's read blocks this process on the power pipe (fd 4) until the parent's power server has
// answered: bytes only — no JS object ever reaches Python. Waits on the pipe are bounded by the
// call's deadline (a non-blocking pipe is polled in 1 ms sleeps; a blocking one by the parent's
// deadline answer and its kill). A granted embedder host cap (`{cap, global, fns}`) is a global
// of that name (also `membrane.<global>`) whose functions take one JSON value and return one.
//
// Does not protect against: code that never reaches a fuel refill (a long host-side JS call, or
// fuel off) — the parent SIGKILLs at the deadline plus a grace; JS objects reachable from a
// `to_js` value (Object, Function) — they are harmless only because code generation is off and
// this process is confined.

import { constants as fsConstants, readFileSync, readSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { DRIVER_PY, hostPathScrubber } from './child-driver.mjs';
import { createOutput } from './child-output.mjs';

// The collector for the memory guard, made in a context of its own: never on this global.
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc');

const [pyodideDir, wasmFile] = process.argv.slice(2);
const FIRST_CHUNK = 10_000;
const RUN_CHUNK = 1_000_000;
const BOOT_CHUNK = 1_000_000_000;
const FUEL_GLOBAL = '__membrane_fuel';
/** Largest result (its JSON) handed to the parent, as in the JS lane; a larger one is dropped with a warning. */
const MAX_RESULT_CHARS = 4 * 1024 * 1024;

// Pyodide's NODEFS.staticInit reads fs flag constants through process.binding, which Node's
// permission model refuses; hand it the same constants. NODEFS itself is never mounted.
const realBinding = process.binding;
process.binding = (name) => (name === 'constants' ? { fs: fsConstants } : realBinding.call(process, name));

/** The work and time walls: one refill contract for boot (unbounded) and the call (bounded). */
// `charged`: fuel the snippet's commands spent (their answers carry it) — one budget for both.
const meter = { global: null, granted: 0, charged: 0, budget: Infinity, deadline: Infinity, next: BOOT_CHUNK, chunk: BOOT_CHUNK, fault: null };
class Stop extends Error {}
function refill(current) {
  const c = Number(current);
  if (meter.fault !== null) throw new Stop(meter.fault);
  const now = performance.now();
  if (now > meter.deadline) throw new Stop((meter.fault = 'TIMEOUT'));
  if (now >= resident.nextCheck && overResident(now)) throw new Stop((meter.fault = 'MEMORY_LIMIT'));
  output.tick(now);
  if (meter.granted + meter.charged - c > meter.budget) throw new Stop((meter.fault = 'FUEL_EXHAUSTED'));
  const give = Math.min(Math.max(meter.next, -c), meter.budget - meter.granted - meter.charged);
  meter.next = Math.min(meter.next * 2, meter.chunk);
  meter.granted += give;
  return current + BigInt(give);
}
function fuelUsed() {
  return (meter.global === null ? 0 : Math.max(0, meter.granted - Number(meter.global.value))) + meter.charged;
}
/** A command's charge, at the start of its answer (`{"fuel":N,`, written by the host). */
function answerFuel(answer) {
  const m = /^\{"fuel":(\d{1,16}),/.exec(answer.subarray(0, 40).toString('latin1'));
  return m ? Number(m[1]) : 0;
}

/**
 * The power bridge: frames on fd 4, one call at a time. Up: a 4-byte big-endian length, the
 * snippet's fuel used so far (8-byte big-endian float, from the meter — never from the guest's
 * bytes), then the JSON request; down: a 4-byte length, then the JSON answer.
 */
const POWER_FD = 4;
const bridge = { max: 0, broken: false };
const pause = new Int32Array(new SharedArrayBuffer(4));
function pipeIo(op) {
  for (;;) {
    try {
      return op();
    } catch (e) {
      if (e?.code !== 'EAGAIN') throw e;
    }
    if (performance.now() > meter.deadline) throw new Error('deadline');
    Atomics.wait(pause, 0, 0, 1);
  }
}
function readExact(n) {
  const b = Buffer.alloc(n);
  for (let off = 0; off < n; ) {
    const got = pipeIo(() => readSync(POWER_FD, b, off, n - off, null));
    if (got === 0) throw new Error('closed');
    off += got;
  }
  return b;
}
const DEADLINE_SKEW_MS = 5;
/** One power call: request bytes up, answer bytes (JSON) back; never throws. A call that ran into the deadline ends the snippet TIMEOUT. */
function hostCall(request) {
  try {
    return exchange(request);
  } finally {
    // DEADLINE_SKEW_MS: the host's Date.now() and this clock may disagree by a tick.
    if (meter.fault === null && performance.now() > meter.deadline - DEADLINE_SKEW_MS) meter.fault = 'TIMEOUT';
  }
}
function exchange(request) {
  const failed = () => Buffer.from(JSON.stringify({ ok: false, code: performance.now() > meter.deadline ? 'TIMEOUT' : 'UNAVAILABLE' }));
  if (bridge.broken) return failed();
  if (meter.fault === null && overResident(performance.now())) meter.fault = 'MEMORY_LIMIT';
  if (meter.fault !== null) return Buffer.from(JSON.stringify({ ok: false, code: meter.fault === 'TIMEOUT' ? 'TIMEOUT' : 'UNAVAILABLE' }));
  if (request.length > bridge.max) return Buffer.from('{"ok":false,"code":"TOO_LARGE"}');
  try {
    const frame = Buffer.alloc(12 + request.length);
    frame.writeUInt32BE(request.length, 0);
    frame.writeDoubleBE(fuelUsed(), 4);
    request.copy(frame, 12);
    for (let off = 0; off < frame.length; ) off += pipeIo(() => writeSync(POWER_FD, frame, off, frame.length - off));
    const n = readExact(4).readUInt32BE(0);
    if (n > bridge.max) throw new Error('oversized answer');
    const answer = readExact(n);
    const charge = answerFuel(answer);
    if (charge > 0) {
      meter.charged += charge;
      // Nothing of the budget left: the snippet stops at its next refill.
      if (meter.fault === null && fuelUsed() >= meter.budget) meter.fault = 'FUEL_EXHAUSTED';
    }
    return answer;
  } catch {
    // A half-finished exchange leaves the pipe out of step: no later call uses it.
    bridge.broken = true;
    return failed();
  }
}
/** `/dev/membrane`: write a request, then read its answer to EOF (one exchange per open). */
function powerDevice(FS) {
  const dev = FS.makedev(64, 0);
  FS.registerDevice(dev, {
    open(stream) {
      stream.membrane = { chunks: [], bytes: 0, answer: null, pos: 0 };
    },
    close() {},
    write(stream, buffer, offset, length) {
      const st = stream.membrane;
      if (st.answer !== null) return 0;
      st.bytes += length;
      if (st.bytes <= bridge.max) st.chunks.push(Buffer.from(new Uint8Array(buffer.buffer, buffer.byteOffset + offset, length)));
      return length;
    },
    read(stream, buffer, offset, length) {
      const st = stream.membrane;
      if (st.answer === null) st.answer = st.bytes > bridge.max ? Buffer.from('{"ok":false,"code":"TOO_LARGE"}') : hostCall(Buffer.concat(st.chunks));
      const n = Math.min(length, st.answer.length - st.pos);
      new Uint8Array(buffer.buffer, buffer.byteOffset + offset, n).set(st.answer.subarray(st.pos, st.pos + n));
      st.pos += n;
      return n;
    },
  });
  FS.mkdev('/dev/membrane', 0o600, dev);
}

/** The space wall: the heap may grow only up to the call's cap (boot runs under the ceiling). */
const heap = { cap: Infinity, hit: false };
/** Set when the one exec arrives. */
let served = false;
/** A refused growth during the call is a stop: catching Python's MemoryError does not get past it. */
function heapRefused() {
  heap.hit = true;
  if (served && meter.fault === null) meter.fault = 'MEMORY_LIMIT';
}

/**
 * The rest of the space wall: what the snippet makes this process hold outside the wasm heap
 * (JavaScript copies made by pyodide.ffi.to_js and friends, V8's heap). During the call the
 * process's resident set may grow by at most the call's memory; it is read at most once per
 * `RESIDENT_CHECK_MS` of running Python, at each power call and before the answer, and a
 * reading over the limit is retried once after a full collection before it stops the call.
 */
const RESIDENT_CHECK_MS = 1;
const resident = { limit: Infinity, nextCheck: Infinity };
function overResident(now) {
  resident.nextCheck = now + RESIDENT_CHECK_MS;
  let rss = process.memoryUsage.rss();
  if (rss > resident.limit) {
    collect();
    rss = process.memoryUsage.rss();
  }
  return rss > resident.limit;
}

/**
 * No stack trace reaches guest code: JavaScript errors are reachable from Python (a JsException's
 * `js_error`, and from it the Error constructor), and a V8 stack names host files while
 * `Error.prepareStackTrace` would hand a Python callable V8 CallSite objects (host file names,
 * `getThis()` on wasm frames: Pyodide's own instance). So, before any guest code: no frames are
 * collected (`stackTraceLimit` 0) and the three hooks are fixed — not writable, not configurable.
 * A stack is then only "Name: message".
 */
function sealErrorStacks() {
  const fixed = (value) => ({ value, writable: false, enumerable: false, configurable: false });
  Object.defineProperty(Error, 'stackTraceLimit', fixed(0));
  Object.defineProperty(Error, 'prepareStackTrace', fixed(undefined));
  Object.defineProperty(Error, 'captureStackTrace', fixed(Error.captureStackTrace));
  // Nor can a hook be slipped in through a new prototype or a new static.
  Object.freeze(Error);
}

/** Captured output (capped per stream), streamed to the parent when the call asks (child-output.mjs). */
const output = createOutput((msg) => process.send(msg));

const { loadPyodide } = await import(pathToFileURL(`${pyodideDir}/pyodide.mjs`).href);
const factory = (await import(pathToFileURL(`${pyodideDir}/pyodide.asm.mjs`).href)).default;
const metered = wasmFile !== undefined && wasmFile !== '-';
const wasmModule = metered ? await WebAssembly.compile(readFileSync(wasmFile)) : null;

function createPyodideModule(settings) {
  const instantiateWasm = settings.instantiateWasm;
  settings.instantiateWasm = (imports, onSuccess) => {
    imports.env._emscripten_system = () => -1;
    const resize = imports.env.emscripten_resize_heap;
    imports.env.emscripten_resize_heap = (requested) => {
      if (requested >>> 0 > heap.cap) {
        heapRefused();
        return 0;
      }
      return resize(requested);
    };
    if (wasmModule !== null) {
      imports['membrane:fuel'] = { refill };
      // Pyodide's own hook instantiates the stock bytes it read; hand V8 the instrumented module.
      const real = WebAssembly.instantiate;
      WebAssembly.instantiate = async (_bytes, imps) => {
        WebAssembly.instantiate = real;
        const instance = await real.call(WebAssembly, wasmModule, imps);
        return { instance, module: wasmModule };
      };
    }
    return instantiateWasm(imports, (instance, module) => {
      const g = instance.exports[FUEL_GLOBAL];
      if (g instanceof WebAssembly.Global) meter.global = g;
      onSuccess(instance, module);
    });
  };
  return factory(settings);
}

const pyodide = await loadPyodide({
  indexURL: `${pyodideDir}/`,
  jsglobals: Object.create(null),
  env: { HOME: '/home/pyodide' },
  args: [],
  packages: [],
  fullStdLib: false,
  checkAPIVersion: true,
  createPyodideModule,
  stdin: () => null,
});
if (metered && meter.global === null) throw new Error('instrumented module lost its fuel counter');
sealErrorStacks();
pyodide._module.__emscripten_system = () => -1;
pyodide.setStdout(output.stdout);
pyodide.setStderr(output.stderr);
pyodide.unregisterJsModule('pyodide_js');
pyodide.unregisterJsModule('js');

// Python-side hardening and the runner. The runner's namespace is private (not __main__); every
// snippet gets a fresh globals dict holding only `context` and builtins.
pyodide.runPython(String.raw`
import sys, json, types, traceback
for _n in list(sys.modules):
    _m = sys.modules[_n]
    if _n in ('js', 'pyodide_js') or type(_m).__name__ == 'JsProxy':
        del sys.modules[_n]
for _m in list(sys.modules.values()):
    for _a in ('js', 'pyodide_js', '_js', 'jsglobals'):
        if _a in getattr(_m, '__dict__', {}):
            try: delattr(_m, _a)
            except Exception: pass
import os
os.environ.clear()
def _dev_exchange(data):
    fd = os.open('/dev/membrane', os.O_RDWR)
    try:
        view = memoryview(data)
        while len(view):
            view = view[os.write(fd, view):]
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b: break
            chunks.append(b)
    finally:
        os.close(fd)
    return b''.join(chunks)
`);
pyodide.runPython(DRIVER_PY);
const run = pyodide.globals.get('_membrane_run');
pyodide.runPython('del _membrane_run');

/** Known host paths, removed from everything the child reports. */
const scrub = hostPathScrubber([pyodideDir, dirname(fileURLToPath(import.meta.url)), metered ? dirname(wasmFile) : null]);

/** Answer the one exec (once): the outcome, unless a wall stopped the snippet, then exit. */
let answered = false;
function answer(m, text) {
  if (answered) return;
  answered = true;
  let outcome;
  try {
    outcome = typeof text === 'string' ? JSON.parse(text) : { ok: false, kind: 'host' };
  } catch {
    outcome = { ok: false, kind: 'host' };
  }
  if (meter.fault === null && overResident(performance.now())) meter.fault = 'MEMORY_LIMIT';
  if (meter.fault === 'MEMORY_LIMIT') outcome = { ok: false, kind: 'MEMORY_LIMIT', message: heap.hit ? 'the heap would pass the cap' : 'the interpreter process grew by more than the call\'s memory' };
  else if (meter.fault !== null) outcome = { ok: false, kind: meter.fault };
  else if (heap.hit && !outcome.ok) outcome = { ok: false, kind: 'MemoryError', message: outcome.message ?? outcome.exception?.message };
  output.flush();
  process.send({ v: 1, kind: 'result', id: m.id, outcome: outcome.ok ? outcome : scrub(outcome), ...output.collect(), fuelUsed: fuelUsed(), metered }, () => process.exit(0));
}

process.on('message', (m) => {
  if (served || m === null || typeof m !== 'object' || m.v !== 1 || m.kind !== 'exec') return;
  served = true;
  output.configure({ id: m.id, limit: m.outputLimitBytes, stdout: m.streamStdout, stderr: m.streamStderr });
  heap.cap = m.memoryBytes;
  resident.limit = process.memoryUsage.rss() + m.memoryBytes;
  resident.nextCheck = performance.now() + RESIDENT_CHECK_MS;
  meter.budget = m.fuel;
  meter.chunk = RUN_CHUNK;
  meter.next = FIRST_CHUNK;
  meter.granted = 0;
  meter.charged = 0;
  if (meter.global !== null) meter.global.value = 0n;
  // The host's deadline instant (the power server answers TIMEOUT at it), else the budget from now.
  const left = Number.isFinite(m.deadlineAt) ? Math.min(m.timeoutMs, Math.max(0, m.deadlineAt - Date.now())) : m.timeoutMs;
  meter.deadline = performance.now() + left;
  bridge.max = m.maxFrameBytes;
  // A wall that stops Python inside an event-loop callback (top-level await) unwinds to here.
  // A stray rejection the snippet caused is not an end; a wall's is.
  process.on('uncaughtException', () => answer(m, null));
  process.on('unhandledRejection', () => meter.fault !== null && answer(m, null));
  let started = null;
  try {
    if (m.powers.length > 0) powerDevice(pyodide.FS);
    // Strings, numbers and booleans only cross into Python (a JS array would arrive as a JsProxy).
    started = run(m.code, m.contextJson, JSON.stringify(m.powers), m.maxFrameBytes, m.powerMessages, MAX_RESULT_CHARS, m.streamStdout === true || m.streamStderr === true);
  } catch {
    started = null;
  }
  if (started === null || typeof started === 'string') return answer(m, started);
  // Top-level await: the snippet is a task on Pyodide's event loop, which runs on this one. While
  // it waits nothing refills fuel, so the deadline is a timer here too.
  const timer = setTimeout(() => {
    if (meter.fault === null) meter.fault = 'TIMEOUT';
    answer(m, null);
  }, Math.max(0, meter.deadline - performance.now()) + 1);
  Promise.resolve(started).then(
    (text) => answer(m, text),
    () => answer(m, null),
  ).finally(() => clearTimeout(timer));
});
process.on('disconnect', () => process.exit(0));
process.send({ v: 1, kind: 'ready', metered });
