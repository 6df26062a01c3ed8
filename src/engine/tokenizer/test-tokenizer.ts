// Test data shared by the Node and Chromium tokenizer tests: a small byte-level BPE tokenizer.json (GPT-2
// byte alphabet, Qwen2's pre-tokenizer regex and special tokens, a handful of merges) and Qwen2.5's real
// tokenizer_config.json fields (tests/fixtures-local). Expected ids in the tests are worked out by hand.
import tokenizerConfigJson from '../../../tests/fixtures-local/qwen2.5-0.5b-instruct/tokenizer_config.json';

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to U+0100 onwards.
function bytesToUnicode(): string[] {
  const bs: number[] = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const map: string[] = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (bs.includes(b)) map[b] = String.fromCharCode(b);
    else map[b] = String.fromCharCode(256 + n++);
  }
  return map;
}

const B = bytesToUnicode();
export const vocab: Record<string, number> = {};
B.forEach((ch, b) => (vocab[ch] = b)); // id of a single byte = its value
const merges = ['h e', 'l l', 'he ll', 'hell o', 'Ġ t', 'Ġt he', 'Ġ w', 'o r', 'Ġw or', 'Ġwor l', 'Ġworl d'];
let next = 256;
for (const m of merges) vocab[m.replace(' ', '')] = next++;
export const ID = { hello: vocab['hello'], _the: vocab['Ġthe'], _world: vocab['Ġworld'] };
export const SPECIAL = { endoftext: next, im_start: next + 1, im_end: next + 2 };

const QWEN_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const added = (id: number, content: string) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
export const tokenizerJson = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: [added(SPECIAL.endoftext, '<|endoftext|>'), added(SPECIAL.im_start, '<|im_start|>'), added(SPECIAL.im_end, '<|im_end|>')],
  normalizer: { type: 'NFC' },
  pre_tokenizer: {
    type: 'Sequence',
    pretokenizers: [
      { type: 'Split', pattern: { Regex: QWEN_SPLIT }, behavior: 'Isolated', invert: false },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    ],
  },
  post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
  decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges },
};
export const tokenizerConfig: Record<string, unknown> = { ...tokenizerConfigJson };
export const bytesOf = (s: string) => [...new TextEncoder().encode(s)];
