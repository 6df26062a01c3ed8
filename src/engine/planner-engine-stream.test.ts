// The text PlannerEngine.generate streams to its onPiece (what stream() reads), on a byte-level tokenizer and a scripted batcher (no
// GPU): a character split over several tokens, or over the hold kept for stop strings, must never reach the
// live line as U+FFFD or as half of a surrogate pair.
import { describe, expect, it } from 'vitest';
import { byteLevelBpe, byteTokenizerConfig } from '../../tests/support/byte-tokenizer';
import type { GenerateBatcher } from './generate-batcher';
import { PlannerEngine } from './planner-engine';
import type { Qwen2Runtime } from './runtime';
import { Tokenizer } from './tokenizer/tokenizer';

const bytes = (s: string) => [...new TextEncoder().encode(s)];
// GPT-2's byte alphabet spells 0xF0 0x9F as 'ðŁ': with these two merges '🙂' (F0 9F 99 82) encodes as 2 tokens.
const byteChar = (b: number) => Object.entries(byteLevelBpe().vocab).find(([, id]) => id === b)![0];
const bpe = byteLevelBpe(['ð Ł', `${byteChar(0x99)} ${byteChar(0x82)}`]);
const tok = new Tokenizer({ tokenizerJson: bpe.json, tokenizerConfig: byteTokenizerConfig() as Record<string, unknown> });

/** An engine whose every generation samples `ids`, stopping when onToken says so. */
function engineSampling(ids: number[]): PlannerEngine {
  const runtime = { config: { eosTokenIds: [], vocabSize: 512 } } as unknown as Qwen2Runtime;
  const batcher = {
    runtime,
    activeAdapterId: null,
    submit: async (_prompt: number[], o: { onToken?: (id: number, lp: number) => boolean | void }) => {
      const out: number[] = [];
      for (const id of ids) {
        out.push(id);
        if (o.onToken?.(id, 0) === true) break;
      }
      return { tokens: out, logprobs: out.map(() => 0), finishReason: 'stop', prefillMs: 0, decodeMs: 0, reusedPrefixTokens: 0 };
    },
  } as unknown as GenerateBatcher;
  return new PlannerEngine(runtime, tok, 'stream-test', [], batcher);
}

async function stream(ids: number[], stop?: string[]): Promise<{ pieces: string[]; text: string }> {
  const pieces: string[] = [];
  const r = await engineSampling(ids).generate([1], { stop }, (p) => pieces.push(p));
  return { pieces, text: r.text };
}

/** A piece that could show as a replacement character: U+FFFD, or a surrogate without its other half. */
const broken = (p: string) => p.includes('\uFFFD') || /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(p);

describe('PlannerEngine streaming text', () => {
  const text = 'a 🙂 日本 é x';
  const split4 = bytes(text); // the emoji as 4 single-byte tokens, CJK as 3, é as 2
  const split2 = tok.encode(text);
  const split3 = [...bytes('a '), bpe.vocab['ðŁ']!, 0x99, 0x82, ...bytes(' z')];

  it('the tokenizer does split the emoji over several tokens (else the tests below prove nothing)', () => {
    expect(split2.filter((id) => id > 255).length).toBe(2);
    expect(split2.length).toBe(split4.length - 2);
    expect(tok.decode(split2)).toBe(text);
    expect(tok.decode(split3)).toBe('a 🙂 z');
  });

  for (const [name, ids] of [['4 tokens', split4], ['3 tokens', split3], ['2 tokens', split2]] as const) {
    for (const stop of [undefined, ['</stop>'], ['\n\n']]) {
      it(`streams an emoji split over ${name} whole (stop strings ${JSON.stringify(stop ?? [])})`, async () => {
        const { pieces, text: out } = await stream(ids, stop);
        const whole = tok.decode(ids);
        expect(pieces.filter(broken)).toEqual([]);
        expect(pieces.join('')).toBe(whole);
        expect(out).toBe(whole);
      });
    }
  }

  it('still stops at a stop string after a held-back emoji, and never shows it', async () => {
    const { pieces, text: out } = await stream(bytes('ok 🙂</stop> never'), ['</stop>']);
    expect(out).toBe('ok 🙂');
    expect(pieces.join('')).toBe('ok 🙂');
    expect(pieces.filter(broken)).toEqual([]);
  });

  it('flushes a genuinely incomplete character at the end, as decode(all ids) does', async () => {
    for (const stop of [undefined, ['</stop>']]) {
      const ids = [...bytes('ab'), 0xf0, 0x9f];
      const { pieces, text: out } = await stream(ids, stop);
      expect(out).toBe(tok.decode(ids));
      expect(out).toBe('ab\uFFFD');
      expect(pieces.join('')).toBe(out);
      expect(pieces.at(-1)).toContain('\uFFFD');
    }
  });
});
