// Log-softmax statistics over a vocabulary that arrives in column chunks. Per row, a running
// (max, sum of exp(scale*logit - max), target logit) triple lives in `stats` [rows, 3]; each chunk
// dispatch merges its columns into it (the first chunk initialises it), and a finalize dispatch turns it
// into lse and log p(target). `scale` is 1/temperature (1 for training log-probs).

export const LSE_WG = 256;
export const LSE_NEG = -3.0e38;
/** Threads per workgroup of the small-vocabulary variant (lseChunkSmallWgsl). */
export const LSE_SMALL_WG = 64;

/** Both lse chunk kernels' bindings: the logits chunk, the running stats, the dims, and the targets if any. */
const lseBindingsWgsl = (withTargets: boolean) => `struct Dims { rows: u32, cols: u32, ld: u32, colOffset: u32, vocabOffset: u32, first: u32, scale: f32 }
@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> stats: array<f32>;
@group(0) @binding(2) var<uniform> dims: Dims;
${withTargets ? '@group(0) @binding(3) var<storage, read> targets: array<u32>;' : ''}`;

/** One (max, sum of exp) pair merged into another: the one merge both kernels use, so their bits agree. */
const MERGE_WGSL = `fn merge(m1: f32, s1: f32, m2: f32, s2: f32) -> vec2<f32> {
  let m = max(m1, m2);
  return vec2<f32>(m, s1 * exp(m1 - m) + s2 * exp(m2 - m));
}`;

/**
 * The row's closing step in both kernels: its chunk's (max, sum) pair `sum` merged into the stats of earlier
 * chunks (unless this is the first), and the target's logit kept if it falls in this chunk.
 */
function storeRowStatsWgsl(sum: string, indent: string, withTargets: boolean): string {
  return `${indent}var prev = vec3<f32>(${LSE_NEG}, 0.0, ${LSE_NEG});
${indent}if (dims.first == 0u) { prev = vec3<f32>(stats[row * 3u], stats[row * 3u + 1u], stats[row * 3u + 2u]); }
${indent}let r = merge(prev.x, prev.y, ${sum});
${indent}var tgt = prev.z;
${indent}${
    withTargets
      ? `let t = targets[row];
${indent}if (t >= dims.vocabOffset && t - dims.vocabOffset < dims.cols) { tgt = logits[base + t - dims.vocabOffset] * dims.scale; }`
      : ''
  }
${indent}stats[row * 3u] = r.x;
${indent}stats[row * 3u + 1u] = r.y;
${indent}stats[row * 3u + 2u] = tgt;`;
}

/**
 * One workgroup of LSE_WG threads per row: thread i folds columns i, i + LSE_WG, ... into a (max, sum) pair,
 * then a barrier tree merges slot i with slot i + s for s = LSE_WG/2 .. 1. That tree fixes the bits.
 */
export function lseChunkWgsl(withTargets: boolean): string {
  return /* wgsl */ `
${lseBindingsWgsl(withTargets)}

var<workgroup> rm: array<f32, ${LSE_WG}>;
var<workgroup> rs: array<f32, ${LSE_WG}>;

${MERGE_WGSL}

@compute @workgroup_size(${LSE_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = wg.x + wg.y * nwg.x;
  if (row >= dims.rows) { return; }
  let base = row * dims.ld + dims.colOffset;
  var m = ${LSE_NEG};
  var s = 0.0;
  for (var c = lid; c < dims.cols; c += ${LSE_WG}u) {
    let v = logits[base + c] * dims.scale;
    let r = merge(m, s, v, 1.0);
    m = r.x;
    s = r.y;
  }
  rm[lid] = m;
  rs[lid] = s;
  workgroupBarrier();
  for (var st = ${LSE_WG / 2}u; st > 0u; st >>= 1u) {
    if (lid < st) {
      let r = merge(rm[lid], rs[lid], rm[lid + st], rs[lid + st]);
      rm[lid] = r.x;
      rs[lid] = r.y;
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
${storeRowStatsWgsl('rm[0], rs[0]', '    ', withTargets)}
  }
}
`;
}


/**
 * The same merges in the same order as lseChunkWgsl (so the same bits), for a small vocabulary, where 256
 * threads and 9 barriers per row cost far more than the row's few hundred columns: `threadsPerRow` threads
 * (a power of two <= LSE_WG) each play LSE_WG / threadsPerRow of the 256-wide kernel's threads and the tree
 * levels between them, and LSE_SMALL_WG / threadsPerRow rows share a workgroup. Thread t ends holding the
 * big kernel's tree slot t after the level of width threadsPerRow; the row's thread 0 merges the rest of the
 * tree in its order after one barrier (none when a thread owns a whole row).
 */
export function lseChunkSmallWgsl(withTargets: boolean, threadsPerRow: number): string {
  const T = threadsPerRow;
  if (!(T >= 1 && T <= LSE_WG && Number.isInteger(Math.log2(T)))) throw new Error(`lseChunkSmallWgsl: threadsPerRow must be a power of two in 1..${LSE_WG}, got ${T}`);
  if (T > LSE_SMALL_WG) throw new Error(`lseChunkSmallWgsl: threadsPerRow ${T} exceeds the workgroup (${LSE_SMALL_WG})`);
  const rowsPerWg = LSE_SMALL_WG / T;
  const levels = Math.log2(LSE_WG / T);
  // The levels below T, written out for the row's thread 0 over the workgroup slots at `o`.
  const rest: string[] = [];
  let prev = (i: number) => `vec2<f32>(rm[o + ${i}u], rs[o + ${i}u])`;
  for (let s = T / 2, level = 0; s >= 1; s >>= 1, level++) {
    const p = prev;
    for (let i = 0; i < s; i++) rest.push(`    let t${level}_${i} = mergev(${p(i)}, ${p(i + s)});`);
    prev = (i: number) => `t${level}_${i}`;
  }
  const root = T === 1 ? 'slot(base, 0u)' : prev(0);
  return /* wgsl */ `
${lseBindingsWgsl(withTargets)}
${T > 1 ? `var<workgroup> rm: array<f32, ${LSE_SMALL_WG}>;
var<workgroup> rs: array<f32, ${LSE_SMALL_WG}>;` : ''}

${MERGE_WGSL}
fn mergev(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> { return merge(a.x, a.y, b.x, b.y); }

// What thread i of the 256-wide kernel folds before its tree.
fn fold(base: u32, i: u32) -> vec2<f32> {
  var m = ${LSE_NEG};
  var s = 0.0;
  for (var c = i; c < dims.cols; c += ${LSE_WG}u) {
    let v = logits[base + c] * dims.scale;
    let r = merge(m, s, v, 1.0);
    m = r.x;
    s = r.y;
  }
  return vec2<f32>(m, s);
}
// The big kernel's tree slot i (< ${T}) once level ${T} is merged: the stride tree over the folds of threads
// i + ${T}k, k < ${LSE_WG / T}. Slot pairs (k, k + h) are neighbours in bit-reversed k order, so walking k in that
// order and merging like a binary counter (earlier subtree on the left) adds the same pairs in the same order.
fn slot(base: u32, i: u32) -> vec2<f32> {
  var stack: array<vec2<f32>, ${levels + 1}>;
  for (var j = 0u; j < ${LSE_WG / T}u; j++) {
    var node = fold(base, i + ${T}u * ${levels === 0 ? '0u' : `(reverseBits(j) >> ${32 - levels}u)`});
    var lvl = 0u;
    for (var c = j; (c & 1u) == 1u; c >>= 1u) {
      node = mergev(stack[lvl], node);
      lvl++;
    }
    stack[lvl] = node;
  }
  return stack[${levels}];
}

@compute @workgroup_size(${LSE_SMALL_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = (wg.x + wg.y * nwg.x) * ${rowsPerWg}u + lid / ${T}u;
  let lane = lid % ${T}u;
  let base = row * dims.ld + dims.colOffset;
  let live = row < dims.rows;
${
  T === 1
    ? `  if (!live) { return; }
  let total = ${root};`
    : `  var mine = vec2<f32>(${LSE_NEG}, 0.0);
  if (live) { mine = slot(base, lane); }
  rm[lid] = mine.x;
  rs[lid] = mine.y;
  workgroupBarrier();
  if (!live || lane != 0u) { return; }
  let o = lid;
${rest.join('\n')}
  let total = ${root};`
}
${storeRowStatsWgsl('total.x, total.y', '  ', withTargets)}
}
`;
}

export function lseFinalizeWgsl(): string {
  return /* wgsl */ `
@group(0) @binding(0) var<storage, read> stats: array<f32>;
@group(0) @binding(1) var<storage, read_write> lse: array<f32>;
@group(0) @binding(2) var<storage, read_write> logprob: array<f32>;
@group(0) @binding(3) var<uniform> count: vec4<u32>;

@compute @workgroup_size(${LSE_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = (wg.x + wg.y * nwg.x) * ${LSE_WG}u + lid;
  if (row >= count.x) { return; }
  let l = stats[row * 3u] + log(stats[row * 3u + 1u]);
  lse[row] = l;
  logprob[row] = stats[row * 3u + 2u] - l;
}
`;
}
