// The decode (N <= Q4_SMALL_N = 8 rows) 4-bit linear with its neighbours folded in, so one layer of a decode
// step is a handful of dispatches instead of a dozen (each dispatch costs 5-10 us on a real GPU, about what the
// matvec itself takes at Qwen2.5-0.5B shapes):
//   y = [residual +] deq(W[wRow.., :]) · prologue(x) [+ bias]
// - norm prologue: every workgroup computes the rows' RMSNorm factor itself (a few hundred floats per row,
//   far cheaper than a dispatch) and keeps the normalised rows in workgroup memory (or, when they do not
//   fit, scales x as it loads it); workgroup 0 can also store rmsnorm(x) * w for the LoRA down projection
//   that reads it later;
// - segmented output: the out rows go to up to three buffers (fused c_attn -> q, k, v);
// - swiglu epilogue: a "pair" is gate row i and up row I + i of the fused gate_up_proj, so the workgroup
//   that computes both writes act[i] = silu(gate_i) * up_i and neither gate nor up is stored.
// - LoRA up: y += scale * t · B^T per output (t from a LoRA down dispatched before), so the adapter's up
//   projection of o, down, gate and up needs no dispatch of its own. The rank's terms are spread over the
//   lanes that reduce the output's dot product and added to their partial sums before the reduction (not a
//   serial rank-long loop of loads in one thread after it).
// Read-only f32 vectors (norm weight, biases) live in "param" buffers bound once each with element
// offsets in the uniform, so a caller can pack them into one buffer to stay within 8 storage bindings.
//
// The inner loop reads one vec4<u32> (a group of 32 weights) plus one scale per lane and row, two weight
// rows per pass, the rows of x multiplied while the words are in registers. A decode matvec moves a few MB:
// at GPU bandwidth that is ~1-2 us, so its time is the memory latency of each thread's chain of dependent
// loads, not bandwidth. With subgroups the kernel is therefore shaped for memory-level parallelism:
// Q4D_SG_WG (256) invocations, each subgroup owning one (row pair, K slice) item (kSplit slices of a row
// pair's groups, each slice's partials summed through workgroup memory), the item's first weight words
// requested before the norm prologue so their latency overlaps it, and the next words prefetched while
// the current ones are multiplied. At 0.5B shapes with 32-wide subgroups each subgroup has one item and
// each lane one (K = 896) or at most two (K = 4864, kSplit 4) groups per row. Without subgroups, Q4D_WG
// (64) invocations share the rows, 64 / (rows / 2) lanes per pair, reduced by a tree in workgroup memory.

import { pairPartialsWgsl, pairTreeSumWgsl, q4Enables, q4ScaleDecl, Q4_UNPACK_WGSL, type Q4Path } from './q4.wgsl';
import { SUBGROUP_COUNTER_WGSL, SUBGROUP_INDEX_WGSL } from '../common/subgroups.wgsl';
import { Q4_SMALL_N } from './q4matmul.wgsl';
import { RMS_SCALE_WGSL } from '../rmsnorm/rms-scale.wgsl';

export const Q4D_WG = 64;
/** Invocations per workgroup of the subgroup kernel: 8 subgroups of 32, each with one item at the default shapes. */
export const Q4D_SG_WG = 256;
/** K splits the subgroup kernel can be built for. */
export const Q4D_KSPLIT_CHOICES = [1, 2, 4, 8];
export const Q4D_MAX_SEGMENTS = 3;
/** Largest LoRA rank whose down projection the kernel can compute itself (loraIn; t lives in workgroup memory). */
export const Q4D_LORA_IN_MAX_RANK = 64;

export interface Q4DecodeVariant {
  /** Rows of x (1..Q4_SMALL_N). */
  nr: number;
  /** Weight rows per workgroup (2..64, power of two); with swiglu, rows / 2 act outputs per workgroup. */
  rows: number;
  subgroups: boolean;
  /** Number of distinct param buffers bound (norm weight and biases index into them). */
  params: number;
  /** Param buffer index of the norm weight, or -1 for no norm prologue. */
  normParam: number;
  /**
   * With a norm: the rows' vec4 count (inDim / 4) when the normalised rows are kept in workgroup memory
   * for the whole dispatch (one normalisation per element, no norm-weight loads in the inner loop), or 0
   * to normalise in registers as x is loaded (inputs too wide for workgroup memory).
   */
  xCache: number;
  /** Workgroup 0 stores the normalised rows. */
  storeXn: boolean;
  /** Output segments (ignored with swiglu, which has one output). */
  segments: number;
  /** Param buffer index of each segment's bias, -1 for none. */
  biasParam: number[];
  /** 'none' | 'separate' (a residual buffer is read) | 'inplace' (y already holds the residual). */
  residual: 'none' | 'separate' | 'inplace';
  swiglu: boolean;
  /**
   * LoRA up epilogue per output slot (segment s, or with swiglu 0 = gate and 1 = up): adds
   * scale_s * t_s[row, :] · B_s[col, :] from a LoRA down computed before this dispatch.
   */
  lora: boolean[];
  /**
   * Slot 0's LoRA down computed in the kernel: every workgroup forms t = x · A^T (A bound as A0, f32
   * [rank, inDim], rank <= Q4D_LORA_IN_MAX_RANK) in workgroup memory before its rows, so no down dispatch
   * runs before this one. One segment, no norm (x read as it is): the o projection's shape. Its input is
   * narrow (qd: 896 at 0.5B, 14 vec4 loads of A a thread at rank 16), so the extra work per workgroup is
   * expected to cost less than the dispatch it replaces (not yet timed on a GPU).
   */
  loraIn?: boolean;
  /**
   * Subgroup kernel only: slices each row pair's groups are split into (one of Q4D_KSPLIT_CHOICES); each
   * (pair, slice) is one subgroup's item and the slices' sums meet in workgroup memory. 1 without subgroups.
   */
  kSplit: number;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** Binding layout shared with the dispatch builder: returns each binding's role in order. */
export function q4DecodeBindings(v: Q4DecodeVariant): string[] {
  const b = ['Wq', 'S', 'x', 'dims'];
  for (let i = 0; i < v.params; i++) b.push(`P${i}`);
  if (v.residual === 'separate') b.push('res');
  if (v.storeXn) b.push('xn');
  v.lora.forEach((on, s) => on && b.push(s === 0 && v.loraIn ? 'A0' : `T${s}`, `B${s}`));
  if (v.swiglu) b.push('y0');
  else for (let s = 0; s < v.segments; s++) b.push(`y${s}`);
  return b;
}

export function q4DecodeWgsl(p: Q4Path, v: Q4DecodeVariant): string {
  const { nr, rows, subgroups } = v;
  if (!Number.isInteger(nr) || nr < 1 || nr > Q4_SMALL_N) throw new Error(`q4DecodeWgsl: nr must be 1..${Q4_SMALL_N}, got ${nr}`);
  if (![2, 4, 8, 16, 32, 64].includes(rows)) throw new Error(`q4DecodeWgsl: rows must be a power of two in 2..64, got ${rows}`);
  if (!Q4D_KSPLIT_CHOICES.includes(v.kSplit)) throw new Error(`q4DecodeWgsl: kSplit must be one of ${Q4D_KSPLIT_CHOICES.join(', ')}, got ${v.kSplit}`);
  if (!subgroups && v.kSplit !== 1) throw new Error(`q4DecodeWgsl: kSplit ${v.kSplit} needs the subgroup kernel (without subgroups the lanes of a pair already split K)`);
  const norm = v.normParam >= 0;
  if (v.loraIn && (!v.lora[0] || v.swiglu || v.segments !== 1 || norm)) throw new Error('q4DecodeWgsl: loraIn needs a LoRA on the single segment, without swiglu or a norm');
  const cache = norm && v.xCache > 0;
  if (cache && !Number.isInteger(v.xCache)) throw new Error(`q4DecodeWgsl: xCache must be an integer, got ${v.xCache}`);
  const WG = subgroups ? Q4D_SG_WG : Q4D_WG;
  const pairs = rows / 2;
  const lanes = Q4D_WG / pairs;
  const S = v.kSplit;
  const decl: string[] = [];
  q4DecodeBindings(v).forEach((name, i) => {
    if (name === 'Wq') decl.push(`@group(0) @binding(${i}) var<storage, read> Wq: array<vec4<u32>>;`);
    else if (name === 'S') decl.push(q4ScaleDecl(p, i));
    else if (name === 'x') decl.push(`@group(0) @binding(${i}) var<storage, read> x: array<vec4<f32>>;`);
    else if (name === 'dims') decl.push(`@group(0) @binding(${i}) var<uniform> dims: Dims;`);
    else if (name === 'A0') decl.push(`@group(0) @binding(${i}) var<storage, read> A0: array<vec4<f32>>;`);
    else if (name === 'xn') decl.push(`@group(0) @binding(${i}) var<storage, read_write> xn: array<vec4<f32>>;`);
    else if (name === 'res') decl.push(`@group(0) @binding(${i}) var<storage, read> res: array<f32>;`);
    else if (name.startsWith('T') || name.startsWith('B')) decl.push(`@group(0) @binding(${i}) var<storage, read> ${name}: array<f32>;`);
    else if (name.startsWith('P')) decl.push(`@group(0) @binding(${i}) var<storage, read> ${name}: array<f32>;`);
    else decl.push(`@group(0) @binding(${i}) var<storage, read_write> ${name}: array<f32>;`);
  });
  // Norm weight as a vec4 of the param buffer at element offset normOff + 4 * j.
  const nw = (j: string) => `nw4(${j})`;
  const normFns = norm
    ? `fn nw4(j: u32) -> vec4<f32> { let b = dims.normOff + 4u * j; return vec4<f32>(P${v.normParam}[b], P${v.normParam}[b + 1u], P${v.normParam}[b + 2u], P${v.normParam}[b + 3u]); }`
    : '';

  // Which weight rows pair `pr` multiplies (defines i, hasB, aRow, bRow). Plain: out rows i, i + 1;
  // swiglu: gate row i and up row I + i (dims.outRows = I).
  const pairDecl = (pr: string) =>
    v.swiglu
      ? `let i = wgi * ${pairs}u + ${pr};
    let hasB = true;
    let aRow = i;
    let bRow = dims.outRows + i;`
      : `let i = wgi * ${rows}u + 2u * ${pr};
    let hasB = i + 1u < dims.outRows;
    let aRow = i;
    let bRow = i + 1u;`;

  // x row r, vec4 k of group g, normalised in registers when there is a norm prologue (same expression
  // as the rmsnorm kernel: x * sc * rstd * w).
  const xs = (r: number) =>
    range(8)
      .map((k) =>
        cache
          ? `let x${r}_${k} = xs[${r * v.xCache}u + g * 8u + ${k}u];`
          : `let x${r}_${k} = x[${r}u * in4 + g * 8u + ${k}u]${norm ? ` * sc${r} * rs${r} * w_${k}` : ''};`,
      )
      .join(' ');
  const dots = (q: string, r: number) =>
    range(4)
      .map((c) => `dot(q4lo(${q}.${'xyzw'[c]}), x${r}_${2 * c}) + dot(q4hi(${q}.${'xyzw'[c]}), x${r}_${2 * c + 1})`)
      .join(' + ');
  // Group g's words qa / qb with scales sa / sb (sb = 0 when the pair has no second row) times every x row.
  const groupMath = `${norm && !cache ? range(8).map((k) => `let w_${k} = ${nw(`g * 8u + ${k}u`)};`).join(' ') : ''}
        ${range(nr).map((r) => `{ ${xs(r)}
          acc${r} += sa * (${dots('qa', r)});
          bcc${r} += sb * (${dots('qb', r)}); }`).join('\n        ')}`;
  const groupBody = `let qa = Wq[abase + g];
        let sa = S_at(abase + g);
        var qb = vec4<u32>(0x77777777u);
        var sb = 0.0;
        if (hasB) { qb = Wq[bbase + g]; sb = S_at(bbase + g); }
        ${groupMath}`;

  // LoRA up terms of rank index j for x row r: loraA<r> for the pair's first row, loraB for its second.
  // Plain rows pick their segment's slot from the out row; with swiglu slot 0 is gate i and slot 1 up i.
  const loraSeg = (s: number, col: string) =>
    `if (j < dims.lr${s}) { return dims.ls${s} * ${s === 0 && v.loraIn ? 'lt' : `T${s}`}[r * dims.lr${s} + j] * B${s}[(${col}) * dims.lr${s} + j]; } return 0.0;`;
  const anyLora = v.lora.some((l) => l);
  const loraFns = !anyLora
    ? ''
    : v.swiglu
      ? `fn loraA(r: u32, o: u32, j: u32) -> f32 { ${v.lora[0] ? loraSeg(0, 'o') : 'return 0.0;'} }
fn loraB(r: u32, o: u32, j: u32) -> f32 { ${v.lora[1] ? loraSeg(1, 'o') : 'return 0.0;'} }`
      : `fn loraA(r: u32, o: u32, j: u32) -> f32 {
  ${range(v.segments)
    .map((s) => {
      const inSeg = s === v.segments - 1 ? '' : s === 0 ? 'if (o < dims.e0) ' : 'if (o < dims.e1) ';
      const col = s === 0 ? 'o' : s === 1 ? 'o - dims.e0' : 'o - dims.e1';
      const act = v.lora[s] ? `{ ${loraSeg(s, col)} }` : '{ return 0.0; }';
      return `${inSeg}${act}`;
    })
    .join('\n  ')}
}
fn loraB(r: u32, o: u32, j: u32) -> f32 { return loraA(r, o, j); }`;
  // The rank terms of one pair, spread over its lanes (`lane` of `count`), added to the partials.
  const loraTerms = (lane: string, count: string) =>
    anyLora
      ? `for (var j = ${lane}; j < lrMax; j += ${count}) {
        ${range(nr).map((r) => `acc${r} += loraA(${r}u, ${v.swiglu ? 'i' : 'aRow'}, j); if (hasB) { bcc${r} += loraB(${r}u, ${v.swiglu ? 'i' : 'bRow'}, j); }`).join('\n        ')}
      }`
      : '';

  // Writes of one finished pair: ta<r> / tb<r> are rows aRow / bRow of x-row r (LoRA already in them).
  const storeBody = v.swiglu
    ? range(nr)
        .map((r) => `{ let g = ta${r}; y0[${r}u * dims.outRows + i] = g / (1.0 + exp(-g)) * tb${r}; }`)
        .join(' ')
    : `${range(nr).map((r) => `store(${r}u, i, ta${r});`).join(' ')}
      if (hasB) { ${range(nr).map((r) => `store(${r}u, i + 1u, tb${r});`).join(' ')} }`;

  const segStore = (s: number, base: string) => {
    const bp = v.biasParam[s] ?? -1;
    const len = s === 0 ? 'dims.e0' : s === 1 ? 'dims.e1 - dims.e0' : 'dims.outRows - dims.e1';
    const col = s === 0 ? 'o' : s === 1 ? 'o - dims.e0' : 'o - dims.e1';
    return `{ let c = ${col}; let idx = row * (${len}) + c; var val = acc;
      ${bp >= 0 ? `val += P${bp}[dims.bias${s} + c];` : ''}
      ${v.residual === 'separate' ? 'val += res[idx];' : v.residual === 'inplace' ? `val += ${base}[idx];` : ''}
      ${base}[idx] = val; }`;
  };
  const storeFn = v.swiglu
    ? ''
    : `fn store(row: u32, o: u32, acc: f32) {
  ${
    v.segments === 1
      ? segStore(0, 'y0')
      : v.segments === 2
        ? `if (o < dims.e0) ${segStore(0, 'y0')} else ${segStore(1, 'y1')}`
        : `if (o < dims.e0) ${segStore(0, 'y0')} else if (o < dims.e1) ${segStore(1, 'y1')} else ${segStore(2, 'y2')}`
  }
}`;

  // RMSNorm factors of the nr rows: a tree over the workgroup (once per workgroup; uniform control flow).
  // Row r is normalised as x * sc<r> * rs<r> * w: sc<r> = 1 unless an element reaches RMS_SCALE_FROM (its
  // squares could overflow f32), then a power of two from its max |x| (rms-scale.wgsl.ts). Such a row's sum
  // comes out negative (RMS_SCALE_MARK); thread 0 gathers the rows that did into one word, so ordinary
  // steps pay a single extra barrier, and only flagged rows are read again.
  const treeOf = (op: (a: string, b: string) => string) => `workgroupBarrier();
      for (var st = ${WG / 2}u; st > 0u; st >>= 1u) {
        if (lid < st) { nrm[o + lid] = ${op('nrm[o + lid]', 'nrm[o + lid + st]')}; }
        workgroupBarrier();
      }`;
  const prologue = norm
    ? `${range(nr).map((r) => `var ss${r} = 0.0; var big${r} = false;`).join(' ')}
  for (var j = lid; j < in4; j += ${WG}u) {
    ${range(nr).map((r) => `{ let t = x[${r}u * in4 + j]; ss${r} += dot(t, t); let a = abs(t); big${r} = big${r} || max(max(a.x, a.y), max(a.z, a.w)) >= RMS_SCALE_FROM; }`).join(' ')}
  }
  ${range(nr).map((r) => `nrm[${r * WG}u + lid] = select(ss${r}, RMS_SCALE_MARK, big${r});`).join(' ')}
  workgroupBarrier();
  for (var st = ${WG / 2}u; st > 0u; st >>= 1u) {
    if (lid < st) { ${range(nr).map((r) => `nrm[${r * WG}u + lid] += nrm[${r * WG}u + lid + st];`).join(' ')} }
    workgroupBarrier();
  }
  if (lid == 0u) {
    var mask = 0u;
    for (var r = 0u; r < ${nr}u; r++) { if (nrm[r * ${WG}u] < 0.0) { mask |= 1u << r; } }
    nbig = mask;
  }
  let bigRows = workgroupUniformLoad(&nbig);
  // One loop over the rows rather than a copy per row: the flagged-row path is rare, its code need not be unrolled.
  var scs: array<f32, ${nr}>;
  for (var r = 0u; r < ${nr}u; r++) {
    scs[r] = 1.0;
    if (((bigRows >> r) & 1u) != 0u) {
      let o = r * ${WG}u;
      var mx = 0.0;
      for (var j = lid; j < in4; j += ${WG}u) { let a = abs(x[r * in4 + j]); mx = max(mx, max(max(a.x, a.y), max(a.z, a.w))); }
      nrm[o + lid] = mx;
      ${treeOf((a, b) => `max(${a}, ${b})`)}
      let s = rms_scale(workgroupUniformLoad(&nrm[o]));
      scs[r] = s;
      var ss = 0.0;
      for (var j = lid; j < in4; j += ${WG}u) { let t = x[r * in4 + j] * s; ss += dot(t, t); }
      // Every thread has loaded the maximum before its word is overwritten.
      workgroupBarrier();
      nrm[o + lid] = ss;
      ${treeOf((a, b) => `${a} + ${b}`)}
    }
  }
  ${range(nr).map((r) => `let sc${r} = scs[${r}];`).join(' ')}
  // 1/sqrt as the rmsnorm kernel does (inverseSqrt is only ~2 ulp by spec).
  ${range(nr).map((r) => `let rs${r} = 1.0 / sqrt(nrm[${r * WG}u] / f32(dims.inDim) + dims.eps * sc${r} * sc${r});`).join('\n  ')}
  ${
    cache
      ? `for (var j = lid; j < in4; j += ${WG}u) {
    let w4 = ${nw('j')};
    ${range(nr).map((r) => `xs[${r * v.xCache}u + j] = x[${r}u * in4 + j] * sc${r} * rs${r} * w4;`).join(' ')}
  }
  workgroupBarrier();`
      : ''
  }
  ${
    v.storeXn
      ? `if (wgi == 0u) {
    for (var j = lid; j < in4; j += ${WG}u) {
      ${cache ? '' : `let w4 = ${nw('j')};`}
      ${range(nr).map((r) => (cache ? `xn[${r}u * in4 + j] = xs[${r * v.xCache}u + j];` : `xn[${r}u * in4 + j] = x[${r}u * in4 + j] * sc${r} * rs${r} * w4;`)).join(' ')}
    }
  }`
      : ''
  }`
    : '';

  // t = x · A^T of slot 0 into lt[r * rank + j]: thread lid takes rank index lid % rank over K slice
  // lid / rank (WG / rank slices, rank <= WG), the slices' sums meet in workgroup memory. Uniform control flow.
  const loraIn = v.loraIn
    ? `{
    let lr = dims.lr0;
    let slices = ${WG}u / lr;
    let j = lid % lr;
    let slice = lid / lr;
    ${range(nr).map((r) => `var lp${r} = 0.0;`).join(' ')}
    if (slice < slices) {
      for (var k = slice; k < in4; k += slices) {
        let a = A0[j * in4 + k];
        ${range(nr).map((r) => `lp${r} += dot(x[${r}u * in4 + k], a);`).join(' ')}
      }
    }
    ${range(nr).map((r) => `lred[${r * WG}u + lid] = lp${r};`).join(' ')}
    workgroupBarrier();
    for (var it = lid; it < lr * ${nr}u; it += ${WG}u) {
      let r = it / lr;
      let jj = it % lr;
      var sum = 0.0;
      for (var q = 0u; q < slices; q++) { sum += lred[r * ${WG}u + q * lr + jj]; }
      lt[r * lr + jj] = sum;
    }
    workgroupBarrier();
  }`
    : '';

  const common = `struct Dims { n: u32, inDim: u32, wRow: u32, outRows: u32, e0: u32, e1: u32, normOff: u32, eps: f32, bias0: u32, bias1: u32, bias2: u32,
  lr0: u32, ls0: f32, lr1: u32, ls1: f32, lr2: u32, ls2: f32 }
${decl.join('\n')}
${loraFns}
${Q4_UNPACK_WGSL}
${normFns}
${storeFn}
${norm ? `var<workgroup> nrm: array<f32, ${WG * nr}>;\nvar<workgroup> nbig: u32;\n${RMS_SCALE_WGSL}` : ''}
${cache ? `var<workgroup> xs: array<vec4<f32>, ${nr * v.xCache}>;` : ''}
${v.loraIn ? `var<workgroup> lt: array<f32, ${nr * Q4D_LORA_IN_MAX_RANK}>;\nvar<workgroup> lred: array<f32, ${nr * WG}>;` : ''}`;

  const accDecl = `${range(nr).map((r) => `var acc${r} = 0.0;`).join(' ')} ${range(nr).map((r) => `var bcc${r} = 0.0;`).join(' ')}`;

  // Both variants: one workgroup per `rows` weight rows and the input's sizes.
  const entry = `@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let wgi = wg.x + wg.y * nwg.x;
  let in4 = dims.inDim / 4u;
  let G = dims.inDim / 32u;
  ${anyLora ? 'let lrMax = max(dims.lr0, max(dims.lr1, dims.lr2));' : ''}`;

  if (subgroups) {
    // Items: pair pr = it % pairs, K slice it / pairs; a subgroup (dense index from a workgroup counter, as
    // in q4matmul.wgsl.ts) takes items sgIndex, sgIndex + sgTotal, ... Its lanes take the slice's groups
    // slice * sgSize + sid, then every S * sgSize-th. The branches around subgroupAdd depend only on
    // subgroup-uniform values.
    const items = pairs * S;
    const itemDecl = (it: string) => `let pr = ${it} % ${pairs}u;
    let slice = ${it} / ${pairs}u;
    ${pairDecl('pr')}
    let live = i < dims.outRows;
    let abase = (dims.wRow + aRow) * G;
    let bbase = (dims.wRow + bRow) * G;`;
    // Group g's words into qa, sa, qb, sb (neutral b when the pair has no second row).
    const load = `qa = Wq[abase + g]; sa = S_at(abase + g);
        if (hasB) { qb = Wq[bbase + g]; sb = S_at(bbase + g); } else { qb = vec4<u32>(0x77777777u); sb = 0.0; }`;
    const red = S > 1 ? `var<workgroup> red: array<f32, ${items * nr * 2}>;` : '';
    // Slice sums of pair pr, x row r: red[((pr * nr + r) * 2 + {0: a, 1: b}) * S + slice].
    const redAt = (pr: string, r: number, ab: number, sl: string) => `red[((${pr} * ${nr}u + ${r}u) * 2u + ${ab}u) * ${S}u + ${sl}]`;
    const finish =
      S === 1
        ? `if (live && sid == 0u) {
      ${storeBody}
    }`
        : `if (sid == 0u) {
      ${range(nr).map((r) => `${redAt('pr', r, 0, 'slice')} = ta${r}; ${redAt('pr', r, 1, 'slice')} = tb${r};`).join('\n      ')}
    }`;
    const combine =
      S === 1
        ? ''
        : `// The slices' sums of each pair, in slice order, then the epilogue.
  workgroupBarrier();
  for (var pr = lid; pr < ${pairs}u; pr += ${WG}u) {
    ${pairDecl('pr')}
    if (i < dims.outRows) {
      ${range(nr).map((r) => `var ta${r} = 0.0; var tb${r} = 0.0;`).join(' ')}
      for (var sl = 0u; sl < ${S}u; sl++) {
        ${range(nr).map((r) => `ta${r} += ${redAt('pr', r, 0, 'sl')}; tb${r} += ${redAt('pr', r, 1, 'sl')};`).join('\n        ')}
      }
      ${storeBody}
    }
  }`;
    return /* wgsl */ `${q4Enables(p, true)}diagnostic(off, subgroup_uniformity);
${common}
${SUBGROUP_COUNTER_WGSL}
${red}

${entry}
  ${SUBGROUP_INDEX_WGSL}
  let gStep = ${S}u * sgSize;
  // The first item's first words, requested before the norm prologue so that their latency overlaps it.
  var qa = vec4<u32>(0x77777777u); var sa = 0.0; var qb = vec4<u32>(0x77777777u); var sb = 0.0;
  if (sgIndex < ${items}u) {
    ${itemDecl('sgIndex')}
    let g = slice * sgSize + sid;
    if (live && g < G) {
      ${load}
    }
  }
  ${prologue}
  ${loraIn}
  for (var it = sgIndex; it < ${items}u; it += sgTotal) {
    ${itemDecl('it')}
    ${accDecl}
    if (live) {
      var g = slice * sgSize + sid;
      if (it != sgIndex && g < G) {
        ${load}
      }
      ${S > 1 ? 'if (slice == 0u) {' : '{'}
      ${loraTerms('sid', 'sgSize')}
      }
      while (g < G) {
        // Next words in flight while these are multiplied.
        let wa = qa; let ca = sa; let wb = qb; let cb = sb;
        let gn = g + gStep;
        if (gn < G) {
          let g = gn;
          ${load}
        }
        {
          let qa = wa; let sa = ca; let qb = wb; let sb = cb;
          ${groupMath}
        }
        g = gn;
      }
    }
    ${range(nr).map((r) => `let ta${r} = subgroupAdd(acc${r}); let tb${r} = subgroupAdd(bcc${r});`).join('\n    ')}
    ${finish}
  }
  ${combine}
}
`;
  }
  const P = Q4D_WG;
  return /* wgsl */ `${q4Enables(p)}
${common}
${pairPartialsWgsl(P, nr)}

${entry}
  ${prologue}
  ${loraIn}
  let lane = lid % ${lanes}u;
  let pr = lid / ${lanes}u;
  ${accDecl}
  ${pairDecl('pr')}
  let live = i < dims.outRows;
  if (live) {
    ${loraTerms('lane', `${lanes}u`)}
    let abase = (dims.wRow + aRow) * G;
    let bbase = (dims.wRow + bRow) * G;
    for (var g = lane; g < G; g += ${lanes}u) {
      ${groupBody}
    }
  }
${pairTreeSumWgsl(P, nr, lanes)}
  if (lane == 0u && live) {
    ${range(nr).map((r) => `let ta${r} = partA[${r * P}u + lid]; let tb${r} = partB[${r * P}u + lid];`).join(' ')}
    ${storeBody}
  }
}
`;
}
