// Pyodide's half of running one snippet (plain JavaScript holding Python source, imported by
// child.mjs; bundled into dist/python-child.mjs): the shared Python (common-py.mjs: the membrane
// module and the outcome report), then `_membrane_run(code, context_json, powers_json, max_frame,
// messages_json, max_result, stream)`. The snippet is compiled as `<snippet>` with
// PyCF_ALLOW_TOP_LEVEL_AWAIT and Pyodide's last-expression rewrite (its value is the result).
// Without a top-level `await` it runs at once and the JSON outcome (a str) is returned; with one,
// a Task on Pyodide's event loop is returned, whose result is that JSON (child.mjs awaits it).
// Powers travel through `/dev/membrane` (child.mjs's `_dev_exchange`).
//
// Invariant: the snippet's globals are a fresh dict holding only `context`, the granted host caps
// and builtins; see common-py.mjs for what reading an exception may run.
//
// Does not protect against: what common-py.mjs does not; child.mjs removes the paths this
// process knows from everything reported.

import { COMMON_PY } from './common-py.mjs';

/** The shared Python (common-py.mjs), then Pyodide's runner. */
export const DRIVER_PY = COMMON_PY + String.raw`
import asyncio
from pyodide.code import CodeRunner
import ast as _ast, inspect as _inspect

def _membrane_run(code, context_json, powers_json, max_frame, messages_json, max_result, stream):
    powers = json.loads(powers_json)
    sys.modules['membrane'] = _membrane_module(powers, max_frame, json.loads(messages_json), _dev_exchange)
    g = {'__name__': '__main__', '__builtins__': __builtins__, 'context': _freeze(json.loads(context_json))}
    for c in powers:
        if isinstance(c, dict): g[c['global']] = getattr(sys.modules['membrane'], c['global'])
    if stream: _write_through()
    src = _Source(code)
    try:
        runner = CodeRunner(code, filename=_SNIPPET, flags=_ast.PyCF_ALLOW_TOP_LEVEL_AWAIT).compile()
    except BaseException as e:
        return _failure(e, src, True)
    if runner.code is not None and runner.code.co_flags & _inspect.CO_COROUTINE:
        async def main():
            try:
                value = await runner.run_async(g)
            except BaseException as e:
                return _failure(e, src, False)
            return _success(value, max_result)
        return asyncio.ensure_future(main())
    try:
        value = runner.run(g)
    except BaseException as e:
        return _failure(e, src, False)
    return _success(value, max_result)
`;

/**
 * Replace every occurrence of the host paths this process knows (the Pyodide package, this
 * script's directory, the prepared wasm's directory) in a reported string.
 */
export function hostPathScrubber(paths) {
  const known = [...new Set(paths.filter((p) => typeof p === 'string' && p.length > 1))].sort((a, b) => b.length - a.length);
  const scrub = (s) => {
    let out = s;
    for (const p of known) out = out.split(p).join('<host>');
    return out;
  };
  /** Scrub every string in a JSON-like value (the outcome). */
  const deep = (v) => {
    if (typeof v === 'string') return scrub(v);
    if (Array.isArray(v)) return v.map(deep);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, deep(x)]));
    return v;
  };
  return deep;
}
