// The speed benchmark's prefill timing (prefill-timing.ts) on the qwen2-tiny fixtures, f16 and web-llm's
// 4-bit build, on both weight paths (native f16 and the packed f32 fallback NVIDIA runs): the timed generate prefills the whole prompt even though the cache already holds it, and runs
// only pipelines its warm-up compiled (on 4-bit weights a one-token prefill compiles the 1-row matmuls).
import { describe, expect, it } from 'vitest';
import { loadCheckpoint } from '../src/engine/load-checkpoint';
import { directorySource } from '../src/io/sources';
import { Qwen2Runtime } from '../src/engine/runtime';
import { gpuFor } from '../tests/support/gpu';
import { TINY, TINY_MLC } from '../tests/support/qwen2-fixture';
import { timedGenerate } from './prefill-timing';

describe('timedGenerate', () => {
  const cases = (['native', 'packed'] as const).flatMap((path) => ([['f16', TINY], ['4-bit (q4f16_1)', TINY_MLC]] as const).map(([name, dir]) => [path, name, dir] as const));
  for (const [path, name, dir] of cases) {
    it(`${name}, ${path} path: prefills the whole prompt and compiles nothing in the timed call`, async () => {
      const ctx = await gpuFor(path);
      // The native path needs shader-f16 (lavapipe and most GPUs have it; its absence is not this test's subject).
      if (path === 'native' && !ctx.caps.f16) return;
      const ckpt = await loadCheckpoint(directorySource(dir));
      const rt = await Qwen2Runtime.create(ctx, ckpt.config, ckpt.tensors, { maxContext: 64 });
      const dev = ctx.device as { createComputePipelineAsync: GPUDevice['createComputePipelineAsync'] };
      const compile = dev.createComputePipelineAsync;
      const generate = rt.generate.bind(rt);
      try {
        const ids = Array.from({ length: 24 }, (_, i) => (i * 37 + 5) % ckpt.config.vocabSize);
        // The cache holds this prompt already, as it does after the benchmark's earlier calls.
        const ref = await rt.generate(ids, { maxNewTokens: 4, temperature: 0, reusePrefix: false });
        // Which generate call (1: warm-up, 2: timed) compiled each pipeline.
        let call = 0;
        const compiledIn: number[] = [];
        rt.generate = (p, o) => (call++, generate(p, o));
        dev.createComputePipelineAsync = (d) => (compiledIn.push(call), compile.call(ctx.device, d));
        const out = await timedGenerate(rt, ids, 4);
        expect(call).toBe(2);
        expect(out.reusedPrefixTokens).toBe(0);
        expect(compiledIn.filter((c) => c === 2)).toEqual([]);
        // The same greedy tokens as a cold generate of the prompt.
        expect(out.tokens).toEqual(ref.tokens);
      } finally {
        dev.createComputePipelineAsync = compile;
        rt.destroy();
      }
    });
  }
});
