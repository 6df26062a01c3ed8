import { describe, expect, it } from 'vitest';
import { DEFAULT_BUDGET_S, GRACE_S, MIN_PART_S, envNumber, parseCaps, partLimitS, plan } from './gpu-all-plan';

const gpu = { smoke: false, bandwidthGBs: 2000 };
const names = (o = {}) => plan({ ...gpu, ...o }).map((p) => p.name);

describe('run.sh all: the plan', () => {
  it('runs the 0.5B measurements and their PyTorch baseline before the 1.5B ones', () => {
    const n = names();
    // The f16-vs-f32 check right after the adapter report: every f16 figure after it depends on its answer.
    expect(n.slice(0, 4)).toEqual(['adapter', 'f16-check', 'bench-0.5b-q4', 'bench-0.5b-f16']);
    const first15 = n.findIndex((x) => x.includes('1.5b'));
    for (const x of ['peft-0.5b', 'decode-profile', 'train-profile', 'prefill-profile', 'sgm-probe', 'e2e-0.5b-q4', 'constrained-0.5b-q4']) expect(n.indexOf(x)).toBeLessThan(first15);
    // The subgroup-matrix probe right after the profiles, before the whole Flow-GRPO step.
    expect(n.indexOf('prefill-profile-tiles')).toBe(n.indexOf('prefill-profile') + 1);
    expect(n.indexOf('sgm-probe')).toBe(n.indexOf('prefill-profile-tiles') + 1);
    expect(n.indexOf('e2e-0.5b-q4')).toBe(n.indexOf('sgm-probe') + 1);
    // The tensor-core variant of the update right after the default one, with its switch in its own environment.
    expect(n.indexOf('train-profile-tiles')).toBe(n.indexOf('train-profile') + 1);
    const parts = plan({ smoke: false, bandwidthGBs: 4800 });
    const sgm = parts.find((p) => p.name === 'train-profile-tiles')!;
    expect(sgm.env).toEqual({ AGENTFLOW_SUBGROUP_MATRIX: '0' });
    expect(sgm.run).toEqual(parts.find((p) => p.name === 'train-profile')!.run);
    expect(parts.filter((p) => p.env).map((p) => p.name)).toEqual(['train-profile-tiles', 'bench-0.5b-q4-tiles', 'prefill-profile-tiles']);
    for (const name of ['bench-0.5b-q4-tiles', 'prefill-profile-tiles']) expect(parts.find((p) => p.name === name)!.env).toEqual({ AGENTFLOW_SUBGROUP_MATRIX: '0' });
    expect(parts.find((p) => p.name === 'prefill-profile-tiles')!.run).toEqual(parts.find((p) => p.name === 'prefill-profile')!.run);
    expect(n).toContain('bench-1.5b-f16');
    expect(n).toContain('peft-1.5b');
  });

  it('gives every bench part the bandwidth and the shaped model; the PyTorch parts the same shape', () => {
    const parts = plan(gpu);
    const bench = parts.filter((p) => 'node' in p.run && p.run.node === 'bench.mjs');
    expect(bench.map((p) => p.name)).toEqual(['bench-0.5b-q4', 'bench-0.5b-f16', 'bench-0.5b-q4-tiles', 'e2e-0.5b-q4', 'bench-1.5b-q4', 'bench-1.5b-f16']);
    for (const p of bench) expect(p.run.args.join(' ')).toContain('--bandwidth 2000');
    const args = (name: string) => parts.find((p) => p.name === name)!.run.args.join(' ');
    expect(args('bench-1.5b-f16')).toContain('--models qwen2.5-1.5b --parts speed,memory,train');
    expect(args('e2e-0.5b-q4')).toContain('--models qwen2.5-0.5b-q4 --parts e2e');
    expect(args('peft-1.5b')).toBe('--shape 1.5b');
    // The probe's defaults are the training shapes (768 rows; q/k/v, gate/up, down): only its time budget is passed.
    expect(args('sgm-probe')).toBe('--budget-s 25');
    expect(parts.find((p) => p.name === 'sgm-probe')!.capS).toBe(40);
  });

  it('smoke mode runs the fixtures and one-layer profiles, never a full shaped model', () => {
    const parts = plan({ ...gpu, smoke: true, fixtures: '/f' });
    for (const p of parts) {
      const a = p.run.args.join(' ');
      expect(a).not.toMatch(/qwen2\.5/);
      if ('node' in p.run && p.run.node === 'bench.mjs') expect(a).toMatch(/--models fixture(-q4)? .*--fixtures \/f/);
      if ('node' in p.run && p.run.node.includes('profile')) expect(a).toMatch(/--layers 1 --vocab \d+/);
      if ('node' in p.run && p.run.node === 'constrained.mjs') expect(a).toMatch(/--model fixture-q4 --fixtures \/f/);
      // The probe's smoke shape is one block of its largest kernel (128 x 128): seconds on a software adapter.
      if ('node' in p.run && p.run.node === 'sgm-probe.mjs') expect(a).toBe('--rows 128 --shapes tiny:64x128 --reps 1 --budget-s 60');
    }
  });

  it('keeps only the parts named, in plan order, and replaces caps by name', () => {
    expect(names({ only: ['peft-1.5b', 'adapter'] })).toEqual(['adapter', 'peft-1.5b']);
    expect(plan({ ...gpu, caps: { adapter: 3 } })[0].capS).toBe(3);
    expect(() => plan({ ...gpu, only: ['bench-7b'] })).toThrow(/unknown part 'bench-7b'/);
    expect(() => plan({ ...gpu, caps: { nope: 1 } })).toThrow(/unknown part 'nope'/);
  });
});

describe('run.sh all: time limits', () => {
  it('a part gets its cap, or what is left of the budget, or is skipped below the minimum', () => {
    expect(partLimitS(80, 500)).toBe(80);
    expect(partLimitS(80, 41.7)).toBe(41);
    expect(partLimitS(80, MIN_PART_S - 0.5)).toBeNull();
  });

  it('the whole run stays within the budget even if every part runs to its limit', () => {
    let elapsed = 3; // unpacking the kit
    let ran = 0;
    for (const p of plan(gpu)) {
      const limit = partLimitS(p.capS, DEFAULT_BUDGET_S - elapsed - GRACE_S);
      if (limit === null) continue;
      elapsed += limit + GRACE_S;
      ran++;
    }
    expect(elapsed).toBeLessThanOrEqual(DEFAULT_BUDGET_S);
    // The 0.5B parts and the profiles fit whole even then.
    expect(ran).toBeGreaterThanOrEqual(6);
  });

  it('parses GPU_KIT_CAPS and numeric settings, naming the bad one', () => {
    expect(parseCaps('adapter=3, peft-1.5b=90.5')).toEqual({ adapter: 3, 'peft-1.5b': 90.5 });
    expect(parseCaps('')).toEqual({});
    expect(() => parseCaps('adapter:3')).toThrow(/GPU_KIT_CAPS: 'adapter:3'/);
    expect(envNumber({}, 'GPU_KIT_BUDGET', 540)).toBe(540);
    expect(envNumber({ GPU_KIT_BUDGET: '300' }, 'GPU_KIT_BUDGET', 540)).toBe(300);
    expect(() => envNumber({ GPU_KIT_BUDGET: 'lots' }, 'GPU_KIT_BUDGET', 540)).toThrow(/GPU_KIT_BUDGET must be a positive number, got 'lots'/);
  });
});
