/**
 * The Python the CPython lane's driver runs before a snippet: the `membrane` module and
 * the snippet's outcome report (a TypeScript string holding Python source, joined into driver.ts).
 *
 * Owns: `_freeze`/`_thaw` (the read-only `context`), `_membrane_module(powers, max_frame,
 * messages, exchange)` — one attribute per granted cap, each power a JSON request handed to
 * `exchange` (bytes in, the answer's bytes out: the lane's transport) — and the outcome report:
 * `_failure`/`_success` produce the JSON outcome `{ ok, result? | kind, exception? }`. An uncaught
 * exception's report keeps only frames whose code is the snippet's (`<snippet>`), deepest first,
 * at most _MAX_FRAMES, with the snippet's own lines and 1-based columns; `traceback` is the text
 * Python would print for those frames with the chain of causes and contexts (at most _MAX_CHAIN,
 * cycles cut), at most _MAX_TRACEBACK characters (its end kept). SystemExit stays
 * `kind: 'SystemExit'` and MemoryError `kind: 'MemoryError'`.
 *
 * Invariant: reading an exception runs no guest code except its `__str__` (through `str()`), and
 * under the call's meter. The traceback, cause and context are read through BaseException's own
 * descriptors, names through `type`'s (a subclass's property cannot stand in), strings are checked
 * to be exact `str` before they are compared or sliced, and every size is cut here (the host
 * cuts again: this code runs beside guest code).
 *
 * Does not protect against: a snippet that writes a host-looking path into its own exception's
 * message (it is the snippet's text); the lane's host side (lane.ts) scrubs the paths it knows.
 */

export const COMMON_PY = String.raw`
import sys, json, io, itertools, types, os
from collections import deque
import textwrap as _textwrap

_SNIPPET = '<snippet>'
_MAX_NAME = 128
_MAX_MESSAGE = 4096
_MAX_FRAMES = 32
_MAX_TRACEBACK = 16384
_MAX_CHAIN = 8
_MAX_SOURCE_LINE = 240
_MAX_TB_WALK = 1 << 20
_tb_of = BaseException.__dict__['__traceback__'].__get__
_cause_of = BaseException.__dict__['__cause__'].__get__
_context_of = BaseException.__dict__['__context__'].__get__
_suppress_of = BaseException.__dict__['__suppress_context__'].__get__
_qualname_of = type.__dict__['__qualname__'].__get__
_module_of = type.__dict__['__module__'].__get__

def _exact(s, limit):
    if not isinstance(s, str): return ''
    s = str.__str__(s)
    return s if len(s) <= limit else s[:limit]

def _name(cls):
    try:
        q = _exact(_qualname_of(cls), _MAX_NAME)
        m = _module_of(cls)
        if type(m) is str and m not in ('builtins', '__main__'): q = m + '.' + q
        return q[:_MAX_NAME] or 'BaseException'
    except BaseException:
        return 'BaseException'

def _message(e):
    try:
        return _exact(str(e), _MAX_MESSAGE)
    except BaseException:
        return '<exception str() failed>'

class _Source:
    def __init__(self, code):
        self.lines = code.replace('\r\n', '\n').replace('\r', '\n').split('\n')
        # The driver compiles the dedented source: columns it reports are shifted by the margin.
        first = next((l for l in self.lines if l.strip()), '')
        dedented = next((l for l in _textwrap.dedent(code).replace('\r\n', '\n').replace('\r', '\n').split('\n') if l.strip()), '')
        self.margin = max(0, len(first) - len(dedented))
    def line(self, n):
        if type(n) is not int or n < 1 or n > len(self.lines): return ''
        return self.lines[n - 1]
    def column(self, n, col):
        # co_positions gives UTF-8 byte offsets into the dedented line
        if type(col) is not int or col < 0: return None
        text = self.line(n)[self.margin:]
        return len(text.encode('utf-8', 'replace')[:col].decode('utf-8', 'replace')) + self.margin + 1

def _frames(tb, src):
    kept = deque(maxlen=_MAX_FRAMES)
    seen = 0
    walked = 0
    while tb is not None and walked < _MAX_TB_WALK:
        walked += 1
        code = tb.tb_frame.f_code
        fn = code.co_filename
        if type(fn) is str and fn == _SNIPPET:
            seen += 1
            line = tb.tb_lineno
            col = None
            try:
                i = tb.tb_lasti // 2
                pos = next(itertools.islice(code.co_positions(), i, i + 1), None)
                if pos is not None and pos[0] == line: col = src.column(line, pos[2])
            except BaseException:
                col = None
            name = code.co_name
            kept.append({'file': _SNIPPET, 'line': line if type(line) is int else 0, **({'column': col} if col else {}),
                         'function': name[:_MAX_NAME] if type(name) is str else '?'})
        tb = tb.tb_next
    return list(kept), seen - len(kept)

def _chain(e):
    out, ids = [], set()
    while e is not None and len(out) < _MAX_CHAIN and id(e) not in ids:
        ids.add(id(e))
        try:
            cause = _cause_of(e)
            context = None if _suppress_of(e) else _context_of(e)
        except BaseException:
            cause = context = None
        nxt = cause if isinstance(cause, BaseException) else context if isinstance(context, BaseException) else None
        how = 'cause' if nxt is cause and nxt is not None else 'context'
        out.append((e, how))
        e = nxt
    out.reverse()
    return out

_LINKS = {'cause': '\nThe above exception was the direct cause of the following exception:\n\n',
          'context': '\nDuring handling of the above exception, another exception occurred:\n\n'}

def _render(e, src):
    name, message = _name(type(e)), _message(e)
    frames, hidden = _frames(_tb_of(e), src)
    parts = []
    if frames:
        parts.append('Traceback (most recent call last):\n')
        if hidden > 0: parts.append(f'  [{hidden} earlier snippet frames not shown]\n')
        for f in frames:
            parts.append(f'  File "<snippet>", line {f["line"]}, in {f["function"]}\n')
            text = src.line(f['line']).strip()[:_MAX_SOURCE_LINE]
            if text: parts.append(f'    {text}\n')
    parts.append(f'{name}: {message}\n' if message else f'{name}\n')
    frames.reverse()
    return name, message, frames, ''.join(parts)

def _syntax(e, src):
    # A SyntaxError from compiling the snippet itself: the compiler's own instance.
    name, message = _name(type(e)), _exact(e.msg, _MAX_MESSAGE)
    line = e.lineno if type(e.lineno) is int else 0
    col = e.offset + src.margin if type(e.offset) is int and e.offset > 0 else None
    frame = {'file': _SNIPPET, 'line': line, **({'column': col} if col else {}), 'function': '<module>'}
    parts = [f'  File "<snippet>", line {line}\n']
    text = src.line(line)
    stripped = text.lstrip()[:_MAX_SOURCE_LINE]
    if stripped:
        parts.append(f'    {stripped}\n')
        if col: parts.append('    ' + ' ' * max(0, min(col - 1 - (len(text) - len(text.lstrip())), _MAX_SOURCE_LINE)) + '^\n')
    parts.append(f'{name}: {message}\n' if message else f'{name}\n')
    return {'name': name, 'message': message, 'stack': [frame], 'traceback': ''.join(parts)[-_MAX_TRACEBACK:]}

def _exception(e, src, compiling):
    if compiling and issubclass(type(e), SyntaxError): return _syntax(e, src)
    texts, last = [], None
    for i, (x, how) in enumerate(_chain(e)):
        last = _render(x, src)
        if i > 0: texts.append(_LINKS[how])
        texts.append(last[3])
    name, message, frames, _ = last
    text = ''.join(texts)
    if len(text) > _MAX_TRACEBACK: text = '[…]\n' + text[-(_MAX_TRACEBACK - 4):]
    return {'name': name, 'message': message, 'stack': frames, 'traceback': text}

def _flush():
    for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try: s.flush()
        except BaseException: pass

def _failure(e, src, compiling):
    _flush()
    cls = type(e)
    if issubclass(cls, SystemExit) or issubclass(cls, MemoryError):
        name, message = _name(cls), _message(e)
        return json.dumps({'ok': False, 'kind': 'SystemExit' if issubclass(cls, SystemExit) else 'MemoryError',
                           'message': f'{name}: {message}' if message else name})
    try:
        report = _exception(e, src, compiling)
    except BaseException:
        report = {'name': _name(cls), 'message': '', 'stack': [], 'traceback': ''}
    return json.dumps({'ok': False, 'kind': 'exception', 'exception': report})

def _success(value, max_result):
    _flush()
    if value is None:
        return json.dumps({'ok': True})
    try:
        text = json.dumps({'ok': True, 'result': _thaw(value)}, default=repr)
    except Exception as e:
        text = json.dumps({'ok': True, 'result': repr(value)[:max_result], 'warning': 'result is not JSON-serializable; its repr was returned'})
    if len(text) > max_result:
        return json.dumps({'ok': True, 'warning': f'the result is larger than {max_result} characters of JSON and was dropped'})
    return text

def _write_through():
    # Streaming: a write reaches the parent without waiting for a newline or the end.
    for fd, name in ((1, 'stdout'), (2, 'stderr')):
        old = getattr(sys, name)
        setattr(sys, name, io.TextIOWrapper(io.FileIO(fd, 'w', closefd=False), encoding='utf-8', errors=old.errors,
                                            line_buffering=True, write_through=True))

def _freeze(v):
    if isinstance(v, dict): return types.MappingProxyType({k: _freeze(x) for k, x in v.items()})
    if isinstance(v, list): return tuple(_freeze(x) for x in v)
    return v
def _thaw(v):
    if isinstance(v, types.MappingProxyType): return {k: _thaw(x) for k, x in v.items()}
    return v
def _membrane_module(powers, max_frame, messages, exchange):
    class MembraneError(Exception):
        """A refused or failed host power; .code is DESIGN 4's name (DENIED, REVOKED, ...)."""
        def __init__(self, power, code):
            super().__init__(f"membrane {power}: {messages.get(code, 'failed')} ({code})")
            self.code = code
    def call(power, args):
        data = json.dumps({'power': power, 'args': args}).encode()
        if len(data) > max_frame:
            data = json.dumps({'power': power, 'oversized': len(data)}).encode()
        a = json.loads(exchange(data))
        if a.get('ok') is True: return a.get('value')
        raise MembraneError(power, str(a.get('code', 'UNAVAILABLE')))
    def text(v):
        return v.decode('utf-8') if isinstance(v, (bytes, bytearray)) else v
    class Response:
        def __init__(self, r):
            self.status = r.get('status'); self.headers = r.get('headers') or {}
            self.ok = isinstance(self.status, int) and 200 <= self.status < 300
            self._body = r.get('body') or ''
        def text(self): return self._body
        def json(self): return json.loads(self._body)
        def __repr__(self): return f"<Response {self.status}>"
    ns = types.SimpleNamespace
    def run_args(name, argv, stdin):
        return [name, [text(a) for a in (argv or [])], {} if stdin is None else {'stdin': text(stdin)}]
    makers = {
        'vfs': lambda: ns(read=lambda path: call('vfs.read', [path]), write=lambda path, data: call('vfs.write', [path, text(data)]),
                          list=lambda prefix='/': call('vfs.list', [prefix]), delete=lambda path: call('vfs.delete', [path]),
                          query=lambda sql: call('vfs.query', [sql])),
        'commands': lambda: ns(run=lambda name, argv=None, stdin=None: call('commands.run', run_args(name, argv, stdin))),
        'exec': lambda: ns(run=lambda name, argv=None, stdin=None: call('exec.run', run_args(name, argv, stdin))),
        'kv': lambda: ns(get=lambda k: call('kv.get', [k]), put=lambda k, v: call('kv.put', [k, text(v)]),
                         delete=lambda k: call('kv.delete', [k]), list=lambda prefix='': call('kv.list', [prefix])),
        'queue': lambda: ns(push=lambda q, m: call('queue.push', [q, text(m)]), pop=lambda q: call('queue.pop', [q]),
                            len=lambda q: call('queue.len', [q])),
        'secrets': lambda: ns(sign=lambda name, message: call('secrets.sign', [name, text(message)])),
        'net': lambda: ns(fetch=lambda url, method=None, headers=None, body=None:
                          Response(call('net.fetch', [{'url': url, 'method': method, 'headers': headers, 'body': text(body)}]))),
        'llm': lambda: ns(complete=lambda request: call('llm.complete', [request])),
        'browse': lambda: ns(fetch=lambda url: call('browse.fetch', [url])),
    }
    for sock in ('tcp', 'udp', 'tls'):
        makers[sock] = (lambda s: lambda: ns(request=lambda target, data='': call(s + '.request', [target, text(data)])))(sock)
    mod = types.ModuleType('membrane', 'Host powers: one attribute per granted capability (docs/lanes.md).')
    mod.MembraneError = MembraneError
    for c in powers:
        if isinstance(c, dict):
            # An embedder host cap (DESIGN 9): one function per name, one JSON value in and out.
            host = ns(**{f: (lambda p: lambda args=None: call(p, [args]))(c['cap'] + '.' + f) for f in c['fns']})
            setattr(mod, c['global'], host)
        elif c in makers: setattr(mod, c, makers[c]())
    return mod
`;
