import * as Comlink from 'comlink';
import type { GpuProbeApi } from '../../workers/gpu-probe.worker';

/** Starts the GPU probe worker; call `terminate` on the result when done. */
export function startGpuProbe(): { api: Comlink.Remote<GpuProbeApi>; terminate(): void } {
  const worker = new Worker(new URL('../../workers/gpu-probe.worker.ts', import.meta.url), { type: 'module', name: 'gpu-probe' });
  const api = Comlink.wrap<GpuProbeApi>(worker);
  return { api, terminate: () => worker.terminate() };
}
