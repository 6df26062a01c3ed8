// Prompts for the four modules and the query analysis: short, structured, one job each, asking for JSON
// where the loop needs fields. Written for 0.5B-3B models: plain words, the exact JSON shape, no long rules.
import type { ChatMessage } from '../engine/chat-engine';
import type { ToolCard } from '../tools/tool';
import { trimForPrompt, type MemoryEntry } from './memory';
import type { PlannerAction } from './parse';

export type ModuleName = 'analysis' | 'planner' | 'executor' | 'verifier' | 'generator';

/** First words of each module's system message; also how a scripted engine tells the modules apart. */
const ROLE_LINE: Record<ModuleName, string> = {
  analysis: 'You are the Query Analyzer of a tool-using agent.',
  planner: 'You are the Planner of a tool-using agent.',
  executor: 'You are the Executor of a tool-using agent.',
  verifier: 'You are the Verifier of a tool-using agent.',
  generator: 'You are the Answer Generator of a tool-using agent.',
};

/** Which module a conversation was built for, from its system message; null for foreign prompts. */
export function detectModule(messages: ChatMessage[]): ModuleName | null {
  const sys = messages.find((m) => m.role === 'system')?.content ?? '';
  for (const [name, line] of Object.entries(ROLE_LINE) as Array<[ModuleName, string]>) if (sys.startsWith(line)) return name;
  return null;
}

export interface PromptLimits {
  /** Characters of each tool result shown in prompts (the full result stays in memory). */
  resultChars: number;
  /** Characters of all results together: with many turns each result gets an equal share of this. */
  memoryChars: number;
  /** Characters of the query analysis shown to later modules. */
  analysisChars: number;
}

export const DEFAULT_LIMITS: PromptLimits = { resultChars: 1200, memoryChars: 6000, analysisChars: 800 };

function perResult(limits: PromptLimits, entries: number): number {
  return Math.max(80, Math.min(limits.resultChars, Math.floor(limits.memoryChars / Math.max(1, entries))));
}

/** One line per tool: name, what it does, its inputs. */
export function renderToolCardsCompact(cards: ToolCard[]): string {
  return cards
    .map((c) => {
      const inputs = Object.entries(c.input.properties)
        .map(([k, p]) => `${k} (${p.type}${c.input.required.includes(k) ? '' : ', optional'})`)
        .join(', ');
      const limits = c.limitations.length ? ` Limits: ${c.limitations.join('; ')}.` : '';
      return `- ${c.name}: ${c.description} Inputs: ${inputs || 'none'}.${limits}`;
    })
    .join('\n');
}

/** The full card of the one tool the executor must call, with its inputs and examples. */
export function renderToolCardFull(c: ToolCard): string {
  const inputs = Object.entries(c.input.properties)
    .map(([k, p]) => {
      const req = c.input.required.includes(k) ? 'required' : 'optional';
      const en = p.enum ? `, one of ${p.enum.map((e) => JSON.stringify(e)).join('/')}` : '';
      return `  - ${k} (${p.type}, ${req}${en}): ${p.description}`;
    })
    .join('\n');
  const examples = c.examples
    .slice(0, 2)
    .map((e) => `  Goal: ${e.goal}\n  Args: ${JSON.stringify(e.args)}`)
    .join('\n');
  return [
    `Tool: ${c.name}`,
    `What it does: ${c.description}`,
    `Inputs:\n${inputs || '  (none)'}`,
    `Output: ${c.output}`,
    c.limitations.length ? `Limits: ${c.limitations.join('; ')}` : '',
    examples ? `Examples:\n${examples}` : '',
  ]
    .filter(Boolean)
    .join('\n');
}

/** The memory as the modules see it: each turn's sub-goal, call and (trimmed) result. */
export function renderMemory(memory: MemoryEntry[], resultChars: number): string {
  if (memory.length === 0) return '(empty: no tool has been used yet)';
  return memory
    .map((m) => {
      const call = m.args ? `${m.toolName} ${JSON.stringify(m.args)}` : m.toolName || '(no tool)';
      const outcome = m.ok ? `Result: ${trimForPrompt(m.result, resultChars)}` : `Error: ${m.error ?? 'unknown error'}${m.result ? `\nPartial result: ${trimForPrompt(m.result, resultChars)}` : ''}`;
      return `Turn ${m.turn}:\nSub-goal: ${m.subGoal || '(none)'}\nCall: ${call}\n${outcome}`;
    })
    .join('\n\n');
}

export function analysisMessages(query: string, cards: ToolCard[]): ChatMessage[] {
  return [
    {
      role: 'system',
      content: `${ROLE_LINE.analysis} Read the query and say briefly: what it asks, what information or computation is needed, and which tools could help. Do not answer it. At most 5 sentences.`,
    },
    { role: 'user', content: `Query: ${query}\n\nTools:\n${renderToolCardsCompact(cards)}` },
  ];
}

export interface PlannerPromptInput {
  query: string;
  analysis: string;
  cards: ToolCard[];
  memory: MemoryEntry[];
  turn: number;
  maxTurns: number;
  limits?: PromptLimits;
  /** 'brief': the query, the tool names, one line per memory turn (no analysis, no cards): PlannerPrompt. */
  style?: PlannerPrompt;
}

/**
 * The planner's prompt: 'full' (the query, its analysis, every card, the memory with sub-goals and calls) or
 * 'brief' (the query, the tool names and one line per memory turn), for planners too small to read the full
 * one: in a 250-token prompt the query is a few percent of what attention averages over, and a tiny model's
 * state where it names the tool hardly depends on it (README, "Tool-choice task").
 */
export type PlannerPrompt = 'full' | 'brief';

/** The memory in one line per turn: the tool called and what came back. */
export function renderMemoryBrief(memory: MemoryEntry[], resultChars: number): string {
  if (memory.length === 0) return '(empty)';
  const line = (t: string) => t.replace(/\s+/g, ' ').trim();
  return memory.map((m) => `Turn ${m.turn}: ${m.toolName || '(no tool)'} -> ${line(m.ok ? trimForPrompt(m.result, resultChars) : `error: ${m.error ?? 'unknown error'}`)}`).join('\n');
}

/** The planner's reply names its decision first, in the order reply-schemas.ts constrains it to. */
export function plannerMessages(p: PlannerPromptInput): ChatMessage[] {
  const limits = p.limits ?? DEFAULT_LIMITS;
  const names = p.cards.map((c) => c.name).join(', ');
  if (p.style === 'brief') {
    return [
      { role: 'system', content: `${ROLE_LINE.planner} Choose the tool for the next step. Reply with JSON only.` },
      { role: 'user', content: `Query: ${p.query}\nTools: ${names}\nMemory:\n${renderMemoryBrief(p.memory, Math.min(80, perResult(limits, p.memory.length)))}\nStep ${p.turn} of ${p.maxTurns}.` },
    ];
  }
  return [
    {
      role: 'system',
      content: `${ROLE_LINE.planner} Choose the next step toward answering the query: one sub-goal and the one tool to reach it. Use the memory; do not repeat a step that already worked. Reply with JSON only, in this form:\n{"tool_name": "one of: ${names}", "sub_goal": "one concrete task", "context": "facts from the query and memory the tool needs", "justification": "why this tool"}`,
    },
    {
      role: 'user',
      content: `Query: ${p.query}\n\nQuery analysis: ${trimForPrompt(p.analysis, limits.analysisChars)}\n\nTools:\n${renderToolCardsCompact(p.cards)}\n\nMemory:\n${renderMemory(p.memory, perResult(limits, p.memory.length))}\n\nThis is step ${p.turn} of at most ${p.maxTurns}. Your JSON:`,
    },
  ];
}

export function executorMessages(query: string, action: PlannerAction, card: ToolCard): ChatMessage[] {
  return [
    {
      role: 'system',
      content: `${ROLE_LINE.executor} Write the arguments for one call of the given tool so that it achieves the sub-goal. Use only the inputs the tool lists, with the right types. Reply with JSON only: {"args": {...}}`,
    },
    {
      role: 'user',
      content: `Query: ${query}\nContext: ${action.context || '(none)'}\nSub-goal: ${action.subGoal}\n\n${renderToolCardFull(card)}\n\nYour JSON:`,
    },
  ];
}

export function verifierMessages(query: string, analysis: string, memory: MemoryEntry[], limits: PromptLimits = DEFAULT_LIMITS): ChatMessage[] {
  return [
    {
      role: 'system',
      content: `${ROLE_LINE.verifier} Decide whether the memory already holds enough to answer the query completely and correctly. Say STOP if it does, CONTINUE if another tool step is needed (missing facts, errors, unchecked results). Reply with JSON only: {"explanation": "one or two sentences", "verdict": "STOP" or "CONTINUE"}`,
    },
    {
      role: 'user',
      content: `Query: ${query}\n\nQuery analysis: ${trimForPrompt(analysis, limits.analysisChars)}\n\nMemory:\n${renderMemory(memory, perResult(limits, memory.length))}\n\nYour JSON:`,
    },
  ];
}

export function generatorMessages(
  query: string,
  memory: MemoryEntry[],
  opts: { answerTags: boolean; limits?: PromptLimits },
): ChatMessage[] {
  const limits = opts.limits ?? DEFAULT_LIMITS;
  const tags = opts.answerTags ? ' End with the final answer alone inside <answer></answer> tags, e.g. <answer>42</answer>.' : '';
  return [
    {
      role: 'system',
      content: `${ROLE_LINE.generator} Answer the query using the memory of tool steps below; trust tool results over guesses, and say so if the memory is not enough. Be concise.${tags}`,
    },
    { role: 'user', content: `Query: ${query}\n\nMemory:\n${renderMemory(memory, perResult(limits, memory.length))}\n\nAnswer:` },
  ];
}
