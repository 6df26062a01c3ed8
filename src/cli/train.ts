// `cli train`: a Flow-GRPO training run, headless, in Node on Dawn. The same TrainingRun as the Training tab,
// with the planner engine in this process serving every module (the adapter only on planner calls: the other
// modules run its base weights, so a group's executor, verifier and generator calls batch too), tools run for
// real, and the run kept in a directory (src/trainer/run/run-store-dir.ts says what each file is).
// Every flag, file and value is checked before anything is written; stdout gets one JSON summary at the end,
// stderr the progress.
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import type { AgentEngines } from '../agent/loop';
import type { RewardKind } from '../agent/rewards';
import { baseModelView } from '../engine/base-model-view';
import { directorySource } from '../io/sources';
import { PlannerEngine } from '../engine/planner-engine';
import { requestGpu } from '../gpu/device';
import { BaseGeneratorTool } from '../tools/base-generator';
import type { Tool } from '../tools/tool';
import { WikipediaTool } from '../tools/wikipedia';
import { dirTrainStorage } from '../trainer/checkpoint-node';
import { agentRunDeps, agentRunSpec, DEFAULT_AGENT_BUDGET } from '../trainer/run/agent-run';
import type { RolloutProgress } from '../trainer/run/collector';
import type { StepMetrics } from '../trainer/run/metrics';
import type { RunSpec, StartAdapterSpec, StoredRun } from '../trainer/run/run-store';
import { LORA_MODULES } from '../io/peft';
import { DirRunStore, RUN_FILE } from '../trainer/run/run-store-dir';
import { TOY_GRPO, toyRunSetup, toyRunSpec } from '../trainer/run/toy-run';
import { DEFAULT_GRPO_CONFIG } from '../trainer/grpo-config';
import { TOY_TRAINING, ToyTask, toyModel } from '../trainer/toy-task';
import { newRunId, TrainingRun, type RunDeps, type RunSummary } from '../trainer/run/training-run';
import { toolTaskOf, toolTaskRunSetup, toolTaskRunSpec, TOOL_TASK_TRAINING } from '../tasks/tool-task-run';
import { TOOL_TASK_MODEL } from '../tasks/tool-task';
import { runtimePolicyHost } from '../trainer/runtime-policy-host';
import { TrainingHost } from '../trainer/training-host';
import { numberFlag, onOffFlag, parseArgs, reportFailure, UsageError, type CliArgs } from './args';
import { checkResumeFlags, resumeSteps } from './resume-flags';
import { checkEvalResume, DEFAULT_EVAL_EVERY, EVAL_TRAIN_FLAGS, evalLine, evaluationFlags } from './train-eval';
import { acquireRunLock, LockHeldError, type RunLock } from './run-lock';
import { checkDir, groupFlag, grpoFlags, parseTools, positiveInt, readData, rewardFlag, seedFlag, stepsFlag } from './train-flags';
import { checkRank, checkStepMemory, MAX_GROUP, MAX_RANK, MAX_STEPS, modelShape } from './train-limits';

export const TRAIN_FLAGS = [
  'task',
  'model',
  'adapter',
  'data',
  'out',
  'steps',
  'group',
  'queries-per-step',
  'max-turns',
  'max-new-tokens',
  'tools',
  'reward',
  'lr',
  'seed',
  'rank',
  'micro-batch-tokens',
  'max-context',
  'keep-checkpoints',
  'extra-rollouts',
  'max-update-kl',
  'backend',
  'resume',
  'constrain-replies',
  ...EVAL_TRAIN_FLAGS,
];

export const TRAIN_USAGE = `usage:
  cli train --model DIR [--adapter DIR] --data FILE --out DIR
            [--steps N] [--group G] [--queries-per-step Q] [--max-turns T] [--max-new-tokens N]
            [--tools python,base_generator] [--reward exact|numeric|choice|gameof24|judge] [--lr X] [--seed S]
            [--rank R] [--micro-batch-tokens N] [--max-context N] [--keep-checkpoints K] [--extra-rollouts N] [--max-update-kl X] [--resume]
            [--constrain-replies on|off (default on: module replies decoded under their JSON Schemas)]
            [--eval-data FILE [--eval-every K (default ${DEFAULT_EVAL_EVERY})]]
  cli train --task toy --out DIR [--steps N (default ${TOY_TRAINING.steps})] [--group G] [--lr X] [--seed S] [--rank R] [--extra-rollouts N] [--max-update-kl X] [--backend cpu|gpu] [--resume]
--out DIR receives adapter/ (PEFT), rollouts.jsonl, metrics.jsonl, run.json and checkpoints/.
  cli train --task tools --out DIR [--steps N (default ${TOOL_TASK_TRAINING.steps})] [--group G] [--queries-per-step Q] [--lr X] [--seed S]
            [--rank R] [--extra-rollouts N] [--max-update-kl X] [--eval-every K (default ${TOOL_TASK_TRAINING.evaluateEvery})] [--resume]
--task tools: the tool-choice task (a tiny planner on the CPU, no download), evaluated on its own held-out split.
--eval-data FILE: held-out items evaluated (temperature 0) with the start adapter, every K-th step's and the last
step's; one line each in --out's eval.jsonl (step, accuracy, correct, total, seconds, adapter).
--extra-rollouts N: more rollouts for a group with no success, N at most (default ${DEFAULT_GRPO_CONFIG.extraRollouts}, toy ${TOY_GRPO.extraRollouts}; 0: none).
--max-update-kl X: a trust region on each update: scaled back until the KL of its batch from the sampling policy
(mean per response token) is at most X (default 0 = none).
--resume continues the run in --out from its newest intact checkpoint; the run's own flags may be repeated
(a different value is refused), and --steps N larger than the run's extends it.
Bounds: --steps <= ${MAX_STEPS}, --group 2..${MAX_GROUP}, --rank <= min(model hidden size, ${MAX_RANK}), --seed < 2^32.`;

export { CLI_TOOLS } from './train-flags';

const log = (msg: string) => process.stderr.write(`${msg}\n`);

/** `--flag true|false` or a bare-looking `--resume` (parseArgs needs a value: `--resume true`, `--resume=1`). */
function booleanFlag(args: CliArgs, name: string): boolean {
  const v = args.flags.get(name);
  if (v === undefined) return false;
  if (/^(1|true|yes)$/i.test(v)) return true;
  if (/^(0|false|no)$/i.test(v)) return false;
  throw new UsageError(`--${name} takes no value (or true/false), got '${v}'`);
}

interface Prepared {
  store: DirRunStore;
  /** The run to start (absent when resuming). */
  start?: { id: string; spec: RunSpec };
  resumeId?: string;
  spec: RunSpec;
  /** What the user should know before the run goes on (a lock taken over, an extended run, a failed last attempt). */
  notes: string[];
  deps: () => Promise<{ deps: RunDeps; close: () => void }>;
}

/** Splits `--resume` given without a value into `--resume true`, so the generic parser accepts it. */
export function normalizeTrainArgv(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    out.push(argv[i]);
    if (argv[i] === '--resume' && (i + 1 >= argv.length || argv[i + 1].startsWith('--'))) out.push('true');
  }
  return out;
}

/** Holds --out's lock for the process; released when the command ends, however it ends. */
let heldLock: RunLock | null = null;

function releaseLock(): void {
  heldLock?.release();
  heldLock = null;
}

/**
 * Takes --out's lock (creating the directory): from here on this process alone reads and writes the run.
 * A refusal after this point removes the directory again when this call made it.
 */
function lockOut(out: string, outFlag: string): { notes: string[]; undo: () => void } {
  const made = !existsSync(out);
  try {
    mkdirSync(out, { recursive: true });
  } catch (e) {
    throw new UsageError(`--out ${outFlag}: cannot create it (${(e as Error).message})`);
  }
  try {
    heldLock = acquireRunLock(out);
  } catch (e) {
    if (e instanceof LockHeldError) throw new UsageError(e.message);
    throw new UsageError(`--out ${outFlag}: cannot write its lock file (${(e as Error).message})`);
  }
  process.once('exit', releaseLock);
  const notes = heldLock.note ? [heldLock.note] : [];
  return {
    notes,
    undo: () => {
      releaseLock();
      if (made) rmSync(out, { recursive: true, force: true });
    },
  };
}

async function prepare(argv: string[]): Promise<Prepared> {
  const args = parseArgs(['train', ...normalizeTrainArgv(argv)], { train: TRAIN_FLAGS });
  const outFlag = args.flags.get('out');
  if (!outFlag) throw new UsageError("'train' needs --out DIR");
  const out = resolve(outFlag);
  if (existsSync(out) && !statSync(out).isDirectory()) throw new UsageError(`--out '${outFlag}' is not a directory`);
  const store = new DirRunStore(out);
  const resume = booleanFlag(args, 'resume');
  if (args.flags.has('max-context')) positiveInt(args, 'max-context', 4096);

  if (resume) {
    if (!existsSync(resolve(out, RUN_FILE))) throw new UsageError(`--resume: ${outFlag} holds no run (no ${RUN_FILE}); start one without --resume`);
    const lock = lockOut(out, outFlag);
    try {
      return await prepareResume(args, store, outFlag, lock.notes);
    } catch (e) {
      lock.undo();
      throw e;
    }
  }
  const fresh = newRun(args);
  const lock = lockOut(out, outFlag);
  // Checked under the lock: two new runs started into one directory at once would both find it empty.
  if (existsSync(resolve(out, RUN_FILE))) {
    releaseLock();
    throw new UsageError(`--out ${outFlag} already holds a run (${RUN_FILE}); pass --resume to continue it, or choose another --out`);
  }
  const id = newRunId(fresh.task === 'toy' ? 'toy' : toolTaskOf(fresh) ? 'tools' : 'agent');
  return { store, start: { id, spec: fresh }, spec: fresh, notes: lock.notes, deps: () => depsFor(fresh, args, store, id) };
}

async function prepareResume(args: CliArgs, store: DirRunStore, outFlag: string, notes: string[]): Promise<Prepared> {
  let stored: StoredRun | null;
  try {
    stored = await store.loadAny();
  } catch (e) {
    throw new UsageError(`--resume: ${(e as Error).message}`);
  }
  if (!stored) throw new UsageError(`--resume: ${outFlag} holds no run`);
  checkResumeFlags(args, stored.spec, outFlag);
  checkEvalResume(args, stored.spec);
  const { steps, note } = resumeSteps(args, stored.spec);
  // Under our lock a run recorded as running is one whose process died without saying so.
  if (stored.status === 'running') notes.push(`${RUN_FILE} said the run was running: the process that ran it stopped without recording why (killed, or out of memory or disk space)`);
  if (stored.status === 'error') notes.push(`the last attempt stopped on an error: ${stored.error ?? 'unrecorded'}`);
  let spec = stored.spec;
  if (note) {
    notes.push(note);
    const lrDecaySteps = spec.grpo.lrDecaySteps === spec.steps ? { lrDecaySteps: steps } : {};
    spec = { ...spec, steps, grpo: { ...spec.grpo, ...lrDecaySteps } };
    await store.save({ ...stored, spec, status: stored.status === 'done' ? 'paused' : stored.status });
  }
  const s = spec;
  return { store, resumeId: stored.id, spec: s, notes, deps: () => depsFor(s, args, store, stored.id) };
}

/** A new run's spec from its flags, every one checked; nothing is written. */
function newRun(args: CliArgs): RunSpec {
  const task = args.flags.get('task') ?? 'agent';
  if (task !== 'agent' && task !== 'toy' && task !== 'tools') throw new UsageError(`--task must be agent, toy or tools, got '${task}'`);
  if (task === 'tools') return toolTaskRun(args);
  // The toy's default is its run length that reaches 0.9 for any seed (TOY_TRAINING.steps); 10 ended near 0.4.
  const steps = stepsFlag(args, task === 'toy' ? TOY_TRAINING.steps : 10);
  const groupSize = groupFlag(args, task === 'toy' ? TOY_TRAINING.groupSize : 8);
  const seed = seedFlag(args);
  const rank = positiveInt(args, 'rank', task === 'toy' ? 4 : 16);
  const keepCheckpoints = positiveInt(args, 'keep-checkpoints', 3);
  const lrFlag = numberFlag(args, 'lr', undefined);
  const extraGrpo = grpoFlags(args);
  if (lrFlag !== undefined && !(lrFlag > 0 && lrFlag <= 1)) throw new UsageError(`--lr must be > 0 and <= 1, got ${lrFlag}`);
  const adapterFlag = args.flags.get('adapter');
  // A stored adapter has its rank: a --rank beside it would be ignored, so it is refused.
  if (adapterFlag !== undefined && args.flags.has('rank')) throw new UsageError(`--rank does not apply with --adapter (the adapter ${adapterFlag} has its own rank)`);
  const adapter: StartAdapterSpec =
    adapterFlag !== undefined ? { kind: 'stored', id: checkDir(adapterFlag, 'adapter'), name: basename(resolve(adapterFlag)) } : { kind: 'fresh', rank, alpha: 2 * rank, targets: [...LORA_MODULES] };

  if (task === 'toy') {
    for (const f of ['model', 'data', 'tools', 'reward', 'max-turns', 'max-new-tokens', 'queries-per-step', 'micro-batch-tokens', 'max-context', 'constrain-replies', ...EVAL_TRAIN_FLAGS]) {
      if (args.flags.has(f)) throw new UsageError(`--${f} does not apply to --task toy`);
    }
    const backend = args.flags.get('backend') ?? 'cpu';
    if (backend !== 'cpu' && backend !== 'gpu') throw new UsageError(`--backend must be cpu or gpu, got '${backend}'`);
    if (adapter.kind === 'fresh') checkRank(rank, toyModelWidth(), 'the toy planner');
    const spec = toyRunSpec({ steps, groupSize, learningRate: lrFlag ?? TOY_TRAINING.learningRate, seed, adapter, keepCheckpoints, label: `Toy task (tiny planner, ${backend.toUpperCase()})`, grpo: { checkpointEvery: 1, ...extraGrpo } });
    spec.collector = { ...spec.collector, backend };
    return spec;
  }
  if (args.flags.has('backend')) throw new UsageError('--backend applies to --task toy only');
  const modelFlag = args.flags.get('model');
  if (!modelFlag) throw new UsageError("'train' needs --model DIR (a Hugging Face folder or a web-llm MLC q4 folder)");
  checkDir(modelFlag, 'model');
  const reward = rewardFlag(args);
  const tools = parseTools(args.flags.get('tools') ?? 'python,base_generator');
  const dataFlag = args.flags.get('data');
  if (!dataFlag) throw new UsageError("'train' needs --data FILE (AgentFlow data.json or JSONL)");
  const bench = readData(dataFlag);
  const kind: RewardKind = reward === undefined || reward === 'judge' ? (reward === 'judge' ? 'exact' : bench.kind) : (reward as RewardKind);
  const answered = bench.items.filter((i) => i.answer !== undefined && i.answer !== null).length;
  const queries = Math.min(positiveInt(args, 'queries-per-step', Math.min(DEFAULT_AGENT_BUDGET.queriesPerStep, bench.items.length)), answered);
  const tokens = positiveInt(args, 'max-new-tokens', DEFAULT_AGENT_BUDGET.plannerTokens);
  const maxTurns = positiveInt(args, 'max-turns', DEFAULT_AGENT_BUDGET.maxTurns);
  const microBatchTokens = positiveInt(args, 'micro-batch-tokens', DEFAULT_AGENT_BUDGET.microBatchTokens);
  const model = modelShape(modelFlag);
  if (adapter.kind === 'fresh') checkRank(rank, model.hiddenSize, `--model ${modelFlag}`);
  // A planner turn longer than the micro-batch cannot be trained on, and none is longer than the context.
  checkStepMemory({ groupSize, queriesPerStep: queries, maxTurns, turnTokens: Math.min(microBatchTokens, model.maxPositionEmbeddings) });
  const spec = agentRunSpec({
    benchmark: { name: bench.name, kind, items: bench.items },
    // The engine id is known once the model loads; the run's spec is fixed up then (fixPlanner).
    planner: '',
    steps,
    groupSize,
    ...(lrFlag !== undefined ? { learningRate: lrFlag } : {}),
    seed,
    adapter,
    judge: reward === 'judge',
    budget: { maxTurns, plannerTokens: tokens, moduleTokens: tokens, queriesPerStep: queries, microBatchTokens, ...(onOffFlag(args, 'constrain-replies', true) ? {} : { constrainReplies: false }) },
    grpo: extraGrpo,
    // Each step checkpoints: a run killed mid-step loses at most that step.
    checkpointEvery: 1,
    keepCheckpoints,
  });
  spec.collector = { ...spec.collector, tools, model: resolve(modelFlag) };
  const evaluation = evaluationFlags(args, reward === undefined ? undefined : kind);
  if (evaluation) spec.evaluation = evaluation;
  return spec;
}

/** A new run of the tool-choice task from its flags (the task's own defaults; the CPU backend; its held-out split). */
function toolTaskRun(args: CliArgs): RunSpec {
  for (const f of ['model', 'data', 'tools', 'reward', 'max-turns', 'max-new-tokens', 'micro-batch-tokens', 'max-context', 'backend', 'eval-data', 'constrain-replies']) {
    if (args.flags.has(f)) throw new UsageError(`--${f} does not apply to --task tools`);
  }
  const rank = positiveInt(args, 'rank', TOOL_TASK_TRAINING.rank);
  const adapterFlag = args.flags.get('adapter');
  if (adapterFlag !== undefined && args.flags.has('rank')) throw new UsageError(`--rank does not apply with --adapter (the adapter ${adapterFlag} has its own rank)`);
  if (adapterFlag === undefined) checkRank(rank, TOOL_TASK_MODEL.hiddenSize, 'the tool-task planner');
  const lr = numberFlag(args, 'lr', TOOL_TASK_TRAINING.learningRate) ?? TOOL_TASK_TRAINING.learningRate;
  if (!(lr > 0 && lr <= 1)) throw new UsageError(`--lr must be > 0 and <= 1, got ${lr}`);
  const grpo = grpoFlags(args);
  return toolTaskRunSpec({
    steps: stepsFlag(args, TOOL_TASK_TRAINING.steps),
    groupSize: groupFlag(args, TOOL_TASK_TRAINING.groupSize),
    learningRate: lr,
    seed: seedFlag(args),
    adapter: adapterFlag !== undefined ? { kind: 'stored', id: checkDir(adapterFlag, 'adapter'), name: basename(resolve(adapterFlag)) } : { kind: 'fresh', rank, alpha: 2 * rank, targets: [...LORA_MODULES] },
    ...(args.flags.has('queries-per-step') ? { queriesPerStep: positiveInt(args, 'queries-per-step', 1) } : {}),
    keepCheckpoints: positiveInt(args, 'keep-checkpoints', 3),
    evaluateEvery: positiveInt(args, 'eval-every', TOOL_TASK_TRAINING.evaluateEvery),
    ...(Object.keys(grpo).length ? { grpo } : {}),
  });
}

/** The toy planner's hidden size (toyModel's default), which bounds its LoRA rank. */
function toyModelWidth(): number {
  return toyModel(new ToyTask()).config.hiddenSize;
}

export async function makeTools(names: readonly string[], shared: AgentEngines['shared']): Promise<{ tools: Tool[]; close: () => void }> {
  const tools: Tool[] = [];
  const closers: Array<() => void> = [];
  for (const n of names) {
    if (n === 'base_generator') tools.push(new BaseGeneratorTool({ engine: shared }));
    else if (n === 'wikipedia') {
      log('tools: wikipedia sends the agent\'s search text to en.wikipedia.org (named in --tools)');
      tools.push(new WikipediaTool());
    } else if (n === 'python') {
      const { createNodePythonTool } = await import('../tools/python-node');
      const py = createNodePythonTool();
      tools.push(py);
      closers.push(() => py.dispose());
    }
  }
  return { tools, close: () => closers.forEach((c) => c()) };
}

async function depsFor(spec: RunSpec, args: CliArgs, store: DirRunStore, runId: string): Promise<{ deps: RunDeps; close: () => void }> {
  const storage = async () => dirTrainStorage(store.checkpointsDir);
  if (spec.task === 'toy') {
    const backend = (spec.collector as { backend?: string }).backend === 'gpu' ? { gpu: await gpuContext() } : 'cpu';
    const setup = await toyRunSetup({ store, storage, backend });
    return { deps: setup.deps, close: () => setup.destroy() };
  }
  const toolTaskData = toolTaskOf(spec);
  if (toolTaskData) {
    const python = toolTaskData.arithmetic === 'python' ? (await import('../tools/python-node')).createNodePythonTool() : undefined;
    const setup = toolTaskRunSetup({ runId, spec, store, storage, ...(python ? { python } : {}) });
    return {
      deps: setup.deps,
      close: () => {
        setup.destroy();
        python?.dispose();
      },
    };
  }
  const c = spec.collector as { model?: string; tools?: string[] };
  const modelDir = args.flags.get('model') !== undefined ? checkDir(args.flags.get('model')!, 'model') : c.model;
  if (!modelDir) throw new UsageError("'train' needs --model DIR");
  const budget = (spec.collector as { budget: { microBatchTokens: number } }).budget;
  const maxContextFlag = args.flags.has('max-context') ? positiveInt(args, 'max-context', 4096) : undefined;
  const { planner, engines } = await loadPlanner(modelDir, maxContextFlag);
  log(`planner: ${planner.id}, context ${planner.runtime.maxContext} tokens, micro-batch ${budget.microBatchTokens} tokens`);
  fixPlanner(spec, planner.id);
  const { tools, close } = await makeTools(c.tools ?? [], engines.shared);
  const host = new TrainingHost(() => runtimePolicyHost(planner.runtime, planner.id.replace(/^planner:/, '')), storage);
  const rt = planner.runtime;
  const deps = agentRunDeps(runId, spec, { engines, tools, policy: host, store, decodeStats: async () => ({ ...rt.decodeCounters }) });
  return {
    deps,
    close: () => {
      close();
      host.trainStop();
      planner.destroy();
    },
  };
}

/** The planner engine from --model, serving every module: the others run its base weights (baseModelView). */
export async function loadPlanner(modelDir: string, maxContext?: number): Promise<{ planner: PlannerEngine; engines: AgentEngines }> {
  const ctx = await gpuContext();
  let last = -1;
  const planner = await PlannerEngine.load(ctx, directorySource(modelDir), {
    ...(maxContext !== undefined ? { maxContext } : {}),
    onProgress: (p) => {
      const pct = p.bytesTotal ? Math.floor((100 * p.bytesDone) / p.bytesTotal) : 100;
      if (pct !== last && pct % 25 === 0) log(`reading ${p.file}: ${pct}%`);
      last = pct;
    },
  });
  return { planner, engines: { planner, shared: baseModelView(planner) } };
}

/** A new agent run learns its planner's id when the model loads; a resumed one must match it. */
function fixPlanner(spec: RunSpec, id: string): void {
  const c = spec.collector as { planner?: string };
  if (!c.planner) {
    c.planner = id;
    spec.label = spec.label.replace('()', `(${id})`);
  }
}

async function gpuContext() {
  const ctx = await requestGpu();
  log(`gpu: ${ctx.caps.description || ctx.caps.vendor || 'unknown'} (shader-f16: ${ctx.caps.f16})`);
  return ctx;
}

function formatSeconds(s: number): string {
  if (!Number.isFinite(s)) return '?';
  if (s < 90) return `${s.toFixed(0)} s`;
  if (s < 5400) return `${(s / 60).toFixed(1)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

/** Runs `cli train`; resolves with the exit status after printing the summary (or the error). */
export async function runTrain(argv: string[]): Promise<number> {
  let close: (() => void) | undefined;
  try {
    const p = await prepare(argv);
    for (const n of p.notes) log(`note: ${n}`);
    const made = await p.deps();
    close = made.close;
    const run = p.start ? await TrainingRun.start(p.start.id, p.spec, made.deps) : await TrainingRun.resume(p.resumeId!, made.deps);
    for (const n of run.notes) log(`note: ${n}`);
    log(`${p.start ? 'run' : 'resuming run'} ${run.id}: ${run.spec.label}, ${run.spec.steps} steps, out ${p.store.dir}`);
    // Ctrl-C (or a SIGTERM from a job runner) pauses: the step in progress is dropped, a checkpoint is kept,
    // the lock is released, and --resume continues. A second signal quits at once (the lock is then stale).
    const onSigint = (signal: NodeJS.Signals) => {
      log(`${signal === 'SIGINT' ? 'interrupt' : signal}: pausing after a checkpoint (${signal === 'SIGINT' ? 'Ctrl-C' : signal} again to quit at once)`);
      process.off('SIGINT', onSigint);
      process.off('SIGTERM', onSigint);
      run.pause();
    };
    process.on('SIGINT', onSigint);
    process.on('SIGTERM', onSigint);
    const t0 = Date.now();
    const first = run.step;
    let lastProgress = 0;
    const summary: RunSummary = await run.run({
      onEval: (pt) => log(evalLine(pt)),
      onEvalProgress: (pr) => {
        if (pr.done < pr.total && Date.now() - lastProgress < 10_000) return;
        lastProgress = Date.now();
        log(`eval at step ${pr.step}: item ${pr.done}/${pr.total}`);
      },
      onStep: (m: StepMetrics) => {
        const done = m.step - first;
        const eta = ((Date.now() - t0) / 1000 / done) * (run.spec.steps - m.step);
        log(
          `step ${m.step}/${run.spec.steps}: reward ${m.reward.toFixed(3)} (rolling ${m.rollingReward.toFixed(3)}), loss ${m.loss.toExponential(3)}, kl ${Number.isFinite(m.kl) ? m.kl.toExponential(2) : 'not measured'}, ` +
            `${m.rolloutSeconds.toFixed(1)} s rollouts + ${m.updateSeconds.toFixed(1)} s update${m.skippedUpdate ? `, update skipped: ${m.skippedUpdate}` : ''}` +
            `${m.extraRollouts ? `, ${m.extraRollouts} extra rollouts (${m.rescuedGroups} group${m.rescuedGroups === 1 ? '' : 's'} found a success)` : ''}` +
            `${m.updateKl !== undefined ? `, update KL ${m.updateKl.toExponential(2)}${m.updateScale! < 1 ? ` (${(100 * m.updateScale!).toFixed(0)}% of the update kept)` : ''}` : ''}` +
            `${m.noSignal ? `, no reward signal: ${m.noSignal}` : ''}, ETA ${formatSeconds(eta)}`,
        );
      },
      onProgress: (pr: RolloutProgress) => {
        // At most one progress line every 10 s: long steps show they are alive without flooding the log.
        if (Date.now() - lastProgress < 10_000) return;
        lastProgress = Date.now();
        log(`step ${pr.step}: group ${Math.min(pr.groupsDone + 1, pr.groups)}/${pr.groups}, rollouts ${pr.rolloutsDone}/${pr.groupSize}`);
      },
    });
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
    if (summary.noLearning) log(`warning: ${summary.noLearning}`);
    const out = { ...summary, out: p.store.dir, ...(summary.status === 'done' && summary.result ? { adapter: resolve(p.store.dir, 'adapter') } : {}), notes: run.notes };
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return summary.status === 'done' ? 0 : 130;
  } catch (e) {
    return reportFailure(e, TRAIN_USAGE);
  } finally {
    close?.();
    releaseLock();
  }
}
