// The runtime on the shared qwen2-tiny fixture (BF16 checkpoint + PEFT adapter) against the float64
// PyTorch outputs in expected.json, on both f16 weight paths.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { gpuFor, weightPaths } from '../../tests/support/gpu';
import { maxAbsDiff } from '../../tests/support/compare';
import { readExpected, TINY } from '../../tests/support/qwen2-fixture';
import { loadAdapter, loadCheckpoint } from './load-checkpoint';
import { directorySource } from '../io/sources';
import { Qwen2Runtime } from './runtime';

const expected = readExpected();
const TOL = 2e-3;

describe('Qwen2 runtime on the qwen2-tiny fixture', async () => {
  for (const path of await weightPaths()) {
    describe(path, () => {
      let rt: Qwen2Runtime;
      const setup = async () => {
        if (rt) return rt;
        const ctx = await gpuFor(path);
        const ckpt = await loadCheckpoint(directorySource(TINY));
        rt = await Qwen2Runtime.create(ctx, ckpt.config, ckpt.tensors, { maxContext: 128, maxBatchRows: 64, logitsRows: 16 });
        ckpt.release();
        await rt.addAdapter('fixture', await loadAdapter(directorySource(join(TINY, 'adapter')), ckpt.config));
        return rt;
      };

      it('scores every fixture sequence (packed together) with and without the adapter', async () => {
        const r = await setup();
        const seqs = expected.forward.map((f) => f.tokens);
        r.setActiveAdapter(null);
        const base = await r.score(seqs);
        r.setActiveAdapter('fixture');
        const ad = await r.score(seqs);
        expected.forward.forEach((f, i) => {
          expect(base[i].length).toBe(f.tokens.length - 1);
          expect(maxAbsDiff(base[i], f.logprobs_base)).toBeLessThan(TOL);
          expect(maxAbsDiff(ad[i], f.logprobs_adapter)).toBeLessThan(TOL);
        });
      });

      it('last-position logits with and without the adapter, and switching back and forth', async () => {
        const r = await setup();
        for (const id of [null, 'fixture', null, 'fixture'] as const) {
          r.setActiveAdapter(id);
          for (const f of expected.forward) {
            const got = await r.logitsLast(f.tokens);
            expect(maxAbsDiff(got, id ? f.logits_adapter_last : f.logits_base_last)).toBeLessThan(TOL);
          }
        }
      });

      it('greedy continuation with the adapter equals the reference exactly', async () => {
        const r = await setup();
        r.setActiveAdapter('fixture');
        const g = expected.greedy;
        const streamed: number[] = [];
        const out = await r.generate(g.prompt, { maxNewTokens: g.continuation.length, temperature: 0, onToken: (id) => void streamed.push(id) });
        expect(out.tokens).toEqual(g.continuation);
        expect(streamed).toEqual(g.continuation);
        expect(out.finishReason).toBe('length');
        // The logprobs reported for the sampled tokens equal what scoring the full sequence gives.
        const scored = await r.score([[...g.prompt, ...g.continuation]]);
        expect(maxAbsDiff(out.logprobs, scored[0].slice(g.prompt.length - 1))).toBeLessThan(TOL);
      });

      it('names a bad token id and the vocabulary size', async () => {
        const r = await setup();
        await expect(r.score([[1, 2], [3, 320]])).rejects.toThrow(/sequence 1.*id 320.*\[0, 320\)/);
        await expect(r.generate([5, -1], { maxNewTokens: 1 })).rejects.toThrow(/id -1/);
        // The runtime still works after a rejected call.
        expect((await r.score([[1, 2, 3]]))[0].length).toBe(2);
      });
    });
  }
});
