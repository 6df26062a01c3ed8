// LoRA forward in two dispatches: t = x A^T (down, [N, r], saved for the backward), then
// y += s * t B^T (up). A and B are f32 (trainable), so there is no f16 weight path.
// The down projection reduces over `in` (hundreds to thousands): each of a workgroup's threads strides over
// `in` for LORA_DOWN_ITEMS work items (row, j), and one thread per item adds the 64 partial sums in a
// barrier tree's order (common/tree-sum.wgsl.ts): one barrier for 8 items, where a workgroup per item and
// a barrier tree cost 7 barriers for one (the same bits: same adds in the same order).
// The up projection reduces over r (<= 64): one thread per output element.
import { treeSumWgsl } from '../common/tree-sum.wgsl';

export const LORA_DOWN_WG = 64;
/** Down-projection work items (row, j) per workgroup. */
export const LORA_DOWN_ITEMS = 8;
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
 * The down projection's sum for one (row, j) by a whole workgroup, left in partial[0] (the decode-only
 * norm variant of lora.group.wgsl, whose workgroup also normalises its row). `readA(i)` reads
 * A[j * in + i] (the grouped kernel picks the module's binding), `readX(i)` element i of the row's input
 * (default x itself; the norm variant scales it). Its adds are loraDownItemsWgsl's, in the same order.
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

/**
 * The body of a down projection over LORA_DOWN_ITEMS work items per workgroup, items `count` in all.
 * `locate(idx)` (a WGSL fn the kernel declares) gives the item's vec3(row, module, j); `readA(m, i)` reads
 * element i of module m's A; `store` writes `sum` for (row, m, j). Each item's sum is loraDownSumWgsl's:
 * thread lid adds the terms i = lid, lid + WG, ... in order from 0.0, then the 64 are added as its tree.
 */
export function loraDownItemsWgsl(o: { count: string; readA: (m: string, i: string) => string; store: string }): string {
  return `  let first = (wg.x + wg.y * nwg.x) * ${LORA_DOWN_ITEMS}u;
  if (first >= ${o.count}) { return; }
  for (var g = 0u; g < ${LORA_DOWN_ITEMS}u; g++) {
    var acc = 0.0;
    if (first + g < ${o.count}) {
      let at = locate(first + g);
      let row = at.x;
      let j = at.z;
      for (var i = lid; i < dims.inDim; i += ${LORA_DOWN_WG}u) {
        acc += x[row * dims.inDim + i] * ${o.readA('at.y', 'j * dims.inDim + i')};
      }
    }
    partial[g * ${LORA_DOWN_WG}u + lid] = acc;
  }
  workgroupBarrier();
  if (lid < ${LORA_DOWN_ITEMS}u && first + lid < ${o.count}) {
    let at = locate(first + lid);
    let row = at.x;
    let m = at.y;
    let j = at.z;
    let sum = itemSum(lid * ${LORA_DOWN_WG}u);
    ${o.store}
  }`;
}

/** Workgroup memory of loraDownItemsWgsl and its per-item tree sum. */
export function loraDownItemsSharedWgsl(): string {
  return `var<workgroup> partial: array<f32, ${LORA_DOWN_ITEMS * LORA_DOWN_WG}>;

${treeSumWgsl('itemSum', 'b: u32', (i) => `partial[b + ${i}u]`, LORA_DOWN_WG)}`;
}

export function loraDownWgsl(): string {
  return /* wgsl */ `
struct Dims { n: u32, inDim: u32, rank: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read_write> t: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;

${loraDownItemsSharedWgsl()}

fn locate(idx: u32) -> vec3<u32> {
  let row = idx / dims.rank;
  return vec3<u32>(row, 0u, idx - row * dims.rank);
}

@compute @workgroup_size(${LORA_DOWN_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
${loraDownItemsWgsl({ count: 'dims.n * dims.rank', readA: (_m, i) => `A[${i}]`, store: 't[row * dims.rank + j] = sum;' })}
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
