// What the GPU probe worker (workers/gpu-probe.worker.ts) answers over comlink; probe-client.ts calls it.
import type { GpuCapabilities } from './device';

export interface GpuProbeApi {
  /** The worker's own GPU context's capabilities (WebGPU works off the main thread, where the planner runs). */
  capabilities(): Promise<GpuCapabilities>;
  /** Runs the matvec kernel in the worker; W is f16 bits [rows, cols]. */
  matvec(Wbits: Uint16Array, x: Float32Array, rows: number, cols: number): Promise<Float32Array>;
}
