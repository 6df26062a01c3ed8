// How `cli train` reads each of its flags, in one place: a new run and a resumed one (which compares the flags
// given with the stored run's settings) must read a flag the same way, or rerunning a command with --resume
// would find differences that are not there.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { importBenchmark } from '../agent/benchmark-import';
import type { GrpoConfig } from '../trainer/grpo-config';
import { boundedInt, numberFlag, UsageError, type CliArgs } from './args';
import { MAX_GROUP, MAX_SEED, MAX_STEPS } from './train-limits';

/** Tools a training run can use from the command line, by card name. */
export const CLI_TOOLS = ['python', 'base_generator', 'wikipedia'] as const;

export const REWARDS = ['exact', 'numeric', 'choice', 'gameof24', 'judge'] as const;

const log = (msg: string) => process.stderr.write(`${msg}\n`);

export function positiveInt(args: CliArgs, name: string, fallback: number): number {
  return boundedInt(args, name, fallback, 1, Number.MAX_SAFE_INTEGER);
}

export const stepsFlag = (args: CliArgs, fallback: number) => boundedInt(args, 'steps', fallback, 1, MAX_STEPS);
export const seedFlag = (args: CliArgs) => boundedInt(args, 'seed', 1, 0, MAX_SEED, "the sampler's seed is 32 bits");

/**
 * Dynamic sampling's budget per all-failed group (GrpoConfig.extraRollouts), or undefined for the task's default
 * (the agent's 8, the toy's 32). 0 turns it off: on a model that never succeeds it multiplies a step's rollouts.
 */
export function extraRolloutsFlag(args: CliArgs): number | undefined {
  if (!args.flags.has('extra-rollouts')) return undefined;
  return boundedInt(args, 'extra-rollouts', 0, 0, MAX_EXTRA_ROLLOUTS, 'extra rollouts for a group with no success');
}

/**
 * The trust region on each update (GrpoConfig.maxUpdateKl: the largest KL from the sampling policy an update may
 * move its batch), or undefined for the default (0, off, for every task).
 */
export function maxUpdateKlFlag(args: CliArgs): number | undefined {
  const v = numberFlag(args, 'max-update-kl', undefined);
  if (v !== undefined && !(v >= 0)) throw new UsageError(`--max-update-kl must be >= 0 (0: no bound), got ${v}`);
  return v;
}

/** The Flow-GRPO settings a new run takes from its flags (any task): only those given, over the task's defaults. */
export function grpoFlags(args: CliArgs): Partial<GrpoConfig> {
  const extra = extraRolloutsFlag(args);
  const maxKl = maxUpdateKlFlag(args);
  return { ...(extra === undefined ? {} : { extraRollouts: extra }), ...(maxKl === undefined ? {} : { maxUpdateKl: maxKl }) };
}

/** GrpoConfig's own bound on extraRollouts. */
export const MAX_EXTRA_ROLLOUTS = 4096;

export function groupFlag(args: CliArgs, fallback: number): number {
  return boundedInt(args, 'group', fallback, 2, MAX_GROUP, 'advantages compare the rollouts of a group');
}

export function checkDir(path: string, flag: string): string {
  if (!existsSync(path)) throw new UsageError(`--${flag} directory '${path}' does not exist`);
  if (!statSync(path).isDirectory()) throw new UsageError(`--${flag} '${path}' is not a directory`);
  return resolve(path);
}

export function parseTools(list: string): string[] {
  const names = list.split(',').map((s) => s.trim()).filter(Boolean);
  for (const n of names) if (!(CLI_TOOLS as readonly string[]).includes(n)) throw new UsageError(`--tools: unknown tool '${n}' (known: ${CLI_TOOLS.join(', ')})`);
  return [...new Set(names)];
}

export function rewardFlag(args: CliArgs): (typeof REWARDS)[number] | undefined {
  const r = args.flags.get('reward');
  if (r !== undefined && !(REWARDS as readonly string[]).includes(r)) throw new UsageError(`--reward must be one of ${REWARDS.join(', ')}, got '${r}'`);
  return r as (typeof REWARDS)[number] | undefined;
}

/** `--data FILE` imported (a malformed item is reported and skipped); the file must exist and have answers. */
export function readData(file: string): ReturnType<typeof importBenchmark> {
  if (!existsSync(file)) throw new UsageError(`--data file '${file}' does not exist`);
  if (!statSync(file).isFile()) throw new UsageError(`--data '${file}' is a directory, not a file (AgentFlow data.json or JSONL)`);
  const bench = importBenchmark(readFileSync(file, 'utf8'), basename(file));
  for (const p of bench.problems) log(`--data: ${p.message} (skipped)`);
  if (!bench.items.some((i) => i.answer !== undefined && i.answer !== null)) throw new UsageError(`--data ${file} has no item with a reference answer to score rollouts against`);
  return bench;
}
