import { describe, expect, it } from 'vitest';
import { bandwidthFloor, batchBandwidthFloor } from './floor';
import type { Qwen2Config } from '../src/io/qwen2-config';

// Only the fields the floor reads: 2 layers x 1 KV head x 4 dims -> a KV row is 2 * 2 * 1 * 4 * 4 = 64 bytes.
const config = { numLayers: 2, numKvHeads: 1, headDim: 4 } as Qwen2Config;

describe('bandwidth floor', () => {
  it('one sequence: weights + the mean KV rows read, at the given bandwidth', () => {
    // Steps read 11, 12, 13 rows (prompt 10, 3 steps): mean 12 rows = 768 bytes; 1e6 weight bytes.
    const f = bandwidthFloor(config, 1, 1e6, 10, 3, 500, 100);
    expect(f.measuredKvRows).toBe(12);
    expect(f.kvBytesPerToken).toBe(768);
    expect(f.floorTokensPerSec).toBeCloseTo(1e9 / 1_000_768, 9);
    expect(f.fractionOfFloor).toBeCloseTo(500 / (1e9 / 1_000_768), 12);
    expect(f.atContext.floorTokensPerSec).toBeCloseTo(1e9 / (1e6 + 6400), 9);
  });

  it('a batch reads the weights once per step for all its rows', () => {
    // 4 rows, no shared head: 1e6 + 4 * 12 * 64 bytes per step, 4 tokens per step.
    const f = batchBandwidthFloor(config, 2, 1e6, { rowsPerStep: 4, prompt: 10, decodeSteps: 3, sharedPromptTokens: 0 }, 1000);
    expect(f.bytesPerStep).toBe(1e6 + 4 * 12 * 64);
    expect(f.floorTokensPerSec).toBeCloseTo((4 * 2e9) / (1e6 + 3072), 6);
    expect(f.fractionOfFloor).toBeCloseTo(1000 / f.floorTokensPerSec, 12);
    // A shared head of 8 prompt rows is read once: 8 + 4 * (12 - 8) rows.
    const s = batchBandwidthFloor(config, 2, 1e6, { rowsPerStep: 4, prompt: 10, decodeSteps: 3, sharedPromptTokens: 8 }, 1000);
    expect(s.bytesPerStep).toBe(1e6 + (8 + 16) * 64);
    // One row is the one-sequence floor.
    const one = batchBandwidthFloor(config, 1, 1e6, { rowsPerStep: 1, prompt: 10, decodeSteps: 3, sharedPromptTokens: 0 }, 500);
    expect(one.floorTokensPerSec).toBeCloseTo(bandwidthFloor(config, 1, 1e6, 10, 3, 500, 100).floorTokensPerSec, 9);
  });

  it('rejects rows or shared heads that cannot be', () => {
    expect(() => batchBandwidthFloor(config, 1, 1, { rowsPerStep: 0, prompt: 10, decodeSteps: 3, sharedPromptTokens: 0 }, 1)).toThrow(/rowsPerStep must be > 0/);
    expect(() => batchBandwidthFloor(config, 1, 1, { rowsPerStep: 2, prompt: 10, decodeSteps: 3, sharedPromptTokens: 11 }, 1)).toThrow(/sharedPromptTokens must be in 0..prompt \(10\), got 11/);
  });
});
