// The tool-choice task: a tiny Qwen2 planner (seeded random weights, a learned BPE tokenizer with Qwen's chat
// template) plays the real AgentFlow loop — analysis, planner, executor, tool, verifier, generator — with the
// other modules frozen (fixed-modules.ts) and four tools: Python (the app's own), a fact lookup table, a unit
// converter, and the base generator (which knows nothing here). Only the planner's choice of tool at each turn
// decides whether the answer is right. Everything is built from a seed with no download and no Node API, so
// `cli train --task tools`, `cli eval --task tools` and a page build the same task.
import type { Qwen2Config } from '../io/qwen2-config';
import type { LoraAdapter } from '../io/peft';
import type { Tokenizer } from '../engine/tokenizer/tokenizer';
import { BaseGeneratorTool } from '../tools/base-generator';
import { CalculatorTool } from '../tools/calculator';
import { FactLookupTool } from '../tools/fact-lookup';
import type { Tool, ToolCard } from '../tools/tool';
import { UnitConvertTool } from '../tools/unit-convert';
import { CAPITALS, SYMBOLS } from '../tools/offline-tables';
import { CpuPolicyBackend } from '../trainer/cpu-backend';
import { PrefixSharingCpuBackend } from '../trainer/cpu-prefix-backend';
import type { HostQwen2Weights } from '../trainer/cpu-model';
import { randomLayers } from '../trainer/random-layers';
import type { PolicyHost, TrainingHost } from '../trainer/training-host';
import { f16BitsToF32, f32ToF16Bits } from '../util/half';
import { Rng } from '../util/rng';
import type { AgentEngines } from '../agent/loop';
import type { MemoryEntry } from '../agent/memory';
import { plannerMessages, type PlannerPrompt } from '../agent/prompts';
import { resolveReplyLimits } from '../agent/reply-schemas';
import { CpuPlannerEngine, type ReplyConstraint } from './cpu-planner-engine';
import { executorArgs, FIXED_ANALYSIS, FixedModulesEngine } from './fixed-modules';
import { learnedTokenizer } from './task-tokenizer';
import { KINDS, parseQuestion, partAnswer, toolTaskSplits, type QuestionKind, type SplitOptions, type ToolTaskItem, type ToolTaskSplits } from './tool-task-data';

/** The base model name the task's adapters carry (followed by the task's settings: toolTaskBaseModel). */
export const TOOL_TASK_BASE_MODEL = 'agentflow-tool-task';

/** The planner engine's id (a run records it; a resumed run must find the same). */
export const TOOL_TASK_PLANNER_ID = 'planner:tool-task-tiny';

/** The shape of the tiny planner. */
export interface ToolTaskModelOptions {
  hiddenSize?: number;
  numHeads?: number;
  numKvHeads?: number;
  intermediateSize?: number;
  numLayers?: number;
  /** BPE merges learned for the tokenizer (its vocabulary is 259 + merges). */
  merges?: number;
  /** Seed of the random weights. */
  modelSeed?: number;
  /** Scale of the query and key projections' random weights (1: as the others); larger makes attention peakier. */
  attentionScale?: number;
  /** Scale of the token embeddings' random values (1: unit variance). */
  embedScale?: number;
  /** RoPE's base (Qwen2's rope_theta). */
  ropeTheta?: number;
}

/**
 * What a run stored before specs recorded the task's settings, and an adapter whose base model is the bare
 * TOOL_TASK_BASE_MODEL, were made with (frozen: the defaults below may change, these may not).
 */
export const TOOL_TASK_MODEL_V1: Required<ToolTaskModelOptions> = { hiddenSize: 32, numHeads: 2, numKvHeads: 1, intermediateSize: 64, numLayers: 2, merges: 480, modelSeed: 1234, attentionScale: 3, embedScale: 1, ropeTheta: 10000 };
export const TOOL_TASK_TRAIN_PER_KIND_V1 = 12;
export const TOOL_TASK_CONVERTER_V1 = 'convert';
export const TOOL_TASK_SUB_GOAL_CHARS_V1 = 8;
export const TOOL_TASK_ENTITY_WORDS_V1 = false;
/** Those settings together (a stored spec's or an old adapter's, the questions' seed aside). */
export const TOOL_TASK_SETTINGS_V1 = Object.freeze({ converterName: TOOL_TASK_CONVERTER_V1, plannerPrompt: 'full' as PlannerPrompt, trainPerKind: TOOL_TASK_TRAIN_PER_KIND_V1, subGoalChars: TOOL_TASK_SUB_GOAL_CHARS_V1, entityWords: TOOL_TASK_ENTITY_WORDS_V1, model: TOOL_TASK_MODEL_V1 });

/**
 * The second shape (the default 2026-11-27 to 11-29; README, "Tool-choice task" has every run behind it): q/k at the ordinary
 * scale with embeddings drawn small, whose state at the tool name a linear read-out decodes far better than the
 * first shape's (0.80-0.90 of held-out prompts against 0.40-0.45 with 36 training questions a kind,
 * bench/tool-task-features.ts): the first shape's peaked random attention made that state vary with where the
 * question's tokens fall, hardly with its kind.
 */
export const TOOL_TASK_MODEL_V2: Required<ToolTaskModelOptions> = { ...TOOL_TASK_MODEL_V1, attentionScale: 1, embedScale: 0.02 };
/**
 * The default shape since 2026-11-29 (the third): the second shape 64 wide (4 heads, 2 key/value heads, MLP 128)
 * and 3 layers deep. With groups of 16 it met the target shape on 9 of 10 fresh seeds where the second
 * shape with groups of 8 met few (README, "The pair on fresh seeds, against groups of 16 alone").
 */
export const TOOL_TASK_MODEL: Required<ToolTaskModelOptions> = { ...TOOL_TASK_MODEL_V2, hiddenSize: 64, numHeads: 4, numKvHeads: 2, intermediateSize: 128, numLayers: 3 };
/** Training questions a kind (36 is about the most distinct fact questions the training entities allow). */
export const TOOL_TASK_TRAIN_PER_KIND = 36;

/**
 * The converter's tool name. `convert` begins with the same token as `calculator` ('c'), so the choice between
 * them is made at the name's second token; `unit_convert` gives every tool of the task its own first token, so
 * one token chooses the tool (and one token carries the reply's advantage).
 */
export const TOOL_TASK_CONVERTER = 'unit_convert';

/**
 * The planner prompt. 'brief' (about 60 tokens against 250) makes the state at the tool name vary across
 * questions by 8-35 % of its squared norm against 2.5-4 % with 'full' (the full prompt's constant cards and
 * rules drown the query), and a step about twice as fast.
 */
export const TOOL_TASK_PLANNER_PROMPT: PlannerPrompt = 'brief';

/**
 * Characters of the planner's sub-goal. Nothing in the task reads it (the frozen executor calls the chosen tool
 * for the question), so what an untrained planner writes there is noise the update is trained on with the
 * reply's advantage: 8 characters are 3-8 sampled tokens beside the 1-2 that name the tool.
 */
export const TOOL_TASK_SUB_GOAL_CHARS = 1;

/**
 * Whether the tokenizer's corpus also names every entity of the lookup tables (each country and element, as a
 * word: no question, kind or answer). The merges are learned from the training split's prompts, so without it a
 * held-out fact's country or element — which no training question names — falls apart into 4-7 near-byte tokens
 * where a training fact's is one (" Russia" → " R" "u" "s" "si" "a"): the held-out facts then differ from the
 * training ones by a run of tokens the planner never saw in a fact, and were the kind that did not carry over
 * (training facts 8/8, held-out facts 0-2/8 on seed 2). A pretrained tokenizer's vocabulary holds such words
 * whatever a fine-tuning set names, which this mirrors. The words share the model's merges budget: with the
 * brief prompt every entity is one token; the full prompt's text takes most of the 480, leaving entities of 2-5.
 */
export const TOOL_TASK_ENTITY_WORDS = true;

/**
 * Each lookup table entity as the questions write it (a word after a space), for the tokenizer's corpus: twice,
 * as a training question's entity is there (its first-turn and second-turn prompts), because learnMerges takes
 * no pair seen only once.
 */
export function entityWordsCorpus(): string[] {
  return [...Object.keys(CAPITALS), ...Object.keys(SYMBOLS)].flatMap((e) => [` ${e}`, ` ${e}`]);
}

/**
 * The reply limits of the task's planner (free-text fields of a few characters: see TOOL_TASK_SUB_GOAL_CHARS),
 * checked by the loop's own rule, so a bad length is refused when the task is built, not at its first rollout.
 */
export function toolTaskReplyLimits(subGoalChars: number): { subGoal: number; context: number; justification: number } {
  const { subGoal, context, justification } = resolveReplyLimits({ subGoal: subGoalChars, context: 1, justification: 1 });
  return { subGoal, context, justification };
}

/** A short card for the app's Python tool: the planner's prompt shows every card, and shorter is faster. */
export const TASK_PYTHON_CARD: ToolCard = {
  name: 'python',
  description: 'Runs Python code and returns what it prints.',
  input: { type: 'object', properties: { code: { type: 'string', description: 'Python 3 code that prints the result.' } }, required: ['code'] },
  output: 'What the code printed.',
  limitations: [],
  examples: [{ goal: 'Compute 12 * 7.', args: { code: 'print(12 * 7)' } }],
  usesNetwork: false,
};

export const TASK_BASE_GENERATOR_CARD: ToolCard = {
  name: 'base_generator',
  description: 'Asks a language model.',
  input: { type: 'object', properties: { query: { type: 'string', description: 'The question.' } }, required: ['query'] },
  output: 'Its answer as text.',
  limitations: [],
  examples: [{ goal: 'Explain rain.', args: { query: 'Explain rain.' } }],
  usesNetwork: false,
};

/**
 * The task's four tools: its arithmetic tool — the given Python tool (the app's PythonTool in a page, the Node
 * one in the CLI) under a short card, or else the calculator — the lookup table, the converter and the base
 * generator.
 */
export function toolTaskTools(python: Tool | null, shared: FixedModulesEngine, converterName = TOOL_TASK_CONVERTER): Tool[] {
  const base = new BaseGeneratorTool({ engine: shared, maxNewTokens: 32 });
  const converter = new UnitConvertTool();
  return [
    python ? { card: TASK_PYTHON_CARD, run: (a, c) => python.run(a, c) } : new CalculatorTool(),
    new FactLookupTool(),
    { card: { ...converter.card, name: converterName }, run: (a) => converter.run(a) },
    { card: TASK_BASE_GENERATOR_CARD, run: (a, c) => base.run(a, c) },
  ];
}

/**
 * Text like the planner's prompts and replies, for learning the tokenizer's merges: the planner's first and
 * second turn on every training question (its memory holding the right call), the replies' JSON keys and tool
 * names, and every entity and unit the task knows (so held-out questions are not spelled out byte by byte).
 */
export function toolTaskCorpus(items: readonly ToolTaskItem[], cards: ToolCard[], style: PlannerPrompt = 'full'): string[] {
  const texts: string[] = [];
  for (const item of items) {
    const parts = parseQuestion(item.query) ?? [];
    const memory: MemoryEntry[] = parts.slice(0, 1).map((p) => ({ turn: 1, subGoal: 'Use the tool.', toolName: p.tool, args: executorArgs(item.query, p.tool), result: partAnswer(p), ok: true }));
    for (const mem of [[], memory]) {
      const m = plannerMessages({ query: item.query, analysis: FIXED_ANALYSIS, cards, memory: mem, turn: mem.length + 1, maxTurns: 2, style });
      texts.push(...m.map((x) => `<|im_start|>${x.role}\n${x.content}<|im_end|>\n`), '<|im_start|>assistant\n');
    }
  }
  for (const c of cards) texts.push(`{"tool_name": "${c.name}", "sub_goal": "", "context": "", "justification": ""}`);
  return texts;
}

export interface ToolTaskModel {
  config: Qwen2Config;
  weights: HostQwen2Weights;
}

/** A seeded random Qwen2 of the given vocabulary (untied LM head; matrices rounded to f16 as the GPU would read them). */
export function toolTaskModel(vocabSize: number, o: ToolTaskModelOptions = {}): ToolTaskModel {
  const d = { ...TOOL_TASK_MODEL, ...o };
  const rng = new Rng(d.modelSeed);
  const H = d.hiddenSize;
  const headDim = H / d.numHeads;
  if (!Number.isInteger(headDim) || headDim % 2) throw new Error(`tool task model: hiddenSize ${H} must split into ${d.numHeads} heads of even size`);
  const config: Qwen2Config = {
    hiddenSize: H,
    numLayers: d.numLayers,
    numHeads: d.numHeads,
    numKvHeads: d.numKvHeads,
    headDim,
    intermediateSize: d.intermediateSize,
    vocabSize,
    ropeTheta: d.ropeTheta,
    rmsNormEps: 1e-6,
    tieWordEmbeddings: false,
    maxPositionEmbeddings: 4096,
    bosTokenId: null,
    eosTokenIds: [],
    torchDtype: 'float16',
  };
  const half = (a: Float32Array) => a.map((v) => f16BitsToF32(f32ToF16Bits(v)));
  const mat = (out: number, inp: number) => half(rng.fill(out * inp, 1 / Math.sqrt(inp)));
  const vec = (n: number, mean: number, scale: number) => rng.fill(n, scale).map((v) => v + mean);
  const embed = half(rng.fill(vocabSize * H, d.embedScale));
  const lmHead = half(rng.fill(vocabSize * H, 1 / Math.sqrt(H)));
  const layers = randomLayers(config, mat, vec);
  if (d.attentionScale !== 1) for (const L of layers) for (const lin of [L.q, L.k]) lin.W = half(Float32Array.from(lin.W, (v) => v * d.attentionScale));
  return { config, weights: { embed, layers, finalNorm: vec(H, 1, 0.1), lmHead } };
}

export interface ToolTaskOptions extends SplitOptions {
  /** Seed of the question splits. */
  seed?: number;
  /** The arithmetic tool: the app's Python, or the calculator (default: a Python run costs ~1.3 CPU-seconds). */
  arithmetic?: 'python' | 'calculator';
  /** The unit converter's tool name (TOOL_TASK_CONVERTER; the first shape's runs: TOOL_TASK_CONVERTER_V1). */
  converterName?: string;
  /** The planner's prompt (TOOL_TASK_PLANNER_PROMPT; the first shape's runs: 'full'). */
  plannerPrompt?: PlannerPrompt;
  /** Characters of the planner's sub-goal (TOOL_TASK_SUB_GOAL_CHARS; the first shape's runs: 8). */
  subGoalChars?: number;
  /** The tokenizer also learns every lookup entity's word (TOOL_TASK_ENTITY_WORDS; the first shape's runs: false). */
  entityWords?: boolean;
  model?: ToolTaskModelOptions;
}

export interface ToolTask {
  splits: ToolTaskSplits;
  /** The converter's tool name in this task's cards. */
  converterName: string;
  /** The planner prompt its tokenizer was learned on and its rollouts use. */
  plannerPrompt: PlannerPrompt;
  /** The planner's reply limits in its rollouts and evaluations. */
  replyLimits: ReturnType<typeof toolTaskReplyLimits>;
  tokenizer: Tokenizer;
  model: ToolTaskModel;
  /** The frozen modules (engines.shared). */
  shared: FixedModulesEngine;
  /** The cards the planner sees, in order. */
  cards: ToolCard[];
  /**
   * The planner engine on these weights. `adapter` gives the adapter it samples with (null: the base model),
   * `constraint` the grammar of a reply that must follow a JSON schema.
   */
  planner(o: { adapter: () => { adapter: LoraAdapter | null; id: string | null }; constraint?: (schema: string) => Promise<ReplyConstraint> }): CpuPlannerEngine;
  /** The planner's host for a TrainingHost: the float64 CPU backend on these weights. */
  policyHost(): PolicyHost;
}

/** Everything a task is built from, defaults filled in: two tasks with the same settings are the same task. */
export function toolTaskSettings(o: ToolTaskOptions = {}): Required<Omit<ToolTaskOptions, 'model'>> & { model: Required<ToolTaskModelOptions> } {
  return { seed: o.seed ?? 1, arithmetic: o.arithmetic ?? 'calculator', converterName: o.converterName ?? TOOL_TASK_CONVERTER, plannerPrompt: o.plannerPrompt ?? TOOL_TASK_PLANNER_PROMPT, subGoalChars: o.subGoalChars ?? TOOL_TASK_SUB_GOAL_CHARS, entityWords: o.entityWords ?? TOOL_TASK_ENTITY_WORDS, trainPerKind: o.trainPerKind ?? TOOL_TASK_TRAIN_PER_KIND, heldOutPerKind: o.heldOutPerKind ?? 8, trainCounts: { ...o.trainCounts }, model: { ...TOOL_TASK_MODEL, ...o.model } };
}

/**
 * The base model name an adapter of this task carries: the task's name and every setting its planner is built
 * from (the questions' seed and counts make the tokenizer, the shape and model seed the weights), so an adapter
 * is never applied to another task's planner, and `cli eval` can rebuild the one it was trained on.
 */
export function toolTaskBaseModel(o: ToolTaskOptions = {}): string {
  const { model, trainCounts, ...rest } = toolTaskSettings(o);
  const fields: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...rest, ...model })) fields[k] = String(v);
  // Written only when set, as "kind:count,…" in KINDS order, so the names of adapters made without it stay as they were.
  const counts = KINDS.filter((k) => trainCounts[k] !== undefined).map((k) => `${k}:${trainCounts[k]}`);
  if (counts.length) fields.trainCounts = counts.join(',');
  return `${TOOL_TASK_BASE_MODEL}?${new URLSearchParams(fields).toString()}`;
}

/** Whether `name` is an adapter base model of this task (of either shape). */
export function isToolTaskBaseModel(name: string | null | undefined): boolean {
  return name === TOOL_TASK_BASE_MODEL || !!name?.startsWith(`${TOOL_TASK_BASE_MODEL}?`);
}

/**
 * The task settings an adapter's base model names: 'v1' for the bare name (the first shape, questions' seed not
 * recorded), null for another model's adapter. Throws, naming the field, on a name this task did not write.
 */
export function toolTaskOfBaseModel(name: string | null | undefined): ToolTaskOptions | 'v1' | null {
  if (!isToolTaskBaseModel(name)) return null;
  if (name === TOOL_TASK_BASE_MODEL) return 'v1';
  const p = new URLSearchParams(name!.slice(TOOL_TASK_BASE_MODEL.length + 1));
  const num = (k: string) => {
    const v = Number(p.get(k));
    if (p.get(k) === null || !Number.isFinite(v)) throw new Error(`tool task: the adapter's base model “${name}” has no number for '${k}'`);
    return v;
  };
  const arithmetic = p.get('arithmetic');
  if (arithmetic === null) throw new Error(`tool task: the adapter's base model “${name}” has no 'arithmetic'`);
  if (arithmetic !== 'python' && arithmetic !== 'calculator') throw new Error(`tool task: the adapter's base model “${name}” names arithmetic '${arithmetic}' (python or calculator)`);
  const model = Object.fromEntries(Object.keys(TOOL_TASK_MODEL).map((k) => [k, num(k)])) as unknown as ToolTaskModelOptions;
  const converterName = p.get('converterName');
  if (!converterName || !/^[a-z_]+$/.test(converterName)) throw new Error(`tool task: the adapter's base model “${name}” has no converterName`);
  const plannerPrompt = p.get('plannerPrompt');
  if (plannerPrompt !== 'full' && plannerPrompt !== 'brief') throw new Error(`tool task: the adapter's base model “${name}” names plannerPrompt '${plannerPrompt}' (full or brief)`);
  // Names written before the sub-goal's length was a setting have none: their runs wrote the first shape's.
  const subGoalChars = p.get('subGoalChars') === null ? TOOL_TASK_SUB_GOAL_CHARS_V1 : num('subGoalChars');
  // Likewise the entity words: absent, the tokenizer was learned from the training prompts alone.
  const words = p.get('entityWords');
  if (words !== null && words !== 'true' && words !== 'false') throw new Error(`tool task: the adapter's base model “${name}” names entityWords '${words}' (true or false)`);
  const entityWords = words === null ? TOOL_TASK_ENTITY_WORDS_V1 : words === 'true';
  const trainCounts: Partial<Record<QuestionKind, number>> = {};
  for (const pair of (p.get('trainCounts') ?? '').split(',').filter(Boolean)) {
    const m = /^([a-z-]+):(\d+)$/.exec(pair);
    if (!m || !KINDS.includes(m[1] as QuestionKind)) throw new Error(`tool task: the adapter's base model “${name}” has a trainCounts entry '${pair}' that is not kind:count`);
    trainCounts[m[1] as QuestionKind] = Number(m[2]);
  }
  return { seed: num('seed'), arithmetic, converterName, plannerPrompt, subGoalChars, entityWords, trainPerKind: num('trainPerKind'), heldOutPerKind: num('heldOutPerKind'), trainCounts, model };
}

/** The task from its seeds: the splits, the tokenizer learned from the training split's prompts, the model. */
export function toolTask(options: ToolTaskOptions = {}): ToolTask {
  const o = toolTaskSettings(options);
  const replyLimits = toolTaskReplyLimits(o.subGoalChars);
  const splits = toolTaskSplits(o.seed, o);
  const shared = new FixedModulesEngine();
  const cards = toolTaskTools(o.arithmetic === 'python' ? { card: TASK_PYTHON_CARD, run: async () => ({ ok: false, output: '' }) } : null, shared, o.converterName).map((t) => t.card);
  const corpus = toolTaskCorpus(splits.train, cards, o.plannerPrompt);
  const { tokenizer, vocabSize } = learnedTokenizer(o.entityWords ? [...corpus, ...entityWordsCorpus()] : corpus, o.model.merges);
  const model = toolTaskModel(vocabSize, o.model);
  return {
    splits,
    converterName: o.converterName,
    plannerPrompt: o.plannerPrompt,
    replyLimits,
    tokenizer,
    model,
    shared,
    cards,
    planner: (p) => new CpuPlannerEngine({ id: TOOL_TASK_PLANNER_ID, config: model.config, weights: model.weights, tokenizer, adapter: () => p.adapter(), ...(p.constraint ? { constraint: p.constraint } : {}), contextTokens: model.config.maxPositionEmbeddings }),
    policyHost: () => ({
      modelConfig: model.config,
      baseModel: toolTaskBaseModel(o),
      async createBackend(adapter) {
        const backend = new PrefixSharingCpuBackend(model.config, model.weights, adapter);
        return { backend, adapterId: 'cpu', maxRows: Number.POSITIVE_INFINITY, destroy: () => undefined };
      },
    }),
  };
}

/** The adapter a training session samples with: the live one of the host's CPU backend (on-policy). */
export function liveAdapter(host: TrainingHost): () => { adapter: LoraAdapter | null; id: string | null } {
  return () => {
    const b = host.current?.backend;
    if (!(b instanceof CpuPolicyBackend)) throw new Error('tool task: no training session on the CPU backend is running');
    return { adapter: b.currentAdapter, id: 'cpu' };
  };
}

/** The engines a run of the task uses: the tiny planner, and the frozen modules as the shared engine. */
export function toolTaskEngines(task: ToolTask, planner: CpuPlannerEngine): AgentEngines {
  return { planner, shared: task.shared };
}
