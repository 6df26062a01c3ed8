// Byte-level BPE tokenizer.json files (GPT-2 byte alphabet, ids 0..255 = bytes, Qwen2's pre-tokenizer
// regex and chat special tokens) for tests. With no merges, the specials sit at 256..258, small enough to
// pair with the tiny fixture models (vocab 320) so the planner engine can be tested end to end on text.

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to U+0100 onwards.
function bytesToUnicode(): string[] {
  const bs: number[] = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const map: string[] = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) map[b] = bs.includes(b) ? String.fromCharCode(b) : String.fromCharCode(256 + n++);
  return map;
}

const QWEN_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/**
 * A byte-level BPE tokenizer: each merge ('a b') adds the token 'ab' after the 256 bytes, in order, and the
 * specials follow the merges.
 */
export function byteLevelBpe(merges: string[] = []): {
  json: Record<string, unknown>;
  vocab: Record<string, number>;
  specials: { endoftext: number; im_start: number; im_end: number };
} {
  const vocab: Record<string, number> = {};
  bytesToUnicode().forEach((ch, b) => (vocab[ch] = b)); // id of a single byte = its value
  let next = 256;
  for (const m of merges) vocab[m.replace(' ', '')] = next++;
  const specials = { endoftext: next, im_start: next + 1, im_end: next + 2 };
  const added = (id: number, content: string) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const bl = () => ({ type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false });
  const json = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [added(specials.endoftext, '<|endoftext|>'), added(specials.im_start, '<|im_start|>'), added(specials.im_end, '<|im_end|>')],
    normalizer: { type: 'NFC' },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: QWEN_SPLIT }, behavior: 'Isolated', invert: false }, bl()] },
    post_processor: bl(),
    decoder: bl(),
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges },
  };
  return { json, vocab, specials };
}

export const BYTE_SPECIALS = byteLevelBpe().specials;

export function byteTokenizerJson(): unknown {
  return byteLevelBpe().json;
}

/** Qwen's ChatML layout without the default system prompt: easy to check by hand. */
export const CHATML_TEMPLATE =
  "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

export function byteTokenizerConfig(): unknown {
  return { chat_template: CHATML_TEMPLATE, eos_token: '<|im_end|>', pad_token: '<|endoftext|>' };
}
