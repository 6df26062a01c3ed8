import { describe, expect, it } from 'vitest';
import { ProgressTracker, formatBytes, formatSeconds } from './progress-tracker';

describe('ProgressTracker', () => {
  it('sums files, folds web-llm shards into one row and estimates time left from the network rate', () => {
    let t = 1000;
    const tr = new ProgressTracker(() => t);
    tr.update({ file: 'config.json', bytesDone: 100, bytesTotal: 100, fromCache: true });
    tr.update({ file: 'model.safetensors', bytesDone: 0, bytesTotal: 1000, fromCache: false });
    t += 2000;
    tr.update({ file: 'model.safetensors', bytesDone: 400, bytesTotal: 1000, fromCache: false });
    const s = tr.summary();
    expect(s.bytesDone).toBe(500);
    expect(s.bytesTotal).toBe(1100);
    expect(s.percent).toBeCloseTo((100 * 500) / 1100, 10);
    // 400 network bytes in 2 s = 200 B/s; 600 bytes left -> 3 s.
    expect(s.secondsLeft).toBeCloseTo(3, 10);

    tr.update({ file: 'm params (shard 1/3)', bytesDone: 10, bytesTotal: 30, fromCache: false });
    tr.update({ file: 'm params (shard 2/3)', bytesDone: 20, bytesTotal: 30, fromCache: false });
    tr.update({ file: 'm: Finish loading on WebGPU', bytesDone: 1, bytesTotal: 1, fromCache: false });
    const s2 = tr.summary();
    expect(s2.rows.map((r) => r.key)).toEqual(['config.json', 'model.safetensors', 'm params']);
    expect(s2.rows[2]).toMatchObject({ bytesDone: 20, bytesTotal: 30 });
    expect(s2.status).toBe('m: Finish loading on WebGPU');
  });

  it('names the waits after the download: shader compilation (web-llm reports it) and the GPU setup after the last file', () => {
    const tr = new ProgressTracker(() => 0);
    tr.update({ file: 'model.safetensors', bytesDone: 50, bytesTotal: 100, fromCache: false });
    expect(tr.summary().status).toBe('downloading model.safetensors');
    tr.update({ file: 'model.safetensors', bytesDone: 100, bytesTotal: 100, fromCache: false });
    expect(tr.summary().status).toBe('all files read; setting the model up on the GPU (weight upload)');
    tr.update({ file: 'Qwen2.5-1.5B: Loading GPU shader modules[12/50]: 24% completed, 3 secs elapsed.', bytesDone: 0.24, bytesTotal: 1, fromCache: false });
    expect(tr.summary().status).toBe('Qwen2.5-1.5B: compiling GPU shaders (12 of 50), which downloads nothing; the browser may keep them for later loads');
  });

  it('gives no estimate while everything comes from the cache', () => {
    const tr = new ProgressTracker(() => 0);
    tr.update({ file: 'a', bytesDone: 5, bytesTotal: 10, fromCache: true });
    expect(tr.summary().secondsLeft).toBeNull();
    expect(tr.summary().percent).toBe(50);
  });

  it('formats sizes and durations', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(300 * 2 ** 20)).toBe('300 MiB');
    expect(formatSeconds(42.2)).toBe('43 s');
    expect(formatSeconds(125)).toBe('2 min 5 s');
  });
});
