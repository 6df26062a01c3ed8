// One GPU context per test file and per weight path. Tests of kernels with an f16 path run both paths
// wherever the adapter allows: native f16 (lavapipe, real GPUs) and the packed u32 fallback (everywhere).

import { requestGpu, type GpuContext } from '../../src/gpu/device';

const contexts = new Map<string, Promise<GpuContext>>();

export function gpuFor(path: 'native' | 'packed'): Promise<GpuContext> {
  let c = contexts.get(path);
  if (!c) {
    c = requestGpu({ f16: path === 'native' });
    contexts.set(path, c);
  }
  return c;
}

/** The weight paths this adapter can run: 'packed' always, 'native' where shader-f16 exists. */
export async function weightPaths(): Promise<Array<'native' | 'packed'>> {
  const native = await gpuFor('native');
  return native.caps.f16 ? ['native', 'packed'] : ['packed'];
}

export const isBrowser = typeof window !== 'undefined' && typeof document !== 'undefined';

/**
 * The cases of a GPU test that the browser project runs too: all of them on Dawn, the ones `inBrowser` keeps in
 * Chromium. SwiftShader compiles a shader many times slower than lavapipe (runtime-batch's 4-bit cases: 100 s
 * there, 10 s on Dawn), and Dawn's packed device (no shader-f16) already runs the WGSL Chromium gets, so each
 * file keeps in the browser the cases that reach every kernel variant Chromium's limits select, and leaves the
 * sweeps of shapes, tiles and models to Dawn.
 */
export function alsoInBrowser<T>(cases: readonly T[], inBrowser: (c: T, i: number) => boolean): T[] {
  return isBrowser ? cases.filter(inBrowser) : [...cases];
}
