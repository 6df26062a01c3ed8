import { describe, expect, it } from 'vitest';
import { planSplitK, SPLIT_K_MAX, splitKPartialsBytes } from './matmul.splitk';

describe('planSplitK (how the input gradient of a frozen linear splits its reduction)', () => {
  it('Qwen2.5-0.5B LM head, 32 rows of dlogits: 4-bit tiles 14 -> 64 slices of 2384 vocab rows (896 workgroups)', () => {
    // q4 backward: 64-column x 32-row tiles of dx [32, 896] = 14 x 1 workgroups, each over 151,936 outputs.
    expect(planSplitK('q4', 14, 151936, 16)).toEqual({ splits: 64, slice: 2384 });
    // f16 backward: 16 x 16 tiles = 56 x 2 workgroups.
    expect(planSplitK('f16', 112, 151936, 16)).toEqual({ splits: 10, slice: 15200 });
    expect(splitKPartialsBytes(32, 896)).toBe(SPLIT_K_MAX * 32 * 896 * 4);
  });
  it('stays plain for short reductions and grids that already fill the GPU', () => {
    // A layer's down backward over 512 rows: dx [512, 4864] in 64 x 64 tiles = 76 x 8 workgroups, 896 outputs.
    expect(planSplitK('q4', 608, 896, 16).splits).toBe(1);
    expect(planSplitK('q4', 1, 511, 16)).toEqual({ splits: 1, slice: 511 });
    expect(planSplitK('q4', 2048, 151936, 16).splits).toBe(1);
  });
  it('a layer gate/up backward over 512 rows (64 x 64 q4 tiles: 14 x 8) splits 4864 outputs as the partials room allows', () => {
    expect(planSplitK('q4', 112, 4864, 16)).toEqual({ splits: 9, slice: 544 });
    // The trainer lends its dact scratch [rows, 4864], which holds 5 blocks of [rows, 896].
    expect(planSplitK('q4', 112, 4864, 16, undefined, 5)).toEqual({ splits: 5, slice: 976 });
    expect(planSplitK('q4', 112, 4864, 16, undefined, 1).splits).toBe(1);
    expect(planSplitK('q4', 112, 4864, 16, undefined, 0).splits).toBe(1);
  });
  it('forced slice counts round slices up to whole steps, and bad counts are rejected', () => {
    expect(planSplitK('k', 1, 70, 16, 3)).toEqual({ splits: 3, slice: 32 });
    expect(planSplitK('k', 1, 83, 16, 4)).toEqual({ splits: 3, slice: 32 });
    expect(planSplitK('k', 1, 83, 16, 1)).toEqual({ splits: 1, slice: 83 });
    expect(() => planSplitK('k', 1, 83, 16, 0)).toThrow(/k: splits/);
    expect(() => planSplitK('k', 1, 83, 16, SPLIT_K_MAX + 1)).toThrow(/splits/);
  });
});
