// The runtime on the web-llm q4f16_1 fixture, loaded through io/checkpoint, which hands the runtime the
// 4-bit build itself: the GPU keeps q_weight / q_scale as downloaded and the q4 kernels dequantize exactly
// ((q - 7) * scale in f32), so the only error against the float64 expected.json is f32 arithmetic. The
// PEFT adapter sits on the unfused modules (q/k/v of c_attn, gate/up of gate_up_proj). The CLI reads the
// same folder the same way.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gpuFor } from '../../tests/support/gpu';
import { maxAbsDiff } from '../../tests/support/compare';
import { TINY_MLC, type MlcFixtureExpected } from '../../tests/support/qwen2-fixture';
import { runCli } from '../cli/cli-spawn';
import { loadAdapter, loadCheckpoint } from './load-checkpoint';
import { directorySource } from '../io/sources';
import { Qwen2Runtime } from './runtime';
import { isQ4 } from '../model/weights';

const expected = JSON.parse(readFileSync(join(TINY_MLC, 'expected.json'), 'utf8')) as MlcFixtureExpected;
const ADAPTER = join(TINY_MLC, 'adapter');

describe('Qwen2 runtime on the MLC q4f16_1 fixture, 4-bit on the GPU', () => {
  for (const path of ['native', 'packed'] as const) {
    it(`scores with and without the adapter, decodes greedily, and the KV cache matches recompute (${path})`, async () => {
      const ctx = await gpuFor(path);
      if (path === 'native' && !ctx.caps.f16) return;
      const ckpt = await loadCheckpoint(directorySource(TINY_MLC));
      const rt = await Qwen2Runtime.create(ctx, ckpt.config, ckpt.tensors, { maxContext: 128 });
      try {
        // The weights really are 4-bit, and q/k/v share c_attn's buffers through row windows.
        const L0 = rt.weights.layers[0];
        expect(isQ4(L0.q) && isQ4(L0.k) && isQ4(L0.v) && isQ4(L0.gate) && isQ4(L0.up) && isQ4(L0.down) && isQ4(rt.weights.embed[0].weight)).toBe(true);
        if (isQ4(L0.q) && isQ4(L0.k)) expect(L0.k.qWeight).toBe(L0.q.qWeight);
        await rt.addAdapter('mlc', await loadAdapter(directorySource(ADAPTER), ckpt.config));
        const seqs = expected.forward.map((f) => f.tokens);
        for (const id of [null, 'mlc'] as const) {
          rt.setActiveAdapter(id);
          const got = await rt.score(seqs);
          expected.forward.forEach((f, i) => {
            expect(maxAbsDiff(got[i], id ? f.logprobs_adapter : f.logprobs_base)).toBeLessThan(2e-3);
          });
        }
        rt.setActiveAdapter('mlc');
        const g = expected.greedy;
        const out = await rt.generate(g.prompt, { maxNewTokens: g.continuation.length, temperature: 0 });
        expect(out.tokens).toEqual(g.continuation);
        // Decoding through the KV cache gives the logprobs a full recompute of the same sequence gives.
        const [again] = await rt.score([[...g.prompt, ...out.tokens]]);
        expect(maxAbsDiff(out.logprobs, again.slice(g.prompt.length - 1))).toBeLessThan(1e-4);
      } finally {
        rt.destroy();
      }
    });
  }

  it('the f16 (dequantized) upload of the same build is 4-bit rounded to half: close, but not as close', async () => {
    const ctx = await gpuFor('packed');
    const ckpt = await loadCheckpoint(directorySource(TINY_MLC));
    const q4 = await Qwen2Runtime.create(ctx, ckpt.config, ckpt.tensors, { maxContext: 64 });
    const f16 = await Qwen2Runtime.create(ctx, ckpt.config, ckpt.tensors, { maxContext: 64, dequantize: true });
    try {
      expect(isQ4(f16.weights.layers[0].q)).toBe(false);
      const seqs = expected.forward.map((f) => f.tokens);
      const [a, b] = [await q4.score(seqs), await f16.score(seqs)];
      expected.forward.forEach((f, i) => expect(maxAbsDiff(b[i], f.logprobs_base)).toBeLessThan(6e-3));
      const errQ4 = Math.max(...expected.forward.map((f, i) => maxAbsDiff(a[i], f.logprobs_base)));
      const errF16 = Math.max(...expected.forward.map((f, i) => maxAbsDiff(b[i], f.logprobs_base)));
      expect(errQ4).toBeLessThan(errF16);
    } finally {
      q4.destroy();
      f16.destroy();
    }
  });

  it('the CLI scores the MLC folder with and without the adapter within 2e-3', async () => {
    const input = join(mkdtempSync(join(tmpdir(), 'agentflow-mlc-cli-')), 'seqs.json');
    writeFileSync(input, JSON.stringify({ sequences: expected.forward.map((f) => f.tokens) }));
    for (const withAdapter of [false, true]) {
      const r = await runCli(['score', '--model', TINY_MLC, ...(withAdapter ? ['--adapter', ADAPTER] : []), '--input', input]);
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as { logprobs: number[][] };
      expected.forward.forEach((f, i) => expect(maxAbsDiff(out.logprobs[i], withAdapter ? f.logprobs_adapter : f.logprobs_base)).toBeLessThan(2e-3));
    }
  }, 180_000);
});
