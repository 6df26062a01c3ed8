// The tiny planner's tokenizer: a byte-level BPE tokenizer.json in Qwen2's layout (GPT-2 byte alphabet, Qwen2's
// pre-tokenizer regex, ChatML specials and chat template), whose merges are learned here from text like the
// task's prompts. Loaded through the same Tokenizer class as a downloaded model's, so the planner's prompts,
// chat template, grammar and decoding take the real path. Learning merges keeps prompts short (about 4 bytes
// a token on the planner's prompts, against 1 for bytes alone), which is what makes CPU training quick.
import { Tokenizer } from '../engine/tokenizer/tokenizer';

/** GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to U+0100 onwards. */
function bytesToUnicode(): string[] {
  const keep = (b: number) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const map: string[] = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) map[b] = keep(b) ? String.fromCharCode(b) : String.fromCharCode(256 + n++);
  return map;
}

/** Qwen2's pre-tokenizer regex, as tokenizer.json states it. */
const QWEN_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** The same split for learning merges here (JavaScript has no inline (?i:) group on every engine we run). */
const SPLIT_JS = /'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

export const CHATML_TEMPLATE =
  "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** Byte-level BPE merges learned from `corpus`: at most `count`, each the most frequent pair (ties: first in order). */
export function learnMerges(corpus: readonly string[], count: number): string[] {
  const b2u = bytesToUnicode();
  const enc = new TextEncoder();
  const freq = new Map<string, number>();
  for (const text of corpus) for (const m of text.matchAll(SPLIT_JS)) freq.set(m[0], (freq.get(m[0]) ?? 0) + 1);
  const words = [...freq].map(([w, n]) => ({ symbols: Array.from(enc.encode(w), (b) => b2u[b]), n }));
  const merges: string[] = [];
  while (merges.length < count) {
    const pairs = new Map<string, number>();
    for (const w of words) for (let i = 0; i + 1 < w.symbols.length; i++) {
      const k = `${w.symbols[i]} ${w.symbols[i + 1]}`;
      pairs.set(k, (pairs.get(k) ?? 0) + w.n);
    }
    let best = '';
    let bestN = 1;
    for (const [k, n] of pairs) if (n > bestN || (n === bestN && best !== '' && k < best)) [best, bestN] = [k, n];
    // A pair seen once would only memorise the corpus.
    if (!best) break;
    merges.push(best);
    const [a, b] = best.split(' ');
    for (const w of words) {
      const s = w.symbols;
      for (let i = 0; i + 1 < s.length; i++) if (s[i] === a && s[i + 1] === b) s.splice(i, 2, a + b);
    }
  }
  return merges;
}

/** tokenizer.json (byte-level BPE with `merges`, ChatML specials after them) and tokenizer_config.json. */
export function bpeTokenizerFiles(merges: readonly string[]): { tokenizerJson: Record<string, unknown>; tokenizerConfig: Record<string, unknown> } {
  const vocab: Record<string, number> = {};
  bytesToUnicode().forEach((ch, b) => (vocab[ch] = b));
  let next = 256;
  for (const m of merges) {
    const t = m.replace(' ', '');
    if (vocab[t] === undefined) vocab[t] = next++;
  }
  const added = (id: number, content: string) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  const bl = () => ({ type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false });
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [added(next, '<|endoftext|>'), added(next + 1, '<|im_start|>'), added(next + 2, '<|im_end|>')],
    normalizer: { type: 'NFC' },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: QWEN_SPLIT }, behavior: 'Isolated', invert: false }, bl()] },
    post_processor: bl(),
    decoder: bl(),
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges: [...merges] },
  };
  return { tokenizerJson, tokenizerConfig: { chat_template: CHATML_TEMPLATE, eos_token: '<|im_end|>', pad_token: '<|endoftext|>' } };
}

/** A Tokenizer whose merges are learned from `corpus`; its vocabulary size is 256 + merges + 3 specials. */
export function learnedTokenizer(corpus: readonly string[], merges: number): { tokenizer: Tokenizer; vocabSize: number; files: ReturnType<typeof bpeTokenizerFiles> } {
  const files = bpeTokenizerFiles(learnMerges(corpus, merges));
  const tokenizer = new Tokenizer(files);
  const vocabSize = Object.keys((files.tokenizerJson.model as { vocab: Record<string, number> }).vocab).length + 3;
  return { tokenizer, vocabSize, files };
}
