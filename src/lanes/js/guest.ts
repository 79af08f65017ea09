/**
 * The guest-side half of the JS lane's interpreter: the prelude evaluated into every fresh
 * context before the snippet, and the host's readers of what it returns.
 *
 * The prelude installs `console` and returns `{ setContext, installPowers, stringify, describe }`,
 * which the host keeps as a handle — they are never globals, so the snippet cannot see or replace them. They
 * capture the intrinsics they use (`JSON`, `String`, `Object.freeze`, …) before the snippet runs;
 * a snippet that later mutates prototypes can only distort its own output. Everything here runs
 * inside QuickJS and is metered like the snippet once the call has begun.
 *
 * Powers: `installPowers(caps)` defines one global per granted cap (`vfs`, `commands`, `exec`,
 * `kv`, `queue`, `secrets`, `llm`, `browse`, `tcp`/`udp`/`tls`, and `fetch` for `net`) whose functions are plain QuickJS
 * functions around the host function `power(name, argsJson) → answerJson` (never a global). A
 * refused power throws an `Error` named `MembraneError` with `code` (DESIGN §4) and a fixed
 * message; no host detail crosses. A granted embedder host cap (`{ cap, global, fns }`, DESIGN §9)
 * becomes the global `global` (`acme_orders`) whose functions take one JSON value and return a
 * promise of the host function's answer, like `fetch`.
 *
 * Bounds: nothing larger than its cap is handed to the host — console writes stop at what is left
 * of the stream's output limit (the host answers each write with it), the result's JSON at
 * MAX_RESULT_CHARS, an exception's name, message and stack text at report.ts's bounds (cut inside
 * QuickJS with a `slice` captured before the snippet ran) — so a snippet cannot make
 * the host copy its whole linear memory.
 *
 * Does not protect against: a snippet whose own `toJSON` or getters run during serialization —
 * that is its code, bounded by fuel and the deadline like the rest of it.
 */

import type { QuickJSContext, QuickJSHandle } from 'quickjs-emscripten-core';
import { POWER_ERROR_MESSAGES } from '../powers.ts';
import { MAX_EXCEPTION_MESSAGE_BYTES, MAX_EXCEPTION_NAME_CHARS, MAX_STACK_TEXT_CHARS } from './report.ts';

/** Largest result (serialized JSON) passed back to the host; larger results are dropped. */
export const MAX_RESULT_CHARS = 4 * 1024 * 1024;
/** Longest error message kept. */
export const MAX_MESSAGE_CHARS = 2000;

export const GUEST_PRELUDE = `(write, power, outputLimit) => {
  'use strict';
  const MAX_RESULT = ${MAX_RESULT_CHARS}, MAX_MESSAGE = ${MAX_MESSAGE_CHARS};
  const MAX_NAME = ${MAX_EXCEPTION_NAME_CHARS}, MAX_EMESSAGE = ${MAX_EXCEPTION_MESSAGE_BYTES}, MAX_STACK = ${MAX_STACK_TEXT_CHARS};
  const cut = Function.prototype.call.bind(String.prototype.slice);
  const S = String, JS = JSON.stringify, JP = JSON.parse, freeze = Object.freeze, keys = Object.keys;
  const define = Object.defineProperty, ErrorCtor = Error, PromiseCtor = Promise;
  const MESSAGES = freeze(${JSON.stringify(POWER_ERROR_MESSAGES)});
  const call = (name, args) => {
    const a = JP(power(name, JS(args)));
    if (a.ok) return a.value;
    const e = new ErrorCtor('membrane ' + name + ': ' + (MESSAGES[a.code] ?? 'failed') + ' (' + S(a.code) + ')');
    define(e, 'name', { value: 'MembraneError', writable: true, configurable: true, enumerable: false });
    define(e, 'code', { value: S(a.code), writable: false, configurable: false, enumerable: true });
    throw e;
  };
  const later = (f) => new PromiseCtor((resolve) => resolve(f()));
  const response = (r) => {
    const body = typeof r.body === 'string' ? r.body : '';
    return freeze({
      status: r.status, ok: r.status >= 200 && r.status < 300, headers: freeze(r.headers ?? {}),
      ...(typeof r.bodyBase64 === 'string' ? { bodyBase64: r.bodyBase64 } : {}),
      text: () => later(() => body), json: () => later(() => JP(body)),
    });
  };
  const runArgs = (name, argv, o) => [name, argv === undefined ? [] : argv, o === undefined || o === null ? {} : { stdin: o.stdin }];
  const POWERS = {
    vfs: () => ['vfs', {
      read: (p) => call('vfs.read', [p]), write: (p, text) => { call('vfs.write', [p, text]); },
      list: (prefix) => call('vfs.list', [prefix === undefined ? '/' : prefix]), delete: (p) => call('vfs.delete', [p]),
      query: (sql) => call('vfs.query', [sql]),
    }],
    commands: () => ['commands', { run: (name, argv, o) => call('commands.run', runArgs(name, argv, o)) }],
    exec: () => ['exec', { run: (name, argv, o) => call('exec.run', runArgs(name, argv, o)) }],
    kv: () => ['kv', { get: (k) => call('kv.get', [k]), put: (k, v) => { call('kv.put', [k, v]); }, delete: (k) => call('kv.delete', [k]), list: (p) => call('kv.list', [p === undefined ? '' : p]) }],
    queue: () => ['queue', { push: (q, m) => { call('queue.push', [q, m]); }, pop: (q) => call('queue.pop', [q]), len: (q) => call('queue.len', [q]) }],
    secrets: () => ['secrets', { sign: (n, m) => call('secrets.sign', [n, m]) }],
    net: () => ['fetch', (url, init) => later(() => {
      const o = init ?? {};
      return response(call('net.fetch', [{ url: S(url), method: o.method, headers: o.headers, body: o.body }]));
    })],
    llm: () => ['llm', { complete: (req) => later(() => call('llm.complete', [req])) }],
    browse: () => ['browse', { fetch: (url) => later(() => call('browse.fetch', [S(url)])) }],
    tcp: () => ['tcp', { request: (t, d) => call('tcp.request', [t, d === undefined ? '' : d]) }],
    udp: () => ['udp', { request: (t, d) => call('udp.request', [t, d === undefined ? '' : d]) }],
    tls: () => ['tls', { request: (t, d) => call('tls.request', [t, d === undefined ? '' : d]) }],
  };
  const show = (v) => {
    if (typeof v === 'string') return v;
    if (v instanceof ErrorCtor) { try { return S(v.name) + ': ' + S(v.message); } catch { return 'Error'; } }
    if (v !== null && typeof v === 'object') {
      try { const s = JS(v); if (s !== undefined) return s; } catch {}
    }
    try { return S(v); } catch { return '[value]'; }
  };
  const text = (v) => { try { return typeof v === 'string' ? v : S(v); } catch { return ''; } };
  const line = (args) => { let out = ''; for (let i = 0; i < args.length; i++) out += (i ? ' ' : '') + show(args[i]); return out + '\\n'; };
  // What is left of each stream (the host answers every write with it): never hand the host more.
  const room = [0, outputLimit, outputLimit];
  const emit = (fd, s) => {
    const r = room[fd];
    room[fd] = r <= 0 ? write(fd, '', s.length) : s.length <= r ? write(fd, s, 0) : write(fd, s.slice(0, r), s.length - r);
  };
  const log = (...a) => { emit(1, line(a)); };
  const error = (...a) => { emit(2, line(a)); };
  define(globalThis, 'console', { value: freeze({ log, info: log, debug: log, error, warn: error }), writable: true, configurable: true, enumerable: false });
  const deepFreeze = (v) => { if (v !== null && typeof v === 'object') { freeze(v); for (const k of keys(v)) deepFreeze(v[k]); } return v; };
  return freeze({
    installPowers(capsJson) {
      for (const cap of JP(capsJson)) {
        if (cap !== null && typeof cap === 'object') {
          const fns = {};
          for (const f of cap.fns) {
            const power = cap.cap + '.' + f;
            define(fns, f, { value: (args) => later(() => call(power, [args === undefined ? null : args])), enumerable: true });
          }
          define(globalThis, cap.global, { value: freeze(fns), writable: true, configurable: true, enumerable: false });
          continue;
        }
        const make = POWERS[cap];
        if (make === undefined) continue;
        const [name, value] = make();
        define(globalThis, name, { value: freeze(value), writable: true, configurable: true, enumerable: false });
      }
    },
    setContext(json) {
      define(globalThis, 'context', { value: json === '' ? undefined : deepFreeze(JP(json)), writable: false, configurable: false, enumerable: false });
    },
    stringify(v) {
      const t = typeof v;
      if (t === 'undefined') return '';
      if (t === 'function' || t === 'symbol') return '!the result is a ' + t + ', which JSON cannot carry';
      let s;
      try { s = JS(v); } catch (e) { return ('!the result is not JSON-serializable: ' + show(e)).slice(0, MAX_MESSAGE); }
      if (s === undefined) return '!the result is not JSON-serializable';
      return s.length > MAX_RESULT ? '!the result is larger than ' + MAX_RESULT + ' characters of JSON and was dropped' : '=' + s;
    },
    describe(e) {
      let isError = false;
      try { isError = e instanceof ErrorCtor; } catch {}
      const type = e === null ? 'null' : typeof e;
      let name = type, message = '', stack = '';
      if (type === 'object' || type === 'function') {
        let n, m, s;
        try { n = e.name; } catch {}
        try { m = e.message; } catch {}
        try { s = e.stack; } catch {}
        if (isError || typeof m === 'string') {
          name = typeof n === 'string' && n !== '' ? n : isError ? 'Error' : type;
          message = m === undefined ? '' : text(m);
          stack = typeof s === 'string' ? s : '';
        } else {
          try { message = show(e); } catch { message = '[object]'; }
        }
      } else message = text(e);
      return [cut(name, 0, MAX_NAME), cut(message, 0, MAX_EMESSAGE), cut(stack, 0, MAX_STACK)];
    },
  });
}`;

/**
 * The message of an error thrown by our own code (the TypeScript stripper) — plain properties,
 * read without the prelude. A snippet's exceptions are read by report.ts through `describe`.
 */
export function describeError(ctx: QuickJSContext, err: QuickJSHandle, _helpers: null): { name: string; message: string } {
  try {
    const m = ctx.getProp(err, 'message');
    const message = ctx.typeof(m) === 'string' ? ctx.getString(m) : 'error';
    m.dispose();
    return { name: '', message: message.slice(0, MAX_MESSAGE_CHARS) };
  } finally {
    err.dispose();
  }
}

/** Serialize `value` inside QuickJS and parse it on the host; problems become warnings. */
export function readResult(ctx: QuickJSContext, helpers: QuickJSHandle, value: QuickJSHandle, warnings: string[], set: (v: unknown) => void): void {
  const fn = ctx.getProp(helpers, 'stringify');
  const r = ctx.callFunction(fn, ctx.undefined, value);
  fn.dispose();
  if (r.error) {
    r.error.dispose();
    warnings.push('the result could not be serialized');
    return;
  }
  const s = ctx.typeof(r.value) === 'string' ? ctx.getString(r.value) : '';
  r.value.dispose();
  if (s === '') return;
  if (s.startsWith('!')) {
    warnings.push(s.slice(1, 1 + MAX_MESSAGE_CHARS));
    return;
  }
  if (s.length > MAX_RESULT_CHARS) {
    warnings.push(`the result is larger than ${MAX_RESULT_CHARS} characters of JSON and was dropped`);
    return;
  }
  set(JSON.parse(s.slice(1)));
}
