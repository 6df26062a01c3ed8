import { afterEach, describe, expect, it } from 'vitest';
import { checkTileRows, TILE_128_MIN_WORKGROUPS, tileRowsFor, tileStorageBytes } from './tile.wgsl';

// Qwen2.5-0.5B shapes at a 512-row training micro-batch: gate/up (4864 columns), q/o/down (896).
const H200 = 48 * 1024;
const DEFAULT_LIMIT = 16 * 1024;

describe('tileRowsFor', () => {
  const saved = process.env.AGENTFLOW_TILE_ROWS_MAX;
  afterEach(() => {
    if (saved === undefined) delete process.env.AGENTFLOW_TILE_ROWS_MAX;
    else process.env.AGENTFLOW_TILE_ROWS_MAX = saved;
  });

  it('covers small and medium row counts with the smallest tile, as before', () => {
    const wide = { cols: 4864, k: 32, maxStorage: H200 };
    expect([1, 16, 17, 32, 33, 127].map((n) => tileRowsFor(n, wide))).toEqual([16, 16, 32, 32, 64, 64]);
    expect(tileRowsFor(512)).toBe(64);
  });

  it('takes 128 rows from n = 128 when the workgroup memory and the grid allow it', () => {
    delete process.env.AGENTFLOW_TILE_ROWS_MAX;
    expect(tileStorageBytes(128, 32)).toBe(24 * 1024);
    expect(tileRowsFor(512, { cols: 4864, k: 32, maxStorage: H200 })).toBe(128);
    expect(tileRowsFor(768, { cols: 4864, k: 16, maxStorage: DEFAULT_LIMIT })).toBe(128);
    // 24 KiB over WebGPU's default 16 KiB: the 64-row tile.
    expect(tileRowsFor(512, { cols: 4864, k: 32, maxStorage: DEFAULT_LIMIT })).toBe(64);
    // 4 x 14 = 56 workgroups in 128-row tiles: too few, unless split-K deepens the grid (9 slices: 504).
    expect(Math.ceil(512 / 128) * Math.ceil(896 / 64)).toBeLessThan(TILE_128_MIN_WORKGROUPS);
    expect(tileRowsFor(512, { cols: 896, k: 16, maxStorage: H200 })).toBe(64);
    expect(tileRowsFor(512, { cols: 896, k: 16, maxStorage: H200, depth: 2 })).toBe(64);
    expect(tileRowsFor(512, { cols: 896, k: 16, maxStorage: H200, depth: 9 })).toBe(128);
  });

  it('AGENTFLOW_TILE_ROWS_MAX=64 restores the 64-row tile; a bad value is named', () => {
    const wide = { cols: 4864, k: 32, maxStorage: H200 };
    process.env.AGENTFLOW_TILE_ROWS_MAX = '64';
    expect(tileRowsFor(512, wide)).toBe(64);
    process.env.AGENTFLOW_TILE_ROWS_MAX = '128';
    expect(tileRowsFor(512, wide)).toBe(128);
    process.env.AGENTFLOW_TILE_ROWS_MAX = 'big';
    expect(() => tileRowsFor(512, wide)).toThrow(/AGENTFLOW_TILE_ROWS_MAX must be one of 16, 32, 64, 128, got 'big'/);
  });
});

describe('checkTileRows', () => {
  it('rejects an unknown shape and a tile over the device workgroup memory, naming the kernel', () => {
    expect(checkTileRows('q4Matmul', 128, 32, H200)).toBe(128);
    expect(() => checkTileRows('q4Matmul', 48, 32, H200)).toThrow(/q4Matmul: tileRows must be one of 16, 32, 64, 128, got 48/);
    expect(() => checkTileRows('q4Matmul', 128, 32, DEFAULT_LIMIT)).toThrow(/q4Matmul: tileRows 128 needs 24576 B of workgroup memory, the device grants 16384 B/);
  });
});
