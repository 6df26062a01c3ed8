import { describe, expect, it } from 'vitest';
import { STAGE_PAD, VARIANTS, geometry, shapeProblem, subgroupMatrixWgsl, usable, variantProblem, type MatrixConfig } from './subgroup-matrix-wgsl';

const f16f32: MatrixConfig = { componentType: 'f16', resultComponentType: 'f32', M: 16, N: 8, K: 16 };
const direct = VARIANTS.find((v) => !v.bk)!;
const staged = VARIANTS.find((v) => v.bk)!;

describe('subgroup-matrix probe: WGSL', () => {
  it('declares the matrices as <type, columns, rows>: left M x K, right K x N, result M x N', () => {
    const code = subgroupMatrixWgsl(f16f32, direct, 32);
    expect(code).toMatch(/^enable f16;\nenable subgroups;\nenable chromium_experimental_subgroup_matrix;/);
    expect(code).toContain('subgroup_matrix_left<f16, 16, 16>');
    expect(code).toContain('subgroup_matrix_right<f16, 8, 16>');
    expect(code).toContain('subgroup_matrix_result<f32, 8, 16>()');
    expect(code).toContain('var<storage, read_write> c: array<f32>');
  });

  it('reads A row-major and W [n, k] column-major with stride k, and stores C row-major with stride n', () => {
    const code = subgroupMatrixWgsl(f16f32, direct, 32);
    expect(code).toMatch(/subgroupMatrixLoad<subgroup_matrix_left<f16, 16, 16>, row_major>\(&a, \(row0 \+ 0u\) \* dims\.k \+ k0, dims\.k\)/);
    expect(code).toMatch(/subgroupMatrixLoad<subgroup_matrix_right<f16, 8, 16>, col_major>\(&w, \(col0 \+ 8u\) \* dims\.k \+ k0, dims\.k\)/);
    expect(code).toMatch(/subgroupMatrixStore<row_major>\(&c, \(row0 \+ 16u\) \* dims\.n \+ col0 \+ 8u, acc_1_1, dims\.n\)/);
    // One multiply-accumulate per result matrix, each on its own accumulator; offsets from the uniform subgroup_id.
    expect(code.match(/subgroupMatrixMultiplyAccumulate\(/g)).toHaveLength(direct.tm * direct.tn);
    expect(code).toContain('acc_1_1 = subgroupMatrixMultiplyAccumulate(l1, r1, acc_1_1);');
    expect(code).toContain('@builtin(subgroup_id) sg: u32');
    expect(code).not.toMatch(/sg = lidx/);
  });

  it('sizes the workgroup in whole subgroups and the staged tiles as padded [rows][bk] arrays', () => {
    const g = geometry(f16f32, staged, 32);
    expect(g.workgroupSize).toBe(staged.sgRows * staged.sgCols * 32);
    const code = subgroupMatrixWgsl(f16f32, staged, 32);
    expect(code).toContain(`@workgroup_size(${g.workgroupSize})`);
    const stride = staged.bk! + STAGE_PAD;
    expect(code).toContain(`var<workgroup> tile_a: array<f16, ${g.blockM * stride}>;`);
    expect(code).toContain(`var<workgroup> tile_w: array<f16, ${g.blockN * stride}>;`);
    expect(code).toContain(`subgroupMatrixLoad<subgroup_matrix_right<f16, 8, 16>, col_major>(&tile_w, (sg_col + 0u) * ${stride}u + kk, ${stride}u)`);
    expect(code).toContain('var<storage, read> w: array<vec4<f16>>;');
    expect(code.match(/workgroupBarrier\(\);/g)).toHaveLength(2);
    expect(g.workgroupBytes).toBe((g.blockM + g.blockN) * stride * 2);
  });

  it('with f32 A, stages A from vec4<f32> and rounds it to f16; W stays f16', () => {
    const v = VARIANTS.find((x) => x.aF32)!;
    const code = subgroupMatrixWgsl(f16f32, v, 32);
    expect(code).toContain('var<storage, read> a: array<vec4<f32>>;');
    expect(code).toContain('var<storage, read> w: array<vec4<f16>>;');
    expect(code).toMatch(/tile_a\[oetile_a0\] = f16\(vetile_a0\.x\);/);
    expect(code).toMatch(/tile_w\[oetile_w0\] = vetile_w0\.x;/);
    expect(variantProblem({ ...f16f32, componentType: 'f32' }, v, 32)).toMatch(/staged f16 configs only/);
  });

  it('writes f32 kernels without `enable f16`, and refuses integer configs and uneven staging by name', () => {
    const f32: MatrixConfig = { componentType: 'f32', resultComponentType: 'f32', M: 8, N: 8, K: 8 };
    expect(subgroupMatrixWgsl(f32, direct, 32)).not.toContain('enable f16');
    const i8: MatrixConfig = { componentType: 'i8', resultComponentType: 'i32', M: 16, N: 16, K: 32 };
    expect(usable(i8)).toBe(false);
    expect(() => subgroupMatrixWgsl(i8, direct, 32)).toThrow(/direct-1sg-2x2: no kernel for i8 -> i32/);
    // 1024 invocations cannot share a 64 x 32 tile's 512 vec4s evenly.
    expect(variantProblem(f16f32, staged, 128)).toMatch(/not a whole number of vec4 loads for 1024 invocations/);
    expect(() => subgroupMatrixWgsl(f16f32, staged, 128)).toThrow(/staged-8sg-4x2-bk32/);
  });

  it('runs the training shapes whole and names a shape the blocks do not divide', () => {
    for (const v of VARIANTS) for (const [k, n] of [[896, 1152], [896, 9728], [4864, 896]]) expect(shapeProblem({ ...f16f32, N: 16 }, v, 32, 768, n, k)).toBeNull();
    expect(shapeProblem(f16f32, direct, 32, 768, 100, 896)).toBe('shape 768x100x896 is not a multiple of the block 32x16x16');
    expect(shapeProblem(f16f32, staged, 32, 768, 128, 898)).toMatch(/not a multiple of the block/);
  });
});
