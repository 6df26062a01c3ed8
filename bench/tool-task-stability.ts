// Does the tool-choice task (`cli train --task tools`) learn for any seed, and stay learned? Runs the task on
// the float64 CPU backend through the real loop and TrainingRun and prints, per seed, the held-out accuracy
// (temperature 0, the run's own evaluator) at each evaluation, the first evaluated step at >= 0.9, the lowest
// accuracy from then on, and per-kind accuracy at the end. A seed is both the question seed and the run seed.
//   npx tsx bench/tool-task-stability.ts [--seeds 101-103] [--steps N] [--lr X] [--group G] [--queries Q]
//       [--eval-every K] [--task '{"trainPerKind":12}'] [--grpo '{"extraRollouts":8}'] [--budget '{"maxTurns":2}']
//       [--adapter '{"rank":8,"alpha":16}'] [--train-eval N] [--train-kinds fact,arithmetic] [--norms] [--show-two-part]
//       [--stop-at N]
// --norms logs every step's gradient norm beside what the update did: the change of the adapter's tensors and of
// the weights it adds (scale · B·A, every module), to tell a large update from a large gradient.
// --stop-at N stops a run once step N is evaluated (a multiple of --eval-every), its learning-rate schedule still that
// of --steps: a screen of a run's first part where a whole run does not fit (the device tool's 600 s calls).
// --show-two-part logs, at the end, each held-out two-part question with the tools the planner called for it, in order,
// and the first tool of 32 draws at temperature 1 (the training policy) for each.
// --train-eval N also evaluates the first N training questions of each kind, reported apart (learned but not
// carried to new questions, or not learned).
// --goal runs each seed three ways — the task's defaults (TOOL_TASK_TRAINING), twice the lr, three times the
// steps — and checks the target: held-out accuracy reaches 0.9 within --within steps (200) and never falls
// below --floor (0.85) afterwards. Prints a table and the seeds that miss. --ways default,2x-lr,3x-steps runs some
// of the three (one process a way, so two cores fill the table side by side). Tune on one seed list and report on
// another (README, "Tool-choice task", names the seeds each was).
import type { LoraModule } from '../src/io/peft';
import type { ExperimentItemRecord } from '../src/store/records';
import { memoryTrainStorage } from '../src/trainer/checkpoint-memory';
import type { GrpoConfig } from '../src/trainer/grpo-config';
import type { AgentBudget, AgentRunData } from '../src/trainer/run/agent-run';
import { MemoryRunStore } from '../src/trainer/run/run-store-memory';
import { TrainingRun } from '../src/trainer/run/training-run';
import { toolTaskRunSetup, toolTaskRunSpec, TOOL_TASK_TRAINING, type ToolTaskSpecData } from '../src/tasks/tool-task-run';
import { liveAdapter } from '../src/tasks/tool-task';
import { toolTaskEvalEngines } from '../src/tasks/tool-task-run';
import { FIXED_ANALYSIS } from '../src/tasks/fixed-modules';
import { plannerMessages } from '../src/agent/prompts';
import { ReplySchemas, resolveReplyLimits } from '../src/agent/reply-schemas';
import type { LoraAdapter } from '../src/io/peft';
import { seedList, stabilityWays } from './toy-stability';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

export interface ToolTaskStabilityOptions {
  seed: number;
  steps: number;
  lr: number;
  group: number;
  queries?: number;
  evaluateEvery: number;
  task?: Partial<ToolTaskSpecData>;
  grpo?: Partial<GrpoConfig>;
  budget?: Partial<AgentBudget>;
  /** A fresh adapter of this rank and alpha (default the task's: TOOL_TASK_TRAINING.rank, alpha 2 × rank, every layer matrix). */
  adapter?: { rank: number; alpha?: number; targets?: LoraModule[] };
  /** Also evaluate this many training questions of each kind (reported apart; the accuracies stay held-out). */
  trainEval?: number;
  /** Train on these question kinds only (a diagnostic; the evaluation keeps every kind). */
  trainKinds?: string[];
  /** Log each step's gradient norm and update norms (see --norms). */
  norms?: boolean;
  /** At the end, log each held-out two-part question with the tools it called (see --show-two-part). */
  showTwoPart?: boolean;
  /** Stop once this step is evaluated, keeping the schedule of `steps` (see --stop-at). */
  stopAt?: number;
  log?: (line: string) => void;
}

/** The adapter's tensors, and the weights it adds (scale · B·A per module), each flattened in one array. */
function adapterState(a: LoraAdapter): { params: Float64Array; delta: Float64Array } {
  const params: number[] = [];
  const delta: number[] = [];
  for (const p of [...a.pairs.values()]) {
    params.push(...p.A, ...p.B);
    for (let o = 0; o < p.outFeatures; o++) {
      for (let i = 0; i < p.inFeatures; i++) {
        let d = 0;
        for (let k = 0; k < p.r; k++) d += p.B[o * p.r + k] * p.A[k * p.inFeatures + i];
        delta.push(p.scale * d);
      }
    }
  }
  return { params: Float64Array.from(params), delta: Float64Array.from(delta) };
}

const l2 = (x: Float64Array, y?: Float64Array) => Math.sqrt(x.reduce((s, v, i) => s + (v - (y ? y[i] : 0)) ** 2, 0));

export interface ToolTaskStabilitySummary {
  seed: number;
  /** Held-out accuracy at each evaluated step. */
  evals: Array<{ step: number; accuracy: number }>;
  /** First evaluated step at >= 0.9 (null: never), and the lowest accuracy from then on. */
  reached: number | null;
  minAfter: number | null;
  final: number;
  /** The last evaluation's accuracy per question kind ("arithmetic 8/8 ..."). */
  perKind: string;
  seconds: number;
}

export async function toolTaskStability(o: ToolTaskStabilityOptions): Promise<ToolTaskStabilitySummary> {
  const t0 = Date.now();
  const spec = toolTaskRunSpec({
    task: { seed: o.seed, ...o.task },
    seed: o.seed,
    steps: o.steps,
    groupSize: o.group,
    learningRate: o.lr,
    evaluateEvery: o.evaluateEvery,
    keepCheckpoints: 1,
    ...(o.queries !== undefined ? { queriesPerStep: o.queries } : {}),
    ...(o.budget ? { budget: o.budget } : {}),
    ...(o.adapter ? { adapter: { kind: 'fresh' as const, rank: o.adapter.rank, alpha: o.adapter.alpha ?? 2 * o.adapter.rank, targets: o.adapter.targets ?? ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] } } : {}),
    grpo: { checkpointEvery: o.steps, ...o.grpo },
  });
  // Training questions in the evaluation too (the first `trainEval` of each kind), to tell a kind the run has not
  // learned from one it learned and does not carry to new questions (held-out facts name countries and
  // elements no training question names).
  if (o.trainEval && spec.evaluation) {
    const train = (spec.collector as unknown as AgentRunData).benchmark.items;
    const take = new Map<string, number>();
    const extra = train.filter((i) => {
      const k = /^train-(.+)-\d+$/.exec((i as { pid?: string }).pid ?? '')?.[1] ?? '?';
      take.set(k, (take.get(k) ?? 0) + 1);
      return take.get(k)! <= o.trainEval!;
    });
    spec.evaluation = { ...spec.evaluation, items: [...spec.evaluation.items, ...extra] };
  }
  // A diagnostic: train on some kinds only (the evaluation keeps every kind), to see whether one kind's
  // gradients undo another's.
  if (o.trainKinds) {
    const data = spec.collector as unknown as AgentRunData;
    data.benchmark.items = data.benchmark.items.filter((i) => o.trainKinds!.includes((i as { kind?: string }).kind ?? ''));
  }
  const store = new MemoryRunStore();
  const storage = memoryTrainStorage();
  const byStep = new Map<number, ExperimentItemRecord[]>();
  const setup = toolTaskRunSetup({ runId: `tool-stability-${o.seed}`, spec, store, storage: async () => storage, onEvalItem: (step, rec) => void (byStep.get(step) ?? byStep.set(step, []).get(step)!).push(rec) });
  const run = await TrainingRun.start(`tool-stability-${o.seed}`, spec, setup.deps);
  const evals: Array<{ step: number; accuracy: number }> = [];
  let rewards = 0;
  const current = liveAdapter(setup.host);
  let before: ReturnType<typeof adapterState> | null = null;
  let lastAdapter: LoraAdapter | null = null;
  await run.run({
    onStep: (m) => {
      if (o.norms) {
        const a = current().adapter;
        const now = a ? adapterState(a) : null;
        if (now) {
          const moved = before ? `adapter moved ${l2(now.params, before.params).toExponential(2)}, added weights moved ${l2(now.delta, before.delta).toExponential(2)}` : 'first step';
          const region = m.updateKl !== undefined ? `; update KL ${m.updateKl.toExponential(2)}, kept ${m.updateScale!.toFixed(3)}` : '';
          o.log?.(`seed ${o.seed} step ${m.step}: reward ${m.reward.toFixed(3)} grad norm ${m.gradNorm.toExponential(2)}${m.noSignal ? ' (no signal)' : ''}${region}; ${moved}; |adapter| ${l2(now.params).toExponential(2)} |added| ${l2(now.delta).toExponential(2)}`);
        }
        before = now;
      }
      rewards += m.reward;
      if (m.step % 10 === 0) o.log?.(`seed ${o.seed} step ${m.step}: training reward ${(rewards / 10).toFixed(2)} (last 10 steps)  ${((Date.now() - t0) / 1000).toFixed(0)} s`);
      if (m.step % 10 === 0) rewards = 0;
    },
    onEval: (e) => {
      // The run's session stops when it ends: keep the last evaluated adapter for the draws below.
      if (o.showTwoPart) lastAdapter = structuredClone(current().adapter);
      const recs = byStep.get(e.step) ?? [];
      const held = recs.filter((r) => r.pid.startsWith('heldOut-'));
      const correct = held.filter((r) => r.correct).length;
      const accuracy = o.trainEval ? correct / held.length : e.accuracy;
      evals.push({ step: e.step, accuracy });
      const train = o.trainEval ? `; training questions ${kinds(recs.filter((r) => r.pid.startsWith('train-')))}` : '';
      o.log?.(`seed ${o.seed} step ${e.step}: held-out ${accuracy.toFixed(3)} (${correct}/${held.length}) ${kinds(held)}${train}  ${((Date.now() - t0) / 1000).toFixed(0)} s`);
      if (o.stopAt !== undefined && e.step >= o.stopAt) run.pause();
    },
  });
  // How the trained planner picks its first tool for each held-out two-part question: 32 draws at temperature 1
  // (its training policy) under the reply schema. One count near 32 for questions of different pairs is a
  // first tool chosen without reading the question.
  if (o.showTwoPart) {
    const { engines } = toolTaskEvalEngines(setup.task, lastAdapter, null);
    const schema = new ReplySchemas(setup.task.cards.map((c) => c.name), resolveReplyLimits({ ...setup.task.replyLimits })).forPlanner()!;
    for (const item of setup.task.splits.heldOut.filter((i) => i.kind === 'two-part')) {
      const messages = plannerMessages({ query: item.query, analysis: FIXED_ANALYSIS, cards: setup.task.cards, memory: [], turn: 1, maxTurns: 2, style: setup.task.plannerPrompt });
      const counts = new Map<string, number>();
      for (let k = 0; k < 32; k++) {
        const r = await engines.planner.stream(messages, { temperature: 1, seed: 1000 + k, jsonSchema: schema, maxNewTokens: 48 }).result;
        const tool = /"tool_name": ?"([^"]*)"/.exec(r.text)?.[1] ?? '?';
        counts.set(tool, (counts.get(tool) ?? 0) + 1);
      }
      o.log?.(`seed ${o.seed} turn-1 draws: ${item.query}  ${[...counts].sort((a, b) => b[1] - a[1]).map(([t, n]) => `${t} ${n}`).join(', ')}`);
    }
  }
  setup.destroy();
  // What the last evaluation's misses did: the tools each called, in count, per kind.
  const misses = new Map<string, Map<string, number>>();
  for (const r of byStep.get(evals[evals.length - 1]?.step ?? -1) ?? []) {
    if (r.correct || !r.pid.startsWith('heldOut-')) continue;
    const kind = /^heldOut-(.+)-\d+$/.exec(r.pid)?.[1] ?? '?';
    const calls = Object.entries(r.toolCalls ?? {}).map(([t, n]) => (n > 1 ? `${t}×${n}` : t)).sort().join('+') || 'none';
    const m = misses.get(kind) ?? misses.set(kind, new Map()).get(kind)!;
    m.set(calls, (m.get(calls) ?? 0) + 1);
  }
  if (misses.size) o.log?.(`seed ${o.seed} misses at the end: ${[...misses].map(([k, m]) => `${k}: ${[...m].map(([c, n]) => `${c} (${n})`).join(', ')}`).join('; ')}`);
  if (o.showTwoPart) {
    for (const r of byStep.get(evals[evals.length - 1]?.step ?? -1) ?? []) {
      if (!/^heldOut-two-part-/.test(r.pid)) continue;
      // Unsorted: toolCalls keeps the order of each tool's first call, so this reads as turn 1 then turn 2.
      const calls = Object.entries(r.toolCalls ?? {}).map(([t, n]) => (n > 1 ? `${t}×${n}` : t)).join(' then ') || 'none';
      o.log?.(`seed ${o.seed} two-part ${r.correct ? 'hit ' : 'miss'}: ${r.query}  [${calls}]`);
    }
  }
  const at = evals.findIndex((e) => e.accuracy >= 0.9);
  const last = evals[evals.length - 1];
  return {
    seed: o.seed,
    evals,
    reached: at < 0 ? null : evals[at].step,
    minAfter: at < 0 ? null : Math.min(...evals.slice(at).map((e) => e.accuracy)),
    final: last?.accuracy ?? 0,
    perKind: kinds((byStep.get(last?.step ?? -1) ?? []).filter((r) => r.pid.startsWith('heldOut-'))),
    seconds: (Date.now() - t0) / 1000,
  };
}

/** "arithmetic 8/8 fact 7/8 ...": a held-out evaluation's records by kind (the kind is in the item id). */
function kinds(recs: readonly ExperimentItemRecord[]): string {
  const by = new Map<string, [number, number]>();
  for (const r of recs) {
    const k = /^(?:heldOut|train)-(.+)-\d+$/.exec(r.pid)?.[1] ?? '?';
    const c = by.get(k) ?? [0, 0];
    by.set(k, [c[0] + (r.correct ? 1 : 0), c[1] + 1]);
  }
  return [...by].sort().map(([k, [c, n]]) => `${k} ${c}/${n}`).join(' ');
}

const f = (x: number | null) => (x === null ? '-' : x.toFixed(3));

async function main(): Promise<void> {
  const seeds = seedList(arg('seeds') ?? '101-103');
  const lr = Number(arg('lr') ?? TOOL_TASK_TRAINING.learningRate);
  const steps = Number(arg('steps') ?? TOOL_TASK_TRAINING.steps);
  const group = Number(arg('group') ?? TOOL_TASK_TRAINING.groupSize);
  const evaluateEvery = Number(arg('eval-every') ?? TOOL_TASK_TRAINING.evaluateEvery);
  const queries = arg('queries') !== undefined ? Number(arg('queries')) : undefined;
  const task = JSON.parse(arg('task') ?? '{}') as Partial<ToolTaskSpecData>;
  const grpo = JSON.parse(arg('grpo') ?? '{}') as Partial<GrpoConfig>;
  const budget = JSON.parse(arg('budget') ?? '{}') as Partial<AgentBudget>;
  const adapter = arg('adapter') !== undefined ? (JSON.parse(arg('adapter')!) as ToolTaskStabilityOptions['adapter']) : undefined;
  const trainEval = arg('train-eval') !== undefined ? Number(arg('train-eval')) : undefined;
  const trainKinds = arg('train-kinds')?.split(',');
  const stopAt = arg('stop-at') !== undefined ? Number(arg('stop-at')) : undefined;
  const common = { ...(process.argv.includes('--norms') ? { norms: true } : {}), ...(process.argv.includes('--show-two-part') ? { showTwoPart: true } : {}), ...(trainEval ? { trainEval } : {}), ...(trainKinds ? { trainKinds } : {}), ...(stopAt !== undefined ? { stopAt } : {}), group, evaluateEvery, task, grpo, budget, ...(adapter ? { adapter } : {}), log: (l: string) => console.log(l), ...(queries !== undefined ? { queries } : {}) };
  const settings = `group ${group} queries ${queries ?? 'default'} eval every ${evaluateEvery} task ${JSON.stringify(task)} grpo ${JSON.stringify(grpo)} budget ${JSON.stringify(budget)}${adapter ? ` adapter ${JSON.stringify(adapter)}` : ''}`;
  if (!process.argv.includes('--goal')) {
    for (const seed of seeds) {
      const s = await toolTaskStability({ seed, steps, lr, ...common });
      console.log(`seed ${s.seed}: ${s.evals.map((e) => `${e.step}:${e.accuracy.toFixed(2)}`).join(' ')}; first 0.9 at ${s.reached ?? '-'}, min after ${f(s.minAfter)}, final ${f(s.final)} (${s.perKind}), ${s.seconds.toFixed(0)} s  [steps ${steps} lr ${lr} ${settings}]`);
    }
    return;
  }
  const within = Number(arg('within') ?? 200);
  const floor = Number(arg('floor') ?? 0.85);
  // --ways picks some of the three (e.g. two processes on a 2-core machine, one way each).
  const all = stabilityWays(steps, lr);
  const wayKeys = all.map((w) => w.key);
  const picked = (arg('ways') ?? wayKeys.join(',')).split(',');
  const unknown = picked.filter((k) => !wayKeys.includes(k));
  if (unknown.length) throw new Error(`--ways: '${unknown.join(', ')}' is not one of ${wayKeys.join(', ')}`);
  const ways = all.filter((w) => picked.includes(w.key));
  console.log(`${settings}; target: held-out 0.9 by step ${within}, never below ${floor} after`);
  console.log(`| seed | ${ways.map((w) => `${w.name}: first 0.9 / min after / final`).join(' | ')} |`);
  console.log(`| --- | ${ways.map(() => '---').join(' | ')} |`);
  const misses: string[] = [];
  for (const seed of seeds) {
    const cells: string[] = [];
    for (const w of ways) {
      const s = await toolTaskStability({ seed, steps: w.steps, lr: w.lr, ...common });
      const ok = s.reached !== null && s.reached <= within && (s.minAfter ?? 0) >= floor;
      if (!ok) misses.push(`seed ${seed} ${w.name}`);
      cells.push(`${s.reached ?? '-'} / ${f(s.minAfter)} / ${f(s.final)} (${s.seconds.toFixed(0)} s)${ok ? '' : ' **miss**'}`);
    }
    console.log(`| ${seed} | ${cells.join(' | ')} |`);
  }
  console.log(misses.length ? `missed: ${misses.join('; ')}` : `all ${seeds.length} seeds met the target in ${ways.length === 3 ? 'all 3 ways' : ways.map((w) => w.name).join(', ')}`);
}

if (/tool-task-stability\.(ts|mjs)$/.test(process.argv[1] ?? '')) main().catch((e) => {
  console.error(e);
  process.exit(1);
});
