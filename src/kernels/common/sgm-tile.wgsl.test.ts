import { describe, expect, it } from 'vitest';
import { matmulSgmWgsl } from '../matmul/matmul.sgm.wgsl';
import { SGM_BLOCK_ROWS, sgmGeometry, sgmProblem } from './sgm-tile.wgsl';

const h200 = { M: 16, N: 16, K: 16, subgroupSize: 32 };
const count = (text: string, s: string): number => text.split(s).length - 1;

describe('subgroup-matrix block', () => {
  it('64-row blocks halve each subgroup\'s matrix rows and the x tile', () => {
    expect(sgmGeometry(h200, 64)).toEqual({ sgRows: 2, sgCols: 4, tm: 2, tn: 2, blockRows: 64, blockCols: 128, workgroupBytes: 192 * 40 * 2 + 8 * 256 * 4 });
    expect(sgmGeometry({ ...h200, subgroupSize: 64 }, 64)).toMatchObject({ tm: 2, tn: 4, blockRows: 64, blockCols: 128 });
    expect(sgmGeometry(h200, 32 as 64)).toMatch(/block rows must be 128 or 64, got 32/);
  });

  it('takes 64-row blocks by default (faster than 128 on every training shape measured), checked against the device', () => {
    expect(SGM_BLOCK_ROWS).toBe(64);
    const limits = { maxComputeWorkgroupStorageSize: 49152, maxComputeInvocationsPerWorkgroup: 256 };
    expect(sgmProblem(h200, limits)).toBeNull();
    // 64-row blocks need (64 + 128) x 40 halves + 8 KiB of scratch = 23552 B.
    expect(sgmProblem(h200, { ...limits, maxComputeWorkgroupStorageSize: 20480 })).toMatch(/needs 23552 B/);
  });

  it('stores blocks wholly inside y straight from the matrices only for a plain store', () => {
    const plain = matmulSgmWgsl({ bias: false, accumulate: false }, h200);
    expect(plain).toContain('let full = row0 + 128u <= dims.n && col0 + 128u <= dims.outDim;');
    expect(count(plain, 'subgroupMatrixStore<row_major>(&y, ')).toBe(8);
    expect(count(plain, 'subgroupMatrixStore<row_major>(&scratch, ')).toBe(8);
    // With bias or accumulate every block takes the scratch epilogue, so a row's bits never depend on its block.
    for (const v of [{ bias: true, accumulate: false }, { bias: false, accumulate: true }]) {
      const text = matmulSgmWgsl(v, h200);
      expect(text).not.toContain('let full');
      expect(text).not.toContain('(&y, ');
    }
    const emu = matmulSgmWgsl({ bias: false, accumulate: false }, h200, { emulate: true, rows: 64 });
    expect(emu).toContain('let full = row0 + 64u <= dims.n && col0 + 128u <= dims.outDim;');
    expect(emu).not.toMatch(/enable subgroups|chromium|subgroupMatrix/);
  });
});
