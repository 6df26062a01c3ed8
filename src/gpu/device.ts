// The one place that creates a GPUDevice. Engines, kernels and tests take a GpuContext from here and
// never call requestAdapter/requestDevice themselves, so features and limits are negotiated once.
import { AgentFlowError, type ErrorCategory } from '../errors';

export interface GpuCapabilities {
  /** 'browser' (navigator.gpu) or 'node' (the `webgpu` package, Dawn). */
  runtime: 'browser' | 'node';
  vendor: string;
  architecture: string;
  description: string;
  /** The adapter offers `shader-f16` and the device was created with it. */
  f16: boolean;
  /** The adapter offers `subgroups` and the device was created with it. */
  subgroups: boolean;
  /**
   * The f16 x f16 -> f32 matrix shape of `chromium-experimental-subgroup-matrix` (tensor cores) when the
   * device was created with it (opt-in: GpuRequestOptions.subgroupMatrix), and the subgroup size its kernels
   * are built for; null otherwise.
   */
  subgroupMatrix: SubgroupMatrixShape | null;
  features: string[];
  limits: {
    maxBufferSize: number;
    maxStorageBufferBindingSize: number;
    maxComputeWorkgroupStorageSize: number;
    maxComputeInvocationsPerWorkgroup: number;
    maxComputeWorkgroupSizeX: number;
    maxComputeWorkgroupsPerDimension: number;
    maxStorageBuffersPerShaderStage: number;
  };
  isSoftware: boolean;
}

/** One f16 -> f32 config of the adapter's `subgroupMatrixConfigs`, and the adapter's (fixed) subgroup size. */
export interface SubgroupMatrixShape {
  M: number;
  N: number;
  K: number;
  subgroupSize: number;
  /**
   * Diagnostics only (GpuRequestOptions.emulateSubgroupMatrix): no such feature; the tensor-core kernels are
   * built with each matrix operation as per-lane loops, so a GPU without it (lavapipe) runs their numerics.
   */
  emulated?: true;
}

export interface GpuContext {
  device: GPUDevice;
  caps: GpuCapabilities;
  /** Resolves when the device is lost; the value says why. Never rejects. */
  lost: Promise<GPUDeviceLostInfo>;
  /** True once `lost` has resolved: callers check it before queueing work to fail with a clear error. */
  isLost(): boolean;
}

export interface GpuRequestOptions {
  /** Ask for `shader-f16` when offered (default true). Set false to force the packed-f16 fallback path. */
  f16?: boolean;
  /** Ask for `subgroups` when offered (default true). */
  subgroups?: boolean;
  powerPreference?: GPUPowerPreference;
  /**
   * Ask for `chromium-experimental-subgroup-matrix` (tensor cores; an unsafe, experimental Dawn feature) when
   * offered with an f16 -> f32 config, `shader-f16` and `subgroups`. Default: in Node on (off with
   * AGENTFLOW_SUBGROUP_MATRIX=0); in a page off (a page passes true to opt in).
   * In Node the adapter offers it only if the process's Dawn instance has `allow_unsafe_apis`: the instance
   * is made by the first request, with that toggle when the variable is set or that request passes true.
   */
  subgroupMatrix?: boolean;
  /**
   * Diagnostics only (bench/f16-agreement.ts --emulate-sgm): claim subgroup matrices of this shape without the
   * feature, the kernels emulating each matrix operation (SubgroupMatrixShape.emulated). Needs `shader-f16`;
   * slow (software loops), never for real work.
   */
  emulateSubgroupMatrix?: SubgroupMatrixShape;
}

export class WebGpuUnavailableError extends AgentFlowError {
  override readonly category: ErrorCategory = 'webgpu-unavailable';
  constructor(message: string) {
    super(message);
    this.name = 'WebGpuUnavailableError';
  }
}

export class GpuDeviceLostError extends AgentFlowError {
  override readonly category: ErrorCategory = 'device-lost';
  constructor(public readonly reason: string, message: string) {
    super(message);
    this.name = 'GpuDeviceLostError';
  }
}

const BROWSER_HELP =
  'WebGPU is not available in this browser. Use Chrome or Edge 113+ (desktop) or Chrome 121+ (Android), ' +
  'Safari 26+, or Firefox 141+ on Windows. On Linux Chrome, enable chrome://flags/#enable-unsafe-webgpu ' +
  'and chrome://flags/#enable-vulkan. The page must be served over https or from localhost.';

const NODE_HELP =
  'No WebGPU adapter in Node. The `webgpu` package (Dawn) needs a Vulkan driver: on Debian 12 install ' +
  "mesa-vulkan-drivers 25.x from bookworm-backports (`bash scripts/setup-machine.sh` does it) and set " +
  'VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.json, or run on a machine with a GPU driver.';

async function getNavigatorGpu(unsafeApis: boolean): Promise<{ gpu: GPU; runtime: 'browser' | 'node' }> {
  const nav = (globalThis as { navigator?: Navigator }).navigator;
  if (nav && 'gpu' in nav && nav.gpu) return { gpu: nav.gpu, runtime: 'browser' };
  const isNode = typeof process !== 'undefined' && !!process.versions?.node;
  if (!isNode) throw new WebGpuUnavailableError(BROWSER_HELP);
  // A variable specifier keeps bundlers from pulling Dawn's native addon into browser builds.
  const specifier = 'webgpu';
  let mod: { create(flags: string[]): GPU; globals: Record<string, unknown> };
  try {
    mod = await import(/* @vite-ignore */ specifier);
  } catch (e) {
    throw new WebGpuUnavailableError(`Cannot load the 'webgpu' npm package (${String(e)}). Run npm install.`);
  }
  // Dawn's classes (GPUBufferUsage, ...) are expected as globals by code written for the browser.
  for (const [k, v] of Object.entries(mod.globals)) {
    if (!(k in globalThis)) (globalThis as Record<string, unknown>)[k] = v;
  }
  // Dawn's instance must outlive every device made from it: if it is garbage-collected while a device
  // is in use, Dawn's event threads crash the process. Keep it for the life of the process.
  nodeGpu ??= mod.create(nodeDawnFlags(process.env, unsafeApis));
  return { gpu: nodeGpu, runtime: 'node' };
}

/**
 * The Dawn instance flags for Node. Dawn's Vulkan backend hides `shader-f16` on every NVIDIA GPU (a guard
 * for f16 conformance-test crashes, crbug.com/42251215) unless the `vulkan_enable_f16_on_nvidia` toggle is
 * set: without it an H100/H200 ran every kernel's f32 path and read f16 weights as packed u32 (the 2026-11-27
 * kit call). Our kernels' f16 paths are checked against float64 references (lavapipe) and the GPU kit's
 * `f16-check` part compares them with the f32 path on the GPU itself, so Node turns the toggle on;
 * AGENTFLOW_NVIDIA_F16=0 turns it off. Other vendors ignore it. A page cannot set it: Chrome on Linux/NVIDIA
 * needs `--enable-dawn-features=vulkan_enable_f16_on_nvidia` (README, Requirements).
 * `allow_unsafe_apis` (which exposes subgroup matrices, Dawn's experimental tensor-core feature) unless
 * AGENTFLOW_SUBGROUP_MATRIX=0 (then only when a request passes `unsafeApis`): the tensor-core path is Node's
 * default where offered (requestGpu), after the kit's f16-check compared it with the f32 path on an H200.
 */
export function nodeDawnFlags(env: Record<string, string | undefined>, unsafeApis = false): string[] {
  const features: string[] = [];
  if (switchOn(env, 'AGENTFLOW_NVIDIA_F16', true)) features.push('vulkan_enable_f16_on_nvidia');
  if (unsafeApis || switchOn(env, 'AGENTFLOW_SUBGROUP_MATRIX', true)) features.unshift('allow_unsafe_apis');
  // Dawn rounds timestamps down to 65.5 us steps (a browser's guard against timing attacks; 2026-11-27 kit
  // tables showed kernel times in multiples of 6.55 us over 10 reps): Node's profiles want the real ones.
  return [...(features.length ? [`enable-dawn-features=${features.join(',')}`] : []), 'disable-dawn-features=timestamp_quantization'];
}

/** A 0/1 environment switch; unset or empty: `fallback`. */
function switchOn(env: Record<string, string | undefined>, name: string, fallback: boolean): boolean {
  const v = env[name];
  if (v !== undefined && v !== '' && v !== '0' && v !== '1') {
    throw new WebGpuUnavailableError(`${name} must be 0 or 1, got '${v}'`);
  }
  return v === undefined || v === '' ? fallback : v === '1';
}

const SUBGROUP_MATRIX = 'chromium-experimental-subgroup-matrix';

/** What requestGpu reads of an adapter to choose a subgroup-matrix config (a fake in unit tests). */
export interface SubgroupMatrixAdapter {
  features: { has(name: string): boolean };
  info?: { subgroupMinSize?: number; subgroupMaxSize?: number; subgroupMatrixConfigs?: unknown };
}

/**
 * The shape the subgroup-matrix kernels use on this adapter, or null: the feature must be offered with
 * `shader-f16` and `subgroups`, with an f16 x f16 -> f32 config (16x16x16 preferred, else the largest), and a
 * fixed subgroup size (the kernels count subgroups per workgroup).
 */
export function chooseSubgroupMatrix(adapter: SubgroupMatrixAdapter): SubgroupMatrixShape | null {
  if (!adapter.features.has(SUBGROUP_MATRIX) || !adapter.features.has('shader-f16') || !adapter.features.has('subgroups')) return null;
  const min = adapter.info?.subgroupMinSize;
  const max = adapter.info?.subgroupMaxSize;
  if (typeof max !== 'number' || min !== max) return null;
  const listed = adapter.info?.subgroupMatrixConfigs;
  const configs = (Array.isArray(listed) ? listed : []) as Array<Record<string, unknown>>;
  const fits = configs
    .filter((c) => c.componentType === 'f16' && c.resultComponentType === 'f32')
    .map((c) => ({ M: Number(c.M), N: Number(c.N), K: Number(c.K) }))
    .filter((c) => [c.M, c.N, c.K].every((d) => Number.isInteger(d) && d > 0));
  const rank = (c: { M: number; N: number; K: number }): number => (c.M === 16 && c.N === 16 && c.K === 16 ? Infinity : c.M * c.N * c.K);
  const best = fits.sort((a, b) => rank(b) - rank(a))[0];
  return best ? { ...best, subgroupSize: max } : null;
}

let nodeGpu: GPU | undefined;
// Adapters are kept alive for the same reason as the instance.
const adapters = new Set<GPUAdapter>();

const LIMIT_NAMES = [
  'maxBufferSize',
  'maxStorageBufferBindingSize',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupsPerDimension',
  'maxStorageBuffersPerShaderStage',
] as const;

/**
 * Returns a new GpuContext. Asks for `shader-f16` and `subgroups` when the adapter offers them, and for
 * the adapter's maximum buffer, workgroup-memory and binding limits (large models need them).
 */
export async function requestGpu(options: GpuRequestOptions = {}): Promise<GpuContext> {
  const { gpu, runtime } = await getNavigatorGpu(options.subgroupMatrix === true);
  const adapter = await gpu.requestAdapter({ powerPreference: options.powerPreference ?? 'high-performance' });
  if (!adapter) throw new WebGpuUnavailableError(runtime === 'node' ? NODE_HELP : BROWSER_HELP);

  const wantF16 = options.f16 !== false && adapter.features.has('shader-f16');
  const wantSubgroups = options.subgroups !== false && adapter.features.has('subgroups');
  const requiredFeatures: GPUFeatureName[] = [];
  if (wantF16) requiredFeatures.push('shader-f16');
  if (wantSubgroups) requiredFeatures.push('subgroups' as GPUFeatureName);
  if (adapter.features.has('timestamp-query')) requiredFeatures.push('timestamp-query');
  // Node's default where the adapter offers them (AGENTFLOW_SUBGROUP_MATRIX=0 turns them off): on an H200
  // (2026-11-27, kit of 44cd019) the training step took 1.02 s against 1.47 s on the f32 tiles, logits agreed with
  // the f32 path to 2e-5 of their range and LoRA gradients to 5.3e-4 (relative L2). A page opts in itself: it
  // cannot be measured here, and Chrome exposes the feature only behind its unsafe-WebGPU flag.
  const sgmDefault = runtime === 'node' && switchOn(process.env, 'AGENTFLOW_SUBGROUP_MATRIX', true);
  const sgm = wantF16 && wantSubgroups && (options.subgroupMatrix ?? sgmDefault) ? chooseSubgroupMatrix(adapter) : null;
  if (sgm) requiredFeatures.push(SUBGROUP_MATRIX as GPUFeatureName);

  const requiredLimits: Record<string, number> = {};
  for (const name of LIMIT_NAMES) requiredLimits[name] = adapter.limits[name];

  const device = await adapter.requestDevice({ requiredFeatures, requiredLimits, label: 'agentflow' });
  adapters.add(adapter);
  let lostFlag = false;
  const lost = device.lost.then((info) => {
    lostFlag = true;
    return info;
  });

  const info = adapter.info ?? ({} as GPUAdapterInfo);
  const limits = {} as GpuCapabilities['limits'];
  for (const name of LIMIT_NAMES) limits[name] = device.limits[name];
  const description = info.description ?? '';
  const caps: GpuCapabilities = {
    runtime,
    vendor: info.vendor ?? '',
    architecture: info.architecture ?? '',
    description,
    f16: device.features.has('shader-f16'),
    subgroups: device.features.has('subgroups'),
    subgroupMatrix: sgm && device.features.has(SUBGROUP_MATRIX as GPUFeatureName) ? sgm : options.emulateSubgroupMatrix && device.features.has('shader-f16') ? { ...options.emulateSubgroupMatrix, emulated: true } : null,
    features: [...device.features].map(String).sort(),
    limits,
    isSoftware: /llvmpipe|lavapipe|swiftshader|software/i.test(`${description} ${info.architecture ?? ''} ${info.vendor ?? ''}`),
  };
  return { device, caps, lost, isLost: () => lostFlag };
}

let shared: Promise<GpuContext> | undefined;

/** The process-wide (or page-wide) context; created on first use, recreated after a device loss. */
export function getGpu(options?: GpuRequestOptions): Promise<GpuContext> {
  if (!shared) {
    shared = requestGpu(options).then((ctx) => {
      void ctx.lost.then(() => {
        shared = undefined;
      });
      return ctx;
    });
    shared.catch(() => {
      shared = undefined;
    });
  }
  return shared;
}

/** Throws a GpuDeviceLostError naming what was being done, if the context's device is gone. */
export function assertDeviceAlive(ctx: GpuContext, doing: string): void {
  if (ctx.isLost()) {
    throw new GpuDeviceLostError('lost', `The GPU device was lost before ${doing}. Reload the model to continue; no data was written.`);
  }
}

export function formatCapabilities(caps: GpuCapabilities): string {
  const mb = (n: number) => `${Math.round(n / 2 ** 20)} MiB`;
  return [
    `runtime: ${caps.runtime}`,
    `adapter: ${[caps.vendor, caps.architecture, caps.description].filter(Boolean).join(' / ') || 'unknown'}`,
    `shader-f16: ${caps.f16 ? 'yes' : 'no (packed f16 fallback)'}`,
    `subgroups: ${caps.subgroups ? 'yes' : 'no'}`,
    `subgroup matrices: ${caps.subgroupMatrix ? `f16 -> f32 ${caps.subgroupMatrix.M}x${caps.subgroupMatrix.N}x${caps.subgroupMatrix.K}` : 'no'}`,
    `max buffer: ${mb(caps.limits.maxBufferSize)}, max storage binding: ${mb(caps.limits.maxStorageBufferBindingSize)}`,
    `workgroup memory: ${caps.limits.maxComputeWorkgroupStorageSize} B, invocations: ${caps.limits.maxComputeInvocationsPerWorkgroup}`,
  ].join('\n');
}
