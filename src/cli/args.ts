// Command-line parsing for the planner CLI: `<command> --flag value ...`, every flag named in errors.
import { AgentFlowError, type ErrorCategory } from '../errors';

export interface CliArgs {
  command: string;
  flags: Map<string, string>;
}

export class UsageError extends AgentFlowError {
  override readonly category: ErrorCategory = 'usage';
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/**
 * Writes a command's failure to stderr and returns its exit code: 2 for a bad flag or file (with `usage` when
 * given), 1 for anything else, named by its error class.
 */
export function reportFailure(e: unknown, usage?: string): 2 | 1 {
  const err = e as Error | undefined;
  const usageError = err instanceof UsageError;
  const text = usageError ? (usage ? `${err.message}\n${usage}` : err.message) : `error: ${err?.name ?? 'Error'}: ${err?.message ?? String(e)}`;
  process.stderr.write(`${text}\n`);
  return usageError ? 2 : 1;
}

export const USAGE = `usage:
  cli score    --model DIR [--adapter DIR] --input FILE          FILE: {"sequences": [[id, ...], ...]}
  cli generate --model DIR [--adapter DIR] --prompt-ids 1,2,3 --max-new-tokens N
               [--temperature 0] [--top-k K] [--top-p P] [--seed S]
  cli grpo-grad --model DIR --adapter DIR --batch FILE --out GRADS.safetensors [--micro-batch-tokens N]
  cli train    --model DIR [--adapter DIR] --data FILE --out DIR [--steps N] [--group G] ... [--resume]   (cli train --help)
  cli eval     --model DIR [--adapter DIR] --data FILE --out DIR [--samples K] [--temperature X] ...   (cli eval --help)
stdout is JSON only; progress and errors go to stderr.`;

export function parseArgs(argv: string[], allowed: Record<string, string[]>): CliArgs {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h') throw new UsageError(USAGE);
  const known = allowed[command];
  if (!known) throw new UsageError(`unknown command '${command}'\n${USAGE}`);
  const flags = new Map<string, string>();
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (!a.startsWith('--')) throw new UsageError(`unexpected argument '${a}' (flags are --name value)`);
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
    if (!known.includes(name)) throw new UsageError(`'${command}' has no flag --${name} (flags: ${known.map((k) => `--${k}`).join(', ')})`);
    const value = eq > 0 ? a.slice(eq + 1) : rest[++i];
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    // Taking the last of two silently would run something the user did not mean to half the time.
    const earlier = flags.get(name);
    if (earlier !== undefined) throw new UsageError(`--${name} is given twice ('${earlier}' and '${value}'); give it once`);
    flags.set(name, value);
  }
  return { command, flags };
}

export function required(args: CliArgs, name: string): string {
  const v = args.flags.get(name);
  if (v === undefined) throw new UsageError(`'${args.command}' needs --${name}`);
  return v;
}

/** Plain decimal notation: Number() would also take hex, binary, octal, 'Infinity' and surrounding blanks. */
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
/** An integer is written in digits: '1e3' or '0x10' is more likely a slip than a count. */
const DIGITS = /^-?\d+$/;

export function numberFlag(args: CliArgs, name: string, fallback: number | undefined, integer = false): number | undefined {
  const v = args.flags.get(name);
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!(integer ? DIGITS : DECIMAL).test(v) || !Number.isFinite(n) || (integer && !Number.isSafeInteger(n))) {
    throw new UsageError(`--${name} must be ${integer ? 'an integer in decimal digits' : 'a decimal number'}${integer && DIGITS.test(v) ? ` below 2^53` : ''}, got '${v}'`);
  }
  return n;
}

/** An integer flag within [min, max]; the message names the flag, the bounds and why when `why` says. */
export function boundedInt(args: CliArgs, name: string, fallback: number, min: number, max: number, why = ''): number {
  const v = numberFlag(args, name, fallback, true)!;
  if (v < min || v > max) throw new UsageError(`--${name} must be ${min === 1 && max === Number.MAX_SAFE_INTEGER ? 'a positive integer' : `an integer from ${min} to ${max}`}${why ? ` (${why})` : ''}, got ${v}`);
  return v;
}

/** "1,2,3" -> [1, 2, 3]; every entry must be a non-negative integer. */
export function parseIdList(v: string, name: string): number[] {
  const parts = v.split(',').map((s) => s.trim());
  return parts.map((p, i) => {
    if (!/^\d+$/.test(p)) throw new UsageError(`--${name}: entry ${i} ('${p}') is not a token id`);
    return Number(p);
  });
}

/** {"sequences": [[id, ...], ...]} with integer ids. */
export function parseSequencesJson(text: string, file: string): number[][] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${file} is not valid JSON (${(e as Error).message})`);
  }
  const seqs = (json as { sequences?: unknown } | null)?.sequences;
  if (!Array.isArray(seqs)) throw new UsageError(`${file}: expected {"sequences": [[id, ...], ...]}`);
  seqs.forEach((s, i) => {
    if (!Array.isArray(s) || !s.every((x) => Number.isInteger(x))) throw new UsageError(`${file}: sequences[${i}] is not a list of integer token ids`);
  });
  return seqs as number[][];
}

/** A switch written `--name on` or `--name off` (every flag takes a value); `fallback` when absent. */
export function onOffFlag(args: CliArgs, name: string, fallback: boolean): boolean {
  const v = args.flags.get(name);
  if (v === undefined) return fallback;
  if (v === 'on' || v === 'off') return v === 'on';
  throw new UsageError(`--${name} must be on or off, got '${v}'`);
}
