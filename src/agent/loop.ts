// The AgentFlow turn loop on the main thread: query analysis, then per turn planner -> executor (one tool
// call) -> memory -> verifier, until the verifier says STOP or a turn/time budget runs out; then the
// generator. Every completed step goes to the sink as it completes, so a reload loses at most the step in
// flight, and a run can be resumed from its stored steps. Model nonsense never ends a run: an unusable
// output becomes an error step and the loop goes on.
import type { ChatEngine, ChatMessage, GenerateOptions, GenerationResult } from '../engine/chat-engine';
import type { CallUsage, ErrorStepData, ExecutorStepData, StepDataOf, StepKind, StepOf, StepRecord } from '../store/records';
import type { Tool } from '../tools/tool';
import { runTool } from '../tools/run-tool';
import { anySignal, untilAborted } from '../util/abort';
import { timerCanHold } from '../util/timers';
import { WorkerGoneError } from '../util/worker-watch';
import type { MemoryEntry } from './memory';
import { memoryOfError, stateFromSteps, type LoopState } from './phases';
import { extractAnswerTag, matchToolName, parsePlannerOutput, parseToolArgs, parseVerdict, type PlannerAction, type PlannerParse } from './parse';
import { ReplySchemas, resolveReplyLimits, type ReplyLimits } from './reply-schemas';
import {
  analysisMessages,
  DEFAULT_LIMITS,
  executorMessages,
  generatorMessages,
  plannerMessages,
  verifierMessages,
  type ModuleName,
  type PlannerPrompt,
  type PromptLimits,
} from './prompts';

export interface AgentEngines {
  /** Our WebGPU runtime (LoRA, token ids, logprobs). */
  planner: ChatEngine;
  /** The shared web-llm engine. */
  shared: ChatEngine;
}

export interface AgentConfig {
  maxTurns: number;
  /** Wall-clock budget for the turns; when it runs out the generator still answers from the memory. */
  timeBudgetMs: number;
  /**
   * How long the generator may take to answer once the turns are over (the time budget no longer applies to
   * it: a run cut short by the budget still answers). An engine that never answers ends the run with an error
   * after this, instead of holding it until Stop.
   */
  generatorTimeoutMs: number;
  toolTimeoutMs: number;
  /** Per-tool timeouts by tool name, overriding toolTimeoutMs (e.g. Python needs longer on first load). */
  toolTimeouts: Record<string, number>;
  /** Benchmarks: ask for <answer> tags and extract them. */
  answerTags: boolean;
  /** Which engine each module runs on. */
  engineFor: Record<ModuleName, keyof AgentEngines>;
  generation: Record<ModuleName, GenerateOptions>;
  limits: PromptLimits;
  /**
   * Decode the planner's, executor's and verifier's replies under their JSON Schemas (reply-schemas.ts): the
   * tool name one of the enabled tools, the arguments the card's, the verdict STOP or CONTINUE. Off: the
   * replies are free text and only the parsers make sense of them (as they must for engines that cannot
   * constrain).
   */
  constrainReplies: boolean;
  /** Characters of each free-text field of a constrained reply. */
  replyLimits: ReplyLimits;
  /** The planner's prompt (prompts.ts PlannerPrompt): 'full' by default; 'brief' for planners too small to read it. */
  plannerPrompt: PlannerPrompt;
}

export const CHAT_DEFAULTS: AgentConfig = {
  maxTurns: 10,
  timeBudgetMs: 10 * 60_000,
  generatorTimeoutMs: 5 * 60_000,
  toolTimeoutMs: 60_000,
  toolTimeouts: {},
  answerTags: false,
  engineFor: { analysis: 'shared', planner: 'planner', executor: 'shared', verifier: 'shared', generator: 'shared' },
  generation: {
    analysis: { maxNewTokens: 256, temperature: 0 },
    planner: { maxNewTokens: 256, temperature: 0 },
    executor: { maxNewTokens: 384, temperature: 0, json: true },
    verifier: { maxNewTokens: 160, temperature: 0, json: true },
    generator: { maxNewTokens: 768, temperature: 0 },
  },
  limits: DEFAULT_LIMITS,
  constrainReplies: true,
  replyLimits: resolveReplyLimits(),
  plannerPrompt: 'full',
};

export type AgentConfigInput = Partial<Omit<AgentConfig, 'engineFor' | 'generation' | 'limits' | 'replyLimits'>> & {
  engineFor?: Partial<AgentConfig['engineFor']>;
  generation?: Partial<AgentConfig['generation']>;
  limits?: Partial<PromptLimits>;
  replyLimits?: Partial<ReplyLimits>;
};

export function resolveConfig(c: AgentConfigInput = {}): AgentConfig {
  const generation = { ...CHAT_DEFAULTS.generation };
  for (const [k, v] of Object.entries(c.generation ?? {}) as Array<[ModuleName, GenerateOptions]>) generation[k] = { ...generation[k], ...v };
  const cfg: AgentConfig = {
    ...CHAT_DEFAULTS,
    ...c,
    engineFor: { ...CHAT_DEFAULTS.engineFor, ...c.engineFor },
    generation,
    limits: { ...CHAT_DEFAULTS.limits, ...c.limits },
    replyLimits: resolveReplyLimits({ ...CHAT_DEFAULTS.replyLimits, ...c.replyLimits }),
  };
  if (cfg.plannerPrompt !== 'full' && cfg.plannerPrompt !== 'brief') throw new Error(`agent config: plannerPrompt must be 'full' or 'brief', got ${String(cfg.plannerPrompt)}`);
  if (typeof cfg.constrainReplies !== 'boolean') throw new Error(`agent config: constrainReplies must be true or false, got ${String(cfg.constrainReplies)}`);
  if (!Number.isInteger(cfg.maxTurns) || cfg.maxTurns < 1) throw new Error(`agent config: maxTurns must be a positive integer, got ${cfg.maxTurns}`);
  if (!(cfg.timeBudgetMs > 0)) throw new Error(`agent config: timeBudgetMs must be positive, got ${cfg.timeBudgetMs}`);
  if (!(cfg.toolTimeoutMs > 0)) throw new Error(`agent config: toolTimeoutMs must be positive, got ${cfg.toolTimeoutMs}`);
  if (!(cfg.generatorTimeoutMs > 0)) throw new Error(`agent config: generatorTimeoutMs must be positive, got ${cfg.generatorTimeoutMs}`);
  for (const [name, ms] of Object.entries(cfg.toolTimeouts)) {
    if (!(ms > 0)) throw new Error(`agent config: toolTimeouts['${name}'] must be positive, got ${ms}`);
  }
  return cfg;
}

/** Receives each completed step; awaited, so a step is stored before the next module runs. */
export interface StepSink {
  write(step: StepRecord): Promise<void>;
}

/** Everything about one planner call that training needs. */
export interface PlannerCall {
  conversationId: string;
  turn: number;
  engineId: string;
  messages: ChatMessage[];
  result: GenerationResult;
  parsed: PlannerParse;
}

export interface RunAgentOptions {
  conversationId: string;
  query: string;
  tools: Tool[];
  engines: AgentEngines;
  config?: AgentConfigInput;
  signal?: AbortSignal;
  sink?: StepSink;
  /** Awaited before the planner step is written, so a stored planner step always has its rollout. */
  onPlannerCall?: (call: PlannerCall) => Promise<void> | void;
  /** Streamed text of the module running now (for the UI). */
  onToken?: (module: ModuleName, turn: number, piece: string) => void;
  /** A module call is about to be made (for the UI: its prompt's size explains a long wait for the first token). */
  onCallStart?: (module: ModuleName, turn: number, engine: ChatEngine, messages: ChatMessage[]) => void;
  /** Steps already stored for this conversation: the run continues from them. */
  resumeFrom?: StepRecord[];
  now?: () => number;
  /**
   * One map for all rollouts of a group (same query, tools and config): their greedy query analysis is asked
   * of the engine once and reused, which is what each would have got (a temperature-0 call on the same
   * input). Ignored when the analysis samples. A rollout that finds the shared call failed (another
   * rollout's abort) asks on its own.
   */
  sharedAnalysis?: Map<string, Promise<GenerationResult>>;
  /**
   * Called once the run will make no more calls to engines.planner: its turns are over and its generator
   * runs on another engine (not called when the generator's engine is the planner). A group's rollouts use it
   * so the planner stops holding its calls for a rollout that is only answering (runPlannerRollouts).
   */
  onPlannerDone?: () => void;
  /**
   * Called with true while the run waits for another rollout's call through `sharedAnalysis` (and with false
   * when that returns): a group's rollouts use it so the planner does not hold that call for them.
   */
  onPlannerWait?: (waiting: boolean) => void;
}

export type StopReason = 'verifier' | 'turn-budget' | 'time-budget' | 'aborted' | 'error';

export interface AgentRunResult {
  conversationId: string;
  status: 'done' | 'interrupted' | 'error';
  stopReason: StopReason;
  /** The generator's full reply. */
  answer: string | null;
  /** With answerTags, what the last <answer> tag held (else the whole reply). */
  finalAnswer: string | null;
  analysis: string;
  memory: MemoryEntry[];
  /** All steps of the conversation, stored ones included. */
  steps: StepRecord[];
  /** Turns with a planner call (or planner error). */
  turns: number;
  error?: string;
}

export { stateFromSteps, type LoopState } from './phases';

class BudgetExhausted extends Error {
  constructor() {
    super('time budget exhausted');
    this.name = 'BudgetExhausted';
  }
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Runs (or resumes) one conversation of the agent. Never throws for model or tool misbehaviour. */
export async function runAgent(opts: RunAgentOptions): Promise<AgentRunResult> {
  const cfg = resolveConfig(opts.config);
  const now = opts.now ?? (() => Date.now());
  const steps: StepRecord[] = [...(opts.resumeFrom ?? [])].sort((a, b) => a.seq - b.seq);
  const state = stateFromSteps(steps);
  const tools = new Map(opts.tools.map((t) => [t.card.name, t]));
  const cards = opts.tools.map((t) => t.card);
  const schemas = cfg.constrainReplies ? new ReplySchemas([...tools.keys()], cfg.replyLimits) : null;
  const userSignal = opts.signal ?? new AbortController().signal;

  // Turns run under the user's signal and the time budget; the generator only under the user's.
  const budget = new AbortController();
  // Timers fire at once for a delay they cannot hold: a budget that long (Infinity, or a long one multiplied
  // for concurrent rollouts) is no limit.
  const timer = timerCanHold(cfg.timeBudgetMs) ? setTimeout(() => budget.abort(new BudgetExhausted()), cfg.timeBudgetMs) : undefined;
  const turnSignal = anySignal([userSignal, budget.signal]);

  const record = async <K extends StepKind>(kind: K, turn: number, startedAt: number, data: StepDataOf[K]) => {
    const step = { conversationId: opts.conversationId, seq: state.nextSeq++, kind, turn, startedAt, endedAt: now(), data } as StepOf<K> as StepRecord;
    await opts.sink?.write(step);
    steps.push(step);
    return step;
  };

  const call = async (module: ModuleName, turn: number, messages: ChatMessage[], signal: AbortSignal, jsonSchema?: string | null) => {
    const engine = opts.engines[cfg.engineFor[module]];
    opts.onCallStart?.(module, turn, engine, messages);
    const options: GenerateOptions = { ...cfg.generation[module], signal };
    if (jsonSchema) options.jsonSchema = jsonSchema;
    const stream = engine.stream(messages, options);
    const onToken = opts.onToken;
    // Every piece reaches the consumer before the call's step is written, as the stream ends only after
    // its last piece.
    const relayed = onToken
      ? (async () => {
          for await (const piece of stream) onToken(module, turn, piece);
          return stream.result;
        })()
      : stream.result;
    // Raced against the signal: an engine that never answers (its worker died) neither ends its stream nor
    // settles its result, and must not hold the run past Stop or its time budget.
    const result = await untilAborted(relayed, signal);
    signal.throwIfAborted();
    return { engine, result, usage: usage(engine, result) };
  };

  // The analysis through opts.sharedAnalysis: made by the first rollout to ask, awaited by the others.
  const sharedCall = async (module: ModuleName, turn: number, messages: ChatMessage[], signal: AbortSignal, map: Map<string, Promise<GenerationResult>>) => {
    const engine = opts.engines[cfg.engineFor[module]];
    const key = JSON.stringify([engine.id, messages, cfg.generation[module]]);
    let p = map.get(key);
    const own = !p;
    if (!p) {
      const made = engine.stream(messages, { ...cfg.generation[module], signal }).result;
      map.set(key, made);
      made.catch(() => {
        if (map.get(key) === made) map.delete(key);
      });
      p = made;
    }
    let result: GenerationResult;
    try {
      if (!own) opts.onPlannerWait?.(true);
      result = await untilAborted(p, signal).finally(() => {
        if (!own) opts.onPlannerWait?.(false);
      });
    } catch (e) {
      if (own || signal.aborted) throw e;
      return call(module, turn, messages, signal);
    }
    signal.throwIfAborted();
    opts.onToken?.(module, turn, result.text);
    return { engine, result, usage: { ...usage(engine, result), ...(own ? {} : { sharedWithGroup: true }) } };
  };

  let stopReason: StopReason | null = null;
  let fatal: string | undefined;
  try {
    while (state.phase !== 'generate' && state.phase !== 'done') {
      turnSignal.throwIfAborted();
      const startedAt = now();
      if (state.phase === 'analysis') {
        try {
          const messages = analysisMessages(opts.query, cards);
          const shared = (cfg.generation.analysis.temperature ?? 0) === 0 ? opts.sharedAnalysis : undefined;
          const { result, usage: u } = shared ? await sharedCall('analysis', 0, messages, turnSignal, shared) : await call('analysis', 0, messages, turnSignal);
          state.analysis = result.text.trim();
          await record('analysis', 0, startedAt, { text: state.analysis, ...u });
        } catch (e) {
          if (turnSignal.aborted || e instanceof WorkerGoneError) throw e;
          state.analysis = '';
          await record('error', 0, startedAt, { module: 'analysis', message: errorMessage(e), errorKind: 'engine-error' });
        }
        state.phase = 'plan';
      } else if (state.phase === 'plan') {
        if (state.turn > cfg.maxTurns) {
          stopReason = 'turn-budget';
          break;
        }
        state.turnsUsed = Math.max(state.turnsUsed, state.turn);
        await planTurn(startedAt);
      } else if (state.phase === 'execute') {
        await executeTurn(startedAt);
        state.phase = 'verify';
      } else if (state.phase === 'verify') {
        if (state.turn >= cfg.maxTurns) {
          // The last turn's verdict could not change anything: answer now.
          stopReason = 'turn-budget';
          break;
        }
        await verifyTurn(startedAt);
      }
    }
    if (state.phase === 'generate' && !stopReason) stopReason = 'verifier';
  } catch (e) {
    if (userSignal.aborted) stopReason = 'aborted';
    else if (budget.signal.aborted) stopReason = 'time-budget';
    else {
      stopReason = 'error';
      fatal = errorMessage(e);
    }
  } finally {
    clearTimeout(timer);
  }
  if (opts.engines[cfg.engineFor.generator] !== opts.engines.planner) opts.onPlannerDone?.();

  if (state.phase !== 'done' && (stopReason === 'verifier' || stopReason === 'turn-budget' || stopReason === 'time-budget')) {
    const startedAt = now();
    // A failed plan moves state.turn past the turn it failed in; after the last turn that is maxTurns + 1,
    // a turn that never ran, so the answer belongs to the last turn.
    const answerTurn = Math.min(state.turn, cfg.maxTurns);
    const deadline = new AbortController();
    const genTimer = timerCanHold(cfg.generatorTimeoutMs)
      ? setTimeout(() => deadline.abort(new Error(`the generator did not answer within ${cfg.generatorTimeoutMs} ms (is its engine still running?)`)), cfg.generatorTimeoutMs)
      : undefined;
    try {
      const { result, usage: u } = await call('generator', answerTurn, generatorMessages(opts.query, state.memory, { answerTags: cfg.answerTags, limits: cfg.limits }), anySignal([userSignal, deadline.signal]));
      state.answer = result.text;
      const tagged = cfg.answerTags ? extractAnswerTag(result.text) : null;
      await record('generator', answerTurn, startedAt, { text: result.text, finalAnswer: tagged ?? result.text.trim(), stopReason, ...u });
      state.phase = 'done';
    } catch (e) {
      if (userSignal.aborted) stopReason = 'aborted';
      else {
        fatal = `generator failed: ${errorMessage(e)}`;
        stopReason = 'error';
        // Best effort: the store may be what failed.
        await record('error', answerTurn, startedAt, { module: 'generator', message: fatal, errorKind: 'engine-error' }).catch(() => undefined);
      }
    } finally {
      clearTimeout(genTimer);
    }
  }

  const generatorStep = [...steps].reverse().find((s) => s.kind === 'generator');
  const finalAnswer = generatorStep ? String(generatorStep.data.finalAnswer ?? generatorStep.data.text ?? '') : null;
  return {
    conversationId: opts.conversationId,
    status: state.phase === 'done' ? 'done' : stopReason === 'aborted' ? 'interrupted' : 'error',
    stopReason: state.phase === 'done' && !stopReason ? (((generatorStep?.data.stopReason as StopReason) ?? 'verifier')) : (stopReason ?? 'error'),
    answer: state.answer,
    finalAnswer,
    analysis: state.analysis,
    memory: state.memory,
    steps,
    turns: state.turnsUsed,
    ...(fatal ? { error: fatal } : {}),
  };

  async function planTurn(startedAt: number): Promise<void> {
    const turn = state.turn;
    const messages = plannerMessages({ query: opts.query, analysis: state.analysis, cards, memory: state.memory, turn, maxTurns: cfg.maxTurns, limits: cfg.limits, style: cfg.plannerPrompt });
    let res: Awaited<ReturnType<typeof call>>;
    try {
      res = await call('planner', turn, messages, turnSignal, schemas?.forPlanner());
    } catch (e) {
      // One failed call is recorded and the run goes on; a dead worker would fail every later call the same
      // way, so it ends the run (as in every module's catch here).
      if (turnSignal.aborted || e instanceof WorkerGoneError) throw e;
      await planFailed(turn, startedAt, { message: `planner engine failed: ${errorMessage(e)}`, errorKind: 'engine-error' });
      return;
    }
    const parsed = parsePlannerOutput(res.result.text, [...tools.keys()]);
    await opts.onPlannerCall?.({ conversationId: opts.conversationId, turn, engineId: res.engine.id, messages, result: res.result, parsed });
    if (!parsed.ok) {
      await planFailed(turn, startedAt, { message: parsed.error, errorKind: 'unusable-output', raw: res.result.text, adapterId: res.result.adapterId, ...res.usage });
      return;
    }
    const match = matchToolName(parsed.action.toolName, [...tools.keys()]);
    state.action = parsed.action;
    state.resolvedTool = match?.name ?? null;
    await record('planner', turn, startedAt, {
      raw: res.result.text,
      action: parsed.action,
      parseMethod: parsed.method,
      resolvedTool: state.resolvedTool,
      toolMatch: match ? (match.exact ? 'exact' : 'fuzzy') : 'none',
      adapterId: res.result.adapterId,
      ...res.usage,
    });
    state.phase = 'execute';
  }

  async function planFailed(turn: number, startedAt: number, data: Omit<ErrorStepData, 'module'>): Promise<void> {
    await record('error', turn, startedAt, { module: 'planner', ...data });
    state.memory.push(memoryOfError(turn, null, `planner: ${String(data.message)}`));
    state.action = null;
    state.turn = turn + 1;
    state.phase = 'plan';
  }

  async function executeTurn(startedAt: number): Promise<void> {
    const turn = state.turn;
    const action = state.action!;
    const base = { subGoal: action.subGoal, toolName: state.resolvedTool ?? action.toolName };
    const tool = state.resolvedTool ? tools.get(state.resolvedTool) : undefined;
    const finish = async (data: Omit<ExecutorStepData, 'subGoal' | 'toolName' | 'args' | 'ok' | 'result' | 'error'>, entry: Omit<MemoryEntry, 'turn' | 'subGoal' | 'toolName'>) => {
      await record('executor', turn, startedAt, { ...base, ...data, args: entry.args, ok: entry.ok, result: entry.result, error: entry.error ?? null });
      state.memory.push({ turn, ...base, ...entry });
    };
    if (!tool) {
      const error = `tool-calling error: no tool named '${action.toolName}'; available: ${[...tools.keys()].join(', ')}`;
      await finish({ errorKind: 'unknown-tool' }, { args: null, result: '', ok: false, error });
      return;
    }
    let res: Awaited<ReturnType<typeof call>>;
    try {
      res = await call('executor', turn, executorMessages(opts.query, action, tool.card), turnSignal, schemas?.forExecutor(tool.card));
    } catch (e) {
      if (turnSignal.aborted || e instanceof WorkerGoneError) throw e;
      const message = `executor engine failed: ${errorMessage(e)}`;
      await record('error', turn, startedAt, { module: 'executor', message, errorKind: 'engine-error' });
      state.memory.push(memoryOfError(turn, action, message));
      return;
    }
    const parsed = parseToolArgs(res.result.text, tool.card);
    const llm = { raw: res.result.text, parseMethod: parsed.method, ...res.usage };
    if (!parsed.ok) {
      await finish({ ...llm, errorKind: 'bad-arguments' }, { args: null, result: '', ok: false, error: `tool-calling error: ${parsed.error}` });
      return;
    }
    const toolStart = now();
    const out = await runTool(tool, parsed.args, cfg.toolTimeouts[tool.card.name] ?? cfg.toolTimeoutMs, turnSignal);
    const toolMs = now() - toolStart;
    const errorKind = out.timedOut ? 'timeout' : out.result.ok ? null : 'tool-error';
    await finish(
      { ...llm, toolMs, errorKind, droppedArgs: parsed.dropped },
      { args: parsed.args, result: out.result.output ?? '', ok: out.result.ok, ...(out.result.ok ? {} : { error: out.result.error ?? 'tool failed without a message' }) },
    );
  }

  async function verifyTurn(startedAt: number): Promise<void> {
    const turn = state.turn;
    try {
      const { result, usage: u } = await call('verifier', turn, verifierMessages(opts.query, state.analysis, state.memory, cfg.limits), turnSignal, schemas?.forVerifier());
      const v = parseVerdict(result.text);
      await record('verifier', turn, startedAt, { raw: result.text, verdict: v.verdict, explanation: v.explanation, parseMethod: v.method, ...u });
      if (v.verdict === 'STOP') {
        state.phase = 'generate';
        return;
      }
    } catch (e) {
      if (turnSignal.aborted || e instanceof WorkerGoneError) throw e;
      await record('error', turn, startedAt, { module: 'verifier', message: `verifier engine failed: ${errorMessage(e)}`, errorKind: 'engine-error' });
    }
    state.turn = turn + 1;
    state.phase = 'plan';
  }
}

function usage(engine: ChatEngine, r: GenerationResult): CallUsage {
  return {
    engineId: engine.id,
    promptTokenCount: r.promptTokens.length || null,
    completionTokenCount: r.tokens.length || null,
    finishReason: r.finishReason,
    timings: r.timings,
  };
}

