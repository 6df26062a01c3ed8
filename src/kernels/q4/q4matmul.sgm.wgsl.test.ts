import { describe, expect, it } from 'vitest';
import { q4SgmWgsl, SGM_WORKGROUP, sgmGeometry, sgmProblem } from './q4matmul.sgm.wgsl';

const h200 = { M: 16, N: 16, K: 16, subgroupSize: 32 };
const limits = { maxComputeWorkgroupStorageSize: 49152, maxComputeInvocationsPerWorkgroup: 256 };
const count = (text: string, s: string): number => text.split(s).length - 1;

describe('q4 subgroup-matrix matmul WGSL', () => {
  it('blocks 128 x 128 with 8 subgroups of 32 (4 x 2 matrices) or 4 of 64 (4 x 4), in 28 KiB of workgroup memory', () => {
    expect(sgmGeometry(h200)).toEqual({ sgRows: 2, sgCols: 4, tm: 4, tn: 2, blockRows: 128, blockCols: 128, workgroupBytes: 256 * 40 * 2 + 8 * 256 * 4 });
    expect(sgmGeometry({ ...h200, subgroupSize: 64 })).toMatchObject({ sgRows: 2, sgCols: 2, tm: 4, tn: 4, blockRows: 128, blockCols: 128 });
    expect(sgmGeometry({ M: 16, N: 8, K: 8, subgroupSize: 32 })).toMatchObject({ blockRows: 128, blockCols: 64 });
  });

  it('says why it cannot run: subgroup size, matrix K, workgroup memory, invocations', () => {
    expect(sgmProblem(h200, limits)).toBeNull();
    expect(sgmProblem({ ...h200, subgroupSize: 16 }, limits)).toMatch(/subgroup size 16/);
    expect(sgmProblem({ ...h200, subgroupSize: 128 }, limits)).toMatch(/subgroup size 128/);
    expect(sgmProblem({ ...h200, K: 64 }, limits)).toMatch(/K 64 does not divide the K step 32/);
    expect(sgmProblem(h200, { ...limits, maxComputeWorkgroupStorageSize: 16384 }, 128)).toMatch(/needs 28672 B of workgroup memory, the device grants 16384 B/);
    expect(sgmProblem(h200, { ...limits, maxComputeWorkgroupStorageSize: 16384 })).toMatch(/needs 23552 B/);
    expect(sgmProblem(h200, { ...limits, maxComputeInvocationsPerWorkgroup: 128 })).toMatch(/256 invocations/);
  });

  it('emulates the matrix operations with the same staging and epilogue (for lavapipe), without the extensions', () => {
    const real = q4SgmWgsl({ f16: true, scale: 'f16' }, { bias: true, accumulate: false }, h200);
    const emu = q4SgmWgsl({ f16: true, scale: 'f16' }, { bias: true, accumulate: false }, h200, { emulate: true });
    expect(emu).not.toMatch(/enable subgroups|chromium|subgroupMatrix|@builtin\(subgroup/);
    expect(count(emu, ' = emuMma(l')).toBe(8 * 2); // 8 matrices, 2 vec4s of each lane's elements
    const staging = (t: string) => t.slice(t.indexOf('for (var g = 0u'), t.indexOf('workgroupBarrier();'));
    expect(staging(emu)).toBe(staging(real));
    const epilogue = (t: string) => t.slice(t.indexOf('fn storeMatrix'), t.indexOf('\n}\n', t.indexOf('fn storeMatrix')));
    expect(epilogue(emu)).toBe(epilogue(real));
    expect(epilogue(real)).toContain('store(r, c, scratch[');
    expect(() => q4SgmWgsl({ f16: true, scale: 'f16' }, { bias: false, accumulate: false }, { M: 16, N: 8, K: 16, subgroupSize: 64 }, { emulate: true })).toThrow(/multiple of 4 x the subgroup size 64/);
  });

  it('needs the native f16 path', () => {
    expect(() => q4SgmWgsl({ f16: false, scale: 'f16' }, { bias: false, accumulate: false }, h200)).toThrow(/native-f16 path only/);
  });

  it('multiplies every result matrix each K step and stores each through the shared epilogue with bounds checks', () => {
    const text = q4SgmWgsl({ f16: true, scale: 'f16' }, { bias: true, accumulate: true }, h200);
    expect(text.startsWith('enable f16;\nenable subgroups;\nenable chromium_experimental_subgroup_matrix;\n')).toBe(true);
    expect(text).toContain(`@workgroup_size(${SGM_WORKGROUP})`);
    expect(count(text, 'subgroupMatrixMultiplyAccumulate(')).toBe(8);
    expect(count(text, 'subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>(&tx')).toBe(4);
    expect(count(text, 'subgroupMatrixLoad<subgroup_matrix_right<f16, 16, 16>, col_major>(&tw')).toBe(2);
    expect(count(text, 'subgroupMatrixStore<row_major>(&scratch')).toBe(8);
    expect(count(text, 'storeMatrix(sg, lane,')).toBe(8);
    expect(text).toContain('if (r < dims.n && c < dims.outDim) { store(r, c, scratch[sg * 256u + e]); }');
    // The same store as the tiled kernel: bias and accumulate where asked for, not otherwise.
    expect(text).toContain('v += b[col];');
    expect(text).toContain('v += y[idx];');
    const plain = q4SgmWgsl({ f16: true, scale: 'f32' }, { bias: false, accumulate: false }, h200);
    expect(plain).not.toContain('v += b[col];');
    expect(plain).not.toContain('v += y[idx];');
    expect(plain).toContain('var<storage, read> S: array<f32>;');
    // Zero fill past n and outDim while staging: branchless in straight-line staging (the default), by
    // branches in the looped staging kept for the kernel table.
    expect(text).toContain('let xv = select(vec4<f32>(0.0), x[min(r, dims.n - 1u) * x4PerRow');
    expect(text).toContain('let scale = select(0.0, S_at(gi), wo < dims.outDim);');
    expect(text).not.toContain('for (var e = lid;');
    expect(count(text, 'let e = lid + ')).toBe(4 + 2);
    const looped = q4SgmWgsl({ f16: true, scale: 'f16' }, { bias: true, accumulate: true }, h200, { staging: 'loop' });
    expect(looped).toContain('if (r < dims.n) { xv = x[');
    expect(looped).toContain('if (wo < dims.outDim) {');
  });
});
