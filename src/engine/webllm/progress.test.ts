import { describe, expect, it } from 'vitest';
import { toLoadProgress } from './progress';

const M = 'Qwen2.5-1.5B-Instruct-q4f32_1-MLC';

describe("web-llm progress → LoadProgress", () => {
  it('reads the bytes fetched from the network out of the report text', () => {
    // The text web-llm's tensor cache writes while downloading (tvmjs fetchTensorCacheInternal).
    const p = toLoadProgress(
      { progress: 0.25, timeElapsed: 12, text: 'Fetching param cache[7/28]: 200MB fetched. 25% completed, 12 secs elapsed. It can take a while when we first visit this page to populate the cache. Later refreshes will become faster.' },
      M,
    );
    expect(p).toEqual({ file: `${M} params (shard 7/28)`, bytesDone: 200 * 2 ** 20, bytesTotal: 800 * 2 ** 20, fromCache: false });
  });

  it('marks loads from the browser cache', () => {
    const p = toLoadProgress({ progress: 0.5, timeElapsed: 3, text: 'Loading model from cache[14/28]: 400MB loaded. 50% completed, 3 secs elapsed.' }, M);
    expect(p).toMatchObject({ bytesDone: 400 * 2 ** 20, bytesTotal: 800 * 2 ** 20, fromCache: true });
  });

  it('carries the fraction for reports without bytes', () => {
    expect(toLoadProgress({ progress: 1, timeElapsed: 30, text: 'Finish loading on WebGPU - swiftshader' }, M)).toEqual({
      file: `${M}: Finish loading on WebGPU - swiftshader`,
      bytesDone: 1,
      bytesTotal: 1,
      fromCache: false,
    });
    expect(toLoadProgress({ progress: 0, timeElapsed: 0, text: 'Fetching param cache[0/28]: 0MB fetched. 0% completed, 0 secs elapsed.' }, M)).toMatchObject({ bytesDone: 0, bytesTotal: 0 });
  });
});
