// Which 4-bit MLC builds the loader accepts: q4f16_1 and q4f32_1 (f32 scales, norms and biases), each
// checked against the dtypes it implies; anything else is refused naming the setting.
import { describe, expect, it } from 'vitest';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkMlcQwen2, dequantizeQ4, dequantizeQ4f16_1, expectedMlcQwen2Tensors, loadMlcCheckpoint, parseMlcChatConfig, parseTensorCache } from './mlc.ts';
import { directorySource } from './sources.ts';
import { TINY_MLC } from './test-fixtures.ts';
import { f16BitsToF32 } from '../util/half.ts';

const readJson = (p: string) => JSON.parse(readFileSync(p, 'utf8'));

describe('MLC quantizations', () => {
  it('q4f32_1 implies float32 scales and vectors; a q4f16_1 manifest fails that check naming a tensor', () => {
    const chat = parseMlcChatConfig(readJson(join(TINY_MLC, 'mlc-chat-config.json')));
    const want = expectedMlcQwen2Tensors(chat.config, 'q4f32_1');
    expect(want.get('model.embed_tokens.q_scale')!.dtype).toBe('float32');
    expect(want.get('model.norm.weight')!.dtype).toBe('float32');
    expect(want.get('model.embed_tokens.q_weight')!.dtype).toBe('uint32');
    const m = parseTensorCache(readJson(join(TINY_MLC, 'tensor-cache.json')));
    expect(() => checkMlcQwen2(m, chat.config, 'q4f16_1')).not.toThrow();
    expect(() => checkMlcQwen2(m, chat.config, 'q4f32_1')).toThrow(/tensor '.*' is float16 .* but the config implies float32/);
  });

  it('dequantizes f32 scales the same as the f16 ones they equal', () => {
    const qWeight = Uint32Array.from({ length: 8 }, (_, i) => (0x89abcdef * (i + 1)) >>> 0);
    const f16 = Uint16Array.from([0x3c00, 0x3555]); // 1 and ~1/3 as half
    const f32 = Float32Array.from(f16, (b) => f16BitsToF32(b));
    expect(dequantizeQ4(qWeight, f32, 2, 32)).toEqual(dequantizeQ4f16_1(qWeight, f16, 2, 32));
  });

  it('refuses other quantizations, naming the setting and the supported ones', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mlc-q-'));
    for (const f of ['tensor-cache.json', 'params_shard_0.bin']) copyFileSync(join(TINY_MLC, f), join(dir, f));
    writeFileSync(join(dir, 'mlc-chat-config.json'), JSON.stringify({ ...readJson(join(TINY_MLC, 'mlc-chat-config.json')), quantization: 'q3f16_1' }));
    await expect(loadMlcCheckpoint(directorySource(dir))).rejects.toThrow("mlc-chat-config.json: quantization 'q3f16_1' is not supported (only q4f16_1, q4f32_1)");
  });
});
