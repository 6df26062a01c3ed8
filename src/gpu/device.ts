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

async function getNavigatorGpu(): Promise<{ gpu: GPU; runtime: 'browser' | 'node' }> {
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
  nodeGpu ??= mod.create(nodeDawnFlags(process.env));
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
 */
export function nodeDawnFlags(env: Record<string, string | undefined>): string[] {
  const v = env.AGENTFLOW_NVIDIA_F16;
  if (v !== undefined && v !== '' && v !== '0' && v !== '1') {
    throw new WebGpuUnavailableError(`AGENTFLOW_NVIDIA_F16 must be 0 or 1, got '${v}'`);
  }
  return v === '0' ? [] : ['enable-dawn-features=vulkan_enable_f16_on_nvidia'];
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
  const { gpu, runtime } = await getNavigatorGpu();
  const adapter = await gpu.requestAdapter({ powerPreference: options.powerPreference ?? 'high-performance' });
  if (!adapter) throw new WebGpuUnavailableError(runtime === 'node' ? NODE_HELP : BROWSER_HELP);

  const wantF16 = options.f16 !== false && adapter.features.has('shader-f16');
  const wantSubgroups = options.subgroups !== false && adapter.features.has('subgroups');
  const requiredFeatures: GPUFeatureName[] = [];
  if (wantF16) requiredFeatures.push('shader-f16');
  if (wantSubgroups) requiredFeatures.push('subgroups' as GPUFeatureName);
  if (adapter.features.has('timestamp-query')) requiredFeatures.push('timestamp-query');

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
    `max buffer: ${mb(caps.limits.maxBufferSize)}, max storage binding: ${mb(caps.limits.maxStorageBufferBindingSize)}`,
    `workgroup memory: ${caps.limits.maxComputeWorkgroupStorageSize} B, invocations: ${caps.limits.maxComputeInvocationsPerWorkgroup}`,
  ].join('\n');
}
