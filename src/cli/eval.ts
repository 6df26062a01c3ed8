// `cli eval`: the Experiments tab's run, headless. Each item of --data (K times with --samples K) goes through
// the same agent loop and rollout settings `cli train` uses (the planner engine serving every module), scored
// by the same rule (scoreRunInto: rewards' scoreAnswerDetail), into the item record the tab stores. --out gets
// results.jsonl (a line per item and sample, appended as each finishes), summary.json and experiment.json (both
// in one file), which the Experiments tab imports as a run (src/agent/experiment-file.ts). evaluateItems lives
// in src/trainer/run/evaluate-items.ts, where `cli train --eval-data` and the page evaluate a run's adapter too. Every flag and file is checked before
// anything is written; stdout gets the summary, stderr the progress.
import { appendFileSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { resultsJsonl, summaryOf, experimentFile, type EvalSummary } from '../agent/experiment-file';
import type { RewardKind } from '../agent/rewards';
import { directorySource } from '../io/sources';
import type { ExperimentRecord } from '../store/records';
import { DEFAULT_AGENT_BUDGET } from '../trainer/run/agent-run';
import { evaluateItems, type EvalSettings } from '../trainer/run/evaluate-items';
import { boundedInt, numberFlag, onOffFlag, parseArgs, reportFailure, UsageError, type CliArgs } from './args';
import { isToolTaskEval, runToolTaskEval } from './eval-tool-task';
import { loadPlanner, makeTools } from './train';
import { checkDir, parseTools, positiveInt, readData, rewardFlag, seedFlag } from './train-flags';

export const EVAL_FLAGS = ['model', 'adapter', 'data', 'out', 'tools', 'reward', 'max-turns', 'max-new-tokens', 'temperature', 'samples', 'seed', 'max-context', 'constrain-replies'];

export const EVAL_USAGE = `usage:
  cli eval --model DIR [--adapter DIR] --data FILE --out DIR [--tools python,base_generator]
           [--reward exact|numeric|choice|gameof24|judge] [--max-turns T] [--max-new-tokens N]
           [--temperature X (default 0)] [--samples K (default 1)] [--seed S] [--max-context N]
           [--constrain-replies on|off (default on: module replies decoded under their JSON Schemas)]
--out DIR receives results.jsonl, summary.json and experiment.json (the Experiments tab imports either form).`;

/** Most runs of one item (--samples). */
export const MAX_SAMPLES = 1024;

const log = (msg: string) => process.stderr.write(`${msg}\n`);

export { evaluateItems, type EvalSettings, type EvaluateOptions } from '../trainer/run/evaluate-items';

/** --temperature: a decimal in [0, 2]. */
export function temperatureFlag(args: CliArgs, fallback: number): number {
  const t = numberFlag(args, 'temperature', fallback)!;
  if (!(t >= 0 && t <= 2)) throw new UsageError(`--temperature must be from 0 to 2, got ${t}`);
  return t;
}

export const samplesFlag = (args: CliArgs) => boundedInt(args, 'samples', 1, 1, MAX_SAMPLES, 'runs of each item');

const OUT_FILES = ['results.jsonl', 'summary.json', 'experiment.json'];

interface PreparedEval extends EvalSettings {
  modelDir: string;
  adapterDir?: string;
  out: string;
  dataFile: string;
  bench: ReturnType<typeof readData>;
  kind: RewardKind;
  useJudge: boolean;
  tools: string[];
  maxContext?: number;
}

function prepare(argv: string[]): PreparedEval {
  const args = parseArgs(['eval', ...argv], { eval: EVAL_FLAGS });
  const modelFlag = args.flags.get('model');
  if (!modelFlag) throw new UsageError("'eval' needs --model DIR (a Hugging Face folder or a web-llm MLC q4 folder)");
  const modelDir = checkDir(modelFlag, 'model');
  const adapterFlag = args.flags.get('adapter');
  const adapterDir = adapterFlag !== undefined ? checkDir(adapterFlag, 'adapter') : undefined;
  const dataFlag = args.flags.get('data');
  if (!dataFlag) throw new UsageError("'eval' needs --data FILE (AgentFlow data.json or JSONL)");
  const outFlag = args.flags.get('out');
  if (!outFlag) throw new UsageError("'eval' needs --out DIR");
  const out = resolve(outFlag);
  if (existsSync(out)) {
    if (!statSync(out).isDirectory()) throw new UsageError(`--out '${outFlag}' is not a directory`);
    const held = OUT_FILES.filter((f) => readdirSync(out).includes(f));
    if (held.length) throw new UsageError(`--out ${outFlag} already holds an evaluation (${held.join(', ')}); choose another --out`);
  }
  const reward = rewardFlag(args);
  const tools = parseTools(args.flags.get('tools') ?? 'python,base_generator');
  const maxTurns = positiveInt(args, 'max-turns', DEFAULT_AGENT_BUDGET.maxTurns);
  const maxNewTokens = positiveInt(args, 'max-new-tokens', DEFAULT_AGENT_BUDGET.plannerTokens);
  const temperature = temperatureFlag(args, 0);
  const samples = samplesFlag(args);
  const seed = seedFlag(args);
  const maxContext = args.flags.has('max-context') ? positiveInt(args, 'max-context', 4096) : undefined;
  const constrainReplies = onOffFlag(args, 'constrain-replies', true);
  const bench = readData(dataFlag);
  const kind: RewardKind = reward === undefined || reward === 'judge' ? (reward === 'judge' ? 'exact' : bench.kind) : reward;
  return { modelDir, ...(adapterDir ? { adapterDir } : {}), out, dataFile: resolve(dataFlag), bench, kind, useJudge: reward === 'judge', tools, maxTurns, maxNewTokens, temperature, samples, seed, constrainReplies, ...(maxContext !== undefined ? { maxContext } : {}) };
}

function runName(model: string, adapter: string | undefined, benchmark: string, items: number, turns: number, at: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  const date = `${at.getFullYear()}-${p(at.getMonth() + 1)}-${p(at.getDate())} ${p(at.getHours())}:${p(at.getMinutes())}`;
  return `${model}${adapter ? ` + adapter “${adapter}”` : ''} · ${benchmark} × ${items} · ${turns} turn${turns === 1 ? '' : 's'} · ${date}`;
}

/** Runs `cli eval`; resolves with the exit status after printing the summary (or the error). */
export async function runEval(argv: string[]): Promise<number> {
  // The tool-choice task brings its own planner, items and tools (eval-tool-task.ts).
  if (isToolTaskEval(argv)) return runToolTaskEval(argv);
  let close: (() => void) | undefined;
  try {
    const p = prepare(argv);
    if (p.samples > 1 && p.temperature === 0) log(`note: --samples ${p.samples} at --temperature 0: the planner decodes greedily, so the samples differ only where a tool does`);
    const { planner, engines } = await loadPlanner(p.modelDir, p.maxContext);
    let adapter: string | undefined;
    if (p.adapterDir) {
      await planner.loadAdapter('eval', directorySource(p.adapterDir));
      planner.setActiveAdapter('eval');
      adapter = basename(p.adapterDir);
      log(`adapter: ${p.adapterDir}`);
    }
    const made = await makeTools(p.tools, engines.shared);
    close = () => {
      made.close();
      planner.destroy();
    };
    const createdAt = Date.now();
    const id = `eval-${createdAt.toString(36)}`;
    const model = planner.id.replace(/^planner:/, '');
    const experiment: ExperimentRecord = {
      id,
      createdAt,
      name: runName(model, adapter, p.bench.name, p.bench.items.length, p.maxTurns, new Date(createdAt)),
      status: 'running',
      config: {
        benchmark: p.bench.name,
        rewardKind: p.kind,
        indices: p.bench.items.map((_, i) => i),
        maxTurns: p.maxTurns,
        engines: [planner.id, engines.shared.id],
        adapter: adapter ? { id: p.adapterDir, name: adapter } : null,
        scripted: false,
        tools: made.tools.map((t) => t.card.name),
        settings: { temperature: p.temperature, samples: p.samples, maxNewTokens: p.maxNewTokens, seed: p.seed, reward: p.useJudge ? 'judge' : p.kind, data: p.dataFile, constrainReplies: p.constrainReplies !== false },
      },
      total: p.bench.items.length * p.samples,
    };
    mkdirSync(p.out, { recursive: true });
    const results = join(p.out, 'results.jsonl');
    writeFileSync(results, '');
    const abort = new AbortController();
    const onSignal = () => {
      log('interrupt: stopping after the item in progress (its run ends interrupted)');
      abort.abort();
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    log(`eval ${experiment.name}: ${p.bench.items.length} item(s) × ${p.samples} sample(s), out ${p.out}`);
    let correct = 0;
    const items = await evaluateItems({
      ...p,
      items: p.bench.items,
      ...(p.useJudge ? { judge: engines.shared } : {}),
      engines,
      tools: made.tools,
      experimentId: id,
      signal: abort.signal,
      onItem: (rec, done, total) => {
        appendFileSync(results, resultsJsonl([rec]));
        if (rec.correct) correct++;
        log(`item ${done}/${total} (${rec.pid}${rec.sample !== undefined ? `, sample ${rec.sample}` : ''}): ${rec.correct === undefined ? 'unscored' : rec.correct ? 'right' : 'wrong'}, ${rec.turns ?? 0} turn(s), ${rec.seconds?.toFixed(1)} s; accuracy so far ${(correct / done).toFixed(3)}`);
      },
    });
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    experiment.status = abort.signal.aborted ? 'interrupted' : 'done';
    const summary: EvalSummary = summaryOf(experiment, items);
    writeFileSync(join(p.out, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
    writeFileSync(join(p.out, 'experiment.json'), `${experimentFile(experiment, items)}\n`);
    process.stdout.write(`${JSON.stringify({ ...summary, out: p.out })}\n`);
    return experiment.status === 'done' ? 0 : 130;
  } catch (e) {
    return reportFailure(e, EVAL_USAGE);
  } finally {
    close?.();
  }
}
