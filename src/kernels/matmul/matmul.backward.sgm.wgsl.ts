// The input gradient through a frozen f16 linear on subgroup matrices (Dawn's
// `chromium_experimental_subgroup_matrix`: tensor cores on NVIDIA through VK_KHR_cooperative_matrix):
// dx[r, c] (+)= sum_k dy[r, dyOffset + k] · W[rowOffset + k, c], as matmulBackwardWgsl computes it on f32 cores.
//
// Staged as the forward tensor-core kernels are (bench/subgroup-matrix-wgsl.ts, staged-8sg-4x2-bk32): 256
// invocations per block of dx, each K step of 32 stages the dy block [rows][k] and the W rows k .. k+31 of the
// block's columns [k][cols] as f16 (W is already f16 and row-major [out, in], so the right operand loads
// row_major: no transpose), then each subgroup multiplies its tm x tn result matrices, accumulating in f32.
//
// Precision: gradients are tiny (1e-4 .. 1e-9) and f16 flushes below 6e-8 (and loses bits below 6e-5), so each
// dy row is scaled by a power of two s_r before rounding, chosen so the row's largest |dy| lands in
// [2^13, 2^14), and row r's f32 result is multiplied by 1 / s_r (both exact). A pre-pass over the block's rows
// finds each row's max |dy| over the workgroup's k range (its split-K slice: each slice unscales its own sum).
// Results leave through a per-subgroup f32 scratch matrix so every output is bounds-checked, unscaled and
// stored (overwrite / accumulate, or into the split-K partials); loads past n, the k range or inDim stage zeros.
// Pure: text only (compiled on Dawn's null backend in tests; `emulate` builds run on lavapipe).

import type { SubgroupMatrixShape } from '../../gpu/device';

/** Invocations per workgroup (the staging loops' stride). */
export const SGM_BWD_WORKGROUP = 256;
/** K step: dy columns and W rows staged per step; split-K slices are multiples of it. */
export const SGM_BWD_STEP = 32;
/** Staged rows are padded by 8 f16 (16 bytes) so rows start on different banks and stay 16-byte aligned. */
const PAD = 8;
/** The scaled row maximum lies in [2^(SCALE_EXP - 1), 2^SCALE_EXP): far from f16's 65504 and its subnormals. */
const SCALE_EXP = 14;

/** Square blocks of dx: 128 x 128 (the probe's best), or 64 x 64 where 128-blocks leave multiprocessors idle. */
export type SgmBackwardBlock = 128 | 64;
export const SGM_BWD_BLOCKS: readonly SgmBackwardBlock[] = [128, 64];

export interface SgmBackwardGeometry {
  block: SgmBackwardBlock;
  /** Subgroups per workgroup as rows x columns of the block, and result matrices per subgroup. */
  sgRows: number;
  sgCols: number;
  tm: number;
  tn: number;
  /** Workgroup memory: the two f16 tiles, one f32 M x N scratch matrix per subgroup and three words per row. */
  workgroupBytes: number;
}

/** 8 subgroups of 32 (NVIDIA) as 2 x 4; 4 of 64 (AMD) as 2 x 2. */
const SUBGROUP_GRIDS: Record<number, { sgRows: number; sgCols: number }> = {
  8: { sgRows: 2, sgCols: 4 },
  4: { sgRows: 2, sgCols: 2 },
};

/** The block for this matrix shape, or why none can be built. */
export function sgmBackwardGeometry(s: SubgroupMatrixShape, block: SgmBackwardBlock): SgmBackwardGeometry | string {
  const grid = SUBGROUP_GRIDS[SGM_BWD_WORKGROUP / s.subgroupSize];
  if (!grid || SGM_BWD_WORKGROUP % s.subgroupSize) return `subgroup size ${s.subgroupSize}: the kernel has layouts for 8 or 4 subgroups of ${SGM_BWD_WORKGROUP} invocations`;
  if (SGM_BWD_STEP % s.K) return `matrix K ${s.K} does not divide the K step ${SGM_BWD_STEP}`;
  if (block !== 128 && block !== 64) return `block must be 128 or 64, got ${String(block)}`;
  if (block % (grid.sgRows * s.M) || block % (grid.sgCols * s.N)) return `a ${block} x ${block} block is not a whole number of ${s.M} x ${s.N} matrices per subgroup`;
  const tm = block / (grid.sgRows * s.M);
  const tn = block / (grid.sgCols * s.N);
  const subgroups = grid.sgRows * grid.sgCols;
  const workgroupBytes = block * (SGM_BWD_STEP + PAD) * 2 + SGM_BWD_STEP * (block + PAD) * 2 + subgroups * s.M * s.N * 4 + block * 3 * 4;
  return { block, ...grid, tm, tn, workgroupBytes };
}

const range = (n: number): number[] => [...Array(n).keys()];

/**
 * The kernel. Bindings: 0 W `array<vec4<f16>>` [*, inDim], 1 dy `array<vec4<f32>>` [n, dyStride], 2 out f32 (dx [n, inDim],
 * or with P.split the partials [splits, n, inDim], overwritten), 3 Params. Grid [ceil(inDim / block),
 * ceil(n / block), splits]; inDim, outDim, dyStride and dyOffset must be multiples of 4 (dy is read as vec4s). Needs native f16, `subgroups` and the feature.
 * `emulate` (tests only): the same staging, scaling, offsets and epilogue with each matrix operation done by
 * plain per-lane loops (lane t of a subgroup owns elements t, t + size, ... of each result matrix) and
 * subgroups of `s.subgroupSize` counted from the local index, so a GPU without the feature (lavapipe) checks
 * everything but Dawn's builtins against float64.
 */
export function matmulBackwardSgmWgsl(s: SubgroupMatrixShape, block: SgmBackwardBlock, o: { emulate?: boolean } = {}): string {
  const g = sgmBackwardGeometry(s, block);
  if (typeof g === 'string') throw new Error(`matmulBackwardSgmWgsl: ${g}`);
  const B = block;
  const SL = SGM_BWD_STEP + PAD; // stride of the dy tile [row][k]
  const SR = B + PAD; // stride of the W tile [k][col]
  const MN = s.M * s.N;
  const tiles = range(g.tm).flatMap((i) => range(g.tn).map((j) => [i, j] as const));
  const left = `subgroup_matrix_left<f16, ${s.K}, ${s.M}>`;
  const right = `subgroup_matrix_right<f16, ${s.N}, ${s.K}>`;
  const em = o.emulate === true || s.emulated === true;
  const per = MN / s.subgroupSize;
  if (em && MN % (4 * s.subgroupSize)) throw new Error(`matmulBackwardSgmWgsl: emulation needs ${s.M}x${s.N} to be a multiple of 4 x the subgroup size ${s.subgroupSize}`);
  // Emulation loops over the subgroup's tm x tn tiles (accumulators in one private array) instead of unrolling
  // them: lavapipe's compile time grows steeply with unrolled code (97 s cold for 16 unrolled calls).
  const T = g.tm * g.tn;
  const V = per / 4;
  const tileOrigin = `let i = t / ${g.tn}u;
      let j = t % ${g.tn}u;`;
  const ops = em
    ? {
        enables: 'enable f16;',
        builtins: '@builtin(local_invocation_index) lid: u32',
        ids: `let sg = lid / ${s.subgroupSize}u;
  let lane = lid % ${s.subgroupSize}u;
  `,
        // vec4s of elements (lane + S*(4q .. 4q+3)), tile t's at acc[t * ${V} + q].
        accs: `  var acc: array<vec4<f32>, ${T * V}>;`,
        step: `      for (var t = 0u; t < ${T}u; t++) {
      ${tileOrigin}
      let lo = (sr + i * ${s.M}u) * ${SL}u + kk;
      let ro = kk * ${SR}u + sc + j * ${s.N}u;
${range(V).map((q) => `        acc[t * ${V}u + ${q}u] = emuMma(lo, ro, lane + ${4 * q * s.subgroupSize}u, acc[t * ${V}u + ${q}u]);`).join('\n')}
      }`,
        epilogue: `  for (var t = 0u; t < ${T}u; t++) {
    ${tileOrigin}
${range(per).map((u) => `    scratch[sg * ${MN}u + lane + ${u * s.subgroupSize}u] = acc[t * ${V}u + ${u >> 2}u][${u & 3}];`).join('\n')}
    workgroupBarrier();
    storeMatrix(sg, lane, row0, sr + i * ${s.M}u, col0 + sc + j * ${s.N}u, wg.z);
    workgroupBarrier();
  }`,
        helpers: `
// Elements e0 + ${s.subgroupSize}q (q < 4) of a result matrix: element e is row e / ${s.N} of the left operand at
// lo ([row][k], stride ${SL}) times column e % ${s.N} of the right one at ro ([k][col], stride ${SR}).
fn emuMma(lo: u32, ro: u32, e0: u32, a: vec4<f32>) -> vec4<f32> {
  var sum = a;
  for (var q = 0u; q < 4u; q++) {
    let e = e0 + q * ${s.subgroupSize}u;
    for (var k = 0u; k < ${s.K}u; k++) { sum[q] += f32(tdy[lo + (e / ${s.N}u) * ${SL}u + k]) * f32(tw[ro + k * ${SR}u + e % ${s.N}u]); }
  }
  return sum;
}`,
      }
    : {
        enables: 'enable f16;\nenable subgroups;\nenable chromium_experimental_subgroup_matrix;',
        builtins: '@builtin(local_invocation_index) lid: u32,\n        @builtin(subgroup_id) sg: u32, @builtin(subgroup_invocation_id) lane: u32',
        ids: '',
        accs: tiles.map(([i, j]) => `  var acc${i}${j} = subgroup_matrix_result<f32, ${s.N}, ${s.M}>();`).join('\n'),
        step: [
          ...range(g.tm).map((i) => `      let l${i} = subgroupMatrixLoad<${left}, row_major>(&tdy, (sr + ${i * s.M}u) * ${SL}u + kk, ${SL}u);`),
          ...range(g.tn).map((j) => `      let r${j} = subgroupMatrixLoad<${right}, row_major>(&tw, kk * ${SR}u + sc + ${j * s.N}u, ${SR}u);`),
          ...tiles.map(([i, j]) => `      acc${i}${j} = subgroupMatrixMultiplyAccumulate(l${i}, r${j}, acc${i}${j});`),
        ].join('\n'),
        epilogue: tiles
          .map(
            ([i, j]) => `  subgroupMatrixStore<row_major>(&scratch, sg * ${MN}u, acc${i}${j}, ${s.N}u);
  workgroupBarrier();
  storeMatrix(sg, lane, row0, sr + ${i * s.M}u, col0 + sc + ${j * s.N}u, wg.z);
  workgroupBarrier();`,
          )
          .join('\n'),
        helpers: '',
      };
  return /* wgsl */ `${ops.enables}
// Params as matmulBackwardWgsl's, plus split: 1 = write partials[wg.z] (no accumulate), 0 = (+)= into dx.
struct Params { n: u32, inDim: u32, outDim: u32, rowOffset: u32, accumulate: u32, dyStride: u32, dyOffset: u32, slice: u32, split: u32 }
@group(0) @binding(0) var<storage, read> W: array<vec4<f16>>;
@group(0) @binding(1) var<storage, read> dy: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;

// f16 tiles: dy [row][k] (scaled) and W [k][col], K step ${SGM_BWD_STEP}, rows padded by ${PAD}; per-subgroup f32 scratch.
var<workgroup> tdy: array<f16, ${B * SL}>;
var<workgroup> tw: array<f16, ${SGM_BWD_STEP * SR}>;
var<workgroup> scratch: array<f32, ${g.sgRows * g.sgCols * MN}>;
// Per block row: max |dy| as f32 bits (non-negative floats order as their bits), the scale and its inverse.
var<workgroup> rowMax: array<atomic<u32>, ${B}>;
var<workgroup> rowUp: array<f32, ${B}>;
var<workgroup> rowDown: array<f32, ${B}>;

@compute @workgroup_size(${SGM_BWD_WORKGROUP})
fn main(@builtin(workgroup_id) wg: vec3<u32>, ${ops.builtins}) {
  ${ops.ids}let row0 = wg.y * ${B}u;
  let col0 = wg.x * ${B}u;
  let kBegin = wg.z * P.slice;
  let kEnd = min(P.outDim, kBegin + P.slice);
  // Matrix offsets must be subgroup-uniform: built from subgroup_id only.
  let sr = (sg / ${g.sgCols}u) * ${g.tm * s.M}u;
  let sc = (sg % ${g.sgCols}u) * ${g.tn * s.N}u;
  let w4PerRow = P.inDim / 4u;

  // Row scales. 32 consecutive invocations read one row's k range as vec4s (coalesced), 8 rows at a time; the
  // maximum is taken on the magnitude bits (non-negative floats order as their bits; NaN and inf above all).
  let dy4PerRow = P.dyStride / 4u;
  let k4Begin = kBegin / 4u;
  let k4End = kEnd / 4u;
  for (var r = lid; r < ${B}u; r += ${SGM_BWD_WORKGROUP}u) { atomicStore(&rowMax[r], 0u); }
  workgroupBarrier();
  for (var rb = 0u; rb < ${B}u; rb += ${SGM_BWD_WORKGROUP / 32}u) {
    let lr = rb + lid / 32u;
    let r = row0 + lr;
    var m = 0u;
    if (r < P.n) {
      let base = r * dy4PerRow + P.dyOffset / 4u;
      for (var k4 = k4Begin + lid % 32u; k4 < k4End; k4 += 32u) {
        let b = bitcast<vec4<u32>>(dy[base + k4]) & vec4<u32>(0x7fffffffu);
        m = max(m, max(max(b.x, b.y), max(b.z, b.w)));
      }
    }
    atomicMax(&rowMax[lr], m);
  }
  workgroupBarrier();
  for (var r = lid; r < ${B}u; r += ${SGM_BWD_WORKGROUP}u) {
    // A finite m > 0 with biased exponent E lies below 2^(E - 126) (subnormals too, E = 0): scale by
    // 2^(${SCALE_EXP} - (E - 126)), built from its bits so it and its inverse are exact. Zero or non-finite: 1.
    let bits = atomicLoad(&rowMax[r]);
    var x = 0i;
    if (bits != 0u && bits < 0x7f800000u) { x = clamp(${SCALE_EXP + 126}i - i32(bits >> 23u), -126i, 126i); }
    rowUp[r] = bitcast<f32>(u32(127i + x) << 23u);
    rowDown[r] = bitcast<f32>(u32(127i - x) << 23u);
  }
  workgroupBarrier();

${ops.accs}
  for (var k0 = kBegin; k0 < kEnd; k0 += ${SGM_BWD_STEP}u) {
    // dy: ${B} rows x ${SGM_BWD_STEP / 4} vec4 of k, scaled per row and rounded to f16; W: rows k0 .. k0+${SGM_BWD_STEP - 1},
    // columns col0 .. col0+${B - 1} as ${B / 4} vec4 a row. Straight-line, a fixed count per invocation, bounds by
    // clamped loads and select (the forward kernels' staging: looped, branching staging was several times slower).
${range((B * (SGM_BWD_STEP / 4)) / SGM_BWD_WORKGROUP)
  .map(
    (q) => `    {
      let e = lid + ${q * SGM_BWD_WORKGROUP}u;
      let lr = e / ${SGM_BWD_STEP / 4}u;
      let kq = e % ${SGM_BWD_STEP / 4}u;
      let r = row0 + lr;
      let k = k0 + kq * 4u;
      let ok = r < P.n && k < kEnd;
      let v = select(vec4<f32>(0.0), dy[min(r, P.n - 1u) * dy4PerRow + (P.dyOffset + min(k, kEnd - 4u)) / 4u], ok) * rowUp[lr];
      let o = lr * ${SL}u + kq * 4u;
      tdy[o] = f16(v.x); tdy[o + 1u] = f16(v.y); tdy[o + 2u] = f16(v.z); tdy[o + 3u] = f16(v.w);
    }`,
  )
  .join('\n')}
${range((SGM_BWD_STEP * (B / 4)) / SGM_BWD_WORKGROUP)
  .map(
    (q) => `    {
      let e = lid + ${q * SGM_BWD_WORKGROUP}u;
      let kr = e / ${B / 4}u;
      let cq = e % ${B / 4}u;
      let k = k0 + kr;
      let c = col0 + cq * 4u;
      let v = select(vec4<f16>(0.0), W[(P.rowOffset + min(k, kEnd - 1u)) * w4PerRow + min(c, P.inDim - 4u) / 4u], k < kEnd && c < P.inDim);
      let o = kr * ${SR}u + cq * 4u;
      tw[o] = v.x; tw[o + 1u] = v.y; tw[o + 2u] = v.z; tw[o + 3u] = v.w;
    }`,
  )
  .join('\n')}
    workgroupBarrier();
    for (var kk = 0u; kk < ${SGM_BWD_STEP}u; kk += ${s.K}u) {
${ops.step}
    }
    workgroupBarrier();
  }
  // Each result matrix through the subgroup's scratch, then its lanes unscale and store it element by element.
${ops.epilogue}
}

fn storeMatrix(sg: u32, lane: u32, row0: u32, lr0: u32, c0: u32, z: u32) {
  for (var e = lane; e < ${MN}u; e += ${s.subgroupSize}u) {
    let lr = lr0 + e / ${s.N}u;
    let r = row0 + lr;
    let c = c0 + e % ${s.N}u;
    if (r < P.n && c < P.inDim) {
      let v = scratch[sg * ${MN}u + e] * rowDown[lr];
      if (P.split == 1u) {
        out[(z * P.n + r) * P.inDim + c] = v;
      } else {
        let i = r * P.inDim + c;
        if (P.accumulate == 1u) { out[i] = out[i] + v; } else { out[i] = v; }
      }
    }
  }
}
${ops.helpers}`;
}
