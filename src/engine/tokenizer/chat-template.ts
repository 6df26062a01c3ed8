// Renders a Hugging Face chat template (the Jinja string in tokenizer_config.json) the way transformers'
// apply_chat_template does: messages, add_generation_prompt, and the special-token strings as variables.
// @huggingface/jinja's Template lexes with trim_blocks and lstrip_blocks on, as transformers' sandboxed
// environment does, so whitespace control matches.
import { Template } from '@huggingface/jinja';
import type { ChatMessage } from '../chat-engine.ts';

export interface RenderOptions {
  addGenerationPrompt?: boolean;
  /** Extra template variables (e.g. tools); transformers passes these through as keyword arguments. */
  extra?: Record<string, unknown>;
}

const SPECIAL_KEYS = ['bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token'] as const;

/** A special token as tokenizer_config.json stores it: a string or an AddedToken object {content}. */
function tokenString(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string') return (v as { content: string }).content;
  return null;
}

/** Whether a tokenizer_config.json holds a chat template (a string, or a list of named ones). */
export function hasChatTemplate(tokenizerConfig: unknown): boolean {
  const t = (tokenizerConfig as { chat_template?: unknown } | null)?.chat_template;
  return typeof t === 'string' || Array.isArray(t);
}

/** The chat template in a tokenizer_config.json: a string, or the 'default' entry of a named list. */
export function chatTemplateOf(tokenizerConfig: unknown, file = 'tokenizer_config.json'): string {
  const t = (tokenizerConfig as { chat_template?: unknown } | null)?.chat_template;
  if (typeof t === 'string') return t;
  if (Array.isArray(t)) {
    const d = t.find((x) => x && (x as { name?: unknown }).name === 'default') as { template?: unknown } | undefined;
    if (d && typeof d.template === 'string') return d.template;
    throw new Error(`${file}: 'chat_template' is a list without a 'default' entry`);
  }
  throw new Error(`${file}: no 'chat_template' (the model has no chat format; pick an -Instruct checkpoint)`);
}

export class ChatTemplate {
  private readonly template: Template;
  private readonly specials: Record<string, string> = {};

  constructor(source: string, tokenizerConfig: unknown = {}) {
    try {
      this.template = new Template(source);
    } catch (e) {
      throw new Error(`chat_template does not parse: ${(e as Error).message}`);
    }
    const cfg = (tokenizerConfig ?? {}) as Record<string, unknown>;
    for (const k of SPECIAL_KEYS) {
      const s = tokenString(cfg[k]);
      if (s !== null) this.specials[k] = s;
    }
  }

  static fromTokenizerConfig(tokenizerConfig: unknown, file?: string): ChatTemplate {
    return new ChatTemplate(chatTemplateOf(tokenizerConfig, file), tokenizerConfig);
  }

  render(messages: ChatMessage[], opts: RenderOptions = {}): string {
    return this.template.render({
      messages: messages.map((m) => ({ role: m.role, content: m.content })),
      add_generation_prompt: opts.addGenerationPrompt ?? false,
      ...this.specials,
      ...opts.extra,
    });
  }
}
