// `cli eval --task tools`: the tool-choice task's planner (its tiny CPU model, untrained or with --adapter, a PEFT
// folder such as `cli train --task tools` writes) on one of the task's splits, through the same evaluateItems and
// the same files as `cli eval` (results.jsonl, summary.json, experiment.json), which the Experiments tab imports.
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { experimentFile, resultsJsonl, summaryOf, type EvalSummary } from '../agent/experiment-file';
import { toolTask, toolTaskOfBaseModel, TOOL_TASK_SETTINGS_V1, type ToolTaskOptions } from '../tasks/tool-task';
import { parseAdapterConfig } from '../io/peft';
import { evaluateToolTask, TOOL_TASK_BUDGET, toolTaskEvalEngines } from '../tasks/tool-task-run';
import { loadAdapter } from '../engine/load-checkpoint';
import { directorySource } from '../io/sources';
import type { ExperimentRecord } from '../store/records';
import { boundedInt, parseArgs, reportFailure, UsageError } from './args';
import { checkDir, seedFlag } from './train-flags';
import { MAX_SEED } from './train-limits';

export const TOOL_EVAL_FLAGS = ['task', 'adapter', 'out', 'split', 'task-seed', 'arithmetic', 'temperature', 'samples', 'seed'];

export const TOOL_EVAL_USAGE = `usage:
  cli eval --task tools --out DIR [--adapter DIR] [--split held-out|train (default held-out)] [--task-seed N (default 1)]
           [--arithmetic calculator|python (default calculator)]
           [--temperature X (default 0)] [--samples K (default 1)] [--seed S]
The tool-choice task's tiny planner (no download) on its questions of --task-seed; --out receives results.jsonl,
summary.json and experiment.json. With --adapter, the planner, questions and arithmetic tool are the ones the
adapter was trained on (its base model names them); --task-seed and --arithmetic, if given, must agree.`;

const log = (msg: string) => process.stderr.write(`${msg}\n`);

const OUT_FILES = ['results.jsonl', 'summary.json', 'experiment.json'];

/** Whether `cli eval`'s arguments ask for the tool-choice task (`--task tools` or `--task=tools`). */
export function isToolTaskEval(argv: readonly string[]): boolean {
  return argv.some((a, i) => a === '--task=tools' || (a === '--task' && argv[i + 1] === 'tools'));
}

/**
 * The task an adapter was trained on, from the base model its adapter_config.json names: the planner must be
 * the one it was trained with (same questions' tokenizer, shape and weights). --task-seed and --arithmetic may
 * be left out; given, they must agree. An adapter of the first shape (bare base model name) records no seed:
 * --task-seed picks it, as before.
 */
function adapterTask(flag: string, dir: string, given: ToolTaskOptions, flagged: { taskSeed: boolean; arithmetic: boolean }): ToolTaskOptions {
  const file = join(dir, 'adapter_config.json');
  let base: string | null;
  let of: ReturnType<typeof toolTaskOfBaseModel>;
  try {
    base = parseAdapterConfig(JSON.parse(readFileSync(file, 'utf8')) as unknown, file).baseModelNameOrPath;
    of = toolTaskOfBaseModel(base);
  } catch (e) {
    throw new UsageError(`--adapter ${flag}: ${(e as Error).message}`);
  }
  if (of === null) throw new UsageError(`--adapter ${flag} was trained for base model “${base ?? '(none named)'}”, not the tool-choice task's planner`);
  if (of === 'v1') return { ...given, ...TOOL_TASK_SETTINGS_V1, model: { ...TOOL_TASK_SETTINGS_V1.model } };
  if (flagged.taskSeed && of.seed !== given.seed) throw new UsageError(`--task-seed ${given.seed}: --adapter ${flag} was trained on the questions of seed ${of.seed} (leave --task-seed out to use them)`);
  if (flagged.arithmetic && of.arithmetic !== given.arithmetic) throw new UsageError(`--arithmetic ${given.arithmetic}: --adapter ${flag} was trained with ${of.arithmetic} (leave --arithmetic out to use it)`);
  return of;
}

/** Runs `cli eval --task tools`; resolves with the exit status after printing the summary (or the error). */
export async function runToolTaskEval(argv: string[]): Promise<number> {
  let dispose: (() => void) | undefined;
  try {
    const args = parseArgs(['eval', ...argv], { eval: TOOL_EVAL_FLAGS });
    const outFlag = args.flags.get('out');
    if (!outFlag) throw new UsageError("'eval --task tools' needs --out DIR");
    const out = resolve(outFlag);
    if (existsSync(out)) {
      if (!statSync(out).isDirectory()) throw new UsageError(`--out '${outFlag}' is not a directory`);
      const held = OUT_FILES.filter((f) => readdirSync(out).includes(f));
      if (held.length) throw new UsageError(`--out ${outFlag} already holds an evaluation (${held.join(', ')}); choose another --out`);
    }
    const split = args.flags.get('split') ?? 'held-out';
    if (split !== 'held-out' && split !== 'train') throw new UsageError(`--split must be held-out or train, got '${split}'`);
    let taskSeed = boundedInt(args, 'task-seed', 1, 0, MAX_SEED, 'the seed the questions are drawn from');
    const temperatureText = args.flags.get('temperature') ?? '0';
    const temperature = Number(temperatureText);
    if (!(Number.isFinite(temperature) && temperature >= 0 && temperature <= 10)) throw new UsageError(`--temperature must be a number from 0 to 10, got '${temperatureText}'`);
    const samples = boundedInt(args, 'samples', 1, 1, 1024, 'runs of each item');
    const seed = seedFlag(args);
    const adapterFlag = args.flags.get('adapter');
    const adapterDir = adapterFlag !== undefined ? checkDir(adapterFlag, 'adapter') : undefined;

    const arithmeticFlag = args.flags.get('arithmetic');
    if (arithmeticFlag !== undefined && arithmeticFlag !== 'calculator' && arithmeticFlag !== 'python') throw new UsageError(`--arithmetic must be calculator or python, got '${arithmeticFlag}'`);
    let settings: ToolTaskOptions = { seed: taskSeed, arithmetic: (arithmeticFlag ?? 'calculator') as 'calculator' | 'python' };
    if (adapterDir) {
      settings = adapterTask(adapterFlag!, adapterDir, settings, { taskSeed: args.flags.has('task-seed'), arithmetic: arithmeticFlag !== undefined });
      taskSeed = settings.seed!;
    }
    const arithmetic = settings.arithmetic!;
    const task = toolTask(settings);
    const adapter = adapterDir ? await loadAdapter(directorySource(adapterDir), task.model.config) : null;
    let python = null;
    if (arithmetic === 'python') {
      const { createNodePythonTool } = await import('../tools/python-node');
      const py = createNodePythonTool();
      dispose = () => py.dispose();
      python = py;
    }
    const { engines, tools } = toolTaskEvalEngines(task, adapter, python);
    const items = (split === 'train' ? task.splits.train : task.splits.heldOut).map((i) => ({ ...i }));
    const benchmark = `tool-task-${taskSeed}-${split}`;
    const createdAt = Date.now();
    const id = `eval-${createdAt.toString(36)}`;
    const adapterName = adapterDir ? basename(adapterDir) : undefined;
    const experiment: ExperimentRecord = {
      id,
      createdAt,
      name: `${engines.planner.id.replace(/^planner:/, '')}${adapterName ? ` + adapter “${adapterName}”` : ''} · ${benchmark} × ${items.length} · ${TOOL_TASK_BUDGET.maxTurns} turns`,
      status: 'running',
      config: {
        benchmark,
        rewardKind: 'exact',
        indices: items.map((_, i) => i),
        maxTurns: TOOL_TASK_BUDGET.maxTurns,
        engines: [engines.planner.id, engines.shared.id],
        adapter: adapterDir ? { id: adapterDir, name: adapterName! } : null,
        scripted: false,
        tools: tools.map((t) => t.card.name),
        settings: { temperature, samples, maxNewTokens: TOOL_TASK_BUDGET.plannerTokens, seed, reward: 'exact', data: benchmark, constrainReplies: true },
      },
      total: items.length * samples,
    };
    mkdirSync(out, { recursive: true });
    const results = join(out, 'results.jsonl');
    writeFileSync(results, '');
    log(`eval ${experiment.name}: ${items.length} item(s) × ${samples} sample(s), out ${out}`);
    let correct = 0;
    const recs = await evaluateToolTask(engines, tools, {
      task,
      items,
      temperature,
      samples,
      seed,
      experimentId: id,
      onItem: (rec, done, total) => {
        appendFileSync(results, resultsJsonl([rec]));
        if (rec.correct) correct++;
        log(`item ${done}/${total} (${rec.pid}): ${rec.correct ? 'right' : 'wrong'}, ${rec.turns ?? 0} turn(s); accuracy so far ${(correct / done).toFixed(3)}`);
      },
    });
    experiment.status = 'done';
    const summary: EvalSummary = summaryOf(experiment, recs);
    writeFileSync(join(out, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
    writeFileSync(join(out, 'experiment.json'), `${experimentFile(experiment, recs)}\n`);
    process.stdout.write(`${JSON.stringify({ ...summary, out })}\n`);
    return 0;
  } catch (e) {
    return reportFailure(e, TOOL_EVAL_USAGE);
  } finally {
    dispose?.();
  }
}
