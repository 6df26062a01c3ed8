import { describe, expect, it } from 'vitest';
import { QueryTooLongError } from './agent/query-fit';
import { CorruptShardError, MlcFormatError } from './io/mlc';
import { GpuDeviceLostError } from './gpu/device';
import { describeStorageError, StorageError } from './store/db';
import { AgentFlowError, errorCategory } from './errors';
import { WorkerGoneError } from './util/worker-watch';

describe('errorCategory', () => {
  it('names our errors by category, a subclass by its own', () => {
    expect(errorCategory(new WorkerGoneError('planner', 'terminated'))).toBe('worker-gone');
    expect(errorCategory(new GpuDeviceLostError('unknown', 'the GPU device was lost'))).toBe('device-lost');
    expect(errorCategory(new MlcFormatError('bad'))).toBe('bad-model-file');
    const corrupt = new CorruptShardError('params_shard_0.bin is corrupt', 'params_shard_0.bin', false);
    expect(corrupt).toBeInstanceOf(MlcFormatError);
    expect(errorCategory(corrupt)).toBe('corrupt-file');
    expect(new QueryTooLongError(9000, 4096, 9600, 512, 'planner:x')).toBeInstanceOf(AgentFlowError);
    expect(errorCategory(new QueryTooLongError(9000, 4096, 9600, 512, 'planner:x'))).toBe('context-exceeded');
  });

  it("names the browser's quota and abort errors, also inside a storage error", () => {
    const quota = new DOMException('full', 'QuotaExceededError');
    expect(errorCategory(quota)).toBe('quota');
    expect(errorCategory(describeStorageError(quota, 'a step'))).toBe('quota');
    expect(errorCategory(new StorageError('would not open'))).toBe('storage');
    expect(errorCategory(new DOMException('stopped', 'AbortError'))).toBe('aborted');
    expect(errorCategory(new Error('x'))).toBe('unknown');
    expect(errorCategory('a string')).toBe('unknown');
  });
});
