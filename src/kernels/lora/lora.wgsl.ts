// LoRA forward in two dispatches: t = x A^T (down, [N, r], saved for the backward), then
// y += s * t B^T (up). A and B are f32 (trainable), so there is no f16 weight path.
// The down projection reduces over `in` (hundreds to thousands): one workgroup per (row, j).
// The up projection reduces over r (<= 64): one thread per output element.

export const LORA_DOWN_WG = 64;
export const LORA_UP_WG = 256;

/**
 * A workgroup's sum of term(i) over i < dims.inDim, left in partial[0]: each thread strides over the range
 * into `acc`, then a tree reduction in `partial`. Ends with a barrier, so partial[0] is visible to all.
 */
export function strideSumWgsl(term: (index: string) => string, acc = 'acc'): string {
  return `  var ${acc} = 0.0;
  for (var i = lid; i < dims.inDim; i += ${LORA_DOWN_WG}u) {
    ${acc} += ${term('i')};
  }
  partial[lid] = ${acc};
  workgroupBarrier();
  for (var s = ${LORA_DOWN_WG / 2}u; s > 0u; s >>= 1u) {
    if (lid < s) { partial[lid] += partial[lid + s]; }
    workgroupBarrier();
  }`;
}

/**
 * The down projection's sum for one (row, j), left in partial[0]. `readA(i)` reads A[j * in + i] (the
 * grouped kernel picks the module's binding), `readX(i)` element i of the row's input (default x itself;
 * the norm variant scales it). Shared by lora.wgsl and lora.group.wgsl so their results are the same bits.
 */
export function loraDownSumWgsl(readA: (index: string) => string, readX: (index: string) => string = (i) => `x[row * dims.inDim + ${i}]`): string {
  return strideSumWgsl((i) => `${readX(i)} * ${readA(`j * dims.inDim + ${i}`)}`);
}

/** The up projection for one output (`row`, `o` in scope): y[at] += scale * sum_j t[row, j] B[o, j]. */
export function loraUpSumWgsl(n: { t: string; B: string; y: string; rank: string; scale: string; at: string }): string {
  return `var acc = 0.0;
  for (var j = 0u; j < ${n.rank}; j++) { acc += ${n.t}[row * ${n.rank} + j] * ${n.B}[o * ${n.rank} + j]; }
  ${n.y}[${n.at}] += ${n.scale} * acc;`;
}

export function loraDownWgsl(): string {
  return /* wgsl */ `
struct Dims { n: u32, inDim: u32, rank: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read_write> t: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;

var<workgroup> partial: array<f32, ${LORA_DOWN_WG}>;

@compute @workgroup_size(${LORA_DOWN_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let idx = wg.x + wg.y * nwg.x;
  if (idx >= dims.n * dims.rank) { return; }
  let row = idx / dims.rank;
  let j = idx - row * dims.rank;
${loraDownSumWgsl((i) => `A[${i}]`)}
  if (lid == 0u) { t[idx] = partial[0]; }
}
`;
}

export function loraUpWgsl(): string {
  return /* wgsl */ `
struct Dims { n: u32, outDim: u32, rank: u32, scale: f32 }
@group(0) @binding(0) var<storage, read> t: array<f32>;
@group(0) @binding(1) var<storage, read> B: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;

@compute @workgroup_size(${LORA_UP_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let idx = (wg.x + wg.y * nwg.x) * ${LORA_UP_WG}u + lid;
  if (idx >= dims.n * dims.outDim) { return; }
  let row = idx / dims.outDim;
  let o = idx - row * dims.outDim;
  ${loraUpSumWgsl({ t: 't', B: 'B', y: 'y', rank: 'dims.rank', scale: 'dims.scale', at: 'idx' })}
}
`;
}
