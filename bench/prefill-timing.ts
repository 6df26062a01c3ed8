// How the speed benchmark (bench/run.ts) times a prompt's prefill and the decode after it through generate().
// Both calls prefill the whole prompt: with prefix reuse on (generate()'s default) the timed call would find
// the warm-up's prompt in the KV cache and prefill only its last token, so "prefill tok/s" would be a
// one-token forward (plus, on 4-bit weights, compiling the 1-row matmul kernels that neither a long prefill
// nor the fused decode uses) divided into the prompt's length: 688 tok/s on an H200 for a 4-bit forward that
// scores 8 x 128 tokens at 11,940 tok/s.
import type { GenerateTokensOptions, Qwen2Runtime, TokenGeneration } from '../src/engine/runtime';

/**
 * generate(ids) greedy for `decode` new tokens after an untimed warm-up of the same prompt (which compiles
 * every pipeline and records every step list the timed call runs); neither reuses the cache, so the timed
 * call's prefillMs is a whole prompt's prefill and its first token's draw.
 */
export async function timedGenerate(rt: Qwen2Runtime, ids: number[], decode: number, o: GenerateTokensOptions = {}): Promise<TokenGeneration> {
  const opts: GenerateTokensOptions = { temperature: 0, ...o, reusePrefix: false };
  await rt.generate(ids, { ...opts, maxNewTokens: Math.min(2, decode) });
  const out = await rt.generate(ids, { ...opts, maxNewTokens: decode });
  if (out.reusedPrefixTokens !== 0) throw new Error(`timedGenerate: the timed generate reused ${out.reusedPrefixTokens} prompt tokens from the cache; its prefill would not be the prompt's`);
  return out;
}
