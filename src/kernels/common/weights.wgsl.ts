// How a kernel reads f16 weights. The bytes in the buffer are the same on both paths (IEEE half, as
// the checkpoint stores them): with `shader-f16` the buffer is declared array<f16>; without it, array<u32>
// and each element is unpacked with unpack2x16float. Arithmetic is f32 on both paths.

export interface WeightPath {
  /** Device has shader-f16. */
  f16: boolean;
}

/** `enable f16;` when the native path is used; must be the first line of a module. */
export function enableF16(p: WeightPath): string {
  return p.f16 ? 'enable f16;\n' : '';
}

/**
 * Declares a read-only f16 weight array at `@group(0) @binding(binding)` named `name`, and a function
 * `name_at(i: u32) -> f32` that returns element i as f32.
 */
export function halfArray(p: WeightPath, binding: number, name: string): string {
  if (p.f16) {
    return /* wgsl */ `
@group(0) @binding(${binding}) var<storage, read> ${name}: array<f16>;
fn ${name}_at(i: u32) -> f32 { return f32(${name}[i]); }
`;
  }
  return /* wgsl */ `
@group(0) @binding(${binding}) var<storage, read> ${name}: array<u32>;
fn ${name}_at(i: u32) -> f32 {
  let pair = unpack2x16float(${name}[i >> 1u]);
  return select(pair.x, pair.y, (i & 1u) == 1u);
}
`;
}
