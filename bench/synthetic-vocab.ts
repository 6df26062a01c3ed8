// A byte-level BPE tokenizer with a vocabulary the size of Qwen2.5's (151,643 tokens), for timing the grammar
// where no real tokenizer can be downloaded (the GPU machine, CI). What the grammar costs per token depends on
// how many tokens each grammar state leaves undecided, so the merges are built the way BPE grows a vocabulary
// over English and JSON: letters and word pieces with and without a leading space (Ġ), digits, and the JSON
// punctuation runs ('":', '",', ' "', '{"', '"}'). Seeded: the same vocabulary every run.
import { byteLevelBpe } from '../tests/support/byte-tokenizer';
import { Tokenizer } from '../src/engine/tokenizer/tokenizer';
import { byteTokenizerConfig } from '../tests/support/byte-tokenizer';
import { Rng } from '../src/util/rng';

/** Qwen2.5's ordinary tokens (its 151,936 logits add specials and padding). */
export const QWEN_VOCAB_TOKENS = 151_643;

const made = new Map<string, Tokenizer>();

/** The synthetic tokenizer (built once per size and seed: building a 151k vocabulary takes seconds). */
export function syntheticBpeTokenizer(tokens = QWEN_VOCAB_TOKENS, seed = 1): Tokenizer {
  const key = `${tokens}|${seed}`;
  let t = made.get(key);
  if (!t) made.set(key, (t = buildTokenizer(tokens, seed)));
  return t;
}

function buildTokenizer(tokens: number, seed: number): Tokenizer {
  const rng = new Rng(seed);
  const have = new Set<string>();
  const merges: string[] = [];
  // GPT-2's byte alphabet spells ' ' as Ġ; the 256 single bytes are the first tokens.
  const letters = 'etaoinshrdlcumwfgypbvkjxqzETAOINSHRDLCUMWFGYPBVKJXQZ';
  const add = (a: string, b: string) => {
    const t = a + b;
    if (have.has(t) || t.length > 12) return;
    have.add(t);
    merges.push(`${a} ${b}`);
  };
  for (const p of ['":', '",', 'Ġ"', '{"', '"}', '":Ġ', '",Ġ', 'Ġ{', '}Ġ', '_T', '_S', '_C']) {
    for (let i = 1; i < p.length; i++) if (!have.has(p.slice(0, i + 1))) add(p.slice(0, i), p[i]);
  }
  const pieces: string[] = [...letters, ...[...letters].map((c) => `Ġ${c}`)];
  for (const c of letters) add('Ġ', c);
  while (have.size < tokens - 256) {
    // Grow a random known piece by one letter (or a digit now and then): a word-piece tree like BPE's.
    const a = pieces[rng.int(pieces.length)];
    const b = rng.next() < 0.05 ? String(rng.int(10)) : letters[rng.int(letters.length)];
    const before = have.size;
    add(a, b);
    if (have.size > before) pieces.push(a + b);
  }
  return new Tokenizer({ tokenizerJson: byteLevelBpe(merges).json, tokenizerConfig: byteTokenizerConfig() });
}
