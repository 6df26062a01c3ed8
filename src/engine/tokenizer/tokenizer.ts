// Byte-level BPE tokenizer (Qwen2's tokenizer.json) via @lenml/tokenizers, plus the model's chat template.
import { TokenizerLoader } from '@lenml/tokenizers';
import type { ChatMessage } from '../chat-engine.ts';
import { ChatTemplate, hasChatTemplate, type RenderOptions } from './chat-template.ts';

type LenmlTokenizer = ReturnType<typeof TokenizerLoader.fromPreTrained>;

export interface TokenizerSources {
  tokenizerJson: unknown;
  tokenizerConfig: unknown;
  /** chat_template.jinja, used when tokenizer_config.json has no chat_template. */
  chatTemplate?: string | null;
  /** generation_config.json: its eos_token_id joins the stop tokens. */
  generationConfig?: unknown;
}

export class Tokenizer {
  private readonly tok: LenmlTokenizer;
  readonly chatTemplate: ChatTemplate | null;
  /** Ids of tokens marked special in tokenizer.json (never produced from plain text by decodeText). */
  readonly specialIds: ReadonlySet<number>;

  constructor(files: TokenizerSources) {
    if (!files.tokenizerJson || typeof files.tokenizerJson !== 'object') throw new Error('tokenizer.json is missing or not a JSON object');
    const cfg = (files.tokenizerConfig ?? {}) as Record<string, unknown>;
    try {
      this.tok = TokenizerLoader.fromPreTrained({ tokenizerJSON: files.tokenizerJson as never, tokenizerConfig: cfg as never });
    } catch (e) {
      throw new Error(`tokenizer.json could not be loaded: ${(e as Error).message}`);
    }
    this.specialIds = new Set(this.tok.all_special_ids);
    this.vocabType = vocabTypeOf(files.tokenizerJson as { decoder?: unknown });
    this.chatTemplate =
      hasChatTemplate(cfg)
        ? ChatTemplate.fromTokenizerConfig(cfg)
        : typeof files.chatTemplate === 'string'
          ? new ChatTemplate(files.chatTemplate, cfg)
          : null;
    // Generation stops at any of: tokenizer_config's eos_token, generation_config's eos_token_id(s).
    // Qwen2.5-Instruct needs both: <|im_end|> ends a turn, <|endoftext|> ends a document.
    const stops = new Set<number>();
    const eos = typeof cfg.eos_token === 'string' ? cfg.eos_token : (cfg.eos_token as { content?: string } | undefined)?.content;
    const eosId = eos ? this.tokenId(eos) : undefined;
    if (eosId !== undefined) stops.add(eosId);
    const gen = (files.generationConfig as { eos_token_id?: unknown } | null | undefined)?.eos_token_id;
    for (const id of Array.isArray(gen) ? gen : gen === undefined ? [] : [gen]) if (Number.isInteger(id)) stops.add(id as number);
    this.stopTokenIds = [...stops];
  }

  /** How tokenizer.json's token strings spell bytes (read from its decoder), for the grammar library. */
  readonly vocabType: 'byte_level' | 'byte_fallback' | 'raw';

  /** Every token's string by id as tokenizer.json spells it (specials included): what a grammar compiles against. */
  vocabulary(): { tokens: string[]; vocabType: 'byte_level' | 'byte_fallback' | 'raw'; specialIds: ReadonlySet<number> } {
    const vocab = (this.tok.model as unknown as { vocab: string[] }).vocab;
    return { tokens: Array.from(vocab, (t) => t ?? ''), vocabType: this.vocabType, specialIds: this.specialIds };
  }

  /** Token ids that end generation (see constructor). Add the model config's eos ids too. */
  readonly stopTokenIds: number[];

  /** Token ids for `text`. Special-token strings in the text (e.g. <|im_start|>) become their single ids. */
  encode(text: string): number[] {
    return this.tok.encode(text, { add_special_tokens: false });
  }

  decode(ids: number[], opts: { skipSpecialTokens?: boolean } = {}): string {
    if (ids.length === 0) return '';
    return this.tok.decode(ids, { skip_special_tokens: opts.skipSpecialTokens ?? false, clean_up_tokenization_spaces: false });
  }

  tokenId(token: string): number | undefined {
    return this.tok.model.tokens_to_ids.get(token);
  }

  /** The chat prompt as text, exactly as transformers' apply_chat_template(tokenize=False) renders it. */
  renderChat(messages: ChatMessage[], opts: RenderOptions = {}): string {
    if (!this.chatTemplate) throw new Error('tokenizer_config.json has no chat_template');
    return this.chatTemplate.render(messages, opts);
  }

  /** The chat prompt as token ids (rendered, then encoded with special tokens recognised). */
  encodeChat(messages: ChatMessage[], opts: RenderOptions = {}): number[] {
    return this.encode(this.renderChat(messages, opts));
  }
}

/** tokenizer.json's decoder as xgrammar names it: ByteLevel (GPT-2 / Qwen), ByteFallback (SentencePiece), else raw text. */
function vocabTypeOf(json: { decoder?: unknown }): 'byte_level' | 'byte_fallback' | 'raw' {
  const types: string[] = [];
  const walk = (d: unknown) => {
    if (!d || typeof d !== 'object') return;
    const o = d as { type?: unknown; decoders?: unknown };
    if (typeof o.type === 'string') types.push(o.type);
    if (Array.isArray(o.decoders)) o.decoders.forEach(walk);
  };
  walk(json.decoder);
  return types.includes('ByteLevel') ? 'byte_level' : types.includes('ByteFallback') ? 'byte_fallback' : 'raw';
}

/**
 * Turns a stream of token ids into text pieces, emitting only complete UTF-8: a token that ends in the
 * middle of a multi-byte character is held back until the rest arrives. Decodes a small window (the
 * tokens since the last emitted boundary) rather than the whole sequence, so cost stays constant.
 */
export class StreamingDecoder {
  private ids: number[] = [];
  private prefixOffset = 0;
  private readOffset = 0;
  private emitted = '';

  constructor(private readonly tokenizer: Pick<Tokenizer, 'decode'>, private readonly opts: { skipSpecialTokens?: boolean } = {}) {}

  /** Adds one token; returns the newly completed text (possibly ''). */
  push(id: number): string {
    this.ids.push(id);
    const prefix = this.tokenizer.decode(this.ids.slice(this.prefixOffset, this.readOffset), this.opts);
    const full = this.tokenizer.decode(this.ids.slice(this.prefixOffset), this.opts);
    if (full.length > prefix.length && !full.endsWith('\uFFFD')) {
      const piece = full.slice(prefix.length);
      this.prefixOffset = this.readOffset;
      this.readOffset = this.ids.length;
      this.emitted += piece;
      return piece;
    }
    return '';
  }

  /** At end of stream: whatever is held back (an incomplete character decodes as U+FFFD). */
  flush(): string {
    const prefix = this.tokenizer.decode(this.ids.slice(this.prefixOffset, this.readOffset), this.opts);
    const full = this.tokenizer.decode(this.ids.slice(this.prefixOffset), this.opts);
    const piece = full.slice(prefix.length);
    this.prefixOffset = this.readOffset = this.ids.length;
    this.emitted += piece;
    return piece;
  }

  /** Everything emitted so far. */
  get text(): string {
    return this.emitted;
  }
}
