// `cli train --eval-data FILE [--eval-every K]`: the run's held-out evaluation (spec.evaluation; the run
// evaluates step 0, every K-th step and its last step, and writes eval.jsonl). Its flags, read the same way for
// a new run and a resumed one, and its lines on stderr.
import type { RewardKind } from '../agent/rewards';
import type { EvalPoint } from '../trainer/run/metrics';
import type { RunEvaluation, RunSpec } from '../trainer/run/run-store';
import { UsageError, type CliArgs } from './args';
import { positiveInt, readData } from './train-flags';

export const EVAL_TRAIN_FLAGS = ['eval-data', 'eval-every'] as const;

/** Steps between evaluations when --eval-every is not given. */
export const DEFAULT_EVAL_EVERY = 10;

/**
 * The held-out schedule from --eval-data / --eval-every (undefined without --eval-data). Items are scored by the
 * file's own rule, or `kind` (the run's --reward) when one was given.
 */
export function evaluationFlags(args: CliArgs, kind?: RewardKind): RunEvaluation | undefined {
  const file = args.flags.get('eval-data');
  if (file === undefined) {
    if (args.flags.has('eval-every')) throw new UsageError('--eval-every needs --eval-data FILE (the held-out items to evaluate on)');
    return undefined;
  }
  const every = positiveInt(args, 'eval-every', DEFAULT_EVAL_EVERY);
  let bench: ReturnType<typeof readData>;
  try {
    bench = readData(file);
  } catch (e) {
    // readData names its flag --data; this is --eval-data.
    if (e instanceof UsageError) throw new UsageError(e.message.replace(/--data\b/g, '--eval-data'));
    throw e;
  }
  const items = bench.items.filter((i) => i.answer !== undefined && i.answer !== null);
  return { every, dataset: bench.name, kind: kind ?? bench.kind, items };
}

/** On --resume: the schedule is the stored run's; a differing --eval-data or --eval-every is refused, naming both. */
export function checkEvalResume(args: CliArgs, spec: RunSpec): void {
  const stored = spec.evaluation;
  const show = (e: Pick<RunEvaluation, 'every'> & Partial<RunEvaluation>) => (e.items ? `${e.items.length} items named '${e.dataset}', every ${e.every} steps` : `every ${e.every} steps`);
  const has = stored ? `the run has ${show(stored)}` : 'the run has no held-out evaluation';
  if (args.flags.has('eval-data')) {
    const given = evaluationFlags(args, stored?.kind)!;
    const every = args.flags.has('eval-every') ? given.every : stored?.every;
    const same = stored && every === stored.every && given.dataset === stored.dataset && JSON.stringify(given.items) === JSON.stringify(stored.items);
    if (!same) throw new UsageError(`--resume: --eval-data gives ${show({ ...given, every: every ?? given.every })} (${has}); leave it out to keep the run's, or start a new run`);
  } else if (args.flags.has('eval-every')) {
    const every = positiveInt(args, 'eval-every', DEFAULT_EVAL_EVERY);
    if (every !== stored?.every) throw new UsageError(`--resume: --eval-every ${every} (${has}); leave it out to keep the run's, or start a new run`);
  }
}

/** An evaluation's line on stderr; a failed one says so (the run goes on). */
export function evalLine(p: EvalPoint): string {
  if (p.error) return `eval at step ${p.step} failed (the run goes on): ${p.error}`;
  const errors = p.errors ? `, ${p.errors} item(s) with errors (a reply that did not parse, a failed tool or engine)` : '';
  return `eval at step ${p.step}: accuracy ${p.accuracy.toFixed(3)} (${p.correct}/${p.total})${errors}, ${p.seconds.toFixed(1)} s, adapter ${p.adapter}`;
}
