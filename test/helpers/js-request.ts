// Test helper: a JS-lane request with the defaults the lane tests share (5 s, unlimited fuel,
// 64 MiB, no caps); `more` overrides any of them.
import type { ExecRequest } from '../../src/lanes/types.ts';

export const jsRequest = (code: string, more: Partial<ExecRequest> = {}): ExecRequest => ({
  language: 'js',
  code,
  timeoutMs: 5000,
  fuel: Number.MAX_SAFE_INTEGER,
  memoryBytes: 64 * 1024 * 1024,
  caps: [],
  ...more,
});
