// The schema grammar in Chromium, as Vite bundles @mlc-ai/web-xgrammar for the page and the planner worker:
// the wasm loads, and a fixed-key schema forces its keys and ends on the stop token.
import { describe, expect, it } from 'vitest';
import { Tokenizer } from '../tokenizer/tokenizer';
import { BYTE_SPECIALS, byteTokenizerConfig, byteTokenizerJson } from '../../../tests/support/byte-tokenizer';
import { SchemaGrammar, isAllowed } from './json-schema-constraint';

describe('SchemaGrammar in the browser', () => {
  it('loads under Vite and constrains a reply', async () => {
    const tok = new Tokenizer({ tokenizerJson: byteTokenizerJson(), tokenizerConfig: byteTokenizerConfig() });
    const grammar = await SchemaGrammar.for(tok, { vocabSize: 320, stopIds: [BYTE_SPECIALS.im_end] });
    const m = await grammar.matcher(JSON.stringify({ type: 'object', properties: { verdict: { enum: ['STOP', 'CONTINUE'] } }, required: ['verdict'] }));
    const ids = m.forced(64);
    expect(tok.decode(ids)).toBe('{"verdict": "');
    const mask = await m.allowedMask();
    expect([...Array(320).keys()].filter((id) => isAllowed(mask, id)).map((id) => String.fromCharCode(id))).toEqual(['C', 'S']);
    expect(m.accept('S'.charCodeAt(0))).toBe(true);
    expect(tok.decode(m.forced(64))).toBe('TOP"}');
    expect(m.accept(BYTE_SPECIALS.im_end)).toBe(true);
    expect(m.terminated).toBe(true);
    m.dispose();
  });
});
