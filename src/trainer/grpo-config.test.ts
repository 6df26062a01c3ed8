import { describe, expect, it } from 'vitest';
import { DEFAULT_GRPO_CONFIG, GrpoConfigError, resolveGrpoConfig } from './grpo-config';

describe('Flow-GRPO config', () => {
  it('defaults are AgentFlow-like and valid', () => {
    const c = resolveGrpoConfig();
    expect(c).toEqual(DEFAULT_GRPO_CONFIG);
    expect([c.groupSize, c.epsLow, c.epsHigh, c.beta, c.maxTurns]).toEqual([8, 0.2, 0.3, 0.001, 3]);
  });

  it('applies overrides', () => {
    const c = resolveGrpoConfig({ learningRate: 1e-3, groupSize: 4 });
    expect(c.learningRate).toBe(1e-3);
    expect(c.groupSize).toBe(4);
    expect(c.beta).toBe(DEFAULT_GRPO_CONFIG.beta);
    expect(c.advantageStd).toBe(true);
    expect(resolveGrpoConfig({ advantageStd: false }).advantageStd).toBe(false);
    expect(c.advantageBaseline).toBe('group');
    expect(resolveGrpoConfig({ advantageBaseline: 'batch' }).advantageBaseline).toBe('batch');
  });

  it.each([
    ['learningRate', 0, /'learningRate' must be a finite number > 0/],
    ['learningRate', Number.NaN, /'learningRate'/],
    ['groupSize', 1, /'groupSize' must be an integer >= 2 \(got 1\)/],
    ['groupSize', 2.5, /'groupSize' must be an integer/],
    ['epsLow', 1, /'epsLow' must be a finite number >= 0 < 1/],
    ['adamBeta2', 1, /'adamBeta2'/],
    ['microBatchTokens', '4096', /'microBatchTokens'.*got "4096"/],
    ['seed', -1, /'seed'/],
    ['advantageStd', 1, /'advantageStd' must be true or false \(got 1\)/],
    ['advantageBaseline', 'step', /'advantageBaseline' must be one of 'group', 'batch', 'group-failed-batch' \(got "step"\)/],
    ['advantageBaseline', true, /'advantageBaseline' must be one of 'group', 'batch', 'group-failed-batch' \(got true\)/],
  ] as const)('rejects %s = %s naming the setting', (key, value, re) => {
    expect(() => resolveGrpoConfig({ [key]: value })).toThrow(GrpoConfigError);
    expect(() => resolveGrpoConfig({ [key]: value })).toThrow(re);
  });

  it('rejects unknown settings and impossible mini-batch counts', () => {
    expect(() => resolveGrpoConfig({ lr: 1 } as never)).toThrow(/'lr' is not a Flow-GRPO setting/);
    expect(() => resolveGrpoConfig({ miniBatches: 9, queriesPerStep: 1, groupSize: 8 })).toThrow(/'miniBatches'.*cannot exceed.*8/);
  });
});
