// The schema grammar over a byte-level tokenizer (ids 0..255 = bytes, three specials, 320 logits as the
// tiny fixture models have): random draws among the allowed tokens always give JSON that follows the
// schema, fixed keys come forced, specials other than the stop token are never allowed, and the masked
// draw keeps the model's own logprob.
import { describe, expect, it } from 'vitest';
import { Tokenizer } from '../tokenizer/tokenizer';
import { BYTE_SPECIALS, byteTokenizerConfig, byteTokenizerJson } from '../../../tests/support/byte-tokenizer';
import { Rng } from '../../util/rng';
import { SchemaGrammar, isAllowed } from './json-schema-constraint';
import { drawMasked } from './masked-draw';

const V = 320;
const STOP = BYTE_SPECIALS.im_end;
const schema = JSON.stringify({
  type: 'object',
  properties: { tool_name: { type: 'string', enum: ['Python_Coder_Tool', 'Wikipedia_Search'] }, sub_goal: { type: 'string', maxLength: 12 } },
  required: ['tool_name', 'sub_goal'],
});
const tokenizer = () => new Tokenizer({ tokenizerJson: byteTokenizerJson(), tokenizerConfig: byteTokenizerConfig() });

describe('SchemaGrammar', () => {
  it('random allowed draws always give JSON of the schema, with the fixed keys forced', async () => {
    const tok = tokenizer();
    const grammar = await SchemaGrammar.for(tok, { vocabSize: V, stopIds: [STOP] });
    expect(await SchemaGrammar.for(tok, { vocabSize: V, stopIds: [STOP] })).toBe(grammar);
    const rng = new Rng(7);
    for (let run = 0; run < 5; run++) {
      const m = await grammar.matcher(schema);
      const ids: number[] = [];
      let forced = 0;
      for (let step = 0; step < 200 && !m.terminated; step++) {
        const f = m.forced(64);
        forced += f.length;
        ids.push(...f);
        const mask = await m.allowedMask();
        for (const s of [BYTE_SPECIALS.im_start, BYTE_SPECIALS.endoftext, 300]) expect(isAllowed(mask, s)).toBe(false);
        const allowed = [...Array(V).keys()].filter((id) => isAllowed(mask, id));
        const id = allowed[Math.floor(rng.next() * allowed.length)];
        expect(m.accept(id)).toBe(true);
        ids.push(id);
      }
      expect(m.terminated).toBe(true);
      expect(ids[ids.length - 1]).toBe(STOP);
      const value = JSON.parse(tok.decode(ids.slice(0, -1)));
      expect(['Python_Coder_Tool', 'Wikipedia_Search']).toContain(value.tool_name);
      expect(typeof value.sub_goal).toBe('string');
      expect(Object.keys(value)).toEqual(['tool_name', 'sub_goal']);
      // '{"tool_name": "' at least comes with no choice.
      expect(forced).toBeGreaterThanOrEqual('{"tool_name": "'.length);
      m.dispose();
    }
  });

  it('rejects what the schema does not allow, and bad schemas with a clear error', async () => {
    const grammar = await SchemaGrammar.for(tokenizer(), { vocabSize: V, stopIds: [STOP] });
    const m = await grammar.matcher(schema);
    expect(m.accept('['.charCodeAt(0))).toBe(false);
    expect(m.accept(STOP)).toBe(false);
    m.dispose();
    await expect(grammar.matcher('{not json')).rejects.toThrow(/jsonSchema is not valid JSON/);
  });

  it('continuation gives the text the grammar forces after a token, and leaves the state as it was (a stop token too)', async () => {
    const grammar = await SchemaGrammar.for(tokenizer(), { vocabSize: V, stopIds: [STOP] });
    const m = await grammar.matcher(schema);
    m.forced(64);
    const before = Array.from(await m.allowedMask());
    // Bytes: 'P' commits to Python_Coder_Tool, whose rest and the next key come forced; 'W' likewise.
    expect(m.continuation('P'.charCodeAt(0))).toBe('ython_Coder_Tool", "sub_goal": "');
    expect(m.continuation('W'.charCodeAt(0))).toBe('ikipedia_Search", "sub_goal": "');
    expect(m.continuation('x'.charCodeAt(0))).toBeNull();
    expect(Array.from(await m.allowedMask())).toEqual(before);
    for (const id of [...'Python_Coder_Tool", "sub_goal": "ab"}'].map((c) => c.charCodeAt(0))) expect(m.accept(id)).toBe(true);
    // At the end only the stop token is left: nothing follows it, and the matcher is not terminated by asking.
    expect(m.continuation(STOP)).toBe('');
    expect(m.terminated).toBe(false);
    expect(m.accept(STOP)).toBe(true);
    expect(m.terminated).toBe(true);
    m.dispose();
  });

  it('drawMasked draws only allowed tokens and reports the unmasked log-softmax', () => {
    const logits = Float32Array.from({ length: 8 }, (_, i) => i * 0.5);
    const mask = new Int32Array([0b00100110]); // ids 1, 2, 5
    const lse = Math.log(logits.reduce((a, x) => a + Math.exp(x), 0));
    const rng = new Rng(1);
    const seen = new Set<number>();
    for (let k = 0; k < 200; k++) {
      const d = drawMasked(logits, mask, { temperature: 1 }, rng.next());
      seen.add(d.token);
      expect(d.logprob).toBeCloseTo(logits[d.token] - lse, 6);
    }
    expect([...seen].sort()).toEqual([1, 2, 5]);
    expect(drawMasked(logits, mask, { temperature: 0 }, 0).token).toBe(5);
    // Top-k within the allowed tokens: k = 1 is their argmax whatever u is.
    expect(drawMasked(logits, mask, { temperature: 1, topK: 1 }, 0.99).token).toBe(5);
    // Pure temperature: the inverse CDF over ids 1, 2, 5 in id order; u = 0 takes the first.
    expect(drawMasked(logits, mask, { temperature: 1 }, 0).token).toBe(1);
    expect(() => drawMasked(logits, new Int32Array([0]), { temperature: 1 }, 0.5)).toThrow(/allows no token/);
  });
});
