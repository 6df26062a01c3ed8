// LoRA for several modules that read the same input (q, k, v on rms1(x); gate, up on rms2(h)) in one
// dispatch each way instead of one per module: decode runs a few hundred tiny dispatches per token, and on
// a GPU each costs a launch and a barrier whatever its size. Bindings cannot be indexed, so each module's
// A/B/t/y is its own binding and small switch functions pick one; a workgroup's rank slice lies in one
// module (down) and a thread serves a single module (up), so the switch never diverges within the work it
// guards.
//
// The sums are lora.wgsl.ts's own (loraDownBodyWgsl, loraUpBlockWgsl), so a group gives bit-identical results
// to the modules run one by one.
import { RMS_SCALE_WGSL, rowRmsWgsl } from '../rmsnorm/rms-scale.wgsl';
import { LORA_DOWN_WG, LORA_UP_ROWS, LORA_UP_SHARED_WGSL, LORA_UP_WG, loraDownBodyWgsl, loraDownEnableWgsl, loraDownSharedWgsl, loraSliceFnWgsl, loraUpBlockWgsl, type LoraDownShape } from './lora.wgsl';

/** Most modules in one down group: x + 3 A + 3 t = 7 storage bindings, within WebGPU's default 8. */
export const LORA_GROUP_MAX_DOWN = 3;
/** Most modules in one up group: 2 t + 2 B + 2 y = 6 storage bindings (3 would need 9). */
export const LORA_GROUP_MAX_UP = 2;

/** With a norm prologue a workgroup owns one row and one rank: it normalises its row itself. */
export const LORA_DOWN_NORM_SHAPE: LoraDownShape = { rows: 1, ranks: 1 };

const ids = (k: number) => Array.from({ length: k }, (_, m) => m);

/** `fn name(m, i) -> f32` reading element i of binding `${prefix}${m}`. */
function pick(name: string, prefix: string, k: number): string {
  const arms = ids(k - 1).map((m) => `if (m == ${m}u) { return ${prefix}${m}[i]; }`).join(' else ');
  return `fn ${name}(m: u32, i: u32) -> f32 { ${arms}${k > 1 ? ' ' : ''}return ${prefix}${k - 1}[i]; }`;
}

/**
 * t_m[N, r_m] = x[N, in] · A_m^T for m < k, workgroups over (row block, rank slice) as lora.wgsl.ts's
 * loraDownBodyWgsl, the modules' slices laid end to end. `norm` (decode only; shape must be
 * LORA_DOWN_NORM_SHAPE): x is first RMS-normalised and scaled by a norm weight, computed by every workgroup
 * for its row (a few hundred floats), so the rmsnorm dispatch before the group disappears; with `storeXn`
 * the row's first workgroup also writes the normalised row to `xn`.
 */
export function loraDownGroupWgsl(k: number, shape: LoraDownShape, subgroups: boolean, norm: { storeXn: boolean } | null = null): string {
  if (norm && (shape.rows !== 1 || shape.ranks !== 1)) throw new Error('loraDownGroupWgsl: a norm prologue needs a 1-row, 1-rank shape');
  const decl = [
    ...ids(k).map((m) => `@group(0) @binding(${1 + m}) var<storage, read> A${m}: array<f32>;`),
    ...ids(k).map((m) => `@group(0) @binding(${1 + k + m}) var<storage, read_write> t${m}: array<f32>;`),
  ].join('\n');
  const store = (row: string, m: string, j: string, sum: string) => ids(k)
    .map((i) => `${i > 0 ? 'else ' : ''}${i < k - 1 ? `if (${m} == ${i}u) ` : ''}{ t${i}[(${row}) * rank + ${j}] = ${sum}; }`)
    .join(' ');
  const nb = 2 + 2 * k;
  const normDecl = norm
    ? `@group(0) @binding(${nb}) var<storage, read> normW: array<f32>;${norm.storeXn ? `\n@group(0) @binding(${nb + 1}) var<storage, read_write> xn: array<f32>;` : ''}
var<workgroup> partial: array<f32, ${LORA_DOWN_WG}>;
${RMS_SCALE_WGSL}`
    : '';
  // rstd of the row as rmsnorm.wgsl computes it (rows that would overflow f32 pre-scaled: rms-scale.wgsl.ts).
  const prologue = norm
    ? `${rowRmsWgsl({ wg: LORA_DOWN_WG, len: 'dims.inDim', read: (i) => `x[row0 * dims.inDim + ${i}]`, partial: 'partial', eps: 'dims.eps' })}
${norm.storeXn ? `  if (wgi - block * dims.slices == 0u) {
    for (var i = lid; i < dims.inDim; i += ${LORA_DOWN_WG}u) { xn[row0 * dims.inDim + i] = x[row0 * dims.inDim + i] * rs_s * rs_k * normW[i]; }
  }
` : ''}`
    : undefined;
  const readX = norm
    ? (row: string, i: string) => `(x[(${row}) * dims.inDim + ${i}] * rs_s * rs_k * normW[${i}])`
    : (row: string, i: string) => `x[(${row}) * dims.inDim + ${i}]`;
  return /* wgsl */ `${loraDownEnableWgsl(subgroups)}
struct Dims { n: u32, inDim: u32, slices: u32, r0: u32, r1: u32, r2: u32${norm ? ', eps: f32' : ''} }
@group(0) @binding(0) var<storage, read> x: array<f32>;
${decl}
@group(0) @binding(${1 + 2 * k}) var<uniform> dims: Dims;
${normDecl}

${pick('readA', 'A', k)}
${loraDownSharedWgsl(shape, subgroups)}
${loraSliceFnWgsl(shape, ['dims.r0', 'dims.r1', 'dims.r2'].slice(0, k))}

@compute @workgroup_size(${LORA_DOWN_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
${loraDownBodyWgsl({ shape, subgroups, readX, readA: (m, idx) => `readA(${m}, ${idx})`, store, prologue })}
}
`;
}

/** y_m[N, out_m] += s_m · t_m · B_m^T for m < 2; per row block, module 0's output blocks, then module 1's. */
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
${LORA_UP_SHARED_WGSL}

@compute @workgroup_size(${LORA_UP_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let wgi = wg.x + wg.y * nwg.x;
  let blocks0 = (dims.out0 + ${LORA_UP_WG - 1}u) / ${LORA_UP_WG}u;
  let blocks = blocks0 + (dims.out1 + ${LORA_UP_WG - 1}u) / ${LORA_UP_WG}u;
  let rb = wgi / blocks;
  let row0 = rb * ${LORA_UP_ROWS}u;
  if (row0 >= dims.n) { return; }
  let nb = min(${LORA_UP_ROWS}u, dims.n - row0);
  let b = wgi - rb * blocks;
  if (b < blocks0) {
    let cb = b;
    ${loraUpBlockWgsl({ t: 't0', B: 'B0', y: 'y0', rank: 'dims.r0', scale: 'dims.s0', outDim: 'dims.out0' })}
  } else {
    let cb = b - blocks0;
    ${loraUpBlockWgsl({ t: 't1', B: 'B1', y: 'y1', rank: 'dims.r1', scale: 'dims.s1', outDim: 'dims.out1' })}
  }
}
`;
}
