// The parts of `run.sh all` (bench/gpu-all.ts): what runs, in which order, for how long at most. A GPU session
// gets one device call of at most 600 s, so the parts run by importance (what the table needs first)
// under one overall budget: each has its own cap (a hang loses that part only) and gets at most what is left
// of the budget, so a slow early part squeezes the least important ones at the end, never the call.
// Pure: the runner spawns what this returns.

/** A part: one process whose stdout is `<name>.json` and stderr `<name>.log` in the output folder. */
export interface Part {
  name: string;
  /** What it measures, for the summary. */
  what: string;
  /** Seconds it may run at most (before the overall budget cuts it further). */
  capS: number;
  /** A kit script (bench.mjs, ... run by the kit's node; peft_step.py by python3) and its arguments. */
  run: { node: string; args: string[] } | { python: string; args: string[] };
  /** Environment added for this part only: a variant timed beside the default in the same call. */
  env?: Record<string, string>;
}

export interface PlanOptions {
  /** Tiny models and settings, to check the plumbing on a software adapter in minutes. */
  smoke: boolean;
  /** The GPU's memory bandwidth in GB/s, for the bandwidth floors. */
  bandwidthGBs: number;
  /** Where the fixture checkpoints are (smoke mode: its models are the fixtures). */
  fixtures?: string;
  /** Part caps by name, replacing the defaults. */
  caps?: Record<string, number>;
  /** Only these parts (in the plan's order); all when absent or empty. */
  only?: string[];
}

/** An H100 SXM's HBM3, GB/s. */
export const DEFAULT_BANDWIDTH_GBS = 3350;
/** The whole run's budget: the device tool allows 600 s a call, and unpacking the kit and starting take some. */
export const DEFAULT_BUDGET_S = 540;
/** Smoke mode's caps and default budget are this many times the GPU's: a software adapter is that much slower even on the fixtures. */
export const SMOKE_FACTOR = 4;
/** Seconds between a part's SIGTERM (its limit) and its SIGKILL: counted against the budget too. */
export const GRACE_S = 5;
/** A part given less than this is skipped: it could not load its model, and its time is better left unused. */
export const MIN_PART_S = 5;

/**
 * The parts in order of importance: what the README's table needs (0.5B speed, memory and training, the
 * PyTorch + PEFT step in the same call), then what tuning needs (the profiles), then the whole Flow-GRPO step,
 * then the 1.5B shapes. Caps are about 2-3 x the seconds each part took in the latest full kit call on a GPU
 * (H200, commit 6d15926, 224 s in all; before f16 on NVIDIA): adapter 1, bench 0.5B 15.7 (4-bit) and 15.7
 * (f16), PEFT 0.5B 35.9 (importing torch and transformers is most of it), decode profile 11.6 (it took 129 s
 * at c924260, while T=1 draws fell back to the CPU), train profile 13.4, prefill profile 1.4, e2e 28.9,
 * constrained 6.1, bench 1.5B 20.9 (4-bit) and 31.4 (f16), PEFT 1.5B 39.4; with the f16 shaders the f16
 * parts may change either way, so the caps keep room. f16-check (two 0.5B loads, one per path) and the
 * subgroup-matrix probe (sgm-probe; it stops itself after ~25 s) had not run on a GPU when these were set.
 * The tensor-core comparison parts took 7-14 s each in the 44cd019 call (then named -sgm; tensor cores are now
 * the default and the -tiles parts time the f32 tiles beside them). Every part at its cap adds to 860 s, past the
 * 540 s budget: the last parts would be cut, never the call. The full call of 31b7dde (H200, 2026-11-28) took 261 s,
 * every part well inside its cap (the longest: peft-1.5b 45 s, peft-0.5b 39 s, e2e 25 s).
 */
export function plan(o: PlanOptions): Part[] {
  const bw = ['--bandwidth', String(o.bandwidthGBs)];
  const fx = o.fixtures ? ['--fixtures', o.fixtures] : [];
  // Smoke: every bench part runs a fixture with a few tokens; the profiles one layer of the 0.5B shapes, small vocab.
  const benchArgs = (model: string, parts: string): string[] =>
    o.smoke
      ? ['--models', model.endsWith('-q4') ? 'fixture-q4' : 'fixture', '--parts', parts, ...bw, ...fx, '--prompt', '8', '--decode', '4', '--context', '256', '--batch-rows', '64', '--train-seqs', '2', '--train-tokens', '8', '--train-response', '4', '--micro-batch', '16', '--train-warmup', '0']
      : ['--models', model, '--parts', parts, ...bw];
  const e2eSmoke = ['--e2e-group', '2', '--e2e-turns', '1', '--e2e-warmup', '0', '--e2e-analysis', '2', '--e2e-planner', '4', '--e2e-executor', '2', '--e2e-verifier', '2', '--e2e-generator', '2', '--e2e-context', '512'];
  const peft = (shape: string): string[] => ['--shape', shape, ...(o.smoke ? ['--group', '2', '--tokens', '16', '--decode', '4', '--prompt', '8', '--reps', '1'] : [])];
  const trainProfileArgs = ['--q4', '1', ...(o.smoke ? ['--layers', '1', '--vocab', '4096', '--tokens', '16', '--seqs', '2', '--response', '4', '--micro-batch', '32', '--reps', '1'] : [])];
  const bench = (name: string, model: string, what: string, capS: number): Part => ({ name, what, capS, run: { node: 'bench.mjs', args: benchArgs(model, 'speed,memory,train') } });
  const parts: Part[] = [
    { name: 'adapter', what: 'adapter info: vendor, driver, features (subgroup matrix?), limits', capS: 20, run: { node: 'adapter.mjs', args: [] } },
    // Before any f16 figure counts: do the f16 shaders (Dawn's vulkan_enable_f16_on_nvidia) give the f32 path's answers here?
    { name: 'f16-check', what: 'f16 vs f32 kernel paths on this GPU: logits, scores, greedy tokens, LoRA gradients (0.5B 4-bit shapes)', capS: 60, run: { node: 'f16-check.mjs', args: o.smoke ? ['--layers', '1', '--vocab', '4096', '--prompt', '16', '--decode', '4', '--grad-seqs', '2', '--grad-tokens', '24', '--grad-response', '8'] : ['--shape', '0.5b', '--q4', '1', '--prompt', '64', '--decode', '16'] } },
    bench('bench-0.5b-q4', 'qwen2.5-0.5b-q4', 'Qwen2.5-0.5B q4f16_1: speed, memory, train', 45),
    bench('bench-0.5b-f16', 'qwen2.5-0.5b', 'Qwen2.5-0.5B f16: speed, memory, train', 50),
    { name: 'peft-0.5b', what: 'PyTorch + PEFT on the 0.5B shapes: LoRA step, decode', capS: 85, run: { python: 'peft_step.py', args: peft('0.5b') } },
    { name: 'decode-profile', what: 'where a 4-bit 0.5B decode token goes (r16 adapter)', capS: 60, run: { node: 'profile.mjs', args: ['--q4', '1', '--adapter', '1', ...(o.smoke ? ['--layers', '1', '--vocab', '4096', '--prompt', '24', '--tokens', '2'] : [])] } },
    { name: 'train-profile', what: 'where a 4-bit 0.5B Flow-GRPO update goes', capS: 70, run: { node: 'train-profile.mjs', args: trainProfileArgs } },
    // The default runs on tensor cores where the adapter offers subgroup matrices (f16 copies of the layer
    // matrices read by the forward and the input gradients); the same update on the f32 tiles beside it.
    { name: 'train-profile-tiles', what: 'the same update with AGENTFLOW_SUBGROUP_MATRIX=0 (f32 tiles, no tensor cores)', capS: 40, run: { node: 'train-profile.mjs', args: trainProfileArgs }, env: { AGENTFLOW_SUBGROUP_MATRIX: '0' } },
    // The bench's speed and training step (reference pass + update) on the f32 tiles, for the same-call comparison.
    { name: 'bench-0.5b-q4-tiles', what: 'Qwen2.5-0.5B q4f16_1 speed and train step with AGENTFLOW_SUBGROUP_MATRIX=0', capS: 45, run: { node: 'bench.mjs', args: benchArgs('qwen2.5-0.5b-q4', 'speed,train') }, env: { AGENTFLOW_SUBGROUP_MATRIX: '0' } },
    // 4-bit, as the planner runs (2 s on the H200 with --q4 1, prompt 512, including the generate() check).
    { name: 'prefill-profile', what: 'where a 512-token 4-bit 0.5B prefill and its scoring go (r16 adapter)', capS: 30, run: { node: 'prefill-profile.mjs', args: ['--shape', '0.5b', '--q4', '1', '--rank', '16', ...(o.smoke ? ['--layers', '1', '--vocab', '4096', '--prompt', '24'] : ['--prompt', '512'])] } },
    { name: 'prefill-profile-tiles', what: 'the same prefill and scoring with AGENTFLOW_SUBGROUP_MATRIX=0 (f32 tiles)', capS: 30, run: { node: 'prefill-profile.mjs', args: ['--shape', '0.5b', '--q4', '1', '--rank', '16', ...(o.smoke ? ['--layers', '1', '--vocab', '4096', '--prompt', '24'] : ['--prompt', '512'])] }, env: { AGENTFLOW_SUBGROUP_MATRIX: '0' } },
    // Tensor cores through Dawn's subgroup matrices: configs, compile messages, float64 error and TFLOP/s on the
    // 768-row training shapes beside the f32 tiled matmul. Stops starting kernels after --budget-s (~25 s in all).
    {
      name: 'sgm-probe',
      what: 'subgroup matrices (tensor cores): configs, error and TFLOP/s vs the f32 tiled matmul, 768-row training shapes',
      capS: 40,
      run: { node: 'sgm-probe.mjs', args: o.smoke ? ['--rows', '128', '--shapes', 'tiny:64x128', '--reps', '1', '--budget-s', '60'] : ['--budget-s', '25'] },
    },
    { name: 'e2e-0.5b-q4', what: 'whole Flow-GRPO steps, Qwen2.5-0.5B q4f16_1', capS: 75, run: { node: 'bench.mjs', args: [...benchArgs('qwen2.5-0.5b-q4', 'e2e'), ...(o.smoke ? e2eSmoke : [])] } },
    // Building the synthetic 151k-token vocabulary, its TokenizerInfo and the compiled schema take ~10 s of CPU.
    {
      name: 'constrained-0.5b-q4',
      what: 'schema-constrained vs free decode tok/s, Qwen2.5-0.5B q4f16_1; grammar ms/token on a 151k vocabulary',
      capS: 50,
      run: { node: 'constrained.mjs', args: o.smoke ? ['--model', 'fixture-q4', ...fx, '--tokens', '16', '--calls', '1', '--grammar-replies', '1'] : ['--model', 'qwen2.5-0.5b-q4', '--tokens', '64', '--calls', '3'] },
    },
    bench('bench-1.5b-q4', 'qwen2.5-1.5b-q4', 'Qwen2.5-1.5B q4f16_1: speed, memory, train', 65),
    bench('bench-1.5b-f16', 'qwen2.5-1.5b', 'Qwen2.5-1.5B f16: speed, memory, train', 80),
    { name: 'peft-1.5b', what: 'PyTorch + PEFT on the 1.5B shapes: LoRA step, decode', capS: 90, run: { python: 'peft_step.py', args: peft('1.5b') } },
  ];
  const known = new Set(parts.map((p) => p.name));
  for (const n of [...(o.only ?? []), ...Object.keys(o.caps ?? {})]) {
    if (!known.has(n)) throw new Error(`run.sh all: unknown part '${n}' (${[...known].join(', ')})`);
  }
  const only = o.only && o.only.length > 0 ? new Set(o.only) : null;
  return parts.filter((p) => !only || only.has(p.name)).map((p) => ({ ...p, capS: o.caps?.[p.name] ?? (o.smoke ? SMOKE_FACTOR : 1) * p.capS }));
}

/** Seconds a part may run: its cap, or what is left of the budget if less; null (skip it) below MIN_PART_S. */
export function partLimitS(capS: number, budgetLeftS: number): number | null {
  const s = Math.min(capS, Math.floor(budgetLeftS));
  return s >= MIN_PART_S ? s : null;
}

/** `name=seconds,name=seconds` (GPU_KIT_CAPS), checked. */
export function parseCaps(s: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of s.split(',').map((x) => x.trim()).filter(Boolean)) {
    const m = /^([\w.-]+)=(\d+(?:\.\d+)?)$/.exec(item);
    if (!m) throw new Error(`GPU_KIT_CAPS: '${item}' is not name=seconds`);
    out[m[1]] = Number(m[2]);
  }
  return out;
}

/** A positive number from an environment variable, or the fallback when unset; a clear error otherwise. */
export function envNumber(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got '${v}'`);
  return n;
}
