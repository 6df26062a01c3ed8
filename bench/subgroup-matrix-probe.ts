// npx tsx bench/subgroup-matrix-probe.ts [--rows 768] [--shapes qkv:896x1152,gateup:896x9728,down:4864x896]
//   [--reps 10] [--samples 48] [--budget-s 25] [--baseline 1] [--backend null --assume-configs f16:f32:16x16x16,...]
// What Dawn's subgroup matrices (`chromium-experimental-subgroup-matrix`, tensor cores on NVIDIA) can do on
// this GPU, as JSON on stdout: the adapter's features and matrix configs with the unsafe-API and NVIDIA-f16
// toggles on, then for each float config and each kernel variant (bench/subgroup-matrix-wgsl.ts) its compile
// messages, its error against float64 on sampled entries and its TFLOP/s on the training shapes (768 rows;
// q/k/v, gate/up and down of the 0.5B model), beside the project's f32 tiled `matmul` (f32 x · f16 W^T,
// src/kernels/matmul) on the same shapes and the same device. Every failure is recorded, never fatal: the
// part always prints one JSON object. Without the feature it says `offered: false` and times the baseline only.
// `--backend null --assume-configs ...` runs every step on Dawn's null backend (which offers the feature but
// lists no configs and computes nothing): a check of the plumbing on a machine without such a GPU.
import { create, globals } from 'webgpu';
import type { GpuCapabilities, GpuContext } from '../src/gpu/device';
import { matmul } from '../src/kernels/matmul/matmul';
import { f16BitsToF32 } from '../src/util/half';
import { flag, log } from './flags';
import { checkEntries, parseShapes, randomHalves, sampleEntries, tflops, type CheckResult, type Shape } from './subgroup-matrix-check';
import { VARIANTS, geometry, shapeProblem, subgroupMatrixWgsl, usable, variantProblem, type MatrixConfig, type Variant } from './subgroup-matrix-wgsl';
import { readBack, timeDispatches } from './timed-dispatch';

const FEATURE = 'chromium-experimental-subgroup-matrix';
/** Dawn hides the feature without allow_unsafe_apis and shader-f16 on NVIDIA without vulkan_enable_f16_on_nvidia. */
export const TOGGLES = ['enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia', 'disable-dawn-features=timestamp_quantization'];
const DEFAULT_SHAPES = 'qkv:896x1152,gateup:896x9728,down:4864x896';

interface Timing {
  ms: number;
  tflops: number;
  method: 'timestamp' | 'wall';
}
export interface ShapeResult {
  shape: string;
  m: number;
  k: number;
  n: number;
  skipped?: string;
  error?: string;
  check?: CheckResult;
  timing?: Timing;
}

// Dawn's instance must outlive its adapters and devices (src/gpu/device.ts): kept for the process.
const instances: GPU[] = [];
const started = performance.now();
const out: Record<string, unknown> = { offered: false, errors: [] };

function print(extra: Record<string, unknown> = {}): void {
  const seconds = Number(((performance.now() - started) / 1000).toFixed(2));
  process.stdout.write(`${JSON.stringify({ ...out, ...extra, seconds }, null, 2)}\n`, () => process.exit(0));
}

/** Every enumerable field of a Dawn object (getters live on the prototype), as plain JSON values. */
function plain(o: object): Record<string, unknown> {
  const r: Record<string, unknown> = {};
  for (const k in o) {
    const v = (o as Record<string, unknown>)[k];
    if (typeof v === 'function') continue;
    r[k] = Array.isArray(v) ? v.map((x) => (x !== null && typeof x === 'object' ? plain(x as object) : x)) : v;
  }
  return r;
}

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** A GpuContext around our own device, so the project's matmul builder can dispatch on it. */
function contextFor(device: GPUDevice, adapter: GPUAdapter): GpuContext {
  const l = device.limits;
  const caps: GpuCapabilities = {
    runtime: 'node',
    vendor: adapter.info.vendor,
    architecture: adapter.info.architecture,
    description: adapter.info.description,
    f16: device.features.has('shader-f16'),
    subgroups: device.features.has('subgroups'),
    subgroupMatrix: null,
    features: [...device.features].map(String).sort(),
    limits: {
      maxBufferSize: l.maxBufferSize,
      maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
      maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
      maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
      maxComputeWorkgroupSizeX: l.maxComputeWorkgroupSizeX,
      maxComputeWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
      maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage,
    },
    isSoftware: /llvmpipe|lavapipe|swiftshader|software/i.test(`${adapter.info.description} ${adapter.info.architecture}`),
  };
  let lost = false;
  const lostP = device.lost.then((i) => {
    lost = true;
    return i;
  });
  return { device, caps, lost: lostP, isLost: () => lost };
}

function upload(device: GPUDevice, label: string, data: ArrayBufferView, usage = GPUBufferUsage.STORAGE): GPUBuffer {
  const size = Math.max(16, Math.ceil(data.byteLength / 16) * 16);
  const buf = device.createBuffer({ label, size, usage: usage | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
  device.queue.writeBuffer(buf, 0, data.buffer, data.byteOffset, data.byteLength);
  return buf;
}

/** The validation and memory errors of `f`, as one string (null when none), plus its result. */
async function scoped<T>(device: GPUDevice, f: () => T | Promise<T>): Promise<{ value?: T; error: string | null }> {
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  let value: T | undefined;
  let thrown: string | null = null;
  try {
    value = await f();
  } catch (e) {
    thrown = message(e);
  }
  const validation = await device.popErrorScope();
  const oom = await device.popErrorScope();
  const error = [thrown, validation?.message, oom ? `out of memory: ${oom.message}` : null].filter(Boolean).join('; ');
  return { value, error: error || null };
}

interface Operands {
  shape: Shape;
  a: { bits: Uint16Array; values: Float32Array };
  w: { bits: Uint16Array; values: Float32Array };
  entries: Array<[number, number]>;
}

function operands(shape: Shape, samples: number): Operands {
  return {
    shape,
    a: randomHalves(shape.m * shape.k, 1),
    w: randomHalves(shape.n * shape.k, 2),
    entries: sampleEntries(shape.m, shape.n, samples, 3),
  };
}

/** The operands on the GPU, uploaded once per shape and input types and shared by every kernel. */
class InputBuffers {
  private readonly made = new Map<string, { a: GPUBuffer; w: GPUBuffer }>();
  constructor(private readonly device: GPUDevice) {}
  get(o: Operands, types: { a: 'f16' | 'f32'; w: 'f16' | 'f32' }): { a: GPUBuffer; w: GPUBuffer } {
    const key = `${o.shape.name}:${types.a}:${types.w}`;
    let b = this.made.get(key);
    if (!b) {
      const as = (x: { bits: Uint16Array; values: Float32Array }, t: 'f16' | 'f32'): ArrayBufferView => (t === 'f16' ? x.bits : x.values);
      b = { a: upload(this.device, `probe.a ${key}`, as(o.a, types.a)), w: upload(this.device, `probe.w ${key}`, as(o.w, types.w)) };
      this.made.set(key, b);
    }
    return b;
  }
}

/** Checks and times one kernel on one shape; its output buffer is freed before it returns. */
async function measure(
  device: GPUDevice,
  inputs: InputBuffers,
  o: Operands,
  reps: number,
  build: (a: GPUBuffer, w: GPUBuffer, c: GPUBuffer) => Promise<{ pipeline: GPUComputePipeline; bind: GPUBindGroup; grid: [number, number] }>,
  /** What goes up for A and W: f16 bits or f32 values, as the kernel reads them. */
  types: { a: 'f16' | 'f32'; w: 'f16' | 'f32' },
  resultType: 'f16' | 'f32',
): Promise<ShapeResult> {
  const { shape } = o;
  const r: ShapeResult = { shape: shape.name, m: shape.m, k: shape.k, n: shape.n };
  const bufs: GPUBuffer[] = [];
  try {
    const outBytes = shape.m * shape.n * (resultType === 'f16' ? 2 : 4);
    const made = await scoped(device, async () => {
      const { a, w } = inputs.get(o, types);
      const c = device.createBuffer({ label: 'probe.c', size: Math.ceil(outBytes / 16) * 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
      bufs.push(c);
      return { c, ...(await build(a, w, c)) };
    });
    if (!made.value || made.error) {
      r.error = made.error ?? 'no pipeline';
      return r;
    }
    const { c, pipeline, bind, grid } = made.value;
    // One dispatch to check (and warm up), then the timed pass.
    const first = await scoped(device, () => timeDispatches(device, pipeline, bind, grid, 1));
    if (first.error) {
      r.error = first.error;
      return r;
    }
    const raw = await readBack(device, c, outBytes);
    const f16 = resultType === 'f16' ? new Uint16Array(raw) : null;
    const f32 = resultType === 'f32' ? new Float32Array(raw) : null;
    const got = (row: number, col: number): number => (f16 ? f16BitsToF32(f16[row * shape.n + col]) : f32![row * shape.n + col]);
    r.check = checkEntries(got, o.a.values, o.w.values, shape.k, o.entries);
    const timed = await scoped(device, () => timeDispatches(device, pipeline, bind, grid, reps));
    if (timed.error || !timed.value) {
      r.error = timed.error ?? 'timing failed';
      return r;
    }
    r.timing = { ms: Number(timed.value.ms.toPrecision(4)), tflops: tflops(shape.m, shape.n, shape.k, timed.value.ms), method: timed.value.method };
  } catch (e) {
    r.error = message(e);
  } finally {
    for (const b of bufs) b.destroy();
  }
  return r;
}

async function compile(device: GPUDevice, label: string, code: string): Promise<{ pipeline?: GPUComputePipeline; messages: string[]; error?: string }> {
  const module = device.createShaderModule({ label, code });
  const info = await module.getCompilationInfo();
  const messages = info.messages.map((m) => `${m.type} ${m.lineNum}:${m.linePos} ${m.message}`);
  if (info.messages.some((m) => m.type === 'error')) return { messages, error: 'shader did not compile' };
  try {
    const pipeline = await device.createComputePipelineAsync({ label, layout: 'auto', compute: { module, entryPoint: 'main' } });
    return { pipeline, messages };
  } catch (e) {
    return { messages, error: message(e) };
  }
}

/** f16 x f16 -> f32 first (what training would use), then f16 results, then f32 inputs. */
export function configOrder(configs: MatrixConfig[]): MatrixConfig[] {
  const rank = (c: MatrixConfig): number => (c.componentType === 'f16' ? (c.resultComponentType === 'f32' ? 0 : 1) : 2);
  return configs.filter(usable).sort((x, y) => rank(x) - rank(y) || y.M * y.N * y.K - x.M * x.N * x.K);
}

/** `--assume-configs type:result:MxNxK,...` (the null backend lists none). */
export function parseConfigs(spec: string): MatrixConfig[] {
  return spec.split(',').map((item) => {
    const m = /^(\w+):(\w+):(\d+)x(\d+)x(\d+)$/.exec(item.trim());
    if (!m) throw new Error(`--assume-configs: '${item}' is not type:result:MxNxK (e.g. f16:f32:16x16x16)`);
    return { componentType: m[1], resultComponentType: m[2], M: Number(m[3]), N: Number(m[4]), K: Number(m[5]) };
  });
}

const configName = (c: MatrixConfig): string => `${c.componentType}->${c.resultComponentType} ${c.M}x${c.N}x${c.K}`;

export interface ProbeOptions {
  shapes: Shape[];
  reps: number;
  samples: number;
  /** Seconds after which no new kernel or shape is started. */
  budgetS: number;
  baseline: boolean;
  /** A Dawn backend to force ('null': no GPU work, for plumbing checks). */
  backend?: string;
  /** Configs to use instead of the adapter's (the null backend lists none). */
  assumedConfigs?: MatrixConfig[];
}

/** Fills `out` as it goes (so a SIGTERM can print what finished) and resolves when done; never throws for a GPU failure. */
export async function probe(o: ProbeOptions, out: Record<string, unknown>): Promise<void> {
  const t0 = performance.now();
  const errors: string[] = [];
  out.offered = false;
  out.errors = errors;
  const { shapes, reps, samples, budgetS, baseline } = o;
  out.settings = { rows: shapes[0]?.m ?? null, shapes, reps, samples, budgetS, toggles: TOGGLES, backend: o.backend ?? null };
  // Dawn's classes (GPUBufferUsage, ...) as globals, as src/gpu/device.ts sets them.
  for (const [k, v] of Object.entries(globals)) if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
  const gpu = create(o.backend ? [...TOGGLES, `backend=${o.backend}`] : TOGGLES);
  instances.push(gpu);
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) {
    errors.push('no adapter');
    return;
  }
  const info = plain(adapter.info);
  const features = [...adapter.features].map(String).sort();
  const listed = ((info.subgroupMatrixConfigs as Array<Record<string, unknown>> | undefined) ?? []).map((c) => c as unknown as MatrixConfig);
  const configs = o.assumedConfigs ?? listed;
  if (o.assumedConfigs) out.assumedConfigs = true;
  const subgroupSize = Number(info.subgroupMaxSize ?? 32);
  out.adapter = { description: info.description, vendor: info.vendor, architecture: info.architecture, subgroupMinSize: info.subgroupMinSize, subgroupMaxSize: info.subgroupMaxSize };
  out.features = features;
  out.configs = configs;
  out.offered = features.includes(FEATURE);
  log(`adapter: ${String(info.description)}; ${FEATURE}: ${out.offered ? `offered, configs ${configs.map(configName).join(', ') || 'none'}` : 'not offered'}`);

  const want = [FEATURE, 'shader-f16', 'subgroups', 'timestamp-query'].filter((f) => features.includes(f)) as GPUFeatureName[];
  const limitNames = ['maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX', 'maxStorageBufferBindingSize', 'maxBufferSize'] as const;
  const requiredLimits: Record<string, number> = {};
  for (const n of limitNames) requiredLimits[n] = adapter.limits[n];
  let device: GPUDevice;
  try {
    device = await adapter.requestDevice({ requiredFeatures: want, requiredLimits, label: 'subgroup-matrix-probe' });
  } catch (e) {
    out.device = { ok: false, requested: want, error: message(e) };
    return;
  }
  out.device = { ok: true, features: [...device.features].map(String).sort(), workgroupStorageBytes: device.limits.maxComputeWorkgroupStorageSize };
  device.addEventListener('uncapturederror', (ev) => errors.push(`uncaptured: ${(ev as GPUUncapturedErrorEvent).error.message}`));
  void device.lost.then((l) => errors.push(`device lost: ${l.reason} ${l.message}`));
  const ctx = contextFor(device, adapter);
  const ops = shapes.map((s) => operands(s, samples));
  const inputs = new InputBuffers(device);
  const late = (): boolean => (performance.now() - t0) / 1000 > budgetS || ctx.isLost();

  if (baseline) {
    // The project's tiled matmul: f32 activations, f16 weights [out, in], f32 output (src/kernels/matmul).
    const results: ShapeResult[] = [];
    out.baseline = { kernel: `matmul_tiled (src/kernels/matmul): f32 x, ${ctx.caps.f16 ? 'f16' : 'packed f16'} W [n, k], f32 y`, results };
    for (const o of ops) {
      if (late()) {
        results.push({ shape: o.shape.name, m: o.shape.m, k: o.shape.k, n: o.shape.n, skipped: 'time budget spent' });
        continue;
      }
      log(`baseline ${o.shape.name} ${o.shape.m}x${o.shape.n}x${o.shape.k}`);
      results.push(
        await measure(
          device,
          inputs,
          o,
          reps,
          async (a, w, c) => {
            const d = await matmul(ctx, { x: a, W: w, y: c, n: o.shape.m, inDim: o.shape.k, outDim: o.shape.n, kernel: 'tiled' });
            const bind = device.createBindGroup({ layout: d.pipeline.getBindGroupLayout(0), entries: d.buffers.map((buffer, binding) => ({ binding, resource: { buffer } })) });
            return { pipeline: d.pipeline, bind, grid: [d.workgroups[0], d.workgroups[1] ?? 1] };
          },
          // The same operands: A's halves as f32 values, W as its f16 bits.
          { a: 'f32', w: 'f16' },
          'f32',
        ),
      );
    }
  }

  const variants: Array<Record<string, unknown>> = [];
  out.variants = variants;
  if (out.offered) {
    const skippedConfigs = configs.filter((c) => !usable(c)).map(configName);
    if (skippedConfigs.length) out.skippedConfigs = { configs: skippedConfigs, why: 'integer component types: no kernel written for them' };
    if (!device.features.has('subgroups')) errors.push('no `subgroups` feature: the kernels need @builtin(subgroup_id)');
    for (const cfg of configOrder(configs)) {
      if (cfg.componentType === 'f16' && !device.features.has('shader-f16')) {
        variants.push({ config: cfg, name: '*', skipped: 'shader-f16 not on the device' });
        continue;
      }
      for (const v of VARIANTS) {
        const entry: Record<string, unknown> = { name: v.name, config: cfg, block: geometry(cfg, v, subgroupSize) };
        variants.push(entry);
        const problem = variantProblem(cfg, v, subgroupSize);
        if (problem) {
          entry.skipped = problem;
          continue;
        }
        if (late()) {
          entry.skipped = 'time budget spent';
          continue;
        }
        const label = `sgm ${v.name} ${configName(cfg)}`;
        log(label);
        const compiled = await scoped(device, () => compile(device, label, subgroupMatrixWgsl(cfg, v, subgroupSize)));
        entry.messages = compiled.value?.messages ?? [];
        const pipeline = compiled.value?.pipeline;
        if (!pipeline) {
          entry.error = [compiled.value?.error, compiled.error].filter(Boolean).join('; ') || 'no pipeline';
          continue;
        }
        const results: ShapeResult[] = [];
        entry.results = results;
        for (const o of ops) {
          const { m, n, k } = o.shape;
          const skip = shapeProblem(cfg, v, subgroupSize, m, n, k) ?? (late() ? 'time budget spent' : null);
          if (skip) {
            results.push({ shape: o.shape.name, m, k, n, skipped: skip });
            continue;
          }
          const g = geometry(cfg, v, subgroupSize);
          const dims = new Uint32Array([m, n, k, 0]);
          results.push(
            await measure(
              device,
              inputs,
              o,
              reps,
              async (a, w, c) => {
                const u = upload(device, 'probe.dims', dims, GPUBufferUsage.UNIFORM);
                const bind = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [a, w, c, u].map((buffer, binding) => ({ binding, resource: { buffer } })) });
                return { pipeline, bind, grid: [n / g.blockN, m / g.blockM] };
              },
              { a: v.aF32 ? 'f32' : (cfg.componentType as 'f16' | 'f32'), w: cfg.componentType as 'f16' | 'f32' },
              cfg.resultComponentType as 'f16' | 'f32',
            ),
          );
          const last = results[results.length - 1];
          log(`  ${o.shape.name}: ${last.timing ? `${last.timing.tflops} TFLOP/s` : (last.error ?? last.skipped)}${last.check ? `, max rel error ${last.check.maxRelError}` : ''}`);
        }
      }
    }
  }
  out.best = bestPerShape(shapes, (out.baseline as { results: ShapeResult[] } | undefined)?.results ?? [], variants);
}

/** Per shape: the fastest variant whose sampled entries are within `maxErr` of float64 (relative to sum |products|), against the baseline. */
export function bestPerShape(shapes: Shape[], baseline: ShapeResult[], variants: Array<Record<string, unknown>>, maxErr = 0.005): Array<Record<string, unknown>> {
  return shapes.map((s) => {
    let best: { variant: string; config: string; tflops: number; maxRelError: number | null } | null = null;
    for (const v of variants) {
      const r = ((v.results as ShapeResult[] | undefined) ?? []).find((x) => x.shape === s.name);
      if (!r?.timing || !r.check || r.check.nonFinite > 0 || r.check.maxErrorOverAbsSum > maxErr) continue;
      if (!best || r.timing.tflops > best.tflops) best = { variant: String(v.name), config: configName(v.config as MatrixConfig), tflops: r.timing.tflops, maxRelError: r.check.maxRelError };
    }
    const b = baseline.find((x) => x.shape === s.name);
    const base = b?.timing && b.check && b.check.nonFinite === 0 && b.check.maxErrorOverAbsSum <= maxErr ? b.timing.tflops : null;
    return { shape: s.name, m: s.m, k: s.k, n: s.n, baselineTflops: base, best, speedup: best && base ? Number((best.tflops / base).toPrecision(3)) : null };
  });
}

async function main(): Promise<void> {
  const assumed = flag('assume-configs', '');
  await probe(
    {
      shapes: parseShapes(flag('shapes', DEFAULT_SHAPES), Number(flag('rows', '768'))),
      reps: Math.max(1, Number(flag('reps', '10'))),
      samples: Math.max(2, Number(flag('samples', '48'))),
      budgetS: Number(flag('budget-s', '25')),
      baseline: flag('baseline', '1') !== '0',
      backend: flag('backend', '') || undefined,
      assumedConfigs: assumed ? parseConfigs(assumed) : undefined,
    },
    out,
  );
  print();
}

// Only when run (the kit bundles it as its entry; tests import the pure parts).
if (process.argv[1] && /subgroup-matrix-probe|sgm-probe/.test(process.argv[1])) {
  // The kit's time cap: print what finished.
  process.on('SIGTERM', () => print({ interrupted: 'SIGTERM' }));
  main().catch((e: unknown) => {
    const errors = (out.errors ??= []) as string[];
    errors.push(`probe failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    log(String(errors[errors.length - 1]));
    print();
  });
}
