// The frozen modules of the tool-choice task: a deterministic ChatEngine that plays the query analysis, the
// executor, the verifier and the generator (and the base generator tool, which knows nothing) as AgentFlow
// freezes them, so that only the planner's choices decide a rollout's reward. It reads only what each module's
// prompt shows it (src/agent/prompts.ts), never the expected answer, and carries out the plan faithfully:
// - executor: the arguments that make the chosen tool answer the part of the query it can answer (the best it
//   can do when the query has no such part: a call that cannot help);
// - verifier: STOP once the memory holds a successful result of the right tool for every part of the query;
// - generator: the answer from those results, or that the memory is not enough.
import type { ChatEngine, ChatMessage, GenerateOptions, GenerationResult } from '../engine/chat-engine';
import { chatStream, type ChatStream } from '../engine/chat-stream';
import { detectModule } from '../agent/prompts';
import { ANSWER_JOIN, parseQuestion, type PartTool, type QuestionPart } from './tool-task-data';

/** What the analysis says for every query: the same words, so it carries nothing the planner could use. */
export const FIXED_ANALYSIS = 'Each part of the query needs one tool.';

/** What the generator says when the memory does not answer every part. */
export const NOT_ENOUGH = 'The memory does not hold the answer.';

/** One memory entry as the module prompts show it. */
export interface ShownEntry {
  tool: string;
  ok: boolean;
  result: string;
}

/** The query line of a module prompt (the loop's prompts start the user message with it). */
export function queryOf(user: string): string {
  const m = /^Query: (.*)$/m.exec(user);
  return m ? m[1] : '';
}

/**
 * The memory entries of a verifier or generator prompt. The planner's sub-goal comes before each call, so each
 * entry is read from its last 'Call: ' line on (the call and the tool's result, which the planner does not
 * write). Under the planner's reply schema a sub-goal has no line break (reply-schemas.ts allows no control
 * character), so it cannot pass for a call or a result; without the schema a planner could write one.
 */
export function memoryOf(user: string): ShownEntry[] {
  const start = user.indexOf('\nMemory:\n');
  if (start < 0) return [];
  let body = user.slice(start + '\nMemory:\n'.length);
  for (const tail of ['\n\nAnswer:', '\n\nYour JSON:']) if (body.endsWith(tail)) body = body.slice(0, -tail.length);
  const out: ShownEntry[] = [];
  for (const block of body.split(/\n\nTurn \d+:\n/).map((b) => b.replace(/^Turn \d+:\n/, ''))) {
    const at = block.lastIndexOf('\nCall: ');
    if (at < 0) continue;
    const rest = block.slice(at + '\nCall: '.length);
    const nl = rest.indexOf('\n');
    const call = nl < 0 ? rest : rest.slice(0, nl);
    const outcome = nl < 0 ? '' : rest.slice(nl + 1);
    const tool = call.split(' ')[0];
    if (outcome.startsWith('Result: ')) out.push({ tool, ok: true, result: outcome.slice('Result: '.length).trim() });
    else out.push({ tool, ok: false, result: '' });
  }
  return out;
}

/** The arguments the executor writes for `tool` on `query`. */
export function executorArgs(query: string, tool: string): Record<string, unknown> {
  const parts = parseQuestion(query) ?? [];
  const part = <T extends PartTool>(t: T) => parts.find((p): p is Extract<QuestionPart, { tool: T }> => p.tool === t);
  if (tool === 'python') {
    const p = part('python');
    return { code: p ? `print(${p.expression})` : `print(${JSON.stringify(`no arithmetic in: ${query}`)})` };
  }
  if (tool === 'calculator') {
    const p = part('python');
    return { expression: p ? p.expression : query };
  }
  if (tool === 'lookup') {
    const p = part('lookup');
    return p ? { entity: p.entity, attribute: p.attribute } : { entity: query, attribute: 'capital' };
  }
  if (ANSWERED_BY.convert.includes(tool)) {
    const p = part('convert');
    return p ? { value: p.value, from: p.from, to: p.to } : { value: 0, from: 'm', to: 'kg' };
  }
  // base_generator and any other tool: ask it the query itself.
  return { query };
}

/** The tools that answer a part: an arithmetic part Python or the calculator, a conversion the converter under its name of either shape (a task offers one of each). */
const ANSWERED_BY: Record<PartTool, readonly string[]> = { python: ['python', 'calculator'], lookup: ['lookup'], convert: ['unit_convert', 'convert'] };

/** The result that answers `part` in the memory: the last successful one of its tool. */
function resultFor(part: QuestionPart, memory: ShownEntry[]): string | null {
  for (let i = memory.length - 1; i >= 0; i--) {
    const e = memory[i];
    if (!ANSWERED_BY[part.tool].includes(e.tool) || !e.ok || !e.result) continue;
    // The arithmetic tool prints a number for an arithmetic part; anything else is not its answer.
    if (part.tool === 'python' && !/^-?\d+(\.\d+)?$/.test(e.result)) continue;
    return e.result;
  }
  return null;
}

/** The answer the memory gives to every part of the query, or null when a part has none. */
export function answerFromMemory(query: string, memory: ShownEntry[]): string | null {
  const parts = parseQuestion(query);
  if (!parts) return null;
  const answers = parts.map((p) => resultFor(p, memory));
  return answers.every((a) => a !== null) ? answers.join(ANSWER_JOIN) : null;
}

/** Where a tool name appears in the executor's prompt: the full card's first line. */
const CARD_TOOL = /\n\nTool: ([A-Za-z0-9_-]+)\nWhat it does: /g;

export class FixedModulesEngine implements ChatEngine {
  readonly id: string;

  constructor(id = 'fixed:tool-task') {
    this.id = id;
  }

  stream(messages: ChatMessage[], options: GenerateOptions = {}): ChatStream {
    return chatStream(async (emit) => this.answer(messages, options, emit));
  }

  private answer(messages: ChatMessage[], options: GenerateOptions, emit: (piece: string) => void): GenerationResult {
    options.signal?.throwIfAborted();
    const text = this.reply(messages);
    emit(text);
    return { text, promptTokens: [], tokens: [], logprobs: [], adapterId: null, finishReason: 'stop', timings: { prefillMs: 0, decodeMs: 0 } };
  }

  private reply(messages: ChatMessage[]): string {
    const user = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
    const module = detectModule(messages);
    if (module === 'analysis') return FIXED_ANALYSIS;
    if (module === 'executor') {
      // The card follows the planner's context and sub-goal, which may hold any text: its last match is it.
      const tool = [...user.matchAll(CARD_TOOL)].pop()?.[1] ?? '';
      return JSON.stringify({ args: executorArgs(queryOf(user), tool) });
    }
    if (module === 'verifier') {
      const done = answerFromMemory(queryOf(user), memoryOf(user)) !== null;
      return JSON.stringify(
        done
          ? { explanation: 'The memory answers every part of the query.', verdict: 'STOP' }
          : { explanation: 'A part of the query has no result from the tool that answers it yet.', verdict: 'CONTINUE' },
      );
    }
    if (module === 'generator') {
      const answer = answerFromMemory(queryOf(user), memoryOf(user));
      return answer === null ? `${NOT_ENOUGH} <answer>unknown</answer>` : `<answer>${answer}</answer>`;
    }
    if (module === 'planner') throw new Error('FixedModulesEngine: the planner is the model being trained, not a fixed module');
    // The base generator tool (or anything else asked of the shared engine): it knows no facts.
    return 'I do not know.';
  }
}
