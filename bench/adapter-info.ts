// npx tsx bench/adapter-info.ts: what the WebGPU adapter in Node (Dawn, the `webgpu` package) offers, as JSON on
// stdout, for the GPU runs' records (issue 17): vendor, architecture, driver description, every feature and
// limit, subgroup sizes, and whether a subgroup-matrix feature (tensor cores through Dawn's
// `chromium-experimental-subgroup-matrix`) is offered. Dawn hides experimental features unless the instance
// is made with the `allow_unsafe_apis` toggle, so the adapter is asked twice: as the benchmarks get it
// (`requestGpu`, no toggles) and with that toggle; where the second offers a subgroup-matrix feature, a
// device is requested with it to see that it really comes up, and its matrix configurations are listed.
import { create, globals } from 'webgpu';
import { nodeDawnFlags, requestGpu } from '../src/gpu/device';
import { log } from './flags';

/** Every enumerable field of a Dawn object (its getters live on the prototype), as plain JSON values. */
function plain(o: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k in o) {
    const v = (o as Record<string, unknown>)[k];
    if (typeof v === 'function') continue;
    out[k] = Array.isArray(v) ? v.map((x) => (x !== null && typeof x === 'object' ? plain(x as object) : x)) : v;
  }
  return out;
}

const isSubgroupMatrix = (f: string): boolean => /subgroup-matrix/.test(f);

async function adapterReport(toggles: string[]): Promise<Record<string, unknown>> {
  // Dawn's instance must outlive its adapters and devices (see src/gpu/device.ts): kept in `instances`.
  const gpu = create(toggles);
  instances.push(gpu);
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) return { toggles, error: 'no adapter' };
  const features = [...adapter.features].map(String).sort();
  const report: Record<string, unknown> = { toggles, info: plain(adapter.info), features, limits: plain(adapter.limits) };
  const matrix = features.filter(isSubgroupMatrix);
  if (matrix.length > 0) {
    try {
      const device = await adapter.requestDevice({ requiredFeatures: matrix as GPUFeatureName[] });
      report.subgroupMatrixDevice = { ok: true, features: [...device.features].map(String).filter(isSubgroupMatrix) };
      device.destroy();
    } catch (e) {
      report.subgroupMatrixDevice = { ok: false, error: String(e) };
    }
  }
  return report;
}

const instances: GPU[] = [];

async function main(): Promise<void> {
  Object.assign(globalThis, globals);
  const plainAdapter = await adapterReport([]);
  // With the f16 toggle the benchmarks' device gets (nodeDawnFlags): on NVIDIA, f16 matrix configs appear only then.
  const unsafe = await adapterReport([['enable-dawn-features=allow_unsafe_apis', ...nodeDawnFlags(process.env).filter((f) => f.startsWith('enable-dawn-features=')).map((f) => f.replace('enable-dawn-features=', ''))].join(',')]);
  const ctx = await requestGpu();
  const offered = (r: Record<string, unknown>): string[] => ((r.features as string[] | undefined) ?? []).filter(isSubgroupMatrix);
  const out = {
    vendor: ctx.caps.vendor,
    architecture: ctx.caps.architecture,
    description: ctx.caps.description,
    software: ctx.caps.isSoftware,
    subgroupMatrix: {
      offered: offered(plainAdapter),
      offeredWithUnsafeApis: offered(unsafe),
      device: unsafe.subgroupMatrixDevice ?? null,
      // The matrix shapes and component types the adapter supports (Dawn's AdapterPropertiesSubgroupMatrixConfigs).
      configs: (unsafe.info as Record<string, unknown> | undefined)?.subgroupMatrixConfigs ?? null,
    },
    // What the benchmarks' device was created with (requestGpu): shader-f16, subgroups, timestamp-query.
    benchDevice: { f16: ctx.caps.f16, subgroups: ctx.caps.subgroups, features: ctx.caps.features, limits: ctx.caps.limits },
    adapter: plainAdapter,
    adapterWithUnsafeApis: { features: unsafe.features, onlyWithUnsafeApis: ((unsafe.features as string[] | undefined) ?? []).filter((f) => !((plainAdapter.features as string[] | undefined) ?? []).includes(f)), info: unsafe.info },
  };
  log(`adapter: ${out.description} (${out.vendor}, ${out.architecture}); subgroup matrix: ${out.subgroupMatrix.offeredWithUnsafeApis.join(', ') || 'not offered'}`);
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`, () => process.exit(0));
}

main().catch((e: Error) => {
  log(`adapter-info failed: ${e.stack ?? e.message}`);
  process.exit(1);
});
