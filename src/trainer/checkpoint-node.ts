// Checkpoints on disk (Node: CLI and tests). One directory per step:
//   <dir>/step-000010/adapter_config.json, adapter_model.safetensors   (PEFT, loadable by peft/transformers)
//   <dir>/step-000010/optimizer.safetensors   (<peft name>.exp_avg / .exp_avg_sq, F32)
//   <dir>/step-000010/trainer_state.json      (run id, step, optimizer steps, RNG state, config)
//   <dir>/step-000010/manifest.json           (sha256 of each file above, written last)
// A step directory is written under a temporary name and renamed into place, and <dir>/latest.json (naming the
// newest) is replaced last, so a crash mid-save leaves the previous checkpoint as the newest intact one. The
// manifest catches what a crash does not: a flipped bit or a file changed since, which would still parse.
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { exportAdapter, parseAdapter } from '../io/peft';
import { readSafetensors, writeSafetensors } from '../io/safetensors';
import type { Moments } from './backend';
import { CheckpointError, checkPrune, noIntactCheckpoint, type CheckpointStore, type PruneOptions, type TrainingCheckpoint } from './checkpoint-store';
import { resolveGrpoConfig } from './grpo-config';
import type { TrainStorage } from './training-host';
import { loadAdapter } from '../engine/load-checkpoint';
import { directorySource } from '../io/sources';

export const MANIFEST_FILE = 'manifest.json';
const CHECKPOINT_FILES = ['adapter_config.json', 'adapter_model.safetensors', 'optimizer.safetensors', 'trainer_state.json'] as const;

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** A write whose error names its file (ENOSPC and EROFS from write(2) name none). */
async function writeNamed(file: string, data: string | Uint8Array): Promise<void> {
  try {
    await writeFile(file, data);
  } catch (e) {
    const err = e as Error & { code?: string };
    if (err.message.includes(file)) throw err;
    throw Object.assign(new Error(`${file}: ${err.message}`), { code: err.code });
  }
}

interface TrainerStateJson {
  runId: string;
  step: number;
  optimizerSteps: number;
  rngState: number;
  config: Record<string, unknown>;
  createdAt: number;
  baseModel?: string;
}

export class DiskCheckpointStore implements CheckpointStore {
  constructor(readonly dir: string) {}

  static stepDir(step: number): string {
    return `step-${String(step).padStart(6, '0')}`;
  }

  async save(c: TrainingCheckpoint): Promise<string> {
    const name = DiskCheckpointStore.stepDir(c.step);
    const final = join(this.dir, name);
    const d = `${final}.tmp`;
    await rm(d, { recursive: true, force: true });
    try {
      await mkdir(d, { recursive: true });
    } catch (e) {
      throw Object.assign(new Error(`${d}: ${(e as Error).message}`), { code: (e as { code?: string }).code });
    }
    const { config, weights } = exportAdapter(c.adapter);
    const moments = [...c.moments].flatMap(([k, mv]) => [
      { name: `${k}.exp_avg`, shape: [mv.m.length], data: mv.m },
      { name: `${k}.exp_avg_sq`, shape: [mv.v.length], data: mv.v },
    ]);
    const state: TrainerStateJson = { runId: c.runId, step: c.step, optimizerSteps: c.optimizerSteps, rngState: c.rngState, config: { ...c.config }, createdAt: c.createdAt, baseModel: c.baseModel };
    const files: Record<(typeof CHECKPOINT_FILES)[number], Uint8Array> = {
      'adapter_config.json': new TextEncoder().encode(JSON.stringify(config, null, 2)),
      'adapter_model.safetensors': weights,
      'optimizer.safetensors': writeSafetensors(moments),
      'trainer_state.json': new TextEncoder().encode(JSON.stringify(state, null, 2)),
    };
    try {
      for (const f of CHECKPOINT_FILES) await writeNamed(join(d, f), files[f]);
      const manifest = { sha256: Object.fromEntries(CHECKPOINT_FILES.map((f) => [f, sha256(files[f])])) };
      await writeNamed(join(d, MANIFEST_FILE), JSON.stringify(manifest, null, 2));
    } catch (e) {
      // Removing the partial directory may leave a full disk room to record the failure.
      await rm(d, { recursive: true, force: true }).catch(() => undefined);
      throw e;
    }
    // Saving the same step again (a resumed run redoing it) replaces it.
    await rm(final, { recursive: true, force: true });
    await rename(d, final);
    const tmp = join(this.dir, 'latest.json.tmp');
    await writeNamed(tmp, JSON.stringify({ runId: c.runId, step: c.step, dir: name }));
    await rename(tmp, join(this.dir, 'latest.json'));
    return final;
  }

  /** The step directories present, newest first. */
  private async steps(): Promise<Array<{ step: number; dir: string }>> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (e) {
      if ((e as { code?: string }).code === 'ENOENT') return [];
      throw e;
    }
    return names
      .map((n) => ({ m: /^step-(\d+)$/.exec(n), n }))
      .filter((x): x is { m: RegExpExecArray; n: string } => !!x.m)
      .map((x) => ({ step: Number(x.m[1]), dir: join(this.dir, x.n) }))
      .sort((a, b) => b.step - a.step);
  }

  /**
   * The newest intact checkpoint of `runId`. latest.json names the newest save; the step directories are
   * searched too, so a damaged or missing pointer or step directory falls back to the one before.
   */
  async latest(runId: string): Promise<TrainingCheckpoint | null> {
    const skipped: string[] = [];
    const pointerFile = join(this.dir, 'latest.json');
    let newest = Infinity;
    try {
      const pointer = JSON.parse(await readFile(pointerFile, 'utf8')) as { runId?: unknown; step?: unknown };
      if (pointer.runId !== runId) throw new CheckpointError(`${pointerFile} belongs to run '${String(pointer.runId)}', not '${runId}'`);
      if (typeof pointer.step === 'number') newest = pointer.step;
    } catch (e) {
      if ((e as { code?: string }).code !== 'ENOENT') {
        if (e instanceof CheckpointError) throw e;
        skipped.push(`${pointerFile}: ${(e as Error).message}`);
      }
    }
    const steps = (await this.steps()).filter((s) => s.step <= newest);
    for (const s of steps) {
      try {
        const c = await DiskCheckpointStore.read(s.dir);
        if (c.runId !== runId) throw new CheckpointError(`${s.dir} belongs to run '${c.runId}', not '${runId}'`);
        return { ...c, skipped };
      } catch (e) {
        if (e instanceof CheckpointError && /belongs to run/.test(e.message)) throw e;
        skipped.push(`${s.dir}: ${(e as Error).message}`);
      }
    }
    if (steps.length) throw noIntactCheckpoint(runId, skipped);
    return null;
  }

  async prune(_runId: string, o: PruneOptions): Promise<void> {
    checkPrune(o);
    const protect = new Set(o.protect);
    const drop = (await this.steps()).filter((s, i) => i >= o.keep && !protect.has(s.step));
    for (const s of drop) await rm(s.dir, { recursive: true, force: true });
  }

  /**
   * Checks each file of a step directory against its manifest. A checkpoint saved before manifests existed
   * has none and is read unchecked.
   */
  static async verify(d: string): Promise<void> {
    const manifestFile = join(d, MANIFEST_FILE);
    let text: string;
    try {
      text = await readFile(manifestFile, 'utf8');
    } catch (e) {
      if ((e as { code?: string }).code === 'ENOENT') return;
      throw e;
    }
    let hashes: Record<string, unknown>;
    try {
      hashes = (JSON.parse(text) as { sha256?: Record<string, unknown> }).sha256 ?? {};
    } catch (e) {
      throw new CheckpointError(`${manifestFile} is not valid JSON (${(e as Error).message})`);
    }
    for (const f of CHECKPOINT_FILES) {
      const file = join(d, f);
      if (typeof hashes[f] !== 'string') throw new CheckpointError(`${manifestFile} lists no sha256 for ${f}`);
      if (sha256(await readFile(file)) !== hashes[f]) throw new CheckpointError(`${file} does not match its sha256 in ${MANIFEST_FILE} (changed or damaged since it was saved)`);
    }
  }

  /** Reads one step directory. */
  static async read(d: string): Promise<TrainingCheckpoint> {
    await DiskCheckpointStore.verify(d);
    const stateFile = join(d, 'trainer_state.json');
    const state = JSON.parse(await readFile(stateFile, 'utf8')) as TrainerStateJson;
    for (const k of ['step', 'optimizerSteps', 'rngState'] as const) {
      if (!Number.isInteger(state[k]) || state[k] < 0) throw new CheckpointError(`${stateFile}: '${k}' must be a non-negative integer`);
    }
    const adapter = parseAdapter(JSON.parse(await readFile(join(d, 'adapter_config.json'), 'utf8')), await readFile(join(d, 'adapter_model.safetensors')), {
      configFile: join(d, 'adapter_config.json'),
      weightsFile: join(d, 'adapter_model.safetensors'),
    });
    const optFile = join(d, 'optimizer.safetensors');
    const st = readSafetensors(await readFile(optFile), optFile);
    const moments: Moments = new Map();
    for (const n of st.names()) {
      const m = /^(.*)\.exp_avg$/.exec(n);
      if (!m) continue;
      const vName = `${m[1]}.exp_avg_sq`;
      if (!st.names().includes(vName)) throw new CheckpointError(`${optFile}: '${n}' has no matching '${vName}'`);
      moments.set(m[1], { m: st.f32(n), v: st.f32(vName) });
    }
    return {
      runId: state.runId,
      step: state.step,
      optimizerSteps: state.optimizerSteps,
      rngState: state.rngState,
      config: resolveGrpoConfig(state.config),
      adapter,
      moments,
      createdAt: state.createdAt,
      baseModel: state.baseModel,
      adapterRef: d,
    };
  }
}

/** A training session's storage on disk: checkpoints in `dir`; a stored adapter's id is its PEFT directory. */
export function dirTrainStorage(dir: string): TrainStorage {
  return {
    checkpoints: new DiskCheckpointStore(dir),
    adapter: (id, base) => loadAdapter(directorySource(id), base),
  };
}
