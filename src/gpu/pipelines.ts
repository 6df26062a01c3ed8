// Compiles WGSL once per (device, source, entry point). Shader compilation errors are raised with the
// kernel's name and the compiler's messages, instead of surfacing later as an invalid pipeline.

import { AgentFlowError, type ErrorCategory } from '../errors';
import type { GpuContext } from './device';

// Promises, not pipelines: rows drawing at once ask for the same kernel together, and on a software adapter
// one compile can take minutes, so a second request waits for the first instead of compiling again.
const caches = new WeakMap<GPUDevice, Map<string, Promise<GPUComputePipeline>>>();

export class ShaderCompileError extends AgentFlowError {
  override readonly category: ErrorCategory = 'shader-compile';
  constructor(kernel: string, messages: string) {
    super(`WGSL kernel '${kernel}' failed to compile:\n${messages}`);
    this.name = 'ShaderCompileError';
  }
}

export function getPipeline(ctx: GpuContext, kernel: string, code: string, entryPoint = 'main'): Promise<GPUComputePipeline> {
  let cache = caches.get(ctx.device);
  if (!cache) {
    cache = new Map();
    caches.set(ctx.device, cache);
  }
  const key = `${entryPoint}\u0000${code}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const compiling = compile(ctx, kernel, code, entryPoint);
  cache.set(key, compiling);
  // A failed compile is not kept: the error is for this request, and a retry compiles again.
  compiling.catch(() => {
    if (cache.get(key) === compiling) cache.delete(key);
  });
  return compiling;
}

async function compile(ctx: GpuContext, kernel: string, code: string, entryPoint: string): Promise<GPUComputePipeline> {
  const module = ctx.device.createShaderModule({ label: kernel, code });
  const info = await module.getCompilationInfo();
  const errors = info.messages.filter((m) => m.type === 'error');
  if (errors.length) {
    throw new ShaderCompileError(kernel, errors.map((m) => `  line ${m.lineNum}:${m.linePos} ${m.message}`).join('\n'));
  }
  ctx.device.pushErrorScope('validation');
  const pipeline = await ctx.device.createComputePipelineAsync({ label: kernel, layout: 'auto', compute: { module, entryPoint } });
  const err = await ctx.device.popErrorScope();
  if (err) throw new ShaderCompileError(kernel, err.message);
  return pipeline;
}

export interface Dispatch {
  pipeline: GPUComputePipeline;
  /** Buffers bound at group 0, bindings 0..n-1, in order. */
  buffers: GPUBuffer[];
  workgroups: [number, number?, number?];
  label?: string;
}

/** Records one compute pass per dispatch into `enc`; bind groups are built from the pipeline's layout. */
export function encodeDispatch(ctx: GpuContext, enc: GPUCommandEncoder, d: Dispatch): void {
  const bindGroup = ctx.device.createBindGroup({
    label: d.label ?? d.pipeline.label,
    layout: d.pipeline.getBindGroupLayout(0),
    entries: d.buffers.map((buffer, binding) => ({ binding, resource: { buffer } })),
  });
  const pass = enc.beginComputePass({ label: d.label ?? d.pipeline.label });
  pass.setPipeline(d.pipeline);
  pass.setBindGroup(0, bindGroup);
  const [x, y = 1, z = 1] = d.workgroups;
  pass.dispatchWorkgroups(x, y, z);
  pass.end();
}

/** Encodes and submits a list of dispatches in one command buffer. */
export function submitDispatches(ctx: GpuContext, dispatches: Dispatch[], label = 'kernels'): void {
  const enc = ctx.device.createCommandEncoder({ label });
  for (const d of dispatches) encodeDispatch(ctx, enc, d);
  ctx.device.queue.submit([enc.finish()]);
}

/** Splits a 1-D workgroup count over x and y so it stays within maxComputeWorkgroupsPerDimension. */
export function grid1d(ctx: GpuContext, workgroups: number): [number, number] {
  const max = ctx.caps.limits.maxComputeWorkgroupsPerDimension;
  if (workgroups <= max) return [Math.max(1, workgroups), 1];
  const y = Math.ceil(workgroups / max);
  return [Math.ceil(workgroups / y), y];
}
