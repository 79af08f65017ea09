/**
 * The CPython lane's driver: the Python that `python -I -S -c DRIVER` runs inside the WASI guest
 * before any snippet — the lane's Python (common-py.ts: the `membrane` module and
 * the outcome report), the port transport, and the runner.
 *
 * Owns: the driver's side of the lane protocol over the port (src/wasi/port.ts) — each request is
 * one tag byte and JSON: `N` asks for the snippet (the answer `{code, context, powers,
 * maxFrame, messages, maxResult, stream}` starts the snippet's fuel count), `P` a power request
 * (`{power, args}`), `D` the outcome (common-py's JSON). The runner compiles the snippet as
 * `<snippet>` (dedented) with PyCF_ALLOW_TOP_LEVEL_AWAIT; a last
 * expression statement becomes the result (none when the source ends in `;`); a snippet with a
 * top-level `await` (or one that names asyncio) gets an asyncio loop whose selector only sleeps
 * (WASI has no socket pair for asyncio's self-pipe, and nothing here has a descriptor to watch).
 * Invariant: the snippet's globals are a fresh dict holding only `context`, the granted host caps
 * and builtins; the driver's own names live in its module, never in the snippet's globals, and
 * the interpreter serves exactly one snippet, then exits.
 *
 * Does not protect against: a snippet that writes to the port itself — it can say nothing the
 * `membrane` module could not (the host checks every request as the snippet's).
 */

import { COMMON_PY } from './common-py.ts';
import { PORT_FD } from '../../wasi/port.ts';

const RUNNER_PY = String.raw`
import ast as _ast

_PORT = ${PORT_FD}
_CO_COROUTINE = 0x80

def _readn(n):
    chunks = []
    while n > 0:
        b = os.read(_PORT, min(n, 1 << 20))
        if not b: raise OSError('the lane port closed')
        chunks.append(b)
        n -= len(b)
    return b''.join(chunks)

def _exchange(tag, data):
    view = memoryview(tag + data)
    while len(view):
        view = view[os.write(_PORT, view):]
    return _readn(int.from_bytes(_readn(4), 'little'))

def _compile(code):
    text = _textwrap.dedent(code)
    tree = compile(text, _SNIPPET, 'exec', _ast.PyCF_ONLY_AST | _ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    quiet = text.rstrip().endswith(';')
    last = tree.body[-1] if tree.body else None
    if isinstance(last, _ast.Expr) and not quiet:
        target = _ast.Name(id='_membrane_last_', ctx=_ast.Store())
        tree.body[-1] = _ast.copy_location(_ast.Assign(targets=[target], value=last.value), last)
        _ast.fix_missing_locations(tree)
    return compile(tree, _SNIPPET, 'exec', _ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)

def _asyncio_ready():
    # asyncio's own loop needs a socket pair to wake itself, which WASI does not have. Nothing here
    # ever has a descriptor to watch (no sockets exist), so a loop whose selector only sleeps —
    # through WASI's clock, bounded by the call's deadline — runs every timer, task and future.
    import asyncio, selectors, time
    class _Selector(selectors.BaseSelector):
        def __init__(self): self._map = {}
        def register(self, fileobj, events, data=None): raise OSError('no descriptor can be watched in this sandbox')
        def unregister(self, fileobj): raise KeyError(fileobj)
        def select(self, timeout=None):
            time.sleep(86400 if timeout is None else max(0, timeout))
            return []
        def get_map(self): return self._map
        def close(self): pass
    class _Loop(asyncio.SelectorEventLoop):
        def _make_self_pipe(self): pass
        def _close_self_pipe(self): pass
        def _write_to_self(self): pass
    class _Policy(asyncio.DefaultEventLoopPolicy):
        def new_event_loop(self): return _Loop(_Selector())
    asyncio.set_event_loop_policy(_Policy())
    return asyncio

def _run(req):
    powers = req['powers']
    sys.modules['membrane'] = _membrane_module(powers, req['maxFrame'], req['messages'], lambda data: _exchange(b'P', data))
    g = {'__name__': '__main__', '__builtins__': __builtins__, 'context': _freeze(req['context'])}
    for c in powers:
        if isinstance(c, dict): g[c['global']] = getattr(sys.modules['membrane'], c['global'])
    # Write-through always: what a snippet printed before a wall stopped it is in its result.
    _write_through()
    # The port is the interpreter's stdin: the snippet reads an empty one.
    sys.stdin = sys.__stdin__ = io.StringIO('')
    try:
        code = _compile(req['code'])
    except BaseException as e:
        return _failure(e, _Source(req['code']), True)
    try:
        coroutine = code.co_flags & _CO_COROUTINE
        if coroutine or 'asyncio' in req['code']:
            asyncio = _asyncio_ready()
            if coroutine: asyncio.run(eval(code, g))
        if not coroutine: exec(code, g)
    except BaseException as e:
        return _failure(e, _Source(req['code']), False)
    return _success(g.pop('_membrane_last_', None), req['maxResult'])

def _prewarm():
    # The first compile from an AST, the first dedent and the first JSON round trip each pay a
    # one-time set-up inside CPython (tens of ms): paid here, at boot, before any snippet exists.
    exec(_compile('  _x = [1]\n  _x'), {'__builtins__': __builtins__})
    _Source('x').column(1, 0)
    json.loads(_success({'a': (1, 'b')}, 1 << 10))
    _membrane_module([], 1, {}, None)

_prewarm()
_exchange(b'D', _run(json.loads(_exchange(b'N', b''))).encode())
# Nothing of the snippet runs after its outcome: no finalizers, no atexit hooks.
os._exit(0)
`;

/** `python -I -S -c DRIVER`: the driver, whole. */
export const DRIVER_PY = COMMON_PY + RUNNER_PY;
