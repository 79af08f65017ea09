// Test helper: a strict parser of the Prometheus text exposition format 0.0.4 — what `promtool
// check metrics` checks for syntax and consistency, so a test can hold /metrics to it where
// promtool is not installed (and run promtool as well where it is).
//
// Refuses: a line that is neither a comment, a HELP/TYPE line, a blank line nor a sample; bad
// metric or label names (and reserved `__` labels); bad label-value escapes; a value that is not a
// float, NaN or ±Inf; a HELP or TYPE given twice, or a TYPE after its family's samples; an unknown
// type; a family's samples not contiguous; a sample whose name does not fit its family's type
// (histogram: _bucket/_sum/_count); a duplicate series; a label name twice in one sample; a
// negative counter; histogram buckets without `le`, not cumulative, or without a +Inf bucket equal
// to _count.
import { spawnSync } from 'node:child_process';

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Family {
  readonly name: string;
  type: string;
  help: string | null;
  readonly samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(raw: string, line: number): number {
  if (raw === 'NaN') return NaN;
  if (raw === '+Inf') return Infinity;
  if (raw === '-Inf') return -Infinity;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(raw)) throw new Error(`line ${line}: bad value ${JSON.stringify(raw)}`);
  return Number(raw);
}

function parseLabels(src: string, line: number): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let i = 0;
  for (;;) {
    while (src[i] === ' ') i++;
    if (src[i] === '}') return { labels, rest: src.slice(i + 1) };
    const eq = src.indexOf('=', i);
    if (eq < 0) throw new Error(`line ${line}: label without "="`);
    const name = src.slice(i, eq).trim();
    if (!LABEL_NAME.test(name) || name.startsWith('__')) throw new Error(`line ${line}: bad label name ${JSON.stringify(name)}`);
    if (name in labels) throw new Error(`line ${line}: label ${name} given twice`);
    if (src[eq + 1] !== '"') throw new Error(`line ${line}: label ${name}'s value is not quoted`);
    let v = '';
    let j = eq + 2;
    for (;;) {
      const c = src[j];
      if (c === undefined) throw new Error(`line ${line}: unterminated label value`);
      if (c === '"') break;
      if (c === '\\') {
        const n = src[j + 1];
        if (n === '\\') v += '\\';
        else if (n === '"') v += '"';
        else if (n === 'n') v += '\n';
        else throw new Error(`line ${line}: bad escape \\${n ?? ''} in label ${name}`);
        j += 2;
        continue;
      }
      v += c;
      j++;
    }
    labels[name] = v;
    i = j + 1;
    while (src[i] === ' ') i++;
    if (src[i] === ',') i++;
    else if (src[i] !== '}') throw new Error(`line ${line}: expected "," or "}" after label ${name}`);
  }
}

/** The family a sample name belongs to, given the declared families. */
function familyOf(name: string, families: Map<string, Family>): Family | undefined {
  const direct = families.get(name);
  if (direct) return direct;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!name.endsWith(suffix)) continue;
    const f = families.get(name.slice(0, -suffix.length));
    if (f && (f.type === 'histogram' || (f.type === 'summary' && suffix !== '_bucket'))) return f;
  }
  return undefined;
}

export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const series = new Set<string>();
  const closed = new Set<string>();
  let current: Family | null = null;
  const lines = text.split('\n');
  if (lines.at(-1) !== '') throw new Error('the exposition does not end with a newline');
  lines.forEach((raw, idx) => {
    const line = idx + 1;
    if (raw.trim() === '') return;
    const declare = (name: string): Family => {
      if (!METRIC_NAME.test(name)) throw new Error(`line ${line}: bad metric name ${JSON.stringify(name)}`);
      let f = families.get(name);
      if (f && f.samples.length > 0) throw new Error(`line ${line}: HELP/TYPE for ${name} after its samples`);
      if (!f) families.set(name, (f = { name, type: 'untyped', help: null, samples: [] }));
      return f;
    };
    const help = /^# HELP (\S+) (.*)$/.exec(raw) ?? /^# HELP (\S+)$/.exec(raw);
    if (help) {
      const f = declare(help[1]!);
      if (f.help !== null) throw new Error(`line ${line}: second HELP for ${f.name}`);
      f.help = help[2] ?? '';
      if (/\\(?![\\n])/.test(f.help)) throw new Error(`line ${line}: bad escape in HELP of ${f.name}`);
      return;
    }
    const type = /^# TYPE (\S+) (\S+)$/.exec(raw);
    if (type) {
      const f = declare(type[1]!);
      if (!TYPES.has(type[2]!)) throw new Error(`line ${line}: unknown type ${type[2]}`);
      if ((f as { typed?: boolean }).typed) throw new Error(`line ${line}: second TYPE for ${f.name}`);
      (f as { typed?: boolean }).typed = true;
      f.type = type[2]!;
      return;
    }
    if (raw.startsWith('#')) return;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{|\s)/.exec(raw);
    if (!m) throw new Error(`line ${line}: not a sample: ${JSON.stringify(raw.slice(0, 80))}`);
    const name = m[1]!;
    let rest = raw.slice(name.length);
    let labels: Record<string, string> = {};
    if (rest.startsWith('{')) ({ labels, rest } = parseLabels(rest.slice(1), line));
    const parts = rest.trim().split(/\s+/);
    if (parts.length < 1 || parts.length > 2 || parts[0] === '') throw new Error(`line ${line}: expected a value and an optional timestamp`);
    const value = parseValue(parts[0]!, line);
    if (parts[1] !== undefined && !/^-?\d+$/.test(parts[1])) throw new Error(`line ${line}: bad timestamp`);
    let f = familyOf(name, families);
    if (!f) families.set(name, (f = { name, type: 'untyped', help: null, samples: [] }));
    if (current !== f) {
      if (closed.has(f.name)) throw new Error(`line ${line}: samples of ${f.name} are not contiguous`);
      if (current) closed.add(current.name);
      current = f;
    }
    if (f.type === 'histogram' && name === f.name) throw new Error(`line ${line}: histogram ${f.name} has a bare sample`);
    if (f.type === 'histogram' && name.endsWith('_bucket') && labels['le'] === undefined) throw new Error(`line ${line}: bucket without le`);
    if (f.type === 'counter' && !(value >= 0)) throw new Error(`line ${line}: counter ${name} is ${value}`);
    const key = `${name}{${Object.keys(labels).sort().map((k) => `${k}=${JSON.stringify(labels[k])}`).join(',')}}`;
    if (series.has(key)) throw new Error(`line ${line}: duplicate series ${key}`);
    series.add(key);
    f.samples.push({ name, labels, value });
  });
  for (const f of families.values()) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

function checkHistogram(f: Family): void {
  const groups = new Map<string, { buckets: [number, number][]; count?: number }>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { buckets: [] }));
    if (s.name.endsWith('_bucket')) g.buckets.push([parseValue(le!, 0), s.value]);
    if (s.name.endsWith('_count')) g.count = s.value;
  }
  for (const [key, g] of groups) {
    g.buckets.sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < g.buckets.length; i++) if (g.buckets[i]![1] < g.buckets[i - 1]![1]) throw new Error(`${f.name}${key}: buckets are not cumulative`);
    const inf = g.buckets.at(-1);
    if (!inf || inf[0] !== Infinity) throw new Error(`${f.name}${key}: no +Inf bucket`);
    if (g.count !== inf[1]) throw new Error(`${f.name}${key}: _count ${g.count} != +Inf bucket ${inf[1]}`);
  }
}

/** The value of one series, or undefined: `labels` must match the sample's labels exactly. */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const f of families.values()) {
    for (const s of f.samples) {
      if (s.name !== name) continue;
      const keys = Object.keys(s.labels);
      if (keys.length === Object.keys(labels).length && keys.every((k) => s.labels[k] === labels[k])) return s.value;
    }
  }
  return undefined;
}

/** `promtool check metrics` on `text` when promtool is on PATH: null when it is not, else its verdict. */
export function promtool(text: string): { ok: boolean; output: string } | null {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') return null;
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
}
