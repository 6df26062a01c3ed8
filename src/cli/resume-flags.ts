// `cli train --resume` with the flags that set up the run: people rerun the command that started it with
// --resume added, so a flag equal to the stored setting is accepted, and one that differs is refused naming
// both values (the stored run decides; a changed group or data set would be another run).
// --steps is the exception: a larger count extends the run (see resumeSteps).
import { resolve } from 'node:path';
import { toolTaskOf } from '../tasks/tool-task-run';
import type { AgentRunData } from '../trainer/run/agent-run';
import type { RunSpec } from '../trainer/run/run-store';
import { DEFAULT_GRPO_CONFIG } from '../trainer/grpo-config';
import { TOY_TRAINING } from '../trainer/toy-task';
import { TOY_GRPO } from '../trainer/run/toy-run';
import { numberFlag, UsageError, type CliArgs } from './args';
import { extraRolloutsFlag, groupFlag, maxUpdateKlFlag, parseTools, positiveInt, readData, rewardFlag, seedFlag, stepsFlag } from './train-flags';

/** The flags a run is set up with; --model, --max-context and --resume itself only say how to run it now. */
export const RUN_SETTINGS = ['task', 'adapter', 'data', 'group', 'queries-per-step', 'max-turns', 'max-new-tokens', 'tools', 'reward', 'lr', 'seed', 'rank', 'micro-batch-tokens', 'keep-checkpoints', 'extra-rollouts', 'max-update-kl', 'backend'] as const;

type Setting = (typeof RUN_SETTINGS)[number];

const show = (v: unknown) => (v === undefined ? 'none' : Array.isArray(v) ? v.join(',') || 'none' : String(v));

/** For each setting: the flag's value as a new run would store it, and the stored run's. */
function compare(name: Setting, args: CliArgs, spec: RunSpec): { given: unknown; stored: unknown } {
  const agent = spec.task === 'agent' ? (spec.collector as unknown as AgentRunData) : undefined;
  const collector = spec.collector as { tools?: string[]; backend?: string };
  const raw = args.flags.get(name)!;
  switch (name) {
    case 'task':
      return { given: raw, stored: toolTaskOf(spec) ? 'tools' : spec.task };
    case 'adapter':
      return { given: resolve(raw), stored: spec.adapter.kind === 'stored' ? spec.adapter.id : `a fresh rank-${spec.adapter.rank} adapter` };
    case 'data': {
      if (!agent) return { given: raw, stored: undefined };
      const bench = readData(raw);
      // The same items, in the same order, with the same answers: what the schedule samples from.
      const items = bench.items.filter((i) => i.answer !== undefined && i.answer !== null);
      const same = bench.name === agent.benchmark.name && JSON.stringify(items) === JSON.stringify(agent.benchmark.items);
      return same ? { given: raw, stored: raw } : { given: `${raw} (${items.length} items named '${bench.name}')`, stored: `${agent.benchmark.items.length} items named '${agent.benchmark.name}'` };
    }
    case 'group':
      return { given: groupFlag(args, 0), stored: spec.grpo.groupSize };
    case 'queries-per-step': {
      // A new run takes at most the data's item count; the same command must find the same value.
      const q = positiveInt(args, name, 0);
      return { given: agent ? Math.min(q, agent.benchmark.items.length) : q, stored: agent ? spec.grpo.queriesPerStep : undefined };
    }
    case 'max-turns':
      return { given: positiveInt(args, name, 0), stored: agent?.budget.maxTurns };
    case 'max-new-tokens':
      return { given: positiveInt(args, name, 0), stored: agent?.budget.plannerTokens };
    case 'micro-batch-tokens':
      return { given: positiveInt(args, name, 0), stored: agent?.budget.microBatchTokens };
    case 'tools':
      return { given: [...parseTools(raw)].sort(), stored: agent ? [...(collector.tools ?? [])].sort() : undefined };
    case 'reward': {
      const r = rewardFlag(args);
      return { given: r, stored: agent ? (agent.judge ? 'judge' : agent.benchmark.kind) : undefined };
    }
    case 'lr':
      return { given: numberFlag(args, name, undefined), stored: spec.grpo.learningRate ?? (spec.task === 'toy' ? TOY_TRAINING.learningRate : DEFAULT_GRPO_CONFIG.learningRate) };
    case 'seed':
      return { given: seedFlag(args), stored: spec.grpo.seed };
    case 'rank':
      return { given: positiveInt(args, name, 0), stored: spec.adapter.kind === 'fresh' ? spec.adapter.rank : `that of the adapter ${spec.adapter.id}` };
    case 'keep-checkpoints':
      return { given: positiveInt(args, name, 0), stored: spec.keepCheckpoints };
    case 'extra-rollouts':
      return { given: extraRolloutsFlag(args), stored: spec.grpo.extraRollouts ?? (spec.task === 'toy' ? TOY_GRPO.extraRollouts : DEFAULT_GRPO_CONFIG.extraRollouts) };
    case 'max-update-kl':
      // A spec records the bound it was made with; one without ran unbounded (GrpoConfig's default).
      return { given: maxUpdateKlFlag(args), stored: spec.grpo.maxUpdateKl ?? DEFAULT_GRPO_CONFIG.maxUpdateKl };
    case 'backend':
      return { given: raw, stored: spec.task === 'toy' ? (collector.backend ?? 'cpu') : undefined };
  }
}

/** Refuses every set-up flag whose value differs from the stored run's, naming both. */
export function checkResumeFlags(args: CliArgs, spec: RunSpec, out: string): void {
  const differ: string[] = [];
  for (const name of RUN_SETTINGS) {
    if (!args.flags.has(name)) continue;
    const { given, stored } = compare(name, args, spec);
    if (JSON.stringify(given) !== JSON.stringify(stored)) differ.push(`--${name} ${show(given)} (the run has ${show(stored)})`);
  }
  if (differ.length) {
    throw new UsageError(`--resume continues the run stored in ${out}, and these flags differ from its settings: ${differ.join('; ')}; leave them out, or give the run's values`);
  }
}

/**
 * The step count a resumed run runs to. More steps than stored extends it (its learning rate, when it decays
 * over the run, then decays over the new length); fewer is refused: a finished run's length is its record.
 */
export function resumeSteps(args: CliArgs, spec: RunSpec): { steps: number; note?: string } {
  if (!args.flags.has('steps')) return { steps: spec.steps };
  const steps = stepsFlag(args, spec.steps);
  if (steps < spec.steps) throw new UsageError(`--steps ${steps} is fewer than the run's ${spec.steps} steps; --resume can keep the run's length or extend it, not shorten it`);
  if (steps === spec.steps) return { steps };
  const decays = spec.grpo.lrDecaySteps === spec.steps;
  return { steps, note: `extending the run from ${spec.steps} to ${steps} steps${decays ? `; its learning rate now decays over ${steps} steps` : ''}` };
}
