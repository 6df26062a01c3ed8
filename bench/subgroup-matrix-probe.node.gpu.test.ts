// The subgroup-matrix probe where no GPU here has the feature: its kernels are compiled by Dawn's null
// backend (which offers `chromium-experimental-subgroup-matrix` with allow_unsafe_apis but runs nothing), and
// the probe itself runs on this machine's adapter (the not-offered path and the f32 baseline) and on the null
// backend with assumed configs (every step of the variant path, on outputs nobody computed).
import { describe, expect, it } from 'vitest';
import { create, globals } from 'webgpu';
import { bestPerShape, probe, TOGGLES, type ShapeResult } from './subgroup-matrix-probe';
import { VARIANTS, subgroupMatrixWgsl, variantProblem, type MatrixConfig } from './subgroup-matrix-wgsl';

const configs: MatrixConfig[] = [
  { componentType: 'f16', resultComponentType: 'f32', M: 16, N: 16, K: 16 },
  { componentType: 'f16', resultComponentType: 'f16', M: 16, N: 8, K: 16 },
  { componentType: 'f32', resultComponentType: 'f32', M: 8, N: 8, K: 8 },
];
const shapes = [{ name: 't', m: 128, k: 64, n: 128 }];
const keep: GPU[] = [];

describe('subgroup-matrix probe on Dawn', () => {
  it('every variant compiles for f16 -> f32, f16 -> f16 and f32 -> f32 configs, without a message', async () => {
    for (const [k, v] of Object.entries(globals)) if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
    const gpu = create([...TOGGLES, 'backend=null']);
    keep.push(gpu);
    const adapter = await gpu.requestAdapter();
    expect(adapter?.features.has('chromium-experimental-subgroup-matrix')).toBe(true);
    const device = await adapter!.requestDevice({ requiredFeatures: ['chromium-experimental-subgroup-matrix', 'shader-f16', 'subgroups'] as GPUFeatureName[] });
    for (const c of configs) {
      for (const v of VARIANTS.filter((x) => !variantProblem(c, x, 32))) {
        const module = device.createShaderModule({ code: subgroupMatrixWgsl(c, v, 32) });
        const messages = (await module.getCompilationInfo()).messages.map((m) => `${v.name} ${c.componentType}->${c.resultComponentType}: ${m.lineNum}:${m.linePos} ${m.message}`);
        expect(messages).toEqual([]);
      }
    }
    device.destroy();
  });

  it('without the feature: offered false, no variants, the baseline checked against float64 and timed', async () => {
    const out: Record<string, unknown> = {};
    await probe({ shapes, reps: 1, samples: 8, budgetS: 600, baseline: true }, out);
    expect(out.errors).toEqual([]);
    if (out.offered) return; // a GPU with subgroup matrices: the null-backend case below covers the plumbing
    expect(out.variants).toEqual([]);
    const base = (out.baseline as { results: ShapeResult[] }).results[0];
    expect(base.check!.maxErrorOverAbsSum).toBeLessThan(1e-5);
    expect(base.timing!.tflops).toBeGreaterThan(0);
    expect((out.best as Array<{ baselineTflops: number }>)[0].baselineTflops).toBe(base.timing!.tflops);
  });

  it('with the feature (null backend, assumed configs): every config and variant is compiled, run and checked, failures recorded', async () => {
    const out: Record<string, unknown> = {};
    await probe({ shapes, reps: 1, samples: 8, budgetS: 600, baseline: false, backend: 'null', assumedConfigs: [...configs, { componentType: 'i8', resultComponentType: 'i32', M: 16, N: 16, K: 32 }] }, out);
    expect(out.offered).toBe(true);
    expect(out.skippedConfigs).toMatchObject({ configs: ['i8->i32 16x16x32'] });
    const variants = out.variants as Array<{ name: string; error?: string; skipped?: string; results?: ShapeResult[] }>;
    expect(variants).toHaveLength(configs.length * VARIANTS.length);
    // The null backend's subgroups are 128 wide: the one-subgroup kernels run, larger ones exceed its 256
    // invocations (an error, recorded) or cannot share their staging loads (skipped, with the reason).
    const ran = variants.filter((v) => v.results?.[0]?.timing);
    expect(ran.map((v) => v.name)).toEqual(['direct-1sg-2x2', 'direct-1sg-2x2', 'direct-1sg-2x2']);
    for (const v of variants.filter((x) => !x.results?.[0]?.timing)) expect(v.error ?? v.skipped).toMatch(/workgroup_size|vec4 loads|staged f16 configs only/);
    // Nothing was computed, so no variant passes the float64 check and none is reported best.
    expect((out.best as Array<{ best: unknown }>)[0].best).toBeNull();
  });

  it('picks the fastest variant within the error bound and compares it with the baseline', () => {
    const res = (tf: number, err: number): ShapeResult => ({ shape: 't', m: 128, k: 64, n: 128, check: { entries: 8, maxRelError: err, maxErrorOverAbsSum: err, nonFinite: 0 }, timing: { ms: 1, tflops: tf, method: 'timestamp' } });
    const cfg = configs[0];
    const best = bestPerShape(shapes, [res(10, 0)], [
      { name: 'fast-but-wrong', config: cfg, results: [res(90, 0.5)] },
      { name: 'good', config: cfg, results: [res(40, 1e-4)] },
      { name: 'slow', config: cfg, results: [res(20, 1e-4)] },
    ]);
    expect(best[0]).toMatchObject({ baselineTflops: 10, best: { variant: 'good', config: 'f16->f32 16x16x16', tflops: 40 }, speedup: 4 });
  });
});
