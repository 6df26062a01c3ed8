import * as Comlink from 'comlink';
import type { GpuProbeApi } from './probe-protocol';
import { guardCalls, watchWorker } from '../util/worker-watch';

/**
 * Starts the GPU probe worker; call `terminate` on the result when done. A probe whose worker dies (a driver
 * crash takes it down) rejects its calls with a WorkerGoneError instead of leaving the page waiting.
 */
export function startGpuProbe(): { api: Comlink.Remote<GpuProbeApi>; terminate(): void } {
  const worker = new Worker(new URL('../../workers/gpu-probe.worker.ts', import.meta.url), { type: 'module', name: 'gpu-probe' });
  const watch = watchWorker(worker, 'GPU probe');
  const api = guardCalls(Comlink.wrap<GpuProbeApi>(worker), watch);
  return { api, terminate: () => watch.terminate() };
}
