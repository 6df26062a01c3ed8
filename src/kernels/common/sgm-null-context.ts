// Tests only (Node): a context on Dawn's null backend whose caps claim subgroup matrices, so the tensor-core
// kernels compile (and the matmuls' choice of them can be checked) where no GPU here has the feature. The
// null backend computes nothing and grants 16 KiB of workgroup memory (an H200 49152 B): tests that make
// pipelines larger than that check compile messages instead (see the q4 and f16 sgm tests).
import { create, globals } from 'webgpu';
import { nodeDawnFlags, type GpuCapabilities, type GpuContext, type SubgroupMatrixShape } from '../../gpu/device';

const keep: GPU[] = [];
const FEATURE = 'chromium-experimental-subgroup-matrix';

export async function sgmNullContext(shape: SubgroupMatrixShape, workgroupStorage?: number): Promise<GpuContext> {
  for (const [k, v] of Object.entries(globals)) if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
  const gpu = create([...nodeDawnFlags({}, true), 'backend=null']);
  keep.push(gpu);
  const adapter = await gpu.requestAdapter();
  if (!adapter?.features.has(FEATURE)) throw new Error(`Dawn's null backend does not offer ${FEATURE}`);
  const device = await adapter.requestDevice({
    requiredFeatures: [FEATURE, 'shader-f16', 'subgroups'] as GPUFeatureName[],
    requiredLimits: { maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize },
  });
  const l = device.limits;
  const caps: GpuCapabilities = {
    runtime: 'node', vendor: 'null', architecture: '', description: 'Dawn null backend', f16: true, subgroups: true,
    subgroupMatrix: shape, features: [...device.features].map(String), isSoftware: false,
    limits: {
      maxBufferSize: l.maxBufferSize, maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
      maxComputeWorkgroupStorageSize: workgroupStorage ?? l.maxComputeWorkgroupStorageSize, maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
      maxComputeWorkgroupSizeX: l.maxComputeWorkgroupSizeX, maxComputeWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
      maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage,
    },
  };
  return { device, caps, lost: device.lost, isLost: () => false };
}
