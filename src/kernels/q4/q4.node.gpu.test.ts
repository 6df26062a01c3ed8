// The 4-bit kernels on real weights: the qwen2-tiny fixture's q_proj quantized here, and the tensors of
// the q4f16_1 MLC fixture read straight from params_shard_0.bin at the offsets tensor-cache.json gives.
// Node only (reads ../shared/fixtures with node:fs).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createStorage, readF32, uploadStorage } from '../../gpu/buffers';
import { submitDispatches } from '../../gpu/pipelines';
import { Rng } from '../../util/rng';
import { FIXTURES, TINY, readSafetensorsF32 } from '../../../tests/support/qwen2-fixture';
import { gpuFor, weightPaths } from '../../../tests/support/gpu';
import { f32Buffer, relMaxErr, u32Buffer } from '../common/testing';
import { dequantizeQ4f16_1 } from '../../io/mlc';
import { embeddingRef } from '../embedding/embedding.ref';
import { matmulRef } from '../matmul/matmul.ref';
import { dequantizeQ4, quantizeQ4, type Q4Matrix } from './q4.ref';
import { q4Embedding } from './q4embedding';
import { q4LmHead } from './q4logits';
import { q4Matmul, q4Matvec } from './q4matmul';
import { destroyQ4, uploadQ4 } from './q4weight';

const MLC = join(FIXTURES, 'qwen2-tiny-q4f16_1-MLC');

interface Rec { name: string; shape: number[]; dtype: string; nbytes: number; byteOffset: number }

/** tensor-cache.json read here, independently of src/io, so a loader bug cannot hide in both. */
function readMlcShard(): { recs: Map<string, Rec>; shard: Buffer } {
  const cache = JSON.parse(readFileSync(join(MLC, 'tensor-cache.json'), 'utf8')) as { records: Array<{ dataPath: string; records: Rec[] }> };
  expect(cache.records.length).toBe(1);
  const recs = new Map(cache.records[0].records.map((r) => [r.name, r]));
  return { recs, shard: readFileSync(join(MLC, cache.records[0].dataPath)) };
}

function mlcQ4(recs: Map<string, Rec>, shard: Buffer, prefix: string): Q4Matrix {
  const w = recs.get(`${prefix}.q_weight`);
  const s = recs.get(`${prefix}.q_scale`);
  if (!w || !s) throw new Error(`tensor-cache.json has no ${prefix}.q_weight / q_scale`);
  expect(w.dtype).toBe('uint32');
  expect(s.dtype).toBe('float16');
  const bytes = (r: Rec) => new Uint8Array(shard.subarray(r.byteOffset, r.byteOffset + r.nbytes)).slice().buffer;
  return { qWeight: new Uint32Array(bytes(w)), qScale: new Uint16Array(bytes(s)), scale: 'f16', out: w.shape[0], inDim: w.shape[1] * 8 };
}

describe('q4 kernels on the fixtures', async () => {
  const paths = await weightPaths();
  const { recs, shard } = readMlcShard();

  it('lavapipe offers subgroups, so this tier runs the subgroup reduction as well as the fallback', async () => {
    const ctx = await gpuFor('packed');
    if (/llvmpipe|lavapipe/i.test(ctx.caps.description)) expect(ctx.caps.subgroups).toBe(true);
  });

  for (const path of paths) {
    const sgModes = (await gpuFor(path)).caps.subgroups ? [true, false] : [false];
    it(`${path}: qwen2-tiny q_proj quantized by quantizeQ4: decode (both reductions) and prefill equal CPU dequantize-then-matmul`, async () => {
      const ctx = await gpuFor(path);
      const t = readSafetensorsF32(join(TINY, 'model.safetensors')).get('model.layers.0.self_attn.q_proj.weight');
      if (!t) throw new Error('qwen2-tiny has no layer-0 q_proj');
      const [out, inDim] = t.shape;
      const q = quantizeQ4(t.data, out, inDim);
      const Wd = dequantizeQ4(q);
      // Quantization is lossy but close: every value within half a step of its group's max |w| / 7.
      let worst = 0;
      for (let i = 0; i < Wd.length; i++) worst = Math.max(worst, Math.abs(Wd[i] - t.data[i]));
      expect(worst).toBeGreaterThan(0);
      expect(worst).toBeLessThan(0.6 * (Math.max(...Array.from(t.data, Math.abs)) / 7));
      const W = uploadQ4(ctx, 'q_proj', q);
      const rng = new Rng(5);
      for (const n of [1, 7]) {
        const x = rng.fill(n * inDim);
        const xb = f32Buffer(ctx, 'x', x);
        const want = matmulRef(x, Wd, n, inDim, out);
        for (const subgroups of n === 1 ? sgModes : [true]) {
          const y = createStorage(ctx, 'y', n * out * 4);
          submitDispatches(ctx, [await q4Matmul(ctx, { x: xb, W, y, n, inDim, outDim: out, subgroups })]);
          expect(relMaxErr(await readF32(ctx, y, n * out), want)).toBeLessThan(2e-5);
          y.destroy();
        }
        xb.destroy();
      }
      destroyQ4(W);
    });

    it(`${path}: q4 matvec on the real q4f16_1 weights of every linear (c_attn, o_proj, gate_up_proj, down_proj) matches the CPU dequantized reference`, async () => {
      const ctx = await gpuFor(path);
      const rng = new Rng(9);
      for (const l of [0, 1]) {
        for (const mod of ['self_attn.c_attn', 'self_attn.o_proj', 'mlp.gate_up_proj', 'mlp.down_proj']) {
          const q = mlcQ4(recs, shard, `model.layers.${l}.${mod}`);
          const Wd = dequantizeQ4(q);
          // Two independent dequantizers (this folder's and the engine loader's) read the file the same way.
          expect(Array.from(Wd)).toEqual(Array.from(dequantizeQ4f16_1(q.qWeight, q.qScale as Uint16Array, q.out, q.inDim)));
          const x = rng.fill(q.inDim);
          const W = uploadQ4(ctx, mod, q);
          const xb = f32Buffer(ctx, 'x', x);
          const want = matmulRef(x, Wd, 1, q.inDim, q.out);
          for (const subgroups of sgModes) {
            const y = createStorage(ctx, 'y', q.out * 4);
            submitDispatches(ctx, [await q4Matvec(ctx, { W, x: xb, y, rows: q.out, cols: q.inDim, subgroups })]);
            const got = await readF32(ctx, y, q.out);
            expect(relMaxErr(got, want), `layer ${l} ${mod} subgroups=${subgroups}`).toBeLessThan(2e-5);
            y.destroy();
          }
          destroyQ4(W);
          xb.destroy();
        }
      }
    });

    it(`${path}: real quantized embed_tokens: gather equals its dequantized rows, tied LM head equals x · deq(E)^T`, async () => {
      const ctx = await gpuFor(path);
      const q = mlcQ4(recs, shard, 'model.embed_tokens');
      const [V, H] = [q.out, q.inDim];
      expect([V, H]).toEqual([320, 64]);
      const Ed = dequantizeQ4(q);
      const E = uploadQ4(ctx, 'embed_tokens', q);
      const ids = [0, 1, 318, 319, 17, 250];
      const idsBuf = u32Buffer(ctx, 'ids', ids);
      const x = createStorage(ctx, 'x', ids.length * H * 4);
      submitDispatches(ctx, [await q4Embedding(ctx, { E, ids: idsBuf, x, n: ids.length, hidden: H, vocab: V })]);
      const emb = await readF32(ctx, x, ids.length * H);
      expect(Array.from(emb)).toEqual(Array.from(embeddingRef(Ed, ids, H, V)));
      const rows = 2;
      const logits = createStorage(ctx, 'logits', rows * V * 4);
      const hs = uploadStorage(ctx, 'h', emb.subarray(0, rows * H));
      submitDispatches(ctx, [
        await q4LmHead(ctx, { x: hs, E: { ...E, rowBase: 0 }, logits, rows, hidden: H, rowOffset: 0, rowCount: 160, ld: V }),
        await q4LmHead(ctx, { x: hs, E: { ...E, rowBase: 160 }, logits, rows, hidden: H, rowOffset: 160, rowCount: 160, ld: V }),
      ]);
      expect(relMaxErr(await readF32(ctx, logits, rows * V), matmulRef(emb.subarray(0, rows * H), Ed, rows, H, V))).toBeLessThan(2e-5);
      destroyQ4(E);
      for (const b of [idsBuf, x, logits, hs]) b.destroy();
    });
  }
});
