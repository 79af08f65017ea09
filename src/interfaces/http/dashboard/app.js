// Membrane dashboard: sign in with a bearer token, then watch the tenant's instances, the profile
// ladder and a live stream of denials, and run snippets through POST /v1/exec.
//
// Invariants: the token lives in sessionStorage (this tab only) and travels only in an
// Authorization header to this origin — never in a URL, so the audit stream is read with fetch()
// and a stream reader, not EventSource. Server and guest text is hostile: it is only ever set with
// textContent, never parsed as HTML. Every wait and buffer is bounded.
//
// Does not protect against: a compromised browser or extension reading sessionStorage; a token
// pasted into the wrong site.

const TOKEN_KEY = 'membrane.token';
/** Instances are re-read this often while signed in and the tab is visible. */
const INSTANCES_REFRESH_MS = 1500;
/** The denial list keeps this many entries; older ones drop off the end. */
const MAX_DENIALS_SHOWN = 100;
/** One SSE event larger than this is a broken or hostile stream: drop the connection. */
const MAX_SSE_EVENT_CHARS = 256 * 1024;
/** Reconnect backoff for the audit stream: doubles from the first to the last, plus jitter. */
const STREAM_BACKOFF_FIRST_MS = 500;
const STREAM_BACKOFF_MAX_MS = 15_000;
/** A request that takes longer than this is abandoned (runs have their own server-side deadline). */
const REQUEST_TIMEOUT_MS = 60_000;

const $ = (id) => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`dashboard: #${id} missing`);
  return el;
};

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let session = null; // { token, controller: AbortController, timer }

// ---- HTTP ------------------------------------------------------------------------------------

async function api(path, { method = 'GET', body, signal } = {}) {
  const token = session?.token;
  if (!token) throw new ApiError(401, 'UNAUTHENTICATED', 'not signed in');
  const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  const res = await fetch(path, {
    method,
    headers: { authorization: `Bearer ${token}`, accept: 'application/json', ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    cache: 'no-store',
    credentials: 'omit',
    referrerPolicy: 'no-referrer',
    signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
  });
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  if (!res.ok) {
    const err = data && typeof data === 'object' && data.error && typeof data.error === 'object' ? data.error : {};
    const code = typeof err.code === 'string' ? err.code : `HTTP_${res.status}`;
    const message = typeof err.message === 'string' ? err.message : res.statusText || 'request failed';
    if (res.status === 401 && session?.token === token) signOut('The server no longer accepts this token. Sign in again.');
    throw new ApiError(res.status, code, message);
  }
  return data;
}

// ---- formatting ------------------------------------------------------------------------------

const num = (n) => (typeof n === 'number' && Number.isFinite(n) ? n.toLocaleString('en') : '—');

function bytes(n) {
  if (typeof n !== 'number' || !Number.isFinite(n)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${Number.isInteger(v) ? v : v.toFixed(1)} ${units[i]}`;
}

function text(v) {
  if (v === undefined) return '';
  if (typeof v === 'string') return v;
  try {
    return JSON.stringify(v, null, 2) ?? String(v);
  } catch {
    return String(v);
  }
}

function el(tag, content, className) {
  const node = document.createElement(tag);
  if (content !== undefined) node.textContent = content;
  if (className) node.className = className;
  return node;
}

// ---- sign in / out ---------------------------------------------------------------------------

async function signIn(token, { fromStorage = false } = {}) {
  stopSession();
  session = { token, controller: new AbortController(), timer: 0, polling: false };
  try {
    const who = await api('/v1/whoami', { signal: session.controller.signal });
    sessionStorage.setItem(TOKEN_KEY, token);
    $('who-tenant').textContent = text(who.tenant);
    $('who-profile').textContent = text(who.profile);
    $('sign-in').hidden = true;
    $('identity').hidden = false;
    $('app').hidden = false;
    $('sign-in-error').textContent = '';
    $('token').value = '';
    loadLadder().catch(() => {});
    pollInstances();
    streamDenials(session.controller.signal);
    $('run-code').focus();
  } catch (e) {
    const rejected = e instanceof ApiError && e.status === 401;
    if (fromStorage) signOut(rejected ? 'Your saved token is no longer accepted. Sign in again.' : `Could not reach the server: ${e.message}`);
    else signOut(rejected ? 'That token was not accepted.' : `Could not sign in: ${e.message}`);
  }
}

function stopSession() {
  if (!session) return;
  session.controller.abort();
  clearTimeout(session.timer);
  session = null;
}

function signOut(message = '') {
  stopSession();
  sessionStorage.removeItem(TOKEN_KEY);
  for (const id of ['who-tenant', 'who-profile', 'instances-updated', 'instances-error']) $(id).textContent = '';
  $('instances-body').replaceChildren();
  seenSeqs.clear();
  $('denials').replaceChildren();
  $('ladder').replaceChildren();
  $('run-details').hidden = true;
  $('run-summary').textContent = 'Nothing run yet.';
  $('instances-empty').hidden = false;
  $('denials-empty').hidden = false;
  $('identity').hidden = true;
  $('app').hidden = true;
  $('sign-in').hidden = false;
  $('sign-in-error').textContent = message;
  $('token').focus();
}

// ---- profile ladder --------------------------------------------------------------------------

async function loadLadder() {
  const data = await api('/v1/profiles', { signal: session?.controller.signal });
  const profiles = Array.isArray(data?.profiles) ? data.profiles : [];
  const grantedAt = profiles.findIndex((p) => p.name === data.granted);
  const items = profiles.map((p, i) => {
    const li = el('li', undefined, 'rung');
    const head = el('div', undefined, 'rung-head');
    head.append(el('span', text(p.name), 'rung-name'));
    if (i === grantedAt) {
      li.classList.add('granted');
      li.setAttribute('aria-current', 'true');
      head.append(el('span', 'your grant', 'badge'));
    } else if (grantedAt >= 0 && i > grantedAt) {
      li.classList.add('above');
      head.append(el('span', 'above your grant', 'badge muted'));
    }
    li.append(head);
    const limits = el('p', `memory ${bytes(p.memoryBytes)} · timeout ${num(p.timeoutMs)} ms · fuel ${num(p.fuel)}`, 'limits');
    const caps = el('ul', undefined, 'caps');
    caps.setAttribute('aria-label', `${text(p.name)} capabilities`);
    for (const c of Array.isArray(p.caps) ? p.caps : []) caps.append(el('li', text(c)));
    if (caps.childElementCount === 0) caps.append(el('li', 'pure compute — no capabilities', 'none'));
    li.append(limits, caps);
    return li;
  });
  $('ladder').replaceChildren(...items);
}

// ---- instances -------------------------------------------------------------------------------

async function pollInstances() {
  const current = session;
  if (!current || current.polling) return;
  current.polling = true;
  if (!document.hidden) {
    try {
      const data = await api('/v1/instances', { signal: current.controller.signal });
      if (session === current) {
        renderInstances(Array.isArray(data?.instances) ? data.instances : []);
        $('instances-error').textContent = '';
        $('instances-updated').textContent = `Last updated ${new Date().toLocaleTimeString('en-GB')}.`;
      }
    } catch (e) {
      if (session === current && !current.controller.signal.aborted) $('instances-error').textContent = `Could not refresh instances: ${e.message}`;
    }
  }
  current.polling = false;
  if (session === current) current.timer = setTimeout(pollInstances, INSTANCES_REFRESH_MS);
}

function renderInstances(list) {
  const body = $('instances-body');
  const existing = new Map([...body.rows].map((r) => [r.dataset.id, r]));
  const rows = list.map((inst) => {
    const id = text(inst.id);
    const row = existing.get(id) ?? document.createElement('tr');
    row.dataset.id = id;
    const cells = [
      [id, 'id'],
      [text(inst.profile), ''],
      [Array.isArray(inst.caps) ? inst.caps.map(text).join(' ') || '—' : text(inst.caps), 'caps-cell'],
      [num(inst.calls), 'num'],
      [num(inst.fuelUsed), 'num'],
      [bytes(inst.memoryBytes), 'num'],
      [text(inst.state), `state state-${String(inst.state).replace(/[^a-z]/gi, '')}`],
    ];
    cells.forEach(([value, cls], i) => {
      const tag = i === 0 ? 'th' : 'td';
      let cell = row.cells[i];
      if (!cell || cell.tagName.toLowerCase() !== tag) {
        cell = document.createElement(tag);
        if (tag === 'th') cell.scope = 'row';
        if (row.cells[i]) row.replaceChild(cell, row.cells[i]);
        else row.append(cell);
      }
      if (cell.textContent !== value) cell.textContent = value;
      cell.className = cls;
    });
    return row;
  });
  body.replaceChildren(...rows);
  $('instances-empty').hidden = rows.length > 0;
}

// ---- denials: the audit stream, read with fetch() so the token stays in a header ---------------

const seenSeqs = new Set();

function showDenial(record, source) {
  if (!record || typeof record !== 'object' || record.kind !== 'denied') return;
  if (typeof record.seq === 'number') {
    if (seenSeqs.has(record.seq)) return;
    seenSeqs.add(record.seq);
  }
  const d = record.detail && typeof record.detail === 'object' ? record.detail : {};
  const li = el('li', undefined, 'denial');
  li.dataset.source = source;
  if (typeof record.seq === 'number') li.dataset.seq = String(record.seq);
  const when = el('time', new Date(record.time).toLocaleTimeString('en-GB'));
  if (typeof record.time === 'string') when.dateTime = record.time;
  const where = [d.broker, d.op].filter((x) => x !== undefined).map(text).join('.');
  li.append(when, el('span', where || '—', 'where'), el('code', text(d.code ?? '—'), 'code'));
  const why = [d.why, d.caps ? `caps: ${Array.isArray(d.caps) ? d.caps.map(text).join(' ') : text(d.caps)}` : '', d.target ? `target: ${text(d.target)}` : '', d.profile ? `profile: ${text(d.profile)}` : '', record.instance ? `instance: ${text(record.instance)}` : '']
    .filter(Boolean)
    .map(text)
    .join(' · ');
  li.append(el('span', why, 'why'));
  const list = $('denials');
  // Newest first: a history backfill (oldest → newest) and live events both land at the top.
  list.prepend(li);
  while (list.childElementCount > MAX_DENIALS_SHOWN) list.lastElementChild?.remove();
  $('denials-empty').hidden = true;
}

function setStreamState(label, cls) {
  const s = $('stream-state');
  s.textContent = label;
  s.className = `live-state ${cls}`;
}

/** Parse an SSE byte stream into { event, data } objects (comments and ids ignored). */
async function* sseEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let event = 'message';
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let m;
      // A line ends at \r\n, \n or \r; a lone trailing \r may be the first half of \r\n.
      while ((m = /\r\n|\n|\r(?=[^\n])/.exec(buf))) {
        const line = buf.slice(0, m.index);
        buf = buf.slice(m.index + m[0].length);
        if (line === '') {
          if (data.length) yield { event, data: data.join('\n') };
          event = 'message';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? '' : line.slice(colon + 1);
        if (val.startsWith(' ')) val = val.slice(1);
        if (field === 'event') event = val;
        else if (field === 'data') data.push(val);
      }
      if (buf.length + data.reduce((n, d) => n + d.length, 0) > MAX_SSE_EVENT_CHARS) throw new Error('audit stream event too large');
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

async function streamDenials(signal) {
  let backoff = STREAM_BACKOFF_FIRST_MS;
  while (!signal.aborted) {
    try {
      setStreamState('connecting…', 'pending');
      const res = await fetch('/v1/audit/stream', {
        headers: { authorization: `Bearer ${session?.token ?? ''}`, accept: 'text/event-stream' },
        cache: 'no-store',
        credentials: 'omit',
        referrerPolicy: 'no-referrer',
        signal,
      });
      if (res.status === 401) {
        signOut('The server no longer accepts this token. Sign in again.');
        return;
      }
      if (!res.ok || !res.body) throw new Error(`audit stream answered ${res.status}`);
      setStreamState('live', 'ok');
      backoff = STREAM_BACKOFF_FIRST_MS;
      // Denials recorded while disconnected: fill in from the log (duplicates skipped by seq).
      backfillDenials(signal).catch(() => {});
      for await (const ev of sseEvents(res.body)) {
        if (ev.event !== 'audit') continue;
        try {
          showDenial(JSON.parse(ev.data), 'stream');
        } catch {
          // a malformed event is skipped; the stream goes on
        }
      }
    } catch {
      if (signal.aborted) return;
    }
    if (signal.aborted) return;
    const wait = backoff + Math.floor(Math.random() * 250);
    setStreamState(`reconnecting in ${Math.ceil(wait / 1000)} s`, 'warn');
    await new Promise((resolve) => {
      const t = setTimeout(resolve, wait);
      signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
    });
    backoff = Math.min(backoff * 2, STREAM_BACKOFF_MAX_MS);
  }
}

async function backfillDenials(signal) {
  const data = await api('/v1/audit?kind=denied&limit=25', { signal });
  const records = Array.isArray(data?.records) ? data.records : [];
  records.sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
  for (const r of records) showDenial(r, 'history');
}

// ---- run a snippet ---------------------------------------------------------------------------

async function runSnippet() {
  const submit = $('run-submit');
  const request = { code: $('run-code').value, language: $('run-language').value };
  const caps = $('run-caps').value.split(/[\s,]+/).filter(Boolean);
  if (caps.length) request.capability_subset = caps;
  const timeout = $('run-timeout').value.trim();
  if (timeout) request.timeout_ms = Number(timeout);
  submit.disabled = true;
  $('run-form').setAttribute('aria-busy', 'true');
  $('run-summary').textContent = 'Running…';
  try {
    const r = await api('/v1/exec', { method: 'POST', body: request, signal: session?.controller.signal });
    showRun(r, null);
  } catch (e) {
    showRun(null, e instanceof ApiError ? e : new ApiError(0, 'NETWORK', e.message));
  } finally {
    submit.disabled = false;
    $('run-form').removeAttribute('aria-busy');
  }
}

function showRun(r, failure) {
  const err = failure ?? (r && r.error && typeof r.error === 'object' ? r.error : null);
  const code = err ? text(err.code ?? 'ERROR') : '';
  const ok = !failure && r?.ok === true;
  const summary = ok ? `ok — result ${text(r.result)}` : `failed — ${code}: ${text(err?.message ?? '')}`;
  $('run-summary').textContent = summary;
  $('run-summary').className = `summary ${ok ? 'ok' : 'bad'}`;
  $('run-result').textContent = r && 'result' in r ? text(r.result) : '—';
  $('run-error-code').textContent = code || '—';
  $('run-fuel').textContent = num(r?.fuelUsed);
  $('run-duration').textContent = typeof r?.durationMs === 'number' ? `${num(Math.round(r.durationMs * 10) / 10)} ms` : '—';
  $('run-profile').textContent = r?.profile ? text(r.profile) : '—';
  $('run-stdout').textContent = text(r?.stdout ?? '');
  $('run-stderr').textContent = text(r?.stderr ?? '');
  const notes = [...(Array.isArray(r?.clamped) ? r.clamped : []), ...(Array.isArray(r?.warnings) ? r.warnings : []), r?.poolHit ? 'warm pool hit' : ''];
  $('run-notes').textContent = notes.filter(Boolean).map(text).join(' · ') || '—';
  $('run-details').hidden = false;
}

// ---- wiring ----------------------------------------------------------------------------------

$('sign-in-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const token = $('token').value.trim();
  if (!token) {
    $('sign-in-error').textContent = 'Enter a token.';
    return;
  }
  signIn(token);
});
$('sign-out').addEventListener('click', () => signOut('Signed out.'));
$('run-form').addEventListener('submit', (e) => {
  e.preventDefault();
  runSnippet();
});
$('run-code').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    $('run-form').requestSubmit();
  }
});
document.addEventListener('visibilitychange', () => {
  if (!document.hidden && session) {
    clearTimeout(session.timer);
    pollInstances();
  }
});

const saved = sessionStorage.getItem(TOKEN_KEY);
if (saved) signIn(saved, { fromStorage: true });
else $('token').focus();
