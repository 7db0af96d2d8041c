// The sampling settings a request may carry, their validation, and their defaults.
import { InvalidArgumentError } from '../errors.js';
import { type LogitBiasTable, toLogitBiasTable } from './logit-bias.js';

export interface SamplingOptions {
  /** 0 = greedy; default 1 (sample the model's own distribution). */
  temperature?: number;
  /** Keep the k most likely tokens; 0 or unset = off. */
  topK?: number;
  /** Nucleus mass in (0, 1]; unset or 1 = off. */
  topP?: number;
  /** In [0, 1]: drop tokens below minP x the top probability; unset or 0 = off. */
  minP?: number;
  /** > 0; unset or 1 = off. */
  repeatPenalty?: number;
  /** Tokens the penalties look back over; -1 = all, 0 = none; default 64. */
  repeatLastN?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  /** Token id -> amount added to its logit; -Infinity bans the token. */
  logitBias?: Record<number, number>;
  /** Same seed and settings, same tokens. Unset = a random seed. */
  seed?: number;
}

export interface ResolvedSamplingOptions {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  repeatPenalty: number;
  repeatLastN: number;
  presencePenalty: number;
  frequencyPenalty: number;
  logitBias: LogitBiasTable;
  seed: number;
}

export const DEFAULT_REPEAT_LAST_N = 64;

/** Checks every field and fills in defaults; a bad field throws InvalidArgumentError naming it. */
export function resolveSamplingOptions(options: SamplingOptions = {}): ResolvedSamplingOptions {
  const temperature = numberField(options, 'temperature', 1, (v) => Number.isFinite(v) && v >= 0, 'a finite number >= 0');
  const topK = numberField(options, 'topK', 0, (v) => Number.isSafeInteger(v) && v >= 0, 'an integer >= 0');
  const topP = numberField(options, 'topP', 1, (v) => v > 0 && v <= 1, 'a number in (0, 1]');
  const minP = numberField(options, 'minP', 0, (v) => v >= 0 && v <= 1, 'a number in [0, 1]');
  const repeatPenalty = numberField(options, 'repeatPenalty', 1, (v) => Number.isFinite(v) && v > 0, 'a finite number > 0');
  const repeatLastN = numberField(
    options, 'repeatLastN', DEFAULT_REPEAT_LAST_N, (v) => Number.isSafeInteger(v) && v >= -1, 'an integer >= -1 (-1 = all)',
  );
  const presencePenalty = numberField(options, 'presencePenalty', 0, Number.isFinite, 'a finite number');
  const frequencyPenalty = numberField(options, 'frequencyPenalty', 0, Number.isFinite, 'a finite number');
  const seed = numberField(options, 'seed', randomSeed(), Number.isSafeInteger, 'a safe integer');
  return {
    temperature, topK, topP, minP, repeatPenalty, repeatLastN, presencePenalty, frequencyPenalty, seed,
    logitBias: toLogitBiasTable(checkLogitBias(options.logitBias)),
  };
}

function numberField(
  options: SamplingOptions,
  name: keyof SamplingOptions,
  fallback: number,
  valid: (v: number) => boolean,
  expected: string,
): number {
  const v: unknown = options[name];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !valid(v)) {
    throw new InvalidArgumentError(`${name} must be ${expected}, got ${describe(v)}.`, name);
  }
  return v;
}

function checkLogitBias(bias: unknown): Record<number, number> {
  if (bias === undefined || bias === null) return {};
  if (typeof bias !== 'object' || Array.isArray(bias)) {
    throw new InvalidArgumentError(`logitBias must be an object of token id -> bias, got ${describe(bias)}.`, 'logitBias');
  }
  for (const [key, value] of Object.entries(bias)) {
    if (!/^(0|[1-9][0-9]{0,9})$/.test(key) || Number(key) > 0x7fffffff) {
      throw new InvalidArgumentError(`logitBias keys must be token ids (integers >= 0), got "${key}".`, 'logitBias');
    }
    if (typeof value !== 'number' || Number.isNaN(value) || value === Infinity) {
      throw new InvalidArgumentError(
        `logitBias[${key}] must be a finite number or -Infinity (ban), got ${describe(value)}.`, 'logitBias',
      );
    }
  }
  return bias as Record<number, number>;
}

function describe(v: unknown): string {
  return typeof v === 'string' ? JSON.stringify(v) : String(v);
}

function randomSeed(): number {
  return Math.floor(Math.random() * 2 ** 32);
}
