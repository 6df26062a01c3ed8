// A training run in a directory (Node: `cli train --out DIR`):
//   run.json          the run's spec, status and result (replaced atomically)
//   metrics.jsonl     one line per finished step (replaced atomically: never a torn line)
//   rollouts.jsonl    one line per planner call trained on, TRL/verl-ready (appended and synced per step)
//   checkpoints/      the optimizer's checkpoints (DiskCheckpointStore: PEFT adapter, moments, state)
//   adapter/          the run's result as PEFT files (adapter_config.json, adapter_model.safetensors)
// A run killed mid-step leaves the files of its finished steps; resuming forgets what came after the last
// checkpoint (truncate) and redoes it.
import { copyFile, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { rolloutsToJsonl } from '../../agent/rollouts';
import type { RolloutRecord } from '../../store/records';
import type { StepMetrics } from './metrics';
import type { RunResult, RunStore, StoredRun } from './run-store';

export const RUN_FILE = 'run.json';
export const METRICS_FILE = 'metrics.jsonl';
export const ROLLOUTS_FILE = 'rollouts.jsonl';
export const CHECKPOINTS_DIR = 'checkpoints';
export const ADAPTER_DIR = 'adapter';

/** Writes `data` to `file` through a synced temporary file and a rename: readers see the old or the new file whole. */
export async function writeFileAtomic(file: string, data: string | Uint8Array): Promise<void> {
  const tmp = `${file}.tmp`;
  const h = await open(tmp, 'w');
  try {
    await h.writeFile(data);
    await h.sync();
  } finally {
    await h.close();
  }
  await rename(tmp, file);
}

async function readText(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (e) {
    if ((e as { code?: string }).code === 'ENOENT') return null;
    throw e;
  }
}

/** The complete lines of a JSONL text, parsed; a torn last line (no newline) is dropped. */
function jsonLines(text: string | null): unknown[] {
  if (!text) return [];
  const complete = text.endsWith('\n') ? text : text.slice(0, text.lastIndexOf('\n') + 1);
  return complete
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as unknown);
}

export class DirRunStore implements RunStore {
  constructor(readonly dir: string) {}

  get checkpointsDir(): string {
    return join(this.dir, CHECKPOINTS_DIR);
  }

  async load(runId: string): Promise<StoredRun | null> {
    const runFile = join(this.dir, RUN_FILE);
    const text = await readText(runFile);
    if (text === null) return null;
    let run: Omit<StoredRun, 'history'>;
    try {
      run = JSON.parse(text) as Omit<StoredRun, 'history'>;
    } catch (e) {
      throw new Error(`${runFile} is not valid JSON (${(e as Error).message})`);
    }
    if (run.id !== runId) throw new Error(`${runFile} holds run '${run.id}', not '${runId}'`);
    return { ...run, history: jsonLines(await readText(join(this.dir, METRICS_FILE))) as StepMetrics[] };
  }

  /** The run this directory holds, whatever its id (the CLI's --resume). */
  async loadAny(): Promise<StoredRun | null> {
    const text = await readText(join(this.dir, RUN_FILE));
    if (text === null) return null;
    const id = (JSON.parse(text) as { id?: unknown }).id;
    if (typeof id !== 'string') throw new Error(`${join(this.dir, RUN_FILE)} names no run id`);
    return this.load(id);
  }

  async save(run: StoredRun): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const { history: _history, ...rest } = run;
    await writeFileAtomic(join(this.dir, RUN_FILE), `${JSON.stringify(rest, null, 2)}\n`);
  }

  async appendStep(run: StoredRun, metrics: StepMetrics, rollouts: readonly RolloutRecord[]): Promise<void> {
    // Rollouts first: a crash between the two leaves rollouts of a step that metrics does not list yet,
    // which truncate() on resume removes; metrics never lists a step whose rollouts are missing.
    const h = await open(join(this.dir, ROLLOUTS_FILE), 'a');
    try {
      await h.writeFile(rolloutsToJsonl([...rollouts]));
      await h.sync();
    } finally {
      await h.close();
    }
    const lines = [...run.history, metrics].map((m) => JSON.stringify(m)).join('\n');
    await writeFileAtomic(join(this.dir, METRICS_FILE), `${lines}\n`);
  }

  async truncate(_runId: string, step: number): Promise<void> {
    const metrics = jsonLines(await readText(join(this.dir, METRICS_FILE))) as StepMetrics[];
    const keptMetrics = metrics.filter((m) => m.step <= step);
    await writeFileAtomic(join(this.dir, METRICS_FILE), keptMetrics.map((m) => `${JSON.stringify(m)}\n`).join(''));
    const rollouts = jsonLines(await readText(join(this.dir, ROLLOUTS_FILE))) as Array<{ step?: number }>;
    await writeFileAtomic(join(this.dir, ROLLOUTS_FILE), rollouts.filter((r) => (r.step ?? 0) <= step).map((r) => `${JSON.stringify(r)}\n`).join(''));
  }

  /** Copies the result checkpoint's PEFT files to `<dir>/adapter/` (replacing what was there, whole). */
  async publish(_run: StoredRun, result: RunResult): Promise<void> {
    const final = join(this.dir, ADAPTER_DIR);
    const tmp = `${final}.tmp`;
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp, { recursive: true });
    for (const f of ['adapter_config.json', 'adapter_model.safetensors']) await copyFile(join(result.adapterId, f), join(tmp, f));
    await rm(final, { recursive: true, force: true });
    await rename(tmp, final);
  }
}
