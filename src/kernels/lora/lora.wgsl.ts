// LoRA forward in two dispatches: t = x A^T (down, [N, r], saved for the backward), then
// y += s * t B^T (up). A and B are f32 (trainable), so there is no f16 weight path.
//
// The down projection is a tall, thin product: r (<= 64) outputs per row, each a dot product over `in`
// (896 or 4864 for Qwen2.5-0.5B). In decode (1 to 8 rows) it is latency-bound: what matters is how many
// threads walk `in` and how far each walks. So a workgroup of LORA_DOWN_WG threads owns a block of rows
// and a slice of ranks (loraDownShape) and splits `in` among all its threads:
// - with subgroups: `in` is cut into LORA_DOWN_KSLICES contiguous slices, one per subgroup (a subgroup
//   that finds more slices than subgroups takes several), its lanes stride the slice, subgroupAdd sums
//   them, and one thread per output adds the slices' sums in slice order;
// - without: the threads stride `in`; their sums are added in runs of 16, then the runs.
// Either way an output's sum depends only on (row, j) and the device, not on which block or slice holds
// it, so a grouped dispatch gives the bits of the per-module one, and decode the bits of prefill.
// The up projection reduces over r: a thread per output column of a block of rows (loraUpBlockWgsl).
import { SUBGROUP_COUNTER_WGSL, SUBGROUP_INDEX_WGSL } from '../common/subgroups.wgsl';

export const LORA_DOWN_WG = 256;
/** Slices of `in` per workgroup on the subgroup path (one per 32-wide subgroup of LORA_DOWN_WG). */
export const LORA_DOWN_KSLICES = 8;
/** A slice's length is a multiple of this, so lanes read whole 128-byte lines. */
const KSLICE_ALIGN = 32;
/** Positions of `in` a thread loads before adding (memory-level parallelism in a latency-bound loop). */
const UNROLL = 4;
/** Without subgroups, the per-thread sums are added in runs of SEG, then the runs. */
const SEG = 16;
export const LORA_UP_WG = 256;

/** Rows and ranks one down-projection workgroup owns (a compile-time tile: rows x ranks accumulators). */
export interface LoraDownShape {
  rows: number;
  ranks: number;
}

/** Decode (<= 8 rows): every row in one block, a rank per workgroup, so a 1-row r16 module gets 16 workgroups. */
export const LORA_DOWN_FEW: LoraDownShape = { rows: 8, ranks: 1 };
/** Prefill and training: 4 x 4 tiles, so x is read r/4 times and A n/4 times (from cache) instead of r and n. */
export const LORA_DOWN_MANY: LoraDownShape = { rows: 4, ranks: 4 };

export function loraDownShape(n: number): LoraDownShape {
  return n <= LORA_DOWN_FEW.rows ? LORA_DOWN_FEW : LORA_DOWN_MANY;
}

/** Rank slices of modules with these ranks: each module's ranks cut into runs of shape.ranks. */
export function loraDownSlices(shape: LoraDownShape, ranks: number[]): number {
  return ranks.reduce((s, r) => s + Math.ceil(r / shape.ranks), 0);
}

/** Workgroups of a down projection over n rows. */
export function loraDownWorkgroups(shape: LoraDownShape, n: number, ranks: number[]): number {
  return Math.ceil(n / shape.rows) * loraDownSlices(shape, ranks);
}

const range = (k: number) => Array.from({ length: k }, (_, i) => i);

export interface LoraDownBody {
  shape: LoraDownShape;
  subgroups: boolean;
  /** Element i of row `row`'s input (x itself, or the norm variant's scaled x). */
  readX: (row: string, i: string) => string;
  /** Element `idx` of module m's A. */
  readA: (m: string, idx: string) => string;
  /** Statement storing `sum` as t_m[row, j] (rank `rank` of module m in scope). */
  store: (row: string, m: string, j: string, sum: string) => string;
  /** Statements after the block is located (row0, m, ...) and before the sums; must keep control flow uniform. */
  prologue?: string;
}

/**
 * Module-scope declarations the body needs: the reduction scratch and, with subgroups, the counter.
 * The module must also declare `fn slice(s: u32) -> vec3<u32>` (module, first rank, module rank) and
 * `dims` with fields n, inDim and slices.
 */
export function loraDownSharedWgsl(shape: LoraDownShape, subgroups: boolean): string {
  const outs = shape.rows * shape.ranks;
  return subgroups
    ? `var<workgroup> part: array<f32, ${outs * LORA_DOWN_KSLICES}>;\n${SUBGROUP_COUNTER_WGSL}`
    : `var<workgroup> part: array<f32, ${outs * LORA_DOWN_WG}>;`;
}

/** `enable subgroups` and its diagnostic where the subgroup path is used (at the top of the module). */
export function loraDownEnableWgsl(subgroups: boolean): string {
  return subgroups ? 'enable subgroups;\ndiagnostic(off, subgroup_uniformity);\n' : '';
}

/**
 * The down projection's `main` body. Workgroup w owns rows row0 .. row0 + nb of block w / dims.slices and
 * ranks j0 .. j0 + jc of module m (slice w % dims.slices). Accumulators acc_r_c (row r, rank c of the tile)
 * live in registers; the guards on r < nb and c < jc are workgroup-uniform.
 */
export function loraDownBodyWgsl(o: LoraDownBody): string {
  const { rows: RB, ranks: JS } = o.shape;
  const outs = RB * JS;
  const accs = range(RB).flatMap((r) => range(JS).map((c) => ({ r, c, v: `acc_${r}_${c}` })));
  // Terms at positions is[0], is[1], ...: every load first (so that many are in flight at once, whatever
  // the compiler unrolls), then the adds in position order, as a plain loop would make them.
  // UNROLL positions an iteration, i + u * by for u < UNROLL: every load first (so that many are in flight at
  // once, whatever the compiler unrolls), a position past the end loading zeros, then the adds in position
  // order, as a plain loop would make them (a past-the-end term adds 0 * 0). One copy of the body, no
  // remainder loop: each copy costs a software GPU compile time.
  const loop = (from: string, by: string, to: string) => {
    const loads = range(UNROLL).flatMap((u) => {
      const i = u === 0 ? 'i' : `i + ${u}u * ${by}`;
      const ok = u === 0 ? '' : `i + ${u}u * ${by} < ${to}`;
      const guard = (g: string[]) => (g.length ? ` if (${g.join(' && ')})` : '');
      return [
        ...range(JS).map((c) => `var w${c}_${u} = 0.0;${guard([...(ok ? [ok] : []), ...(c > 0 ? [`${c}u < jc`] : [])])} { w${c}_${u} = ${o.readA('m', `(j0 + ${c}u) * dims.inDim + ${i}`)}; }`),
        ...range(RB).map((r) => `var x${r}_${u} = 0.0;${guard([...(ok ? [ok] : []), ...(r > 0 ? [`${r}u < nb`] : [])])} { x${r}_${u} = ${o.readX(`row0 + ${r}u`, i)}; }`),
      ];
    });
    const adds = range(RB).map((r) => `${r > 0 ? `if (${r}u < nb) ` : ''}{ ${range(UNROLL).flatMap((u) => range(JS).map((c) => `acc_${r}_${c} += x${r}_${u} * w${c}_${u};`)).join(' ')} }`);
    return `for (var i = ${from}; i < ${to}; i += ${UNROLL}u * ${by}) {
      ${[...loads, ...adds].join('\n      ')}
    }`;
  };
  const declAcc = accs.map((a) => `var ${a.v} = 0.0;`).join(' ');
  const finish = (sum: string) => `if (lid < ${outs}u) {
    let r = lid / ${JS}u;
    let c = lid - r * ${JS}u;
    if (r < nb && c < jc) {
      ${sum}
      ${o.store('row0 + r', 'm', 'j0 + c', 'sum')}
    }
  }`;
  const head = `let wgi = wg.x + wg.y * nwg.x;
  let block = wgi / dims.slices;
  let row0 = block * ${RB}u;
  if (row0 >= dims.n) { return; }
  let at = slice(wgi - block * dims.slices);
  let m = at.x;
  let j0 = at.y;
  let rank = at.z;
  let nb = min(${RB}u, dims.n - row0);
  let jc = min(${JS}u, rank - j0);
  ${o.prologue ?? ''}`;
  if (o.subgroups) {
    const S = LORA_DOWN_KSLICES;
    return `  ${head}
  ${SUBGROUP_INDEX_WGSL}
  // Slice length: in / ${S} rounded up to whole lines; the last slices may be short or empty.
  let kLen = ((dims.inDim + ${S * KSLICE_ALIGN - 1}u) / ${S * KSLICE_ALIGN}u) * ${KSLICE_ALIGN}u;
  for (var ks = sgIndex; ks < ${S}u; ks += sgTotal) {
    let k1 = min((ks + 1u) * kLen, dims.inDim);
    ${declAcc}
    ${loop('ks * kLen + sid', 'sgSize', 'k1')}
    ${accs.map((a) => `let s_${a.r}_${a.c} = subgroupAdd(${a.v});`).join(' ')}
    if (sid == 0u) {
      ${accs.map((a) => `part[${(a.r * JS + a.c) * S}u + ks] = s_${a.r}_${a.c};`).join(' ')}
    }
  }
  workgroupBarrier();
  ${finish(`var sum = 0.0;
      for (var q = 0u; q < ${S}u; q++) { sum += part[lid * ${S}u + q]; }`)}`;
  }
  const W = LORA_DOWN_WG;
  return `  ${head}
  ${declAcc}
  {
    ${loop('lid', `${W}u`, 'dims.inDim')}
  }
  ${accs.map((a) => `part[${(a.r * JS + a.c) * W}u + lid] = ${a.v};`).join(' ')}
  workgroupBarrier();
  // Two short sequential levels (runs of ${SEG}, then the ${W / SEG} run sums) rather than a barrier per tree
  // level: a software GPU (no subgroups) pays for every barrier, and compiles an unrolled tree slowly.
  // The run sums go back into part (after everyone has read it), keeping the scratch within 16 KiB.
  var run = 0.0;
  if (lid < ${outs * (W / SEG)}u) {
    for (var q = 0u; q < ${SEG}u; q++) { run += part[lid * ${SEG}u + q]; }
  }
  workgroupBarrier();
  part[lid] = run;
  workgroupBarrier();
  ${finish(`var sum = 0.0;
      for (var q = 0u; q < ${W / SEG}u; q++) { sum += part[lid * ${W / SEG}u + q]; }`)}`;
}

/** WGSL `fn slice(s) -> vec3(module, first rank, module rank)` over modules of ranks `ranks` (WGSL exprs). */
export function loraSliceFnWgsl(shape: LoraDownShape, ranks: string[]): string {
  const k = ranks.length;
  const JS = shape.ranks;
  return `fn slice(s0: u32) -> vec3<u32> {
  var ranks = array<u32, ${k}>(${ranks.join(', ')});
  var s = s0;
  var m = 0u;
  while (m < ${k - 1}u) {
    let c = (ranks[m] + ${JS - 1}u) / ${JS}u;
    if (s < c) { break; }
    s -= c;
    m++;
  }
  return vec3<u32>(m, s * ${JS}u, ranks[m]);
}`;
}

/** Rows one up-projection workgroup serves: each thread reads its B row once for this many rows of y. */
export const LORA_UP_ROWS = 8;
/** Ranks of t staged in workgroup memory at a time (any rank works, in chunks of this many). */
const LORA_UP_RCHUNK = 64;

/** Up-projection workgroups: a block of LORA_UP_ROWS rows times a block of LORA_UP_WG outputs, per module. */
export function loraUpWorkgroups(n: number, outDims: number[]): number {
  return Math.ceil(n / LORA_UP_ROWS) * outDims.reduce((s, o) => s + Math.ceil(o / LORA_UP_WG), 0);
}

/** Workgroup memory of loraUpBlockWgsl: the block's rows of t, a rank chunk at a time. */
export const LORA_UP_SHARED_WGSL = `var<workgroup> ts: array<f32, ${LORA_UP_ROWS * LORA_UP_RCHUNK}>;`;

/**
 * The up projection of one block (uniform `row0`, `nb` rows, output block `cb` in scope): thread lid owns
 * output o = cb * LORA_UP_WG + lid of every row in the block, y[row, o] += scale * sum_j t[row, j] B[o, j],
 * the sum in j order from 0.0 whatever the block (so grouped and per-module dispatches agree bit for bit).
 * A thread used to serve one (row, o) and reread B's row (r floats, a stride of r between threads) for each
 * row; now it reads it once per LORA_UP_ROWS rows, and t comes from workgroup memory.
 */
export function loraUpBlockWgsl(n: { t: string; B: string; y: string; rank: string; scale: string; outDim: string }): string {
  const R = n.rank;
  const rows = range(LORA_UP_ROWS);
  return `{
    let o = cb * ${LORA_UP_WG}u + lid;
    let live = o < ${n.outDim};
    ${rows.map((r) => `var acc${r} = 0.0;`).join(' ')}
    for (var c0 = 0u; c0 < ${R}; c0 += ${LORA_UP_RCHUNK}u) {
      let cn = min(${LORA_UP_RCHUNK}u, ${R} - c0);
      workgroupBarrier();
      for (var q = lid; q < nb * ${LORA_UP_RCHUNK}u; q += ${LORA_UP_WG}u) {
        let r = q / ${LORA_UP_RCHUNK}u;
        let c = q - r * ${LORA_UP_RCHUNK}u;
        if (c < cn) { ts[q] = ${n.t}[(row0 + r) * ${R} + c0 + c]; }
      }
      workgroupBarrier();
      if (live) {
        for (var c = 0u; c < cn; c++) {
          let b = ${n.B}[o * ${R} + c0 + c];
          ${rows.map((r) => `acc${r} += ts[${r * LORA_UP_RCHUNK}u + c] * b;`).join(' ')}
        }
      }
    }
    if (live) {
      ${rows.map((r) => `if (${r}u < nb) { ${n.y}[(row0 + ${r}u) * ${n.outDim} + o] += ${n.scale} * acc${r}; }`).join('\n      ')}
    }
  }`;
}

export function loraDownWgsl(shape: LoraDownShape, subgroups: boolean): string {
  return /* wgsl */ `${loraDownEnableWgsl(subgroups)}
struct Dims { n: u32, inDim: u32, rank: u32, slices: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read_write> t: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;

${loraDownSharedWgsl(shape, subgroups)}
${loraSliceFnWgsl(shape, ['dims.rank'])}

@compute @workgroup_size(${LORA_DOWN_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
${loraDownBodyWgsl({
  shape,
  subgroups,
  readX: (row, i) => `x[(${row}) * dims.inDim + ${i}]`,
  readA: (_m, idx) => `A[${idx}]`,
  store: (row, _m, j, sum) => `t[(${row}) * rank + ${j}] = ${sum};`,
})}
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
${LORA_UP_SHARED_WGSL}

@compute @workgroup_size(${LORA_UP_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let wgi = wg.x + wg.y * nwg.x;
  let blocks = (dims.outDim + ${LORA_UP_WG - 1}u) / ${LORA_UP_WG}u;
  let rb = wgi / blocks;
  let row0 = rb * ${LORA_UP_ROWS}u;
  if (row0 >= dims.n) { return; }
  let nb = min(${LORA_UP_ROWS}u, dims.n - row0);
  let cb = wgi - rb * blocks;
  ${loraUpBlockWgsl({ t: 't', B: 'B', y: 'y', rank: 'dims.rank', scale: 'dims.scale', outDim: 'dims.outDim' })}
}
`;
}
