// The tokenizer and chat template in Chromium (the planner worker's environment): same results as in Node.
import { describe, expect, it } from 'vitest';
import { StreamingDecoder, Tokenizer } from './tokenizer.ts';
import { bytesOf, ID, SPECIAL, tokenizerConfig, tokenizerJson } from './test-tokenizer.ts';

describe('Tokenizer in the browser', () => {
  it('encodes a rendered Qwen2.5 chat prompt and streams a reply back to text', () => {
    const tok = new Tokenizer({ tokenizerJson, tokenizerConfig });
    const prompt = tok.renderChat([{ role: 'user', content: 'hello' }], { addGenerationPrompt: true });
    expect(prompt).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n',
    );
    const ids = tok.encode(prompt);
    expect(ids.slice(-13)).toEqual([SPECIAL.im_end, 10, SPECIAL.im_start, ...bytesOf('assistant'), 10]);
    expect(ids.filter((i) => i === SPECIAL.im_start)).toHaveLength(3);
    const reply = [ID.hello, ...bytesOf(' wörld'), SPECIAL.im_end];
    const dec = new StreamingDecoder(tok, { skipSpecialTokens: true });
    const pieces = reply.map((id) => dec.push(id));
    expect(pieces.join('')).toBe('hello wörld');
    expect(pieces).toContain('ö');
    expect(pieces.every((p) => !p.includes('\uFFFD'))).toBe(true);
  });
});
