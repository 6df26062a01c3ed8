// The block of a forward matmul on subgroup matrices (Dawn's `chromium_experimental_subgroup_matrix`: tensor
// cores on NVIDIA through VK_KHR_cooperative_matrix), shared by the 4-bit weight kernel (q4/q4matmul.sgm)
// and the f16 weight kernel (matmul/matmul.sgm): y[n, yOffset + o] (+)= x[n, i] · W[o, i] (+ b[o]).
//
// Staged as the subgroup-matrix probe's fastest variant (bench/subgroup-matrix-wgsl.ts, staged-8sg-4x2-bk32:
// 3.6-4.7x the f32 tiled matmul on an H200): 256 invocations per block, each K step of 32 rounds the x tile to
// f16 in workgroup memory and stages the W tile as f16 (how: the caller's `stageW`), then each subgroup
// multiplies its tm x tn result matrices, accumulating in f32. Results leave through a per-subgroup f32
// scratch matrix so every output goes through the kernel's `store` (bias / accumulate, yStride / yOffset)
// with bounds checks; loads past n or outDim stage zeros. Pure: text only (compiled on Dawn's null backend in
// tests; `emulate` builds run on lavapipe).

import type { SubgroupMatrixShape } from '../../gpu/device';

/** Fewest rows of x for which the matmuls take these kernels (below, a block is mostly padding). */
export const SGM_MIN_ROWS = 64;
/** Invocations per workgroup (the staging loops' stride). */
export const SGM_WORKGROUP = 256;
/** K step: one 4-bit quantisation group; x and W tiles hold this many columns of k. */
export const SGM_TILE_K = 32;
/** Staged rows are padded by 8 f16 (16 bytes) so rows start on different banks and stay 16-byte aligned. */
export const SGM_PAD = 8;
/** Rows of x per block: 64 (SGM_BLOCK_ROWS) or 128 (the probe's layout; benchmarks). */
export type SgmBlockRows = 128 | 64;
/**
 * The block height the matmuls take: 64 rows x 128 columns. On an H200 (2026-11-27, kit kernel table, GPU warmed
 * up) it beat 128 x 128 on every training shape, wide grids included: gate/up 768 x 896 x 9728 62.1 against
 * 52.8 TFLOP/s, 512 x 896 x 4864 45.2 against 35.0, down 768 x 4864 x 896 33.0 against 21.9, q 18.2 against 12.9.
 */
export const SGM_BLOCK_ROWS: SgmBlockRows = 64;
export const SGM_FULL_GRID = 128;

export interface SgmGeometry {
  /** Subgroups per workgroup as rows x columns of the block, and result matrices per subgroup. */
  sgRows: number;
  sgCols: number;
  tm: number;
  tn: number;
  /** Rows of x (and y) and output columns one workgroup computes. */
  blockRows: number;
  blockCols: number;
  /** Workgroup memory: the two f16 tiles and one f32 M x N scratch matrix per subgroup. */
  workgroupBytes: number;
}

/** 8 subgroups of 32 (NVIDIA) as 2 x 4 subgroups; 4 of 64 (AMD) as 2 x 2; tm halves for 64-row blocks. */
const LAYOUTS: Record<number, Pick<SgmGeometry, 'sgRows' | 'sgCols' | 'tm' | 'tn'>> = {
  8: { sgRows: 2, sgCols: 4, tm: 4, tn: 2 },
  4: { sgRows: 2, sgCols: 2, tm: 4, tn: 4 },
};

/** The block for this shape, or why none can be built. */
export function sgmGeometry(s: SubgroupMatrixShape, rows: SgmBlockRows = 128): SgmGeometry | string {
  const base = LAYOUTS[SGM_WORKGROUP / s.subgroupSize];
  if (!base || SGM_WORKGROUP % s.subgroupSize) return `subgroup size ${s.subgroupSize}: the kernel has layouts for 8 or 4 subgroups of ${SGM_WORKGROUP} invocations`;
  if (SGM_TILE_K % s.K) return `matrix K ${s.K} does not divide the K step ${SGM_TILE_K}`;
  if (rows !== 128 && rows !== 64) return `block rows must be 128 or 64, got ${String(rows)}`;
  const layout = { ...base, tm: (base.tm * rows) / 128 };
  const blockRows = layout.sgRows * layout.tm * s.M;
  const blockCols = layout.sgCols * layout.tn * s.N;
  const subgroups = layout.sgRows * layout.sgCols;
  const workgroupBytes = (blockRows + blockCols) * (SGM_TILE_K + SGM_PAD) * 2 + subgroups * s.M * s.N * 4;
  return { ...layout, blockRows, blockCols, workgroupBytes };
}

/** Why a matmul cannot use these kernels on a device (null when it can). */
export function sgmProblem(s: SubgroupMatrixShape, limits: { maxComputeWorkgroupStorageSize: number; maxComputeInvocationsPerWorkgroup: number }, rows: SgmBlockRows = SGM_BLOCK_ROWS): string | null {
  const g = sgmGeometry(s, rows);
  if (typeof g === 'string') return g;
  if (g.workgroupBytes > limits.maxComputeWorkgroupStorageSize) return `needs ${g.workgroupBytes} B of workgroup memory, the device grants ${limits.maxComputeWorkgroupStorageSize} B`;
  if (SGM_WORKGROUP > limits.maxComputeInvocationsPerWorkgroup) return `needs ${SGM_WORKGROUP} invocations per workgroup`;
  return null;
}

/** Grid [column blocks, row blocks], checked against the device's per-dimension limit. */
export function sgmGrid(kernel: string, g: SgmGeometry, n: number, outDim: number, max: number): [number, number] {
  const grid: [number, number] = [Math.ceil(outDim / g.blockCols), Math.ceil(n / g.blockRows)];
  if (grid[0] > max || grid[1] > max) throw new Error(`${kernel}: grid ${grid} exceeds ${max} workgroups per dimension`);
  return grid;
}

const range = (n: number): number[] => [...Array(n).keys()];

export interface SgmTileSource {
  /** Bindings (x as `array<vec4<f32>>`, dims with n, inDim, outDim) and `fn store(row, col, acc)`. */
  header: string;
  /**
   * Stages the W tile of K step `g` (k = 32g .. 32g + 31) for output columns col0 .. col0 + blockCols as f16
   * into `tw[(o - col0) * stride + k - 32g]`, zeros past dims.outDim: the body for element `e` (a let in
   * scope), whose range and stride the block picks (`unrolled`: branchless, so no `if`).
   */
  stageW: (g: SgmGeometry, stride: number, staging: SgmStaging) => { count: number; body: string };
  /** Prefix of the kernel's name in error messages. */
  kernel: string;
  /**
   * Blocks wholly inside y store their matrices straight into y (no scratch, no per-element epilogue): only
   * for a plain `store` (no bias, no accumulate), where both epilogues write the same f32 sums, so a row's
   * bits never depend on where the batch puts it (prefill's batch = alone contract).
   */
  direct?: boolean;
}

/**
 * The kernel, grid [ceil(outDim / blockCols), ceil(n / blockRows)]. Needs native f16, `subgroups` and the
 * feature. `emulate` (tests only): the same staging, offsets and epilogue with each matrix operation done by
 * plain per-lane loops (lane t of a subgroup owns elements t, t + size, ... of each result matrix) and
 * subgroups of `s.subgroupSize` counted from the local index, so a GPU without the feature (lavapipe) checks
 * everything but Dawn's builtins against float64.
 */
export type SgmStaging = 'unrolled' | 'loop' | 'unchecked';

export interface SgmTileOptions {
  emulate?: boolean;
  rows?: SgmBlockRows;
  /**
   * 'unrolled' (default): each invocation stages a fixed count of vec4s in straight-line code, bounds by
   * clamped loads and select (no branch), as the probe's fastest kernel does; 'loop': the strided loops with
   * branches of the first version (2026-11-27: ~1.1-1.8x the tiled kernel where the probe reached 3.6-4.7x),
   * kept for the kit's kernel table; 'unchecked' (benchmarks, whole blocks only): unrolled, no bounds at all.
   */
  staging?: SgmStaging;
  /** Benchmarks only: no scratch epilogue (needs `direct` and whole blocks; partial blocks store nothing). */
  noScratch?: boolean;
}

export function sgmTileWgsl(src: SgmTileSource, s: SubgroupMatrixShape, o: SgmTileOptions = {}): string {
  const g = sgmGeometry(s, o.rows ?? 128);
  if (typeof g === 'string') throw new Error(`${src.kernel}: ${g}`);
  const S = SGM_TILE_K + SGM_PAD;
  const MN = s.M * s.N;
  const tiles = range(g.tm).flatMap((i) => range(g.tn).map((j) => [i, j] as const));
  const left = `subgroup_matrix_left<f16, ${s.K}, ${s.M}>`;
  const right = `subgroup_matrix_right<f16, ${s.N}, ${s.K}>`;
  const em = o.emulate === true || s.emulated === true;
  const per = MN / s.subgroupSize;
  // Emulation: where in y lane element t (element lane + t * subgroupSize of an M x N matrix stored at `at`) goes.
  const laneElementInY = (t: number): string => `(at + ((lane + ${t * s.subgroupSize}u) / ${s.N}u) * dims.yStride + (lane + ${t * s.subgroupSize}u) % ${s.N}u)`;
  const ops = em
    ? {
        enables: 'enable f16;',
        builtins: '@builtin(local_invocation_index) lid: u32',
        ids: `let sg = lid / ${s.subgroupSize}u;
  let lane = lid % ${s.subgroupSize}u;
  `,
        // vec4s of elements (lane + S*(4q .. 4q+3)), not a dynamically indexed array: software drivers compile
        // those far faster.
        acc: (i: number, j: number) => range(per / 4).map((q) => `var acc${i}${j}_${q} = vec4<f32>(0.0);`).join(' '),
        loadL: (i: number) => `let l${i} = (sr + ${i * s.M}u) * ${S}u + kk;`,
        loadR: (j: number) => `let r${j} = (sc + ${j * s.N}u) * ${S}u + kk;`,
        mma: (i: number, j: number) => range(per / 4).map((q) => `acc${i}${j}_${q} = emuMma(l${i}, r${j}, lane + ${4 * q * s.subgroupSize}u, acc${i}${j}_${q});`).join(' '),
        store: (i: number, j: number) =>
          range(per).map((t) => `scratch[sg * ${MN}u + lane + ${t * s.subgroupSize}u] = acc${i}${j}_${t >> 2}[${t & 3}];`).join(' '),
        storeY: (i: number, j: number, at: string) =>
          `{ let at = ${at}; ${range(per).map((t) => `y[${laneElementInY(t)}] = acc${i}${j}_${t >> 2}[${t & 3}];`).join(' ')} }`,
        helpers: `
// Elements e0 + ${s.subgroupSize}q (q < 4) of a result matrix: element e is row e / ${s.N} of the left operand at
// lo times column e % ${s.N} of the right one at ro.
fn emuMma(lo: u32, ro: u32, e0: u32, a: vec4<f32>) -> vec4<f32> {
  var sum = a;
  for (var q = 0u; q < 4u; q++) {
    let e = e0 + q * ${s.subgroupSize}u;
    for (var k = 0u; k < ${s.K}u; k++) { sum[q] += f32(tx[lo + (e / ${s.N}u) * ${S}u + k]) * f32(tw[ro + (e % ${s.N}u) * ${S}u + k]); }
  }
  return sum;
}`,
      }
    : {
        enables: 'enable f16;\nenable subgroups;\nenable chromium_experimental_subgroup_matrix;',
        builtins: '@builtin(local_invocation_index) lid: u32,\n        @builtin(subgroup_id) sg: u32, @builtin(subgroup_invocation_id) lane: u32',
        ids: '',
        acc: (i: number, j: number) => `var acc${i}${j} = subgroup_matrix_result<f32, ${s.N}, ${s.M}>();`,
        loadL: (i: number) => `let l${i} = subgroupMatrixLoad<${left}, row_major>(&tx, (sr + ${i * s.M}u) * ${S}u + kk, ${S}u);`,
        loadR: (j: number) => `let r${j} = subgroupMatrixLoad<${right}, col_major>(&tw, (sc + ${j * s.N}u) * ${S}u + kk, ${S}u);`,
        mma: (i: number, j: number) => `acc${i}${j} = subgroupMatrixMultiplyAccumulate(l${i}, r${j}, acc${i}${j});`,
        store: (i: number, j: number) => `subgroupMatrixStore<row_major>(&scratch, sg * ${MN}u, acc${i}${j}, ${s.N}u);`,
        storeY: (i: number, j: number, at: string) => `subgroupMatrixStore<row_major>(&y, ${at}, acc${i}${j}, dims.yStride);`,
        helpers: '',
      };
  const direct = src.direct === true;
  const staging = o.staging ?? 'unrolled';
  const unrolled = staging !== 'loop';
  if (o.noScratch && !direct) throw new Error(`${src.kernel}: noScratch needs the direct epilogue`);
  // x: blockRows rows x 8 vec4, rounded to f16.
  const xBody = staging === 'unchecked'
    ? `let xv = x[(row0 + (e >> 3u)) * x4PerRow + g * 8u + (e & 7u)];
      let o = (e >> 3u) * ${S}u + (e & 7u) * 4u;
      tx[o] = f16(xv.x); tx[o + 1u] = f16(xv.y); tx[o + 2u] = f16(xv.z); tx[o + 3u] = f16(xv.w);`
    : unrolled
    ? `let r = row0 + (e >> 3u);
      let xv = select(vec4<f32>(0.0), x[min(r, dims.n - 1u) * x4PerRow + g * 8u + (e & 7u)], r < dims.n);
      let o = (e >> 3u) * ${S}u + (e & 7u) * 4u;
      tx[o] = f16(xv.x); tx[o + 1u] = f16(xv.y); tx[o + 2u] = f16(xv.z); tx[o + 3u] = f16(xv.w);`
    : `let r = row0 + (e >> 3u);
      var xv = vec4<f32>(0.0);
      if (r < dims.n) { xv = x[r * x4PerRow + g * 8u + (e & 7u)]; }
      let o = (e >> 3u) * ${S}u + (e & 7u) * 4u;
      tx[o] = f16(xv.x); tx[o + 1u] = f16(xv.y); tx[o + 2u] = f16(xv.z); tx[o + 3u] = f16(xv.w);`;
  const w = src.stageW(g, S, staging);
  // `count` elements over the workgroup: straight-line blocks of one element each (unrolled) or a strided loop.
  const stage = (count: number, body: string): string => {
    if (!unrolled) return `    for (var e = lid; e < ${count}u; e += ${SGM_WORKGROUP}u) {\n      ${body}\n    }`;
    if (count % SGM_WORKGROUP) throw new Error(`${src.kernel}: ${count} staged elements are not a whole number per invocation of ${SGM_WORKGROUP}`);
    return range(count / SGM_WORKGROUP).map((q) => `    {\n      let e = lid + ${q * SGM_WORKGROUP}u;\n      ${body}\n    }`).join('\n');
  };
  const yAt = (i: number, j: number): string => `(row0 + sr + ${i * s.M}u) * dims.yStride + dims.yOffset + col0 + sc + ${j * s.N}u`;
  if (em && MN % (4 * s.subgroupSize)) throw new Error(`${src.kernel}: emulation needs ${s.M}x${s.N} to be a multiple of 4 x the subgroup size ${s.subgroupSize}`);
  return /* wgsl */ `${ops.enables}
${src.header}
// [row][k] f16 tiles of x and W, K step ${SGM_TILE_K} + ${SGM_PAD} padding; per-subgroup f32 result scratch.
var<workgroup> tx: array<f16, ${g.blockRows * S}>;
var<workgroup> tw: array<f16, ${g.blockCols * S}>;
${o.noScratch ? '' : `var<workgroup> scratch: array<f32, ${g.sgRows * g.sgCols * MN}>;`}

@compute @workgroup_size(${SGM_WORKGROUP})
fn main(@builtin(workgroup_id) wg: vec3<u32>, ${ops.builtins}) {
  ${ops.ids}let row0 = wg.y * ${g.blockRows}u;
  let col0 = wg.x * ${g.blockCols}u;
  // Matrix offsets must be subgroup-uniform: built from subgroup_id only.
  let sr = (sg / ${g.sgCols}u) * ${g.tm * s.M}u;
  let sc = (sg % ${g.sgCols}u) * ${g.tn * s.N}u;
  let G = dims.inDim / ${SGM_TILE_K}u;
  let x4PerRow = dims.inDim / 4u;
${tiles.map(([i, j]) => `  ${ops.acc(i, j)}`).join('\n')}${
    direct
      ? `
  // Workgroup-uniform: a block wholly inside y skips the scratch epilogue.
  let full = row0 + ${g.blockRows}u <= dims.n && col0 + ${g.blockCols}u <= dims.outDim;`
      : ''
  }
  for (var g = 0u; g < G; g++) {
${stage(g.blockRows * 8, xBody)}
${stage(w.count, w.body)}
    workgroupBarrier();
    for (var kk = 0u; kk < ${SGM_TILE_K}u; kk += ${s.K}u) {
${range(g.tm).map((i) => `      ${ops.loadL(i)}`).join('\n')}
${range(g.tn).map((j) => `      ${ops.loadR(j)}`).join('\n')}
${tiles.map(([i, j]) => `      ${ops.mma(i, j)}`).join('\n')}
    }
    workgroupBarrier();
  }
${direct ? `  if (full) {
${tiles.map(([i, j]) => `    ${ops.storeY(i, j, yAt(i, j))}`).join('\n')}
    return;
  }
` : ''}${o.noScratch ? '}\n' : `  // Each result matrix through the subgroup's scratch, then its lanes store it element by element.
${tiles
  .map(
    ([i, j]) => `  ${ops.store(i, j)}
  workgroupBarrier();
  storeMatrix(sg, lane, row0 + sr + ${i * s.M}u, col0 + sc + ${j * s.N}u);
  workgroupBarrier();`,
  )
  .join('\n')}
}

fn storeMatrix(sg: u32, lane: u32, r0: u32, c0: u32) {
  for (var e = lane; e < ${MN}u; e += ${s.subgroupSize}u) {
    let r = r0 + e / ${s.N}u;
    let c = c0 + e % ${s.N}u;
    if (r < dims.n && c < dims.outDim) { store(r, c, scratch[sg * ${MN}u + e]); }
  }
}
`}${ops.helpers}`;
}
