// Token ids for the end-to-end benchmark's prompts. Its models have random weights and no tokenizer (none
// can be downloaded for the shaped Qwen2.5-0.5B), yet the time a step takes depends on how many tokens each
// prompt has and on which prompt heads the group's calls share. A byte tokenizer would make every prompt about
// 4x longer than Qwen's BPE does. This one splits text as Qwen2's pre-tokenizer does (words with their leading
// space, single digits, punctuation runs, whitespace): BPE never merges across these pieces, and Qwen's
// 151k-entry vocabulary holds most short ones whole. Each piece of up to CHUNK_CHARS characters is one token,
// a longer one a token per CHUNK_CHARS characters. Ids are a hash of the chunk: the same text always gives
// the same ids, so prompt heads are shared exactly where the real tokenizer would share them.
import type { ChatMessage } from '../src/engine/chat-engine';

/** Qwen2's pre-tokenizer split (tokenizer.json `pre_tokenizer`), as in tests/support/byte-tokenizer.ts. */
const QWEN_SPLIT = /'s|'t|'re|'ve|'m|'ll|'d|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/giu;

/**
 * Longest piece counted as one token. On the planner's first prompt (English instructions, tool cards, JSON) 8
 * gives 4.2 characters a token, near the usual rule of thumb for BPE vocabularies of this size on English
 * (about 4); 5 would give 3.4 and 4 would give 2.9. Not checked against Qwen's own tokenizer, which cannot be
 * downloaded here; the benchmark reports the ratio it got per module.
 */
export const CHUNK_CHARS = 8;

/** 32-bit FNV-1a over UTF-16 code units. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

export class ChunkTokenizer {
  /** The chat markers' ids: the vocabulary's last two (never a hashed chunk's). */
  readonly imStart: number;
  readonly imEnd: number;

  constructor(readonly vocabSize: number) {
    if (!Number.isInteger(vocabSize) || vocabSize < 16) throw new Error(`chunk tokenizer: vocabSize must be an integer >= 16, got ${vocabSize}`);
    this.imStart = vocabSize - 2;
    this.imEnd = vocabSize - 1;
  }

  /** The text's token ids (no special tokens). */
  encode(text: string): number[] {
    const ids: number[] = [];
    const span = this.vocabSize - 2;
    for (const m of text.matchAll(QWEN_SPLIT)) {
      const piece = m[0];
      for (let i = 0; i < piece.length; i += CHUNK_CHARS) ids.push(fnv1a(piece.slice(i, i + CHUNK_CHARS)) % span);
    }
    return ids;
  }

  /** The messages laid out as Qwen's ChatML template does, ending with the assistant's turn opened. */
  encodeChat(messages: readonly ChatMessage[]): number[] {
    const ids: number[] = [];
    for (const m of messages) ids.push(this.imStart, ...this.encode(`${m.role}\n${m.content}`), this.imEnd, ...this.encode('\n'));
    ids.push(this.imStart, ...this.encode('assistant\n'));
    return ids;
  }
}
