import { describe, expect, it } from 'vitest';
import { MODELS_STORAGE_BYTES, PLANNER_LARGEST_BUFFER, resourceWarnings } from './resource-warnings';

const limits = (maxBufferSize: number) => ({ limits: { maxBufferSize } as GPUSupportedLimits });

describe('resourceWarnings', () => {
  it('is silent when the GPU buffers and the free storage are large enough', () => {
    expect(resourceWarnings(limits(PLANNER_LARGEST_BUFFER), undefined, { quota: MODELS_STORAGE_BYTES + 10, usage: 10 })).toEqual([]);
  });
  it('says when WebGPU is missing, buffers are one byte short, or storage is short', () => {
    const w = resourceWarnings(limits(PLANNER_LARGEST_BUFFER - 1), 'no adapter', { quota: 2 ** 30, usage: 2 ** 29 });
    expect(w).toHaveLength(3);
    expect(w[0]).toMatch(/WebGPU is not available here/);
    expect(w[1]).toMatch(/memory is insufficient for Qwen2\.5-0\.5B/);
    expect(w[2]).toMatch(/^Only 512 MiB of browser storage is free/);
  });
});
