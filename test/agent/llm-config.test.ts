// Where the llm broker's endpoint comes from: the operator config's `llm` section, else
// MEMBRANE_LLM_URL / MEMBRANE_LLM_MODEL; the key never from a file (an `apiKey` in the config is
// an unknown key, refused by name); no endpoint configured → no llm options (calls UNAVAILABLE).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { engineOptionsFrom, llmOptionsFrom, parseConfig } from '../../src/interfaces/config.ts';
import { tempDir } from '../helpers/tmp.ts';

test('the config section wins over the environment; the environment alone works too', () => {
  const config = parseConfig({ llm: { baseUrl: 'http://127.0.0.1:9/v1', model: 'house', maxTokens: 512 } }, '/');
  assert.deepEqual(llmOptionsFrom(config, { MEMBRANE_LLM_URL: 'https://other/v1', MEMBRANE_LLM_MODEL: 'other' }), { baseUrl: 'http://127.0.0.1:9/v1', model: 'house', maxTokens: 512 });
  assert.deepEqual(llmOptionsFrom(null, { MEMBRANE_LLM_URL: 'https://api.example/v1', MEMBRANE_LLM_MODEL: 'm1' }), { baseUrl: 'https://api.example/v1', model: 'm1' });
  assert.equal(llmOptionsFrom(null, {}), undefined);
  assert.throws(() => llmOptionsFrom(null, { MEMBRANE_LLM_URL: 'file:///etc/passwd' }), { code: 'POLICY_INVALID' });
});

test('a key in the config file is refused by name; engine options carry the endpoint', () => {
  assert.throws(() => parseConfig({ llm: { baseUrl: 'https://x/v1', apiKey: 'sk-1' } }, '/'), /unknown key "apiKey" in llm/);
  assert.throws(() => parseConfig({ llm: { baseUrl: 'ftp://x' } }, '/'), /llm\.baseUrl/);
  const prev = process.env['MEMBRANE_LLM_URL'];
  delete process.env['MEMBRANE_LLM_URL'];
  try {
    const o = engineOptionsFrom(parseConfig({ llm: { baseUrl: 'https://x/v1', model: 'm' } }, '/'));
    assert.deepEqual(o.brokers?.llm, { baseUrl: 'https://x/v1', model: 'm' });
    assert.equal(engineOptionsFrom(null).brokers?.llm, undefined);
  } finally {
    if (prev !== undefined) process.env['MEMBRANE_LLM_URL'] = prev;
  }
});

test('an engine given no llm options takes MEMBRANE_LLM_URL/MODEL/KEY from the environment', async () => {
  const { scriptedLlm } = await import('../helpers/scripted-llm.ts');
  const { createEngine } = await import('../../src/index.ts');
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  process.env['MEMBRANE_HOME'] = tempDir('membrane-llm-env-');
  const llm = await scriptedLlm({ 'from env': [{ content: 'configured by the environment' }] });
  const saved = { ...process.env };
  Object.assign(process.env, { MEMBRANE_LLM_URL: llm.url, MEMBRANE_LLM_MODEL: 'env-model', MEMBRANE_LLM_KEY: 'sk-env-key' });
  const engine = createEngine({ poolSize: 1 });
  try {
    const r = await engine.agent.run({ system: 's', task: 'from env' });
    assert.equal(r.result, 'configured by the environment');
    assert.equal(llm.requests[0]!.auth, 'Bearer sk-env-key');
    assert.equal(llm.requests[0]!.body.model, 'env-model');
  } finally {
    for (const k of ['MEMBRANE_LLM_URL', 'MEMBRANE_LLM_MODEL', 'MEMBRANE_LLM_KEY']) if (saved[k] === undefined) delete process.env[k];
    await engine.close();
    await llm.close();
  }
});
