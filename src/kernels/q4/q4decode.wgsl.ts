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
// The inner loop is the rows kernel's (q4matmul.wgsl.ts): one vec4<u32> load per group of 32 weights, two
// weight rows per pass, the rows of x multiplied while the words are in registers; the reduction is a
// subgroupAdd where the device has subgroups, else a tree in workgroup memory.
//
// - LoRA up epilogue: y += scale * t · B^T per output (t from a LoRA down dispatched before), so the
//   adapter's up projection of o, down, gate and up needs no dispatch of its own.
// Read-only f32 vectors (norm weight, biases) live in "param" buffers bound once each with element
// offsets in the uniform, so a caller can pack them into one buffer to stay within 8 storage bindings.

import { pairPartialsWgsl, pairTreeSumWgsl, q4Enables, q4ScaleDecl, Q4_UNPACK_WGSL, type Q4Path } from './q4.wgsl';
import { SUBGROUP_COUNTER_WGSL, SUBGROUP_INDEX_WGSL } from '../common/subgroups.wgsl';
import { Q4_SMALL_N } from './q4matmul.wgsl';
import { RMS_SCALE_WGSL } from '../rmsnorm/rms-scale.wgsl';

export const Q4D_WG = 64;
export const Q4D_MAX_SEGMENTS = 3;

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
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** Binding layout shared with the dispatch builder: returns each binding's role in order. */
export function q4DecodeBindings(v: Q4DecodeVariant): string[] {
  const b = ['Wq', 'S', 'x', 'dims'];
  for (let i = 0; i < v.params; i++) b.push(`P${i}`);
  if (v.residual === 'separate') b.push('res');
  if (v.storeXn) b.push('xn');
  v.lora.forEach((on, s) => on && b.push(`T${s}`, `B${s}`));
  if (v.swiglu) b.push('y0');
  else for (let s = 0; s < v.segments; s++) b.push(`y${s}`);
  return b;
}

export function q4DecodeWgsl(p: Q4Path, v: Q4DecodeVariant): string {
  const { nr, rows, subgroups } = v;
  if (!Number.isInteger(nr) || nr < 1 || nr > Q4_SMALL_N) throw new Error(`q4DecodeWgsl: nr must be 1..${Q4_SMALL_N}, got ${nr}`);
  if (![2, 4, 8, 16, 32, 64].includes(rows)) throw new Error(`q4DecodeWgsl: rows must be a power of two in 2..64, got ${rows}`);
  const norm = v.normParam >= 0;
  const cache = norm && v.xCache > 0;
  if (cache && !Number.isInteger(v.xCache)) throw new Error(`q4DecodeWgsl: xCache must be an integer, got ${v.xCache}`);
  const pairs = rows / 2;
  const lanes = Q4D_WG / pairs;
  const decl: string[] = [];
  q4DecodeBindings(v).forEach((name, i) => {
    if (name === 'Wq') decl.push(`@group(0) @binding(${i}) var<storage, read> Wq: array<vec4<u32>>;`);
    else if (name === 'S') decl.push(q4ScaleDecl(p, i));
    else if (name === 'x') decl.push(`@group(0) @binding(${i}) var<storage, read> x: array<vec4<f32>>;`);
    else if (name === 'dims') decl.push(`@group(0) @binding(${i}) var<uniform> dims: Dims;`);
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

  // Which weight rows a pair multiplies, and whether it exists. Plain: rows o, o + 1 of the out rows;
  // swiglu: gate row i and up row I + i (dims.outRows = I).
  const iExpr = v.swiglu ? `wgi * ${pairs}u + pr` : `wgi * ${rows}u + 2u * pr`;
  const pairRows = v.swiglu
    ? `let hasB = true;
    let aRow = i;
    let bRow = dims.outRows + i;`
    : `let hasB = i + 1u < dims.outRows;
    let aRow = i;
    let bRow = i + 1u;`;

  // x row r, vec4 v of group g, normalised in registers when there is a norm prologue (same expression
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
  const groupBody = `let qa = Wq[abase + g];
        let sa = S_at(abase + g);
        var qb = vec4<u32>(0x77777777u);
        var sb = 0.0;
        if (hasB) { qb = Wq[bbase + g]; sb = S_at(bbase + g); }
        ${norm && !cache ? range(8).map((k) => `let w_${k} = ${nw(`g * 8u + ${k}u`)};`).join(' ') : ''}
        ${range(nr).map((r) => `{ ${xs(r)}
          acc${r} += sa * (${dots('qa', r)});
          bcc${r} += sb * (${dots('qb', r)}); }`).join('\n        ')}`;

  // Writes of one finished pair: ta<r> / tb<r> are rows aRow / bRow of x-row r.
  const storeBody = v.swiglu
    ? range(nr)
        .map((r) => {
          const g = v.lora[0] ? `ta${r} + dims.ls0 * lora0(${r}u, i)` : `ta${r}`;
          const u = v.lora[1] ? `tb${r} + dims.ls1 * lora1(${r}u, i)` : `tb${r}`;
          return `{ let g = ${g}; y0[${r}u * dims.outRows + i] = g / (1.0 + exp(-g)) * (${u}); }`;
        })
        .join(' ')
    : `${range(nr).map((r) => `store(${r}u, i, ta${r});`).join(' ')}
      if (hasB) { ${range(nr).map((r) => `store(${r}u, i + 1u, tb${r});`).join(' ')} }`;

  const segStore = (s: number, base: string) => {
    const bp = v.biasParam[s] ?? -1;
    const len = s === 0 ? 'dims.e0' : s === 1 ? 'dims.e1 - dims.e0' : 'dims.outRows - dims.e1';
    const col = s === 0 ? 'o' : s === 1 ? 'o - dims.e0' : 'o - dims.e1';
    return `{ let c = ${col}; let idx = row * (${len}) + c; var val = acc;
      ${bp >= 0 ? `val += P${bp}[dims.bias${s} + c];` : ''}
      ${v.lora[s] ? `val += dims.ls${s} * lora${s}(row, c);` : ''}
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
      for (var st = ${Q4D_WG / 2}u; st > 0u; st >>= 1u) {
        if (lid < st) { nrm[o + lid] = ${op('nrm[o + lid]', 'nrm[o + lid + st]')}; }
        workgroupBarrier();
      }`;
  const prologue = norm
    ? `${range(nr).map((r) => `var ss${r} = 0.0; var big${r} = false;`).join(' ')}
  for (var j = lid; j < in4; j += ${Q4D_WG}u) {
    ${range(nr).map((r) => `{ let t = x[${r}u * in4 + j]; ss${r} += dot(t, t); let a = abs(t); big${r} = big${r} || max(max(a.x, a.y), max(a.z, a.w)) >= RMS_SCALE_FROM; }`).join(' ')}
  }
  ${range(nr).map((r) => `nrm[${r * Q4D_WG}u + lid] = select(ss${r}, RMS_SCALE_MARK, big${r});`).join(' ')}
  workgroupBarrier();
  for (var st = ${Q4D_WG / 2}u; st > 0u; st >>= 1u) {
    if (lid < st) { ${range(nr).map((r) => `nrm[${r * Q4D_WG}u + lid] += nrm[${r * Q4D_WG}u + lid + st];`).join(' ')} }
    workgroupBarrier();
  }
  if (lid == 0u) {
    var mask = 0u;
    for (var r = 0u; r < ${nr}u; r++) { if (nrm[r * ${Q4D_WG}u] < 0.0) { mask |= 1u << r; } }
    nbig = mask;
  }
  let bigRows = workgroupUniformLoad(&nbig);
  // One loop over the rows rather than a copy per row: the flagged-row path is rare, its code need not be unrolled.
  var scs: array<f32, ${nr}>;
  for (var r = 0u; r < ${nr}u; r++) {
    scs[r] = 1.0;
    if (((bigRows >> r) & 1u) != 0u) {
      let o = r * ${Q4D_WG}u;
      var mx = 0.0;
      for (var j = lid; j < in4; j += ${Q4D_WG}u) { let a = abs(x[r * in4 + j]); mx = max(mx, max(max(a.x, a.y), max(a.z, a.w))); }
      nrm[o + lid] = mx;
      ${treeOf((a, b) => `max(${a}, ${b})`)}
      let s = rms_scale(workgroupUniformLoad(&nrm[o]));
      scs[r] = s;
      var ss = 0.0;
      for (var j = lid; j < in4; j += ${Q4D_WG}u) { let t = x[r * in4 + j] * s; ss += dot(t, t); }
      // Every thread has loaded the maximum before its word is overwritten.
      workgroupBarrier();
      nrm[o + lid] = ss;
      ${treeOf((a, b) => `${a} + ${b}`)}
    }
  }
  ${range(nr).map((r) => `let sc${r} = scs[${r}];`).join(' ')}
  // 1/sqrt as the rmsnorm kernel does (inverseSqrt is only ~2 ulp by spec).
  ${range(nr).map((r) => `let rs${r} = 1.0 / sqrt(nrm[${r * Q4D_WG}u] / f32(dims.inDim) + dims.eps * sc${r} * sc${r});`).join('\n  ')}
  ${
    cache
      ? `for (var j = lid; j < in4; j += ${Q4D_WG}u) {
    let w4 = ${nw('j')};
    ${range(nr).map((r) => `xs[${r * v.xCache}u + j] = x[${r}u * in4 + j] * sc${r} * rs${r} * w4;`).join(' ')}
  }
  workgroupBarrier();`
      : ''
  }
  ${
    v.storeXn
      ? `if (wgi == 0u) {
    for (var j = lid; j < in4; j += ${Q4D_WG}u) {
      ${cache ? '' : `let w4 = ${nw('j')};`}
      ${range(nr).map((r) => (cache ? `xn[${r}u * in4 + j] = xs[${r * v.xCache}u + j];` : `xn[${r}u * in4 + j] = x[${r}u * in4 + j] * sc${r} * rs${r} * w4;`)).join(' ')}
    }
  }`
      : ''
  }`
    : '';

  // LoRA up of one output: sum_j t[row, j] B[col, j] over the slot's rank.
  const loraFns = v.lora
    .map((on, s) =>
      on
        ? `fn lora${s}(row: u32, col: u32) -> f32 {
  var a = 0.0;
  for (var j = 0u; j < dims.lr${s}; j++) { a += T${s}[row * dims.lr${s} + j] * B${s}[col * dims.lr${s} + j]; }
  return a;
}`
        : '',
    )
    .join('\n');
  const common = `struct Dims { n: u32, inDim: u32, wRow: u32, outRows: u32, e0: u32, e1: u32, normOff: u32, eps: f32, bias0: u32, bias1: u32, bias2: u32,
  lr0: u32, ls0: f32, lr1: u32, ls1: f32, lr2: u32, ls2: f32 }
${decl.join('\n')}
${loraFns}
${Q4_UNPACK_WGSL}
${normFns}
${storeFn}
${norm ? `var<workgroup> nrm: array<f32, ${Q4D_WG * nr}>;\nvar<workgroup> nbig: u32;\n${RMS_SCALE_WGSL}` : ''}
${cache ? `var<workgroup> xs: array<vec4<f32>, ${nr * v.xCache}>;` : ''}`;

  const accDecl = `${range(nr).map((r) => `var acc${r} = 0.0;`).join(' ')} ${range(nr).map((r) => `var bcc${r} = 0.0;`).join(' ')}`;

  // Both variants: one workgroup per `rows` weight rows, the input's sizes, then the norm prologue.
  const entry = `@compute @workgroup_size(${Q4D_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let wgi = wg.x + wg.y * nwg.x;
  let in4 = dims.inDim / 4u;
  let G = dims.inDim / 32u;
  ${prologue}`;

  if (subgroups) {
    // As in q4matmul.wgsl.ts: subgroups get a dense index from a workgroup counter and own whole pairs;
    // the branches around subgroupAdd depend only on subgroup-uniform values.
    return /* wgsl */ `${q4Enables(p, true)}diagnostic(off, subgroup_uniformity);
${common}
${SUBGROUP_COUNTER_WGSL}

${entry}
  ${SUBGROUP_INDEX_WGSL}
  for (var pr = sgIndex; pr < ${pairs}u; pr += sgTotal) {
    let i = ${iExpr};
    if (i >= dims.outRows) { break; }
    ${pairRows}
    ${accDecl}
    let abase = (dims.wRow + aRow) * G;
    let bbase = (dims.wRow + bRow) * G;
    for (var g0 = 0u; g0 < G; g0 += sgSize) {
      let g = g0 + sid;
      if (g < G) {
        ${groupBody}
      }
    }
    ${range(nr).map((r) => `let ta${r} = subgroupAdd(acc${r}); let tb${r} = subgroupAdd(bcc${r});`).join('\n    ')}
    if (sid == 0u) {
      ${storeBody}
    }
  }
}
`;
  }
  const P = Q4D_WG;
  return /* wgsl */ `${q4Enables(p)}
${common}
${pairPartialsWgsl(P, nr)}

${entry}
  let lane = lid % ${lanes}u;
  let pr = lid / ${lanes}u;
  ${accDecl}
  let i = ${iExpr};
  let live = i < dims.outRows;
  ${pairRows}
  if (live) {
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
