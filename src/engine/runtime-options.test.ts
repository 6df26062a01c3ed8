import { describe, expect, it } from 'vitest';
import { defaultLogitsRows, runtimeLimits } from './runtime-options';
import type { Qwen2Config } from '../io/qwen2-config';

const config = { maxPositionEmbeddings: 32768 } as Qwen2Config;
const sgm = { M: 16, N: 16, K: 16, subgroupSize: 32 };

describe('runtime limits', () => {
  it('chunks the LM head by 32 rows, or 64 (the tensor-core kernels\' minimum) on a device with subgroup matrices', () => {
    expect(defaultLogitsRows({ subgroupMatrix: null })).toBe(32);
    expect(defaultLogitsRows({ subgroupMatrix: sgm })).toBe(64);
    expect(runtimeLimits(config, {}).logitsRows).toBe(32);
    expect(runtimeLimits(config, {}, { subgroupMatrix: sgm }).logitsRows).toBe(64);
    // An explicit choice wins on either device.
    expect(runtimeLimits(config, { logitsRows: 8 }, { subgroupMatrix: sgm }).logitsRows).toBe(8);
  });

  it('keeps its other defaults', () => {
    expect(runtimeLimits(config, {})).toMatchObject({ maxContext: 4096, batchContext: 4096, maxBatchRows: 512 });
  });
});
