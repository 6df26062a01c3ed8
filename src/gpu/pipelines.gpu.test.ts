// The pipeline cache: one compile per kernel text and device, even when several rows ask at once, and a
// failed compile is not remembered.
import { describe, expect, it } from 'vitest';
import { requestGpu } from './device';
import { getPipeline, ShaderCompileError } from './pipelines';

const KERNEL = /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(1) fn main() { out[0] = 1.0; }
`;

describe('getPipeline', () => {
  it('compiles once when the same kernel is asked for concurrently', async () => {
    const ctx = await requestGpu();
    const calls: string[] = [];
    const create = ctx.device.createComputePipelineAsync.bind(ctx.device);
    ctx.device.createComputePipelineAsync = (d: GPUComputePipelineDescriptor) => {
      calls.push(d.label ?? '');
      return create(d);
    };
    const [a, b, c] = await Promise.all([
      getPipeline(ctx, 'once', KERNEL),
      getPipeline(ctx, 'once', KERNEL),
      getPipeline(ctx, 'once', KERNEL),
    ]);
    expect(b).toBe(a);
    expect(c).toBe(a);
    expect(calls).toEqual(['once']);
    expect(await getPipeline(ctx, 'once', KERNEL)).toBe(a);
    ctx.device.destroy();
  });

  it('does not keep a failed compile: each request reports it', async () => {
    const ctx = await requestGpu();
    const bad = `${KERNEL}\nfn broken() -> f32 { return undefined_name; }\n`;
    await expect(getPipeline(ctx, 'broken', bad)).rejects.toThrow(ShaderCompileError);
    let compiled = 0;
    const create = ctx.device.createShaderModule.bind(ctx.device);
    ctx.device.createShaderModule = (d: GPUShaderModuleDescriptor) => {
      compiled++;
      return create(d);
    };
    await expect(getPipeline(ctx, 'broken', bad)).rejects.toThrow(/broken.*failed to compile/s);
    expect(compiled).toBe(1);
    ctx.device.destroy();
  });
});
