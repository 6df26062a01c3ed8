import { describe, expect, it } from 'vitest';
import { benchHeadline, headlines, sgmCheckHeadline } from './gpu-all-headlines';

// The fields headlines reads, as bench/run.ts, peft_step.py and adapter-info.ts print them (trimmed).
const bench = (decode: number, trainStepMs: number) => ({
  results: [
    {
      speed: { decodeTokensPerSec: decode, prefillTokensPerSec: 3103, scoreTokensPerSec: 9289, bandwidthFloor: { fractionOfFloor: 0.0077 }, batchDecode: { group: { tokensPerSec: 400, bandwidthFloor: { fractionOfFloor: 0.05 } } } },
      memoryAtContext: { totalMiB: 454.1 },
      training: { trainStepMs, trainGpuPeakMiB: 1970, stepMs: { refLogprobs: 1000, update: trainStepMs - 1000 } },
    },
  ],
});

describe('run.sh all: headlines', () => {
  it("reads a bench part's decode, floor share, prefill, score and training figures", () => {
    expect(benchHeadline(bench(91.4, 3810))).toEqual({
      decodeTokPerS: 91.4,
      decodePctOfFloor: 0.77,
      groupDecodeTokPerS: 400,
      groupDecodePctOfFloor: 5,
      prefillTokPerS: 3103,
      scoreTokPerS: 9289,
      trainStepMs: 3810,
      refLogprobsMs: 1000,
      updateMs: 2810,
      trainPeakMiB: 1970,
      memoryAtContextMiB: 454.1,
    });
  });

  it('gives the training step against PyTorch + PEFT of the same shape, and nulls for what a part lacks', () => {
    const files: Record<string, unknown> = {
      adapter: { subgroupMatrix: { offered: [], offeredWithUnsafeApis: ['chromium-experimental-subgroup-matrix'] } },
      'bench-0.5b-q4': bench(91.4, 3810),
      'bench-0.5b-f16': bench(71.8, 4210),
      'bench-0.5b-q4-tiles': bench(92, 1450),
      // Interrupted before training (SIGTERM prints what finished).
      'bench-1.5b-q4': { interrupted: 'SIGTERM', results: [{ speed: { decodeTokensPerSec: 40 } }] },
      'peft-0.5b': { trainStepMs: 145, decodeTokensPerSec: 24.7 },
      'peft-1.5b': { skipped: 'no torch' },
    };
    const h = headlines(Object.keys(files), (n) => files[n] ?? null);
    expect(h.subgroupMatrix).toEqual({ offered: [], offeredWithUnsafeApis: ['chromium-experimental-subgroup-matrix'] });
    expect(h.trainVsPeft).toEqual([
      { part: 'bench-0.5b-q4', peftStepMs: 145, stepMs: 3810, ratio: 0.03806, updateRatio: 0.0516 },
      { part: 'bench-0.5b-f16', peftStepMs: 145, stepMs: 4210, ratio: 0.03444, updateRatio: 0.04517 },
      { part: 'bench-0.5b-q4-tiles', peftStepMs: 145, stepMs: 1450, ratio: 0.1, updateRatio: 0.3222 },
    ]);
    expect(h['bench-1.5b-q4']).toMatchObject({ decodeTokPerS: 40, trainStepMs: null, decodePctOfFloor: null });
    expect(h['peft-1.5b']).toEqual({ trainStepMs: null, decodeTokPerS: null });
    expect(h['peft-0.5b']).toEqual({ trainStepMs: 145, decodeTokPerS: 24.7 });
  });

  it("gives each train profile's update times and its forward 4-bit matmul time (tiled or tensor-core)", () => {
    const tp = (kinds: Record<string, number>) => ({ realUpdateMs: 991, gpuMs: 851, encodeMs: 77.5, dispatches: 13601, byKind: Object.fromEntries(Object.entries(kinds).map(([k, ms]) => [k, { count: 1, ms }])) });
    const files: Record<string, unknown> = {
      'train-profile': tp({ q4_matmul_tiled: 138.8, q4_matmul_tiled128: 87.2, q4_matmul_tiled32: 36.6, q4_matmul_backward: 51.7 }),
      'train-profile-tiles': tp({ matmul_mma: 50.5, matmul_mma64: 20, q4_matmul_mma: 1, q4_matmul_tiled32: 36.6, matmul_backward_mma: 70, q4_matmul_backward_splitk: 3 }),
    };
    const h = headlines(Object.keys(files), (n) => files[n] ?? null);
    expect(h['train-profile']).toEqual({ realUpdateMs: 991, gpuMs: 851, encodeMs: 77.5, dispatches: 13601, forwardMatmulMs: 226, backwardMatmulMs: 51.7 });
    expect(h['train-profile-tiles']).toMatchObject({ forwardMatmulMs: 71.5, backwardMatmulMs: 73 });
  });

  it('reads the f16 check: offered, compared, agreement and how far apart the paths are', () => {
    const part = { f16Offered: true, compared: true, agree: false, logitsRelative: 0.03, argmaxSame: true, greedySameTokens: 12, scoreMaxAbsDiff: 0.2 };
    expect(headlines(['f16-check'], () => part)['f16-check']).toEqual(part);
    const none = headlines(['f16-check'], () => ({ f16Offered: false, compared: false }))['f16-check'];
    expect(none).toEqual({ f16Offered: false, compared: false, agree: null, logitsRelative: null, argmaxSame: null, greedySameTokens: null, scoreMaxAbsDiff: null });
  });

  it("reads the f16 check's subgroup-matrix path: agreement with the f32 path and whether its kernel was built", () => {
    const sgm = { offered: true, shape: { M: 16, N: 16, K: 16, subgroupSize: 32 }, pipelines: ['q4_matmul_mma_16x16x16_f16_sf16'], agree: true, logitsRelative: 0.002, argmaxSame: true, greedySameTokens: 16, scoreMaxAbsDiff: 0.01 };
    const h = headlines(['f16-check'], () => ({ f16Offered: true, compared: true, agree: true, sgm }))['f16-check'] as Record<string, unknown>;
    expect(h.sgm).toEqual({ offered: true, agree: true, logitsRelative: 0.002, argmaxSame: true, greedySameTokens: 16, scoreMaxAbsDiff: 0.01, kernelBuilt: true, batchSameAsAlone: null, kernel: null, kernelBackward: null });
    const notRun = headlines(['f16-check'], () => ({ f16Offered: true, sgm: { offered: false, why: 'none here' } }))['f16-check'] as Record<string, unknown>;
    expect(notRun.sgm).toEqual({ offered: false, agree: null, logitsRelative: null, argmaxSame: null, greedySameTokens: null, scoreMaxAbsDiff: null, kernelBuilt: null, batchSameAsAlone: null, kernel: null, kernelBackward: null });
    const row = { shape: 'qkv 768x896x1152', tiled: { tflops: 9.5, check: { maxErrorOverAbsSum: 1e-7 } }, mma: { tflops: 34, check: { maxErrorOverAbsSum: 4e-4 } }, speedup: 3.58 };
    expect(sgmCheckHeadline({ ...sgm, kernel: [row] }).kernel).toEqual([{ shape: 'qkv 768x896x1152', speedup: 3.58, mmaTflops: 34, tiledTflops: 9.5, mmaErrorOverAbsSum: 4e-4, f16mma: null }]);
    const f16mma = [{ label: 'matmul_mma_16x16x16', tflops: 50 }, { label: 'matmul_mma64_16x16x16_loop', tflops: 12 }];
    expect(sgmCheckHeadline({ ...sgm, kernel: [{ ...row, f16mma }] }).kernel).toMatchObject([{ f16mma: { matmul_mma_16x16x16: 50, matmul_mma64_16x16x16_loop: 12 } }]);
    const back = { shape: 'gate dx 512x4864x896', tiled: { tflops: 5 }, mma: { tflops: 20, check: { maxErrorOverAbsSum: 1e-4 } }, speedup: 4 };
    expect(sgmCheckHeadline({ ...sgm, kernelBackward: [back] }).kernelBackward).toEqual([{ shape: 'gate dx 512x4864x896', speedup: 4, mmaTflops: 20, tiledTflops: 5, mmaErrorOverAbsSum: 1e-4 }]);
    expect(sgmCheckHeadline({ ...sgm, kernel: 'out of memory' }).kernel).toBe('out of memory');
    const worst = 'base_model.model.model.layers.0.mlp.down_proj.lora_A.weight';
    const gradients = { loss: [1, 1], relativeL2: 0.004, worstTensor: { name: worst, relativeL2: 0.02, refNorm: 0.5, diffNorm: 0.01 }, largestError: { name: 'x', share: 0.3, relativeL2: 0.005 }, refNorm: 50, cosine: 0.99999, oneMinusCosine: 1e-5, nonFinite: 0, ms: 900 };
    expect(sgmCheckHeadline({ ...sgm, gradients }).gradients).toEqual({ relativeL2: 0.004, cosine: 0.99999, oneMinusCosine: 1e-5, worstTensor: worst, worstRelativeL2: 0.02, worstNormShare: 0.01, largestErrorTensor: 'x', largestErrorShare: 0.3, nonFinite: 0 });
    expect(sgmCheckHeadline({ ...sgm, gradients: { error: 'out of memory' } }).gradients).toEqual({ error: 'out of memory' });
    const top = headlines(['f16-check'], () => ({ f16Offered: true, compared: true, gradients }))['f16-check'] as Record<string, unknown>;
    expect(top.gradients).toMatchObject({ relativeL2: 0.004, cosine: 0.99999 });
    expect(sgmCheckHeadline({ offered: true, pipelines: [], agree: false })).toMatchObject({ kernelBuilt: false, agree: false });
  });

  it("sums the prefill profile's chunks into prefill tok/s; a chunk without a time gives nulls", () => {
    const pp = (chunks: unknown[]) => ({ prompt: 512, prefill: chunks, score: { gpuMs: 12.5 }, generate: { prefillMs: 61.6, tokensPerSec: 8316 } });
    const ok = headlines(['prefill-profile'], () => pp([{ rows: 256, gpuMs: 10 }, { rows: 256, gpuMs: 6 }]));
    expect(ok['prefill-profile']).toEqual({ prompt: 512, prefillGpuMs: 16, prefillTokPerS: 32000, scoreGpuMs: 12.5, generatePrefillTokPerS: 8316 });
    const bad = headlines(['prefill-profile'], () => ({ ...pp([{ rows: 256, gpuMs: 10 }, { rows: 256 }]), generate: undefined }));
    expect(bad['prefill-profile']).toEqual({ prompt: 512, prefillGpuMs: null, prefillTokPerS: null, scoreGpuMs: 12.5, generatePrefillTokPerS: null });
  });

  it('gives the constrained decode part its tok/s with and without the schema, their ratios and the grammar cost', () => {
    const part = {
      decode: { free: { tokensPerSec: 80 }, constrained: { tokensPerSec: 120, drawnTokensPerSec: 40 }, ratio: 1.5, drawnRatio: 0.5, grammarMsPerDrawnToken: 4.2 },
      grammar: { maskedDrawMsPerToken: 3.1 },
    };
    const h = headlines(['constrained-0.5b-q4'], (name) => (name === 'constrained-0.5b-q4' ? part : null));
    expect(h['constrained-0.5b-q4']).toEqual({ freeTokPerS: 80, schemaTokPerS: 120, schemaDrawnTokPerS: 40, ratio: 1.5, drawnRatio: 0.5, grammarMsPerDrawnToken: 4.2, maskedDrawMsPerToken: 3.1 });
    expect(headlines([], () => null)['constrained-0.5b-q4']).toBeUndefined();
  });

  it("gives the subgroup-matrix probe's configs and, per shape, the best checked variant against the f32 matmul", () => {
    // Trimmed from what bench/subgroup-matrix-probe.ts prints.
    const part = {
      offered: true,
      configs: [
        { componentType: 'f16', resultComponentType: 'f32', M: 16, N: 16, K: 16 },
        { componentType: 'i8', resultComponentType: 'i32', M: 16, N: 8, K: 32 },
      ],
      errors: ['uncaptured: x'],
      best: [
        { shape: 'qkv', m: 768, k: 896, n: 1152, baselineTflops: 12.81, best: { variant: 'staged-8sg-4x2-bk32', config: 'f16->f32 16x16x16', tflops: 101.23, maxRelError: 0.00042 }, speedup: 7.9 },
        { shape: 'down', m: 768, k: 4864, n: 896, baselineTflops: 11.5, best: null, speedup: null },
      ],
    };
    const h = headlines(['sgm-probe'], (n) => (n === 'sgm-probe' ? part : null));
    expect(h['sgm-probe']).toEqual({
      offered: true,
      configs: ['f16->f32 16x16x16', 'i8->i32 16x8x32'],
      shapes: [
        { shape: 'qkv', tflops: 101.2, baselineTflops: 12.81, speedup: 7.9, variant: 'staged-8sg-4x2-bk32', config: 'f16->f32 16x16x16' },
        { shape: 'down', tflops: null, baselineTflops: 11.5, speedup: null, variant: null, config: null },
      ],
      maxRelError: 0.00042,
      errors: 1,
    });
    // Not offered (or the part printed something else): nulls and no shapes, never an error.
    expect(headlines(['sgm-probe'], () => ({ offered: false, configs: [], best: [], errors: [] }))['sgm-probe']).toEqual({ offered: false, configs: [], shapes: [], maxRelError: null, errors: 0 });
    expect(headlines(['sgm-probe'], () => 'oops')['sgm-probe']).toEqual({ offered: null, configs: null, shapes: [], maxRelError: null, errors: null });
    expect(headlines([], () => null)['sgm-probe']).toBeUndefined();
  });
});
