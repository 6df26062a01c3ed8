// LoRA backward, y += s * (x A^T) B^T with t = x A^T saved by the forward. Four kernels, run in order
// (each is its own pass, so t/dt dependencies are ordered by WebGPU):
//   dB[out, r] += s * dy^T t        rowReduce: reduction over the N rows
//   dt[N, r]    = s * dy B          one workgroup per DT_ROWS rows, reduces over out
//   dA[r, in]  += dt^T x            rowReduce again (big = x, small = dt)
//   dx[N, in]  += dt A              one thread per (row, i), loops over r
// dA and dB accumulate so micro-batches add up; no float atomics are needed because every output
// element has exactly one writer, and every sum runs in a fixed order (results do not depend on timing).
//
// dA and dB are reductions over the long row dimension (N = 512..768) into small outputs (r x 128..4864).
// One thread per output looping over all N rows left a GPU nearly idle (150 us for ~80 MFLOP on an H200), so
// rowReduce gives each workgroup an RR_COLS-column tile of the big matrix and splits the N rows over
// RR_SLICES slices of threads: a thread walks N / RR_SLICES rows, UNROLL at a time, with up to 16 ranks in
// registers, then the slices are summed by a fixed tree in workgroup memory.

export const LORA_BWD_WG = 64;
/** Columns of the big matrix per rowReduce workgroup: 8 f32 = one 32-byte memory sector per row. */
export const RR_COLS = 8;
/** Row slices per rowReduce workgroup (RR_COLS * RR_SLICES = 256 threads). */
export const RR_SLICES = 32;
/** Rows of dt per workgroup, and threads splitting the out dimension per row (DT_ROWS * DT_LANES = 256). */
export const DT_ROWS = 4;
export const DT_LANES = 64;
/**
 * Rows (rowReduce) or out columns (dt) each loop trip loads at once: their memory latencies overlap instead
 * of adding up, since a trip costs about one global-memory latency on a GPU this lightly loaded.
 */
export const UNROLL = 4;
/** Values reduced per round in workgroup memory (bounds its size to 256 * 8 f32 = 8 KiB). */
const ROUND = 8;

/**
 * Ranks handled per workgroup: the largest divisor of r that is at most 16, so every chunk is full and the
 * unrolled accumulators need no bounds checks. r <= 16 is one chunk.
 */
export function rankChunk(r: number): number {
  for (let c = Math.min(16, r); c > 1; c--) if (r % c === 0) return c;
  return 1;
}

const FLAT = `let idx = (wg.x + wg.y * nwg.x) * ${LORA_BWD_WG}u + lid;`;
const ENTRY = `@compute @workgroup_size(${LORA_BWD_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32)`;
const PARAMS = 'struct Params { n: u32, inDim: u32, outDim: u32, r: u32, s: f32 }';

const range = (k: number) => Array.from({ length: k }, (_, i) => i);

/**
 * The jc per-thread accumulators of a rank chunk: vec4s (one 16-byte load per 4 ranks) where jc is a multiple
 * of 4, which makes every chunk start and every row of r floats 16-byte aligned; scalars otherwise.
 * `fma(src, base, w)` adds w * src[base .. base + jc) (base counted in f32); `scalars` names them acc0..
 * for treeReduce.
 */
function rankAccumulators(jc: number) {
  const vec = jc % 4 === 0;
  const xyzw = 'xyzw';
  return {
    arrayType: vec ? 'array<vec4<f32>>' : 'array<f32>',
    decl: vec ? range(jc / 4).map((k) => `var accv${k} = vec4<f32>();`).join(' ') : range(jc).map((jj) => `var acc${jj} = 0.0;`).join(' '),
    fma: (src: string, base: string, w: string): string[] =>
      vec ? range(jc / 4).map((k) => `accv${k} += ${w} * ${src}[(${base}) / 4u + ${k}u];`) : range(jc).map((jj) => `acc${jj} += ${w} * ${src}[${base} + ${jj}u];`),
    scalars: vec ? range(jc).map((jj) => `let acc${jj} = accv${jj >> 2}.${xyzw[jj & 3]};`).join(' ') : '',
  };
}

/**
 * Sums `jc` per-thread accumulators acc0..acc{jc-1} over the `groups` threads lid = member * stride + k
 * (k fixed; `groups` a power of two), in rounds of ROUND values through `red`, and lets
 * the threads with `keep` true run `emit(q)` (WGSL using `red[${q} * 256u + lid]`, the total) per value.
 */
function treeReduce(jc: number, member: string, stride: number, groups: number, keep: string, emit: (q: number, jj: number) => string): string {
  const rounds: string[] = [];
  for (let h = 0; h < jc; h += ROUND) {
    const qs = range(Math.min(ROUND, jc - h));
    rounds.push(`  workgroupBarrier();
  ${qs.map((q) => `red[${q}u * 256u + lid] = acc${h + q};`).join(' ')}
  workgroupBarrier();
  for (var step = ${groups / 2}u; step > 0u; step >>= 1u) {
    if (${member} < step) {
      ${qs.map((q) => `red[${q}u * 256u + lid] += red[${q}u * 256u + lid + step * ${stride}u];`).join('\n      ')}
    }
    workgroupBarrier();
  }
  if (${keep}) {
    ${qs.map((q) => emit(q, h + q)).join('\n    ')}
  }`);
  }
  return rounds.join('\n');
}

/**
 * out[p * ps + j * js] += s * sum_n big[n, p] * small[n, j], big [N, P], small [N, r] (r compiled in).
 * Workgroup (tile, chunk): columns tile*RR_COLS.., ranks chunk*jc..; thread lid = slice * RR_COLS + col
 * takes rows slice, slice + RR_SLICES, ...
 */
export function loraRowReduceWgsl(r: number): string {
  const jc = rankChunk(r);
  const acc = rankAccumulators(jc);
  return /* wgsl */ `struct RP { n: u32, cols: u32, ps: u32, js: u32, s: f32 }
@group(0) @binding(0) var<storage, read> big: array<f32>;
@group(0) @binding(1) var<storage, read> small: ${acc.arrayType};
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;
@group(0) @binding(3) var<uniform> P: RP;
var<workgroup> red: array<f32, ${ROUND * 256}>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let col = lid % ${RR_COLS}u;
  let slice = lid / ${RR_COLS}u;
  let p = wg.x * ${RR_COLS}u + col;
  let j0 = wg.y * ${jc}u;
  let live = p < P.cols;
  let pc = select(0u, p, live);
  ${acc.decl}
  // Rows past the end read the last row (a valid address) with weight 0.
  for (var first = slice; first < P.n; first += ${RR_SLICES * UNROLL}u) {
    ${range(UNROLL).map((u) => `let n${u} = min(first + ${u * RR_SLICES}u, P.n - 1u); let b${u} = select(0.0, big[n${u} * P.cols + pc], live && first + ${u * RR_SLICES}u < P.n);`).join('\n    ')}
    ${range(UNROLL).flatMap((u) => acc.fma('small', `n${u} * ${r}u + j0`, `b${u}`)).join('\n    ')}
  }
  ${acc.scalars}
${treeReduce(jc, 'slice', RR_COLS, RR_SLICES, 'slice == 0u && live', (q, jj) => `{ let o = p * P.ps + (j0 + ${jj}u) * P.js; dst[o] = dst[o] + P.s * red[${q}u * 256u + lid]; }`)}
}
`;
}

/**
 * dt[N, r] = s * dy B: workgroup (rows tile, rank chunk); thread lid = row * DT_LANES + lane sums
 * o = lane, lane + DT_LANES, ... for its row and the chunk's ranks, then the lanes are summed by a tree.
 */
export function loraGradTWgsl(r: number): string {
  const jc = rankChunk(r);
  const acc = rankAccumulators(jc);
  return /* wgsl */ `${PARAMS}
@group(0) @binding(0) var<storage, read> dy: array<f32>;
@group(0) @binding(1) var<storage, read> B: ${acc.arrayType};
@group(0) @binding(2) var<storage, read_write> dt: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
var<workgroup> red: array<f32, ${ROUND * 256}>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let lane = lid % ${DT_LANES}u;
  let row = wg.x * ${DT_ROWS}u + lid / ${DT_LANES}u;
  let j0 = wg.y * ${jc}u;
  let live = row < P.n;
  ${acc.decl}
  if (live) {
    // Columns past the end read the last one (a valid address) with weight 0.
    for (var first = lane; first < P.outDim; first += ${DT_LANES * UNROLL}u) {
      ${range(UNROLL).map((u) => `let o${u} = min(first + ${u * DT_LANES}u, P.outDim - 1u); let g${u} = select(0.0, dy[row * P.outDim + o${u}], first + ${u * DT_LANES}u < P.outDim);`).join('\n      ')}
      ${range(UNROLL).flatMap((u) => acc.fma('B', `o${u} * ${r}u + j0`, `g${u}`)).join('\n      ')}
    }
  }
  ${acc.scalars}
${treeReduce(jc, 'lane', 1, DT_LANES, 'lane == 0u && live', (q, jj) => `dt[row * ${r}u + j0 + ${jj}u] = P.s * red[${q}u * 256u + lid];`)}
}
`;
}

export function loraGradXWgsl(): string {
  return /* wgsl */ `${PARAMS}
@group(0) @binding(0) var<storage, read> dt: array<f32>;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read_write> dx: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
${ENTRY} {
  ${FLAT}
  if (idx >= P.n * P.inDim) { return; }
  let n = idx / P.inDim;
  let i = idx % P.inDim;
  var acc = 0.0;
  for (var j = 0u; j < P.r; j++) { acc += dt[n * P.r + j] * A[j * P.inDim + i]; }
  dx[idx] = dx[idx] + acc;
}
`;
}
