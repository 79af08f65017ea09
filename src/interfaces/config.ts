/**
 * The operator's configuration file (`--config FILE`, JSON or TOML) for `membrane serve` and
 * `membrane mcp`: the default grant, the network guard's allowed ranges, where secrets come from,
 * and the limits.
 *
 * Owns: parsing (`.toml` with smol-toml, anything else as JSON), validation with strict zod
 * schemas, and turning the result into engine options (`engineOptionsFrom`).
 * Invariant: an unknown key anywhere is an error naming it and where it sat (a typo such as
 * `allowCidr` must not silently leave the default in force); every number is a positive bound;
 * a relative `secrets.file` is read relative to the config file, not the working directory.
 * Errors are POLICY_INVALID with a message naming the file's base name, never its contents.
 *
 * Does not protect against: an operator configuring generous limits or wide CIDRs — the file is
 * trusted input; it is validated so mistakes fail loudly, not to second-guess intent.
 *
 * zod and smol-toml are loaded by a top-level `await import()` (a static import would be hoisted
 * to the top of the CLI bundle), so only a command that reaches this module (`serve`, `mcp`) pays.
 */

import { readFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import type { z as Z } from 'zod';
import { SandboxError } from '../errors.ts';
import { PROFILE_NAMES, type ProfileName } from '../policy/profiles.ts';
import { SecretStore, type SecretSpec } from '../brokers/secrets.ts';
import type { EngineOptions } from '../engine/index.ts';
import { llmOptionsFromEnv, type LlmOptions } from '../brokers/llm.ts';
import { LOG_LEVELS } from './http/log.ts';

const [{ parse: parseToml }, { z }] = await Promise.all([import('smol-toml'), import('zod')]);

const positiveInt = z.number().int().positive();
const profileLimits = z.strictObject({ memoryBytes: positiveInt.optional(), timeoutMs: positiveInt.optional(), fuel: z.number().positive().finite().optional() });

export const ConfigSchema = z.strictObject({
  /** The default grant: `membrane mcp`'s profile; under `membrane serve`, the ceiling of every token. */
  profile: z.enum(PROFILE_NAMES).optional(),
  server: z
    .strictObject({
      host: z.string().min(1).max(255).optional(),
      port: z.number().int().min(0).max(65535).optional(),
      /** `membrane serve`'s log level (`--log-level` wins). */
      logLevel: z.enum(LOG_LEVELS).optional(),
    })
    .optional(),
  /** The `llm` broker's endpoint (OpenAI-compatible); the key only ever comes from MEMBRANE_LLM_KEY. */
  llm: z
    .strictObject({
      baseUrl: z.string().regex(/^https?:\/\/[^\s]+$/, 'expected an http(s) URL').max(2048).optional(),
      model: z.string().min(1).max(256).optional(),
      models: z.array(z.string().min(1).max(256)).max(64).optional(),
      maxTokens: positiveInt.optional(),
      timeoutMs: positiveInt.optional(),
    })
    .optional(),
  /** `membrane serve` answers GET /.well-known/did.json with this tenant's key as did:web:HOST. */
  identity: z.strictObject({ didWebHost: z.string().min(1).max(253), tenant: z.string().min(1).max(128) }).optional(),
  net: z.strictObject({ allowCidrs: z.array(z.string().min(1).max(64)).max(256).optional() }).optional(),
  secrets: z.strictObject({ file: z.string().min(1).optional(), envPrefix: z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/, 'expected an upper-case variable prefix').optional() }).optional(),
  limits: z
    .strictObject({
      operatorLimits: z.strictObject(Object.fromEntries(PROFILE_NAMES.map((p) => [p, profileLimits.optional()])) as Record<ProfileName, Z.ZodOptional<typeof profileLimits>>).optional(),
      /** JSON body cap of the API. */
      bodyBytes: positiveInt.optional(),
      /** Body cap of routes that take a module. */
      moduleBodyBytes: positiveInt.optional(),
      maxInstances: positiveInt.optional(),
      maxInstancesPerTenant: positiveInt.optional(),
      /** Requests served at once before OVERLOADED. */
      maxInFlight: positiveInt.optional(),
      /** Requests per tenant per minute before RATE_LIMITED. */
      requestsPerMinute: positiveInt.optional(),
      /** The brokers' per-principal rate (DESIGN §5). */
      rate: z.strictObject({ limit: positiveInt.optional(), windowMs: positiveInt.optional() }).optional(),
      /** Per-tenant quotas of kv and queues in the engine database (storage/store-quotas.ts). */
      storeQuotas: z.strictObject({ kvKeys: z.number().int().min(0).optional(), kvBytes: z.number().int().min(0).optional(), queues: z.number().int().min(0).optional(), queueBytes: z.number().int().min(0).optional() }).optional(),
    })
    .optional(),
});

export type OperatorConfig = Z.output<typeof ConfigSchema> & { readonly baseDir: string };

function describe(issue: Z.core.$ZodIssue): string {
  const at = issue.path.length ? issue.path.map(String).join('.') : 'the top level';
  if (issue.code === 'unrecognized_keys') return `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')} in ${at}`;
  return `${at}: ${issue.message}`;
}

/** Validate an already-parsed config object (`baseDir` resolves relative paths). */
export function parseConfig(value: unknown, baseDir: string, name = 'config'): OperatorConfig {
  const r = ConfigSchema.safeParse(value);
  if (!r.success) throw new SandboxError('POLICY_INVALID', `${name}: ${r.error.issues.slice(0, 3).map(describe).join('; ')}`);
  return { ...r.data, baseDir };
}

/** Read and validate a JSON or TOML config file. */
export function loadConfig(file: string): OperatorConfig {
  const name = basename(file);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new SandboxError('POLICY_INVALID', `cannot read the config file "${name}"`);
  }
  let value: unknown;
  try {
    value = file.endsWith('.toml') ? parseToml(text) : JSON.parse(text);
  } catch (e) {
    const why = e instanceof Error ? e.message.split('\n')[0]!.slice(0, 200) : 'parse error';
    throw new SandboxError('POLICY_INVALID', `${name} is not valid ${file.endsWith('.toml') ? 'TOML' : 'JSON'}: ${why}`);
  }
  return parseConfig(value, dirname(resolve(file)), name);
}

/** Secrets from the configured sources (env prefix default MEMBRANE_SECRET_, plus the file). */
export function secretsFrom(config: OperatorConfig | null, env: NodeJS.ProcessEnv = process.env): Record<string, SecretSpec> {
  const prefix = config?.secrets?.envPrefix ?? 'MEMBRANE_SECRET_';
  const renamed: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (k.startsWith(prefix) && k.length > prefix.length) renamed[`MEMBRANE_SECRET_${k.slice(prefix.length)}`] = v;
  const file = config?.secrets?.file;
  return { ...SecretStore.fromEnv(renamed), ...(file ? SecretStore.fromFile(resolve(config.baseDir, file)) : {}) };
}

/**
 * The `llm` broker's options: the config's `llm` section, else MEMBRANE_LLM_URL and
 * MEMBRANE_LLM_MODEL (the key is read by the broker from MEMBRANE_LLM_KEY, never from a file);
 * undefined when no endpoint is configured (llm calls are then UNAVAILABLE).
 */
export function llmOptionsFrom(config: OperatorConfig | null, env: NodeJS.ProcessEnv = process.env): LlmOptions | undefined {
  const c = config?.llm;
  const fromEnv = llmOptionsFromEnv(c?.baseUrl ? {} : env);
  const baseUrl = c?.baseUrl ?? fromEnv?.baseUrl;
  if (!baseUrl) return undefined;
  const model = c?.model ?? env['MEMBRANE_LLM_MODEL'] ?? 'default';
  return { baseUrl, model, ...(c?.models ? { models: c.models } : {}), ...(c?.maxTokens ? { maxTokens: c.maxTokens } : {}), ...(c?.timeoutMs ? { timeoutMs: c.timeoutMs } : {}) };
}

/** The engine options a config implies (the caller adds its own: pool sizes, cache, …). */
export function engineOptionsFrom(config: OperatorConfig | null): EngineOptions {
  const limits = config?.limits;
  const llm = llmOptionsFrom(config);
  return {
    ...(limits?.operatorLimits ? { operatorLimits: limits.operatorLimits } : {}),
    ...(limits?.maxInstances ? { maxInstances: limits.maxInstances } : {}),
    brokers: {
      secrets: secretsFrom(config),
      net: { allowCidrs: config?.net?.allowCidrs ?? [] },
      ...(limits?.rate ? { rate: limits.rate } : {}),
      ...(limits?.storeQuotas ? { quotas: limits.storeQuotas } : {}),
      ...(llm ? { llm } : {}),
    },
  };
}
