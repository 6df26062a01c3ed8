import { describe, expect, it } from 'vitest';
import { nodeDawnFlags } from './device';

describe('nodeDawnFlags', () => {
  it('turns on f16 for NVIDIA by default and off with AGENTFLOW_NVIDIA_F16=0', () => {
    expect(nodeDawnFlags({})).toEqual(['enable-dawn-features=vulkan_enable_f16_on_nvidia']);
    expect(nodeDawnFlags({ AGENTFLOW_NVIDIA_F16: '1' })).toEqual(['enable-dawn-features=vulkan_enable_f16_on_nvidia']);
    expect(nodeDawnFlags({ AGENTFLOW_NVIDIA_F16: '0' })).toEqual([]);
  });

  it('names the setting when its value is not 0 or 1', () => {
    expect(() => nodeDawnFlags({ AGENTFLOW_NVIDIA_F16: 'yes' })).toThrow(/AGENTFLOW_NVIDIA_F16 must be 0 or 1, got 'yes'/);
  });
});
