// Encode/decode, special tokens, chat encoding and streaming with the test tokenizer of test-tokenizer.ts.
import { describe, expect, it } from 'vitest';
import { StreamingDecoder, Tokenizer } from './tokenizer.ts';
import { bytesOf, ID, SPECIAL, tokenizerConfig, tokenizerJson, vocab } from './test-tokenizer.ts';

const tok = new Tokenizer({ tokenizerJson, tokenizerConfig });

describe('Tokenizer (byte-level BPE)', () => {
  it('applies merges within pre-tokenized words', () => {
    expect(tok.encode('hello the world')).toEqual([ID.hello, ID._the, ID._world]);
    // 'hel' has no full merge chain: 'he' + 'l'.
    expect(tok.encode('hel')).toEqual([vocab['he'], 'l'.charCodeAt(0)]);
    // Qwen's regex splits digits one by one and keeps newlines apart.
    expect(tok.encode('42\nhello')).toEqual([52, 50, 10, ID.hello]);
  });

  it('encodes non-ASCII text as its UTF-8 bytes and decodes it back', () => {
    const text = 'é — 日本 🙂';
    const ids = tok.encode(text);
    expect(ids.filter((i) => i < 256)).toEqual(ids);
    expect(ids).toEqual(bytesOf(text));
    expect(tok.decode(ids)).toBe(text);
  });

  it('round-trips mixed text', () => {
    for (const text of ["hello world, it's  2024!\n\ttabs", ' the the', 'héllo wörld 🙂🙂']) expect(tok.decode(tok.encode(text))).toBe(text);
  });

  it('maps special-token strings to single ids and can skip them when decoding', () => {
    const ids = tok.encode('<|im_start|>user\nhello<|im_end|>\n<|endoftext|>');
    expect(ids).toEqual([SPECIAL.im_start, ...bytesOf('user'), 10, ID.hello, SPECIAL.im_end, 10, SPECIAL.endoftext]);
    expect(tok.decode(ids)).toBe('<|im_start|>user\nhello<|im_end|>\n<|endoftext|>');
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('user\nhello\n');
    expect(tok.tokenId('<|im_end|>')).toBe(SPECIAL.im_end);
    expect(tok.specialIds.has(SPECIAL.im_start)).toBe(true);
  });

  it('encodes a chat prompt rendered from the template', () => {
    const ids = tok.encodeChat([{ role: 'system', content: 'hello' }, { role: 'user', content: 'the world' }], { addGenerationPrompt: true });
    expect(ids).toEqual([
      SPECIAL.im_start, ...bytesOf('system'), 10, ID.hello, SPECIAL.im_end, 10,
      SPECIAL.im_start, ...bytesOf('user'), 10, vocab['t'], vocab['he'], ID._world, SPECIAL.im_end, 10,
      SPECIAL.im_start, ...bytesOf('assistant'), 10,
    ]);
  });
});

describe('Tokenizer setup', () => {
  it("stops at tokenizer_config's eos_token and generation_config's eos ids", () => {
    expect(tok.stopTokenIds).toEqual([SPECIAL.im_end]);
    const t2 = new Tokenizer({ tokenizerJson, tokenizerConfig, generationConfig: { eos_token_id: [SPECIAL.im_end, SPECIAL.endoftext] } });
    expect(t2.stopTokenIds.sort()).toEqual([SPECIAL.endoftext, SPECIAL.im_end].sort());
  });

  it('falls back to chat_template.jinja when tokenizer_config.json has no template', () => {
    const { chat_template: tpl, ...noTemplate } = tokenizerConfig;
    const t = new Tokenizer({ tokenizerJson, tokenizerConfig: noTemplate, chatTemplate: tpl as string });
    expect(t.renderChat([{ role: 'user', content: 'x' }], { addGenerationPrompt: true })).toBe(tok.renderChat([{ role: 'user', content: 'x' }], { addGenerationPrompt: true }));
    expect(() => new Tokenizer({ tokenizerJson, tokenizerConfig: noTemplate }).renderChat([])).toThrow(/no chat_template/);
  });
});

describe('StreamingDecoder', () => {
  it('emits only complete UTF-8 text as tokens arrive', () => {
    const ids = tok.encode('hi é🙂 the');
    const dec = new StreamingDecoder(tok);
    const pieces = ids.map((id) => dec.push(id));
    // 'é' is 2 byte-tokens, '🙂' is 4: the tokens that end mid-character emit nothing.
    expect(pieces).toEqual(['h', 'i', ' ', '', 'é', '', '', '', '🙂', ' the']);
    expect(pieces.every((p) => !p.includes('\uFFFD'))).toBe(true);
    expect(dec.flush()).toBe('');
    expect(dec.text).toBe('hi é🙂 the');
  });

  it('streams special tokens, or skips them', () => {
    const ids = [ID.hello, SPECIAL.im_end];
    const keep = new StreamingDecoder(tok);
    expect(ids.map((i) => keep.push(i))).toEqual(['hello', '<|im_end|>']);
    const skip = new StreamingDecoder(tok, { skipSpecialTokens: true });
    expect(ids.map((i) => skip.push(i))).toEqual(['hello', '']);
  });

  it('flushes an unfinished character at end of stream as U+FFFD', () => {
    const dec = new StreamingDecoder(tok);
    expect(dec.push(0xe6)).toBe('');
    expect(dec.flush()).toBe('\uFFFD');
  });
});
