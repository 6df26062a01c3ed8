// The planner's own runtime as the policy being trained: the trained adapter is added to it and made active
// (GpuPolicyBackend), so the rollouts that follow sample from the policy as it is updated; ending the session
// removes it and brings back the adapter that was active before.
import type { Qwen2Runtime } from '../engine/runtime';
import { GpuPolicyBackend } from './gpu-backend';
import type { PolicyHost } from './training-host';

export function runtimePolicyHost(runtime: Qwen2Runtime, baseModel: string): PolicyHost {
  return {
    modelConfig: runtime.config,
    baseModel,
    async createBackend(adapter, o) {
      const previous = runtime.activeAdapterId;
      const backend = await GpuPolicyBackend.create(runtime, adapter, { adapterId: `training:${o.runId}`, maxRows: o.config.microBatchTokens });
      return {
        backend,
        adapterId: backend.adapterId,
        maxRows: backend.maxRows,
        destroy() {
          backend.destroy();
          runtime.setActiveAdapter(previous !== null && runtime.adapters.ids().includes(previous) ? previous : null);
        },
      };
    },
  };
}
