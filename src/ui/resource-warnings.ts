// Plain-language warnings about this device before anything is downloaded: no WebGPU, GPU buffers too
// small for the planner, or too little free browser storage to keep the models.
import type { GpuCapabilities } from '../gpu/device';
import { formatBytes } from '../controllers/progress-tracker';

/** Qwen2.5-0.5B's embedding table in f16 (151936 × 896 × 2 bytes): the largest single GPU buffer it needs. */
export const PLANNER_LARGEST_BUFFER = 151936 * 896 * 2;
/** Planner (about 1 GB in f16) plus the default web-llm model (about 1 GB in q4). */
export const MODELS_STORAGE_BYTES = 2 * 2 ** 30;

export function resourceWarnings(
  caps: Pick<GpuCapabilities, 'limits'> | undefined,
  gpuError: string | undefined,
  storage: { quota?: number; usage?: number } | null,
): string[] {
  const w: string[] = [];
  if (gpuError) w.push('WebGPU is not available here, so the models cannot run in this browser. The scripted demo and the toy training (on the CPU) still work.');
  if (caps && caps.limits.maxBufferSize < PLANNER_LARGEST_BUFFER) {
    w.push(`This GPU allows buffers of at most ${formatBytes(caps.limits.maxBufferSize)}; the planner needs one of ${formatBytes(PLANNER_LARGEST_BUFFER)}. The memory is insufficient for Qwen2.5-0.5B.`);
  }
  if (storage?.quota !== undefined) {
    const free = storage.quota - (storage.usage ?? 0);
    if (free < MODELS_STORAGE_BYTES) w.push(`Only ${formatBytes(free)} of browser storage is free; the models need about ${formatBytes(MODELS_STORAGE_BYTES)}. They will download again on every visit.`);
  }
  return w;
}
