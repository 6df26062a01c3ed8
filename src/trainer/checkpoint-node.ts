// Checkpoints on disk (Node: CLI and tests). One directory per step:
//   <dir>/step-000010/adapter_config.json, adapter_model.safetensors   (PEFT, loadable by peft/transformers)
//   <dir>/step-000010/optimizer.safetensors   (<peft name>.exp_avg / .exp_avg_sq, F32)
//   <dir>/step-000010/trainer_state.json      (run id, step, optimizer steps, RNG state, config)
// and <dir>/latest.json naming the newest step directory, written last so a crash mid-save keeps the old one.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { exportAdapter, parseAdapter } from '../engine/io/peft';
import { readSafetensors, writeSafetensors } from '../engine/io/safetensors';
import type { Moments } from './backend';
import { CheckpointError, type CheckpointStore, type TrainingCheckpoint } from './checkpoint';
import { resolveGrpoConfig } from './config';

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

  async save(c: TrainingCheckpoint): Promise<void> {
    const name = `step-${String(c.step).padStart(6, '0')}`;
    const d = join(this.dir, name);
    await mkdir(d, { recursive: true });
    const { config, weights } = exportAdapter(c.adapter);
    await writeFile(join(d, 'adapter_config.json'), JSON.stringify(config, null, 2));
    await writeFile(join(d, 'adapter_model.safetensors'), weights);
    const moments = [...c.moments].flatMap(([k, mv]) => [
      { name: `${k}.exp_avg`, shape: [mv.m.length], data: mv.m },
      { name: `${k}.exp_avg_sq`, shape: [mv.v.length], data: mv.v },
    ]);
    await writeFile(join(d, 'optimizer.safetensors'), writeSafetensors(moments));
    const state: TrainerStateJson = { runId: c.runId, step: c.step, optimizerSteps: c.optimizerSteps, rngState: c.rngState, config: { ...c.config }, createdAt: c.createdAt, baseModel: c.baseModel };
    await writeFile(join(d, 'trainer_state.json'), JSON.stringify(state, null, 2));
    const tmp = join(this.dir, 'latest.json.tmp');
    await writeFile(tmp, JSON.stringify({ runId: c.runId, step: c.step, dir: name }));
    await rename(tmp, join(this.dir, 'latest.json'));
  }

  async latest(runId: string): Promise<TrainingCheckpoint | null> {
    let pointer: { runId: string; dir: string };
    try {
      pointer = JSON.parse(await readFile(join(this.dir, 'latest.json'), 'utf8'));
    } catch (e) {
      if ((e as { code?: string }).code === 'ENOENT') return null;
      throw new CheckpointError(`${join(this.dir, 'latest.json')}: ${(e as Error).message}`);
    }
    if (pointer.runId !== runId) return null;
    return DiskCheckpointStore.read(join(this.dir, pointer.dir));
  }

  /** Reads one step directory. */
  static async read(d: string): Promise<TrainingCheckpoint> {
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
    };
  }
}
