// The directory run store when the disk fails (a full disk, a read-only mount), injected through its file
// operations: the error names the file (write(2)'s own message names none), no temporary file is left, and
// run.json ends in a state --resume continues from instead of "running".
import { describe, expect, it } from 'vitest';
import * as fsp from 'node:fs/promises';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { dirTrainStorage } from '../checkpoint-node';
import { DirRunStore, type StoreFs } from './run-store-dir';
import { toyRunSetup, toyRunSpec } from './toy-run';
import { TrainingRun } from './training-run';

const TASK = { numQueries: 4, hiddenSize: 16, intermediateSize: 24, numLayers: 1 };
const spec = () => toyRunSpec({ steps: 3, groupSize: 4, learningRate: 0.01, seed: 12, adapter: { kind: 'fresh', rank: 2, alpha: 4, targets: ['q', 'v'] }, task: TASK, grpo: { checkpointEvery: 1 } });

/** Node's error for a write that found no room: it names no file. */
const errno = (code: 'ENOSPC' | 'EROFS') => Object.assign(new Error(`${code}: ${code === 'ENOSPC' ? 'no space left on device' : 'read-only file system'}, write`), { code, syscall: 'write' });

/** fs whose writes to files named `fails(name)` throw `code` once `armed()` says so. */
function failingFs(code: 'ENOSPC' | 'EROFS', fails: (name: string) => boolean, armed: () => boolean): StoreFs {
  return {
    ...fsp,
    open: (async (path: string, flags?: string) => {
      const h = await fsp.open(path, flags);
      if (!armed() || !fails(basename(path))) return h;
      return new Proxy(h, { get: (t, k) => (k === 'writeFile' ? async () => Promise.reject(errno(code)) : (t as never)[k as never]) });
    }) as StoreFs['open'],
  };
}

async function setup(dir: string, fs?: StoreFs) {
  return toyRunSetup({ store: new DirRunStore(dir, fs), storage: async () => dirTrainStorage(join(dir, 'checkpoints')), backend: 'cpu', task: TASK });
}

describe('directory run store on a failing disk', () => {
  it('a full disk while metrics.jsonl is written: the error names it, run.json says error, and the run resumes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'run-enospc-'));
    let step = 0;
    const s = await setup(dir, failingFs('ENOSPC', (n) => n === 'metrics.jsonl.tmp', () => step >= 1));
    const run = await TrainingRun.start('run-f', spec(), s.deps);
    await expect(run.run({ onStep: (m) => (step = m.step) })).rejects.toThrow(`${join(dir, 'metrics.jsonl')}: ENOSPC: no space left on device, write`);
    s.destroy();
    const stored = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')) as { status: string; error: string };
    expect(stored.status).toBe('error');
    expect(stored.error).toContain(join(dir, 'metrics.jsonl'));
    expect(existsSync(join(dir, 'metrics.jsonl.tmp'))).toBe(false);

    const again = await setup(dir);
    const resumed = await TrainingRun.resume('run-f', again.deps);
    await resumed.run();
    again.destroy();
    expect(resumed.state).toBe('done');
    expect(resumed.history.map((m) => m.step)).toEqual([1, 2, 3]);
  }, 60_000);

  it('a read-only disk: the first failed write names its file; once writable the run resumes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'run-erofs-'));
    let step = 0;
    const s = await setup(dir, failingFs('EROFS', () => true, () => step >= 1));
    const run = await TrainingRun.start('run-r', spec(), s.deps);
    // Step 1 is recorded, then its run.json update is the first write that fails.
    await expect(run.run({ onStep: (m) => (step = m.step) })).rejects.toThrow(`${join(dir, 'run.json')}: EROFS: read-only file system, write`);
    s.destroy();
    expect(existsSync(join(dir, 'run.json.tmp'))).toBe(false);
    // Nothing could record the failure: run.json says running, which --resume reads as a run that died.
    expect(JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8')).status).toBe('running');
    const again = await setup(dir);
    const resumed = await TrainingRun.resume('run-r', again.deps);
    await resumed.run();
    again.destroy();
    expect(resumed.history.map((m) => m.step)).toEqual([1, 2, 3]);
  }, 60_000);
});
