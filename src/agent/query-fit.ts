// Refuses a question too long for the models before the agent runs: the first prompt each engine would get
// (the query analysis, the planner's first turn), counted with the engine's own chat template, plus the
// reply it may write, must fit the engine's context. Otherwise every module fails, turn after turn, on the
// context limit, after the question was stored as a run.
import { AgentFlowError, type ErrorCategory } from '../errors';
import type { ChatEngine, ChatMessage } from '../engine/chat-engine';
import type { ToolCard } from '../tools/tool';
import { resolveConfig, type AgentConfigInput, type AgentEngines } from './loop';
import { analysisMessages, plannerMessages, type ModuleName } from './prompts';

export class QueryTooLongError extends AgentFlowError {
  override readonly category: ErrorCategory = 'context-exceeded';
  constructor(
    /** Tokens of the question itself. */
    readonly queryTokens: number,
    /** The engine's context: prompt and reply together. */
    readonly limit: number,
    /** The prompt with the question, and the reply the module may write. */
    readonly promptTokens: number,
    readonly replyTokens: number,
    readonly engineId: string,
  ) {
    const room = Math.max(0, limit - (promptTokens - queryTokens) - replyTokens);
    super(
      `This question is ${fmt(queryTokens)} tokens long, too long for ${engineId}: it takes at most ${fmt(limit)} tokens per call, and its first ` +
        `prompt with this question would need ${fmt(promptTokens)} tokens plus ${fmt(replyTokens)} for its reply. ` +
        (room > 0 ? `Shorten the question to at most about ${fmt(room)} tokens.` : 'Even a short question does not fit this model; load one with a longer context.'),
    );
    this.name = 'QueryTooLongError';
  }
}

function fmt(n: number): string {
  return n.toLocaleString('en-US');
}

/** The engine's counter, else the other engine's (the planner and web-llm's Qwen2.5 builds share a tokenizer). */
function counterFor(engine: ChatEngine, engines: AgentEngines): ((m: ChatMessage[]) => Promise<number>) | null {
  for (const e of [engine, engines.planner, engines.shared]) if (e.countPromptTokens) return (m) => e.countPromptTokens!(m);
  return null;
}

/**
 * Throws a QueryTooLongError when `query` cannot fit the first prompt of an engine that states its context
 * (ChatEngine.contextTokens) and can count tokens; engines that cannot (the scripted demo) are not checked.
 */
export async function checkQueryFits(query: string, engines: AgentEngines, cards: ToolCard[], config?: AgentConfigInput): Promise<void> {
  const cfg = resolveConfig(config);
  const first: Array<[ModuleName, (q: string) => ChatMessage[]]> = [
    ['analysis', (q) => analysisMessages(q, cards)],
    ['planner', (q) => plannerMessages({ query: q, analysis: '', cards, memory: [], turn: 1, maxTurns: cfg.maxTurns, limits: cfg.limits })],
  ];
  for (const [module, messages] of first) {
    const engine = engines[cfg.engineFor[module]];
    const limit = engine.contextTokens;
    const count = counterFor(engine, engines);
    if (!limit || !count) continue;
    const reply = cfg.generation[module].maxNewTokens ?? 0;
    const prompt = await count(messages(query));
    if (prompt + reply <= limit) continue;
    const withoutQuery = await count(messages(''));
    throw new QueryTooLongError(Math.max(0, prompt - withoutQuery), limit, prompt, reply, engine.id);
  }
}
