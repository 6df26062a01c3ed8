// LoRA for several modules that read the same input (q, k, v on rms1(x); gate, up on rms2(h)) in one
// dispatch each way instead of one per module: decode runs a few hundred tiny dispatches per token, and on
// a GPU each costs a launch and a barrier whatever its size. Bindings cannot be indexed, so each module's
// A/B/t/y is its own binding and small switch functions pick one; a workgroup works on one item at a time
// (down) and a thread serves a single module (up), so the switch never diverges within the work it guards.
//
// The sums are lora.wgsl.ts's own (loraDownItemsWgsl or, with a norm, loraDownSumWgsl; loraUpSumWgsl), so
// a group gives bit-identical results to the modules run one by one.
import { RMS_SCALE_WGSL, rowRmsWgsl } from '../rmsnorm/rms-scale.wgsl';
import { LORA_DOWN_WG, LORA_UP_WG, loraDownItemsSharedWgsl, loraDownItemsWgsl, loraDownSumWgsl, loraUpSumWgsl } from './lora.wgsl';

/** Most modules in one down group: x + 3 A + 3 t = 7 storage bindings, within WebGPU's default 8. */
export const LORA_GROUP_MAX_DOWN = 3;
/** Most modules in one up group: 2 t + 2 B + 2 y = 6 storage bindings (3 would need 9). */
export const LORA_GROUP_MAX_UP = 2;

const ids = (k: number) => Array.from({ length: k }, (_, m) => m);

/** `fn name(m, i) -> f32` reading element i of binding `${prefix}${m}`. */
function pick(name: string, prefix: string, k: number): string {
  const arms = ids(k - 1).map((m) => `if (m == ${m}u) { return ${prefix}${m}[i]; }`).join(' else ');
  return `fn ${name}(m: u32, i: u32) -> f32 { ${arms}${k > 1 ? ' ' : ''}return ${prefix}${k - 1}[i]; }`;
}

/**
 * t_m[N, r_m] = x[N, in] · A_m^T for m < k; work item (row, j) over the modules' ranks laid end to end.
 * `norm` (decode only): x is first RMS-normalised and scaled by a norm weight, computed by every workgroup
 * for its row (a few hundred floats), so the rmsnorm dispatch before the group disappears; with `storeXn`
 * the row's first workgroup also writes the normalised row to `xn`.
 */
export function loraDownGroupWgsl(k: number, norm: { storeXn: boolean } | null = null): string {
  const decl = [
    ...ids(k).map((m) => `@group(0) @binding(${1 + m}) var<storage, read> A${m}: array<f32>;`),
    ...ids(k).map((m) => `@group(0) @binding(${1 + k + m}) var<storage, read_write> t${m}: array<f32>;`),
  ].join('\n');
  const store = (sum: string) => ids(k)
    .map((m) => `${m > 0 ? 'else ' : ''}${m < k - 1 ? `if (m == ${m}u) ` : ''}{ t${m}[row * rank + j] = ${sum}; }`)
    .join(' ');
  const nb = 2 + 2 * k;
  const normDecl = norm
    ? `@group(0) @binding(${nb}) var<storage, read> normW: array<f32>;${norm.storeXn ? `\n@group(0) @binding(${nb + 1}) var<storage, read_write> xn: array<f32>;` : ''}`
    : '';
  // rstd of the row as rmsnorm.wgsl computes it (rows that would overflow f32 pre-scaled: rms-scale.wgsl.ts).
  const normPrologue = norm
    ? `  ${rowRmsWgsl({ wg: LORA_DOWN_WG, len: 'dims.inDim', read: (i) => `x[row * dims.inDim + ${i}]`, partial: 'partial', eps: 'dims.eps' })}
  workgroupBarrier();
${norm.storeXn ? `  if (idx - row * dims.total == 0u) {
    for (var i = lid; i < dims.inDim; i += ${LORA_DOWN_WG}u) { xn[row * dims.inDim + i] = x[row * dims.inDim + i] * rs_s * rs_k * normW[i]; }
  }
` : ''}`
    : '';
  const readX = (i: string) => `(x[row * dims.inDim + ${i}] * rs_s * rs_k * normW[${i}])`;
  // With a norm (decode: a row or a few), a workgroup per item that normalises its row itself.
  const normMain = `var<workgroup> partial: array<f32, ${LORA_DOWN_WG}>;
${RMS_SCALE_WGSL}

@compute @workgroup_size(${LORA_DOWN_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let idx = wg.x + wg.y * nwg.x;
  if (idx >= dims.n * dims.total) { return; }
  let row = idx / dims.total;
  var j = idx - row * dims.total;
  var ranks = array<u32, 3>(dims.r0, dims.r1, dims.r2);
  var m = 0u;
  while (m < ${k - 1}u && j >= ranks[m]) { j -= ranks[m]; m++; }
  let rank = ranks[m];
${normPrologue}${loraDownSumWgsl((i) => `readA(m, ${i})`, readX)}
  if (lid == 0u) { ${store('partial[0]')} }
}`;
  // Without: LORA_DOWN_ITEMS items per workgroup (lora.wgsl.ts), the same sums.
  const itemsMain = `${loraDownItemsSharedWgsl()}

fn locate(idx: u32) -> vec3<u32> {
  let row = idx / dims.total;
  var j = idx - row * dims.total;
  var ranks = array<u32, 3>(dims.r0, dims.r1, dims.r2);
  var m = 0u;
  while (m < ${k - 1}u && j >= ranks[m]) { j -= ranks[m]; m++; }
  return vec3<u32>(row, m, j);
}

@compute @workgroup_size(${LORA_DOWN_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
${loraDownItemsWgsl({
  count: 'dims.n * dims.total',
  readA: (m, i) => `readA(${m}, ${i})`,
  store: `var ranks = array<u32, 3>(dims.r0, dims.r1, dims.r2);
    let rank = ranks[m];
    ${store('sum')}`,
})}
}`;
  return /* wgsl */ `
struct Dims { n: u32, inDim: u32, total: u32, r0: u32, r1: u32, r2: u32${norm ? ', eps: f32' : ''} }
@group(0) @binding(0) var<storage, read> x: array<f32>;
${decl}
@group(0) @binding(${1 + 2 * k}) var<uniform> dims: Dims;
${normDecl}

${pick('readA', 'A', k)}
${norm ? normMain : itemsMain}
`;
}

/** y_m[N, out_m] += s_m · t_m · B_m^T for m < 2; work items: module 0's N*out_0 outputs, then module 1's. */
export function loraUpGroupWgsl(): string {
  return /* wgsl */ `
struct Dims { n: u32, out0: u32, out1: u32, r0: u32, r1: u32, s0: f32, s1: f32 }
@group(0) @binding(0) var<storage, read> t0: array<f32>;
@group(0) @binding(1) var<storage, read> t1: array<f32>;
@group(0) @binding(2) var<storage, read> B0: array<f32>;
@group(0) @binding(3) var<storage, read> B1: array<f32>;
@group(0) @binding(4) var<storage, read_write> y0: array<f32>;
@group(0) @binding(5) var<storage, read_write> y1: array<f32>;
@group(0) @binding(6) var<uniform> dims: Dims;

@compute @workgroup_size(${LORA_UP_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let all = (wg.x + wg.y * nwg.x) * ${LORA_UP_WG}u + lid;
  let n0 = dims.n * dims.out0;
  if (all >= n0 + dims.n * dims.out1) { return; }
  if (all < n0) {
    let row = all / dims.out0;
    let o = all - row * dims.out0;
    ${loraUpSumWgsl({ t: 't0', B: 'B0', y: 'y0', rank: 'dims.r0', scale: 'dims.s0', at: 'all' })}
  } else {
    let idx = all - n0;
    let row = idx / dims.out1;
    let o = idx - row * dims.out1;
    ${loraUpSumWgsl({ t: 't1', B: 'B1', y: 'y1', rank: 'dims.r1', scale: 'dims.s1', at: 'idx' })}
  }
}
`;
}
