import { describe, expect, it } from 'vitest';
import { chooseSubgroupMatrix, nodeDawnFlags, type SubgroupMatrixAdapter } from './device';

describe('nodeDawnFlags', () => {
  const noQuantization = 'disable-dawn-features=timestamp_quantization';
  const both = 'enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia';
  it('turns on f16 for NVIDIA by default and off with AGENTFLOW_NVIDIA_F16=0; timestamps are never quantized', () => {
    expect(nodeDawnFlags({})).toEqual([both, noQuantization]);
    expect(nodeDawnFlags({ AGENTFLOW_NVIDIA_F16: '1' })).toEqual([both, noQuantization]);
    expect(nodeDawnFlags({ AGENTFLOW_NVIDIA_F16: '0' })).toEqual(['enable-dawn-features=allow_unsafe_apis', noQuantization]);
    expect(nodeDawnFlags({ AGENTFLOW_NVIDIA_F16: '0', AGENTFLOW_SUBGROUP_MATRIX: '0' })).toEqual([noQuantization]);
  });

  it('adds allow_unsafe_apis (subgroup matrices) unless AGENTFLOW_SUBGROUP_MATRIX=0, or when asked, beside the f16 toggle', () => {
    expect(nodeDawnFlags({ AGENTFLOW_SUBGROUP_MATRIX: '0' })).toEqual(['enable-dawn-features=vulkan_enable_f16_on_nvidia', noQuantization]);
    expect(nodeDawnFlags({ AGENTFLOW_SUBGROUP_MATRIX: '1' })).toEqual([both, noQuantization]);
    expect(nodeDawnFlags({ AGENTFLOW_SUBGROUP_MATRIX: '0' }, true)).toEqual([both, noQuantization]);
    expect(nodeDawnFlags({ AGENTFLOW_SUBGROUP_MATRIX: '1', AGENTFLOW_NVIDIA_F16: '0' })).toEqual(['enable-dawn-features=allow_unsafe_apis', noQuantization]);
  });

  it('names the setting when its value is not 0 or 1', () => {
    expect(() => nodeDawnFlags({ AGENTFLOW_NVIDIA_F16: 'yes' })).toThrow(/AGENTFLOW_NVIDIA_F16 must be 0 or 1, got 'yes'/);
    expect(() => nodeDawnFlags({ AGENTFLOW_SUBGROUP_MATRIX: 'on' })).toThrow(/AGENTFLOW_SUBGROUP_MATRIX must be 0 or 1, got 'on'/);
  });
});

describe('chooseSubgroupMatrix', () => {
  // The H200's list (2026-11-27 kit call): f16 -> f32 16x16x16, 16x8x16, 16x8x8, f16 -> f16 and int8.
  const h200 = [
    { componentType: 'f16', resultComponentType: 'f32', M: 16, N: 8, K: 8 },
    { componentType: 'f16', resultComponentType: 'f32', M: 16, N: 8, K: 16 },
    { componentType: 'f16', resultComponentType: 'f32', M: 16, N: 16, K: 16 },
    { componentType: 'f16', resultComponentType: 'f16', M: 16, N: 16, K: 16 },
    { componentType: 'i8', resultComponentType: 'i32', M: 16, N: 16, K: 32 },
  ];
  const adapter = (features: string[], info: SubgroupMatrixAdapter['info']): SubgroupMatrixAdapter => ({ features: new Set(features), info });
  const all = ['chromium-experimental-subgroup-matrix', 'shader-f16', 'subgroups'];

  it('prefers f16 -> f32 16x16x16, else the largest f16 -> f32 config, with the subgroup size', () => {
    expect(chooseSubgroupMatrix(adapter(all, { subgroupMinSize: 32, subgroupMaxSize: 32, subgroupMatrixConfigs: h200 }))).toEqual({ M: 16, N: 16, K: 16, subgroupSize: 32 });
    expect(chooseSubgroupMatrix(adapter(all, { subgroupMinSize: 32, subgroupMaxSize: 32, subgroupMatrixConfigs: h200.filter((c) => c.N !== 16) }))).toEqual({ M: 16, N: 8, K: 16, subgroupSize: 32 });
  });

  it('is null without the feature, shader-f16, subgroups, an f16 -> f32 config or a fixed subgroup size', () => {
    const info = { subgroupMinSize: 32, subgroupMaxSize: 32, subgroupMatrixConfigs: h200 };
    for (const missing of all) expect(chooseSubgroupMatrix(adapter(all.filter((f) => f !== missing), info))).toBeNull();
    expect(chooseSubgroupMatrix(adapter(all, { ...info, subgroupMatrixConfigs: h200.filter((c) => c.resultComponentType !== 'f32') }))).toBeNull();
    expect(chooseSubgroupMatrix(adapter(all, { ...info, subgroupMatrixConfigs: undefined }))).toBeNull();
    expect(chooseSubgroupMatrix(adapter(all, { ...info, subgroupMinSize: 8 }))).toBeNull();
  });
});
