// How much of a question's kind the untrained tool-task planner carries where it chooses a tool: the final
// normed hidden state at the tool name's first token (after the reply's forced `{"tool_name": "`), for every
// first-turn prompt and every two-part question's second-turn prompt (its memory holding the first part's
// call). A ridge read-out fitted on the training split names the needed tool for what fraction of held-out
// prompts (chance about 1/3)? LoRA has to find that direction from rewards alone, so a shape whose read-out is
// poor cannot learn the task however it is tuned. No training; seconds per shape.
//   npx tsx bench/tool-task-features.ts [--seed 1] [--train-per-kind 36] [--prompt brief|full] [--model '{"hiddenSize":64}'] ...more --model shapes
import { plannerMessages, type PlannerPrompt } from '../src/agent/prompts';
import type { MemoryEntry } from '../src/agent/memory';
import { cpuForward } from '../src/trainer/cpu-model';
import { executorArgs, FIXED_ANALYSIS } from '../src/tasks/fixed-modules';
import { toolTask, type ToolTaskModelOptions } from '../src/tasks/tool-task';
import { parseQuestion, partAnswer, type PartTool, type ToolTaskItem } from '../src/tasks/tool-task-data';

const TOOLS: PartTool[] = ['python', 'lookup', 'convert'];

interface Point {
  x: Float64Array;
  label: number;
  /** A two-part question's second turn (its memory holds the first part's call). */
  second: boolean;
}

export interface FeatureReport {
  model: ToolTaskModelOptions;
  /** Held-out prompts the training split's ridge read-out labels right. */
  readout: number;
  /** The same over held-out two-part questions' second turns only. */
  readoutSecond: number;
  /** The base model's own first tool-name token: how often it is the needed tool's. */
  baseChoice: number;
  /** Between-tool share of the features' variance (held-out and train together). */
  betweenShare: number;
  /** How much the features vary across prompts: their variance over their mean squared norm. */
  variedShare: number;
}

function points(task: ReturnType<typeof toolTask>, items: readonly ToolTaskItem[]): { pts: Point[]; base: number } {
  const { config, weights } = task.model;
  const tok = task.tokenizer;
  const cardName = (t: PartTool) => (t === 'python' ? task.cards[0].name : t === 'convert' ? task.converterName : t);
  const firstIds = TOOLS.map((t) => tok.encode(cardName(t))[0]);
  const pts: Point[] = [];
  let base = 0;
  for (const item of items) {
    const parts = parseQuestion(item.query) ?? [];
    const turns: Array<{ memory: MemoryEntry[]; need: PartTool }> = [{ memory: [], need: parts[0].tool }];
    if (parts.length > 1) turns.push({ memory: [{ turn: 1, subGoal: 'Use the tool.', toolName: cardName(parts[0].tool), args: executorArgs(item.query, parts[0].tool), result: partAnswer(parts[0]), ok: true }], need: parts[1].tool });
    for (const t of turns) {
      const m = plannerMessages({ query: item.query, analysis: FIXED_ANALYSIS, cards: task.cards, memory: t.memory, turn: t.memory.length + 1, maxTurns: 2, style: task.plannerPrompt });
      const ids = [...tok.encodeChat(m, { addGenerationPrompt: true }), ...tok.encode('{"tool_name": "')];
      const f = cpuForward(config, weights, ids, null, ids.length - 1);
      const H = config.hiddenSize;
      const x = Float64Array.from(f.nF.subarray((ids.length - 1) * H, ids.length * H));
      const V = config.vocabSize;
      const row = f.logits.subarray(f.logits.length - V);
      const pick = firstIds.reduce((b, id, i) => (row[id] > row[firstIds[b]] ? i : b), 0);
      if (TOOLS[pick] === t.need) base++;
      pts.push({ x, label: TOOLS.indexOf(t.need), second: t.memory.length > 0 });
    }
  }
  return { pts, base };
}

/** Ridge regression onto one-hot labels (with a bias), solved by Gaussian elimination; returns [dim+1, classes]. */
function ridge(train: Point[], classes: number, lambda: number): Float64Array[] {
  const d = train[0].x.length + 1;
  const A = Array.from({ length: d }, () => new Float64Array(d));
  const B = Array.from({ length: d }, () => new Float64Array(classes));
  for (const p of train) {
    const v = [...p.x, 1];
    for (let i = 0; i < d; i++) {
      for (let j = 0; j < d; j++) A[i][j] += v[i] * v[j];
      B[i][p.label] += v[i];
    }
  }
  for (let i = 0; i < d - 1; i++) A[i][i] += lambda;
  for (let c = 0; c < d; c++) {
    let piv = c;
    for (let r = c + 1; r < d; r++) if (Math.abs(A[r][c]) > Math.abs(A[piv][c])) piv = r;
    [A[c], A[piv]] = [A[piv], A[c]];
    [B[c], B[piv]] = [B[piv], B[c]];
    for (let r = 0; r < d; r++) {
      if (r === c) continue;
      const f = A[r][c] / A[c][c];
      for (let j = c; j < d; j++) A[r][j] -= f * A[c][j];
      for (let k = 0; k < classes; k++) B[r][k] -= f * B[c][k];
    }
  }
  return B.map((b, i) => b.map((v) => v / A[i][i]));
}

export function featureReport(seed: number, model: ToolTaskModelOptions, trainPerKind?: number, plannerPrompt?: PlannerPrompt): FeatureReport {
  const task = toolTask({ seed, model, ...(trainPerKind ? { trainPerKind } : {}), ...(plannerPrompt ? { plannerPrompt } : {}) });
  const tr = points(task, task.splits.train);
  const ho = points(task, task.splits.heldOut);
  const W = ridge(tr.pts, TOOLS.length, 1e-2);
  const score = (p: Point) => TOOLS.map((_, k) => [...p.x, 1].reduce((s, v, i) => s + v * W[i][k], 0));
  const isRight = (p: Point) => {
    const s = score(p);
    return s.indexOf(Math.max(...s)) === p.label;
  };
  const right = ho.pts.filter(isRight).length;
  const seconds = ho.pts.filter((p) => p.second);
  const all = [...tr.pts, ...ho.pts];
  const H = all[0].x.length;
  const mean = new Float64Array(H);
  for (const p of all) p.x.forEach((v, i) => (mean[i] += v / all.length));
  let total = 0;
  let between = 0;
  for (let k = 0; k < TOOLS.length; k++) {
    const cls = all.filter((p) => p.label === k);
    if (!cls.length) continue;
    const cm = new Float64Array(H);
    for (const p of cls) p.x.forEach((v, i) => (cm[i] += v / cls.length));
    between += cls.length * cm.reduce((s, v, i) => s + (v - mean[i]) ** 2, 0);
  }
  let norm2 = 0;
  for (const p of all) {
    total += p.x.reduce((s, v, i) => s + (v - mean[i]) ** 2, 0);
    norm2 += p.x.reduce((s, v) => s + v * v, 0);
  }
  return { model, readout: right / ho.pts.length, readoutSecond: seconds.filter(isRight).length / Math.max(1, seconds.length), baseChoice: (tr.base + ho.base) / all.length, betweenShare: between / total, variedShare: total / norm2 };
}

const isMain = process.argv[1]?.endsWith('tool-task-features.ts');
if (isMain) {
  const argv = process.argv.slice(2);
  const seeds: number[] = [];
  const models: ToolTaskModelOptions[] = [];
  let trainPerKind: number | undefined;
  let plannerPrompt: PlannerPrompt | undefined;
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === '--seed') seeds.push(Number(argv[i + 1]));
    else if (argv[i] === '--train-per-kind') trainPerKind = Number(argv[i + 1]);
    else if (argv[i] === '--prompt') plannerPrompt = argv[i + 1] as PlannerPrompt;
    else if (argv[i] === '--model') models.push(JSON.parse(argv[i + 1]) as ToolTaskModelOptions);
    else throw new Error(`tool-task-features: unknown flag ${argv[i]}`);
  }
  for (const seed of seeds.length ? seeds : [1]) {
    for (const m of models.length ? models : [{}]) {
      const t0 = Date.now();
      const r = featureReport(seed, m, trainPerKind, plannerPrompt);
      console.log(`seed ${seed} ${JSON.stringify(m)}: read-out ${r.readout.toFixed(3)} (second turns ${r.readoutSecond.toFixed(3)}), base choice ${r.baseChoice.toFixed(3)}, varied ${(100 * r.variedShare).toFixed(2)} % of the norm², ${(100 * r.betweenShare).toFixed(1)} % of that between tools  (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    }
  }
}
