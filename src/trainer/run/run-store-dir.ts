// A training run in a directory (Node: `cli train --out DIR`):
//   run.json          the run's spec, status and result (replaced atomically)
//   metrics.jsonl     one line per finished step (replaced atomically: never a torn line)
//   rollouts.jsonl    one line per planner call trained on, TRL/verl-ready (appended and synced per step)
//   eval.jsonl        one line per held-out evaluation (--eval-data): step, accuracy, counts, seconds, adapter
//   checkpoints/      the optimizer's checkpoints (DiskCheckpointStore: PEFT adapter, moments, state)
//   adapter/          the run's result as PEFT files (adapter_config.json, adapter_model.safetensors)
// A run killed mid-step leaves the files of its finished steps; resuming forgets what came after the last
// checkpoint (truncate) and redoes it. Paths inside the directory are stored relative to it, so a copied or
// moved directory is a whole run. A failed write's error names the file (write(2) errors name none).
import * as fsp from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { rolloutsToJsonl } from '../../agent/rollouts';
import type { RolloutRecord } from '../../store/records';
import type { EvalPoint, StepMetrics } from './metrics';
import type { RunResult, RunSpec, RunStore, StoredRun } from './run-store';

export const RUN_FILE = 'run.json';
export const METRICS_FILE = 'metrics.jsonl';
export const ROLLOUTS_FILE = 'rollouts.jsonl';
export const EVAL_FILE = 'eval.jsonl';
export const CHECKPOINTS_DIR = 'checkpoints';
export const ADAPTER_DIR = 'adapter';

/** The file operations the store uses: node:fs/promises, or a wrapper that fails on purpose (tests: ENOSPC, EROFS). */
export type StoreFs = Pick<typeof fsp, 'open' | 'readFile' | 'rename' | 'rm' | 'mkdir' | 'copyFile'>;

/** `e` with `file` in its message (and its errno code kept), unless it names it already. */
export function namingFile(e: unknown, file: string): Error {
  const err = e instanceof Error ? e : new Error(String(e));
  if (err.message.includes(file)) return err;
  const named = new Error(`${file}: ${err.message}`) as Error & { code?: string };
  named.name = err.name;
  const code = (err as { code?: string }).code;
  if (code !== undefined) named.code = code;
  return named;
}

/** Writes `data` to `file` through a synced temporary file and a rename: readers see the old or the new file whole. */
export async function writeFileAtomic(file: string, data: string | Uint8Array, fs: StoreFs = fsp): Promise<void> {
  const tmp = `${file}.tmp`;
  try {
    const h = await fs.open(tmp, 'w');
    try {
      await h.writeFile(data);
      await h.sync();
    } finally {
      await h.close();
    }
    await fs.rename(tmp, file);
  } catch (e) {
    // A full disk keeps the partial file otherwise; removing it may leave room to record the failure.
    await fs.rm(tmp, { force: true }).catch(() => undefined);
    throw namingFile(e, file);
  }
}

/** Appends `data` to `file` and syncs it; an error names the file. */
async function appendSynced(file: string, data: string, fs: StoreFs): Promise<void> {
  try {
    const h = await fs.open(file, 'a');
    try {
      await h.writeFile(data);
      await h.sync();
    } finally {
      await h.close();
    }
  } catch (e) {
    throw namingFile(e, file);
  }
}

async function readText(file: string, fs: StoreFs): Promise<string | null> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (e) {
    if ((e as { code?: string }).code === 'ENOENT') return null;
    throw namingFile(e, file);
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

/** What run.json must hold for a run to be continued from it; anything else is a damaged file. */
function checkRunJson(json: unknown, file: string): Omit<StoredRun, 'history'> {
  const r = json as Partial<StoredRun> | null;
  const bad = (what: string) => new Error(`${file} is not a training run's record (${what})`);
  if (!r || typeof r !== 'object' || Array.isArray(r)) throw bad('not a JSON object');
  if (typeof r.id !== 'string' || !r.id) throw bad('no run id');
  if (!['running', 'paused', 'done', 'error'].includes(r.status as string)) throw bad(`status ${JSON.stringify(r.status)}`);
  const spec = r.spec as Partial<RunSpec> | undefined;
  if (!spec || typeof spec !== 'object') throw bad('no spec');
  if (spec.task !== 'agent' && spec.task !== 'toy') throw bad(`task ${JSON.stringify(spec.task)}`);
  if (!Number.isInteger(spec.steps) || spec.steps! < 1) throw bad(`steps ${JSON.stringify(spec.steps)}`);
  if (!spec.grpo || typeof spec.grpo !== 'object' || !spec.adapter || typeof spec.adapter !== 'object' || !spec.collector || typeof spec.collector !== 'object') throw bad('spec without grpo, adapter or collector');
  return r as Omit<StoredRun, 'history'>;
}

export class DirRunStore implements RunStore {
  constructor(
    readonly dir: string,
    private readonly fs: StoreFs = fsp,
  ) {}

  /** A checkpoint path as run.json keeps it: relative when it is inside the directory. */
  private portable(path: string): string {
    const rel = relative(this.dir, path);
    return isAbsolute(path) && rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel.split(sep).join('/') : path;
  }

  /**
   * A stored checkpoint path made absolute. Runs written before paths were relative hold the absolute path of
   * the directory they were made in: a copy re-roots its `checkpoints/step-N` into this directory.
   */
  private located(path: string): string {
    if (!isAbsolute(path)) return resolve(this.dir, path);
    const m = /[\\/](checkpoints[\\/]step-\d+)$/.exec(path);
    return m && resolve(path, '../..') !== resolve(this.dir) ? resolve(this.dir, m[1]) : path;
  }

  get checkpointsDir(): string {
    return join(this.dir, CHECKPOINTS_DIR);
  }

  async load(runId: string): Promise<StoredRun | null> {
    const run = await this.readRun();
    if (run === null) return null;
    if (run.id !== runId) throw new Error(`${join(this.dir, RUN_FILE)} holds run '${run.id}', not '${runId}'`);
    return run;
  }

  /** The run this directory holds, whatever its id (the CLI's --resume). */
  async loadAny(): Promise<StoredRun | null> {
    return this.readRun();
  }

  private async readRun(): Promise<StoredRun | null> {
    const runFile = join(this.dir, RUN_FILE);
    const text = await readText(runFile, this.fs);
    if (text === null) return null;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (e) {
      throw new Error(`${runFile} is not valid JSON (${(e as Error).message})`);
    }
    const run = checkRunJson(json, runFile);
    const metricsFile = join(this.dir, METRICS_FILE);
    let history: StepMetrics[];
    try {
      history = jsonLines(await readText(metricsFile, this.fs)) as StepMetrics[];
    } catch (e) {
      throw namingFile(e, metricsFile);
    }
    const evals = this.parsed(join(this.dir, EVAL_FILE), await readText(join(this.dir, EVAL_FILE), this.fs)) as EvalPoint[];
    return { ...run, ...(run.result ? { result: { ...run.result, adapterId: this.located(run.result.adapterId) } } : {}), history, ...(evals.length ? { evals } : {}) };
  }

  async save(run: StoredRun): Promise<void> {
    await this.fs.mkdir(this.dir, { recursive: true }).catch((e: unknown) => Promise.reject(namingFile(e, this.dir)));
    // History and evaluations have files of their own, appended as they happen.
    const { history: _history, evals: _evals, ...rest } = run;
    const stored = rest.result ? { ...rest, result: { ...rest.result, adapterId: this.portable(rest.result.adapterId) } } : rest;
    await writeFileAtomic(join(this.dir, RUN_FILE), `${JSON.stringify(stored, null, 2)}\n`, this.fs);
  }

  async appendStep(run: StoredRun, metrics: StepMetrics, rollouts: readonly RolloutRecord[]): Promise<void> {
    // Rollouts first: a crash between the two leaves rollouts of a step that metrics does not list yet,
    // which truncate() on resume removes; metrics never lists a step whose rollouts are missing.
    // A partly appended step is removed by truncate() when the run resumes.
    await appendSynced(join(this.dir, ROLLOUTS_FILE), rolloutsToJsonl([...rollouts]), this.fs);
    const lines = [...run.history, metrics].map((m) => JSON.stringify(m)).join('\n');
    await writeFileAtomic(join(this.dir, METRICS_FILE), `${lines}\n`, this.fs);
  }

  async appendEval(_run: StoredRun, point: EvalPoint): Promise<void> {
    await appendSynced(join(this.dir, EVAL_FILE), `${JSON.stringify(point)}\n`, this.fs);
  }

  async truncate(_runId: string, step: number): Promise<void> {
    const metricsFile = join(this.dir, METRICS_FILE);
    const rolloutsFile = join(this.dir, ROLLOUTS_FILE);
    const metrics = this.parsed(metricsFile, await readText(metricsFile, this.fs)) as StepMetrics[];
    const keptMetrics = metrics.filter((m) => m.step <= step);
    await writeFileAtomic(metricsFile, keptMetrics.map((m) => `${JSON.stringify(m)}\n`).join(''), this.fs);
    const rollouts = this.parsed(rolloutsFile, await readText(rolloutsFile, this.fs)) as Array<{ step?: number }>;
    await writeFileAtomic(rolloutsFile, rollouts.filter((r) => (r.step ?? 0) <= step).map((r) => `${JSON.stringify(r)}\n`).join(''), this.fs);
    // Evaluations of forgotten steps judged adapters the resumed run throws away; the kept ones stay.
    const evalFile = join(this.dir, EVAL_FILE);
    const evalText = await readText(evalFile, this.fs);
    if (evalText !== null) {
      const evals = this.parsed(evalFile, evalText) as EvalPoint[];
      await writeFileAtomic(evalFile, evals.filter((p) => p.step <= step).map((p) => `${JSON.stringify(p)}\n`).join(''), this.fs);
    }
  }

  private parsed(file: string, text: string | null): unknown[] {
    try {
      return jsonLines(text);
    } catch (e) {
      throw namingFile(e, file);
    }
  }

  /** Copies the result checkpoint's PEFT files to `<dir>/adapter/` (replacing what was there, whole). */
  async publish(_run: StoredRun, result: RunResult): Promise<void> {
    const final = join(this.dir, ADAPTER_DIR);
    const tmp = `${final}.tmp`;
    const fs = this.fs;
    try {
      await fs.rm(tmp, { recursive: true, force: true });
      await fs.mkdir(tmp, { recursive: true });
      for (const f of ['adapter_config.json', 'adapter_model.safetensors']) await fs.copyFile(join(result.adapterId, f), join(tmp, f));
      await fs.rm(final, { recursive: true, force: true });
      await fs.rename(tmp, final);
    } catch (e) {
      await fs.rm(tmp, { recursive: true, force: true }).catch(() => undefined);
      throw namingFile(e, final);
    }
  }
}
