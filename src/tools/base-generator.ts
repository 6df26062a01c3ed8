// The base generator tool: the shared chat engine (web-llm) answers a sub-question from its own knowledge,
// with no memory of the conversation, so the planner must put all needed context into the query.
import type { ChatEngine, GenerateOptions } from '../engine/chat-engine';
import { BASE_GENERATOR_CARD } from './cards';
import type { Tool, ToolContext, ToolResult } from './tool';

export const BASE_GENERATOR_SYSTEM_PROMPT =
  'You are a helpful assistant. Answer the request accurately and concisely. If you are not sure of a fact, say so.';

export interface BaseGeneratorOptions {
  /** The engine, or a getter for it (the shared engine may be created or swapped after the tool is registered). */
  engine: ChatEngine | (() => ChatEngine | Promise<ChatEngine>);
  maxNewTokens?: number;
  temperature?: number;
  systemPrompt?: string;
}

export class BaseGeneratorTool implements Tool {
  readonly card = BASE_GENERATOR_CARD;
  constructor(private readonly options: BaseGeneratorOptions) {}

  async run(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult> {
    const query = typeof args.query === 'string' ? args.query.trim() : '';
    if (!query) return { ok: false, output: '', error: "base_generator: field 'query' must be a non-empty question or task" };
    let engine: ChatEngine;
    try {
      engine = typeof this.options.engine === 'function' ? await this.options.engine() : this.options.engine;
    } catch (e) {
      return { ok: false, output: '', error: `base_generator: the language model is not available: ${e instanceof Error ? e.message : String(e)}` };
    }
    const gen: GenerateOptions = {
      maxNewTokens: this.options.maxNewTokens ?? 512,
      temperature: this.options.temperature ?? 0,
      signal: ctx.signal,
    };
    try {
      const r = await engine.stream(
        [
          { role: 'system', content: this.options.systemPrompt ?? BASE_GENERATOR_SYSTEM_PROMPT },
          { role: 'user', content: query },
        ],
        gen,
      ).result;
      if (r.finishReason === 'abort') return { ok: false, output: r.text, error: 'base_generator: cancelled' };
      const text = r.text.trim();
      if (!text) return { ok: false, output: '', error: 'base_generator: the model returned an empty answer' };
      const note = r.finishReason === 'length' ? '\n[answer cut off at the length limit]' : '';
      return { ok: true, output: text + note };
    } catch (e) {
      return { ok: false, output: '', error: `base_generator: ${e instanceof Error ? e.message : String(e)}` };
    }
  }
}
