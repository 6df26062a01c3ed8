// Attention backward (causal within a packed batch via per-row key ranges, GQA), three passes, no float
// atomics. With P = softmax(scale * q k^T) (lse saved by the forward) and D = rowsum(dout * out):
//   dS = P * (dout v^T - D);  dq = scale * dS k;  dk = scale * dS^T q;  dv = P^T dout
// pass 0: one thread per (row, head): stats[2i] = lse, stats[2i+1] = D (packing both keeps the later
//         passes within 8 storage bindings)
// pass 1: one workgroup per (query row, head): walks its key range 64 keys at a time; each thread scores
//         one key, then each thread accumulates its own head-dim columns of dq over the tile.
// pass 2: one workgroup per (key row, kv head): walks the (query row, query head) pairs of its group,
//         keeps only those whose range contains the key, and accumulates dk and dv the same way.
//         In general that scans all N query rows; with \`packed\` (K/V rows = query rows, causal packed
//         sequences) the scan starts at query row m and stops at the first tile whose first row starts
//         after m, so it costs the length of m's sequence instead of the batch.
// Each output element has exactly one writer, so dk/dv sum over the shared query heads without atomics.
// Passes 1 and 2 recompute p and dS of a (query, key) pair with one WGSL function, pairGrad; each pass
// defines the accessors qAt/doAt (query row) and kAt/vAt (key row) that read its workgroup copy or storage.
// (Same operations in the same order as when each pass had its own copy: results are bit-identical.)

export const ATTN_BWD_WG = 64;
export const ATTN_BWD_MAX_HD = 256;
const SLOTS = ATTN_BWD_MAX_HD / ATTN_BWD_WG;

const PARAMS = 'struct Params { n: u32, m: u32, nH: u32, nKV: u32, hd: u32, scale: f32, packed: u32 }';
// p = exp(scale q.k - lse) and dS = p (dout.v - D) of query row qb and key row kb (element offsets).
const PAIR_GRAD = `fn pairGrad(qb: u32, kb: u32, lse: f32, D: f32) -> vec2<f32> {
  var s = 0.0;
  var dp = 0.0;
  for (var d = 0u; d < P.hd; d++) { s += qAt(qb, d) * kAt(kb, d); dp += doAt(qb, d) * vAt(kb, d); }
  let p = exp(s * P.scale - lse);
  return vec2<f32>(p, p * (dp - D));
}
`;

const ENTRY = `@compute @workgroup_size(${ATTN_BWD_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32)`;

export function attentionBackwardStatsWgsl(): string {
  return /* wgsl */ `${PARAMS}
@group(0) @binding(0) var<storage, read> out: array<f32>;
@group(0) @binding(1) var<storage, read> dout: array<f32>;
@group(0) @binding(2) var<storage, read> lse: array<f32>;
@group(0) @binding(3) var<storage, read_write> stats: array<f32>;
@group(0) @binding(4) var<uniform> P: Params;
${ENTRY} {
  let idx = (wg.x + wg.y * nwg.x) * ${ATTN_BWD_WG}u + lid;
  if (idx >= P.n * P.nH) { return; }
  let b = idx * P.hd;
  var dsum = 0.0;
  for (var d = 0u; d < P.hd; d++) { dsum += out[b + d] * dout[b + d]; }
  stats[2u * idx] = lse[idx];
  stats[2u * idx + 1u] = dsum;
}
`;
}

export function attentionBackwardDqWgsl(): string {
  return /* wgsl */ `${PARAMS}
@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read> stats: array<f32>;
@group(0) @binding(5) var<storage, read> ranges: array<u32>;
@group(0) @binding(6) var<storage, read_write> dq: array<f32>;
@group(0) @binding(7) var<uniform> P: Params;
var<workgroup> sq: array<f32, ${ATTN_BWD_MAX_HD}>;
var<workgroup> sdo: array<f32, ${ATTN_BWD_MAX_HD}>;
var<workgroup> sds: array<f32, ${ATTN_BWD_WG}>;
var<workgroup> wStart: u32;
var<workgroup> wEnd: u32;
fn qAt(qb: u32, d: u32) -> f32 { return sq[d]; }
fn doAt(qb: u32, d: u32) -> f32 { return sdo[d]; }
fn kAt(kb: u32, d: u32) -> f32 { return k[kb + d]; }
fn vAt(kb: u32, d: u32) -> f32 { return v[kb + d]; }
${PAIR_GRAD}
${ENTRY} {
  let idx = wg.x + wg.y * nwg.x;
  if (idx >= P.n * P.nH) { return; }
  let n = idx / P.nH;
  let h = idx % P.nH;
  let g = h / (P.nH / P.nKV);
  let qb = idx * P.hd;
  for (var d = lid; d < P.hd; d += ${ATTN_BWD_WG}u) { sq[d] = q[qb + d]; sdo[d] = dout[qb + d]; }
  if (lid == 0u) { wStart = ranges[2u * n]; wEnd = ranges[2u * n + 1u]; }
  let start = workgroupUniformLoad(&wStart);
  let end = workgroupUniformLoad(&wEnd);
  let lse = stats[2u * idx];
  let D = stats[2u * idx + 1u];
  let kvStride = P.nKV * P.hd;
  let kOff = g * P.hd;
  var acc: array<f32, ${SLOTS}>;
  for (var m0 = start; m0 < end; m0 += ${ATTN_BWD_WG}u) {
    let m = m0 + lid;
    var ds = 0.0;
    if (m < end) { ds = pairGrad(0u, m * kvStride + kOff, lse, D).y; }
    sds[lid] = ds;
    workgroupBarrier();
    let cnt = min(${ATTN_BWD_WG}u, end - m0);
    for (var c = 0u; c < ${SLOTS}u; c++) {
      let d = lid + c * ${ATTN_BWD_WG}u;
      if (d < P.hd) {
        var a = acc[c];
        for (var j = 0u; j < cnt; j++) { a += sds[j] * k[(m0 + j) * kvStride + kOff + d]; }
        acc[c] = a;
      }
    }
    workgroupBarrier();
  }
  for (var c = 0u; c < ${SLOTS}u; c++) {
    let d = lid + c * ${ATTN_BWD_WG}u;
    if (d < P.hd) { dq[qb + d] = P.scale * acc[c]; }
  }
}
`;
}

export function attentionBackwardDkvWgsl(): string {
  return /* wgsl */ `${PARAMS}
@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read> stats: array<f32>;
@group(0) @binding(5) var<storage, read> ranges: array<u32>;
@group(0) @binding(6) var<storage, read_write> dk: array<f32>;
@group(0) @binding(7) var<storage, read_write> dv: array<f32>;
@group(0) @binding(8) var<uniform> P: Params;
var<workgroup> sk: array<f32, ${ATTN_BWD_MAX_HD}>;
var<workgroup> sv: array<f32, ${ATTN_BWD_MAX_HD}>;
var<workgroup> sp: array<f32, ${ATTN_BWD_WG}>;
var<workgroup> sds: array<f32, ${ATTN_BWD_WG}>;
var<workgroup> wStop: u32;
fn qAt(qb: u32, d: u32) -> f32 { return q[qb + d]; }
fn doAt(qb: u32, d: u32) -> f32 { return dout[qb + d]; }
fn kAt(kb: u32, d: u32) -> f32 { return sk[d]; }
fn vAt(kb: u32, d: u32) -> f32 { return sv[d]; }
${PAIR_GRAD}
${ENTRY} {
  let idx = wg.x + wg.y * nwg.x;
  if (idx >= P.m * P.nKV) { return; }
  let m = idx / P.nKV;
  let g = idx % P.nKV;
  let G = P.nH / P.nKV;
  let kb = idx * P.hd;
  for (var d = lid; d < P.hd; d += ${ATTN_BWD_WG}u) { sk[d] = k[kb + d]; sv[d] = v[kb + d]; }
  workgroupBarrier();
  let total = P.n * G;
  var accK: array<f32, ${SLOTS}>;
  var accV: array<f32, ${SLOTS}>;
  let first = select(0u, m * G, P.packed == 1u);
  for (var e0 = first; e0 < total; e0 += ${ATTN_BWD_WG}u) {
    if (P.packed == 1u) {
      if (lid == 0u) { wStop = select(0u, 1u, ranges[2u * (e0 / G)] > m); }
      if (workgroupUniformLoad(&wStop) == 1u) { break; }
    }
    let e = e0 + lid;
    var p = 0.0;
    var ds = 0.0;
    if (e < total) {
      let n = e / G;
      if (ranges[2u * n] <= m && m < ranges[2u * n + 1u]) {
        let qi = n * P.nH + g * G + e % G;
        let pd = pairGrad(qi * P.hd, 0u, stats[2u * qi], stats[2u * qi + 1u]);
        p = pd.x;
        ds = pd.y;
      }
    }
    sp[lid] = p;
    sds[lid] = ds;
    workgroupBarrier();
    let cnt = min(${ATTN_BWD_WG}u, total - e0);
    for (var c = 0u; c < ${SLOTS}u; c++) {
      let d = lid + c * ${ATTN_BWD_WG}u;
      if (d < P.hd) {
        var ak = accK[c];
        var av = accV[c];
        for (var j = 0u; j < cnt; j++) {
          let pj = sp[j];
          if (pj != 0.0) {
            let ej = e0 + j;
            let qb = ((ej / G) * P.nH + g * G + ej % G) * P.hd;
            av += pj * dout[qb + d];
            ak += sds[j] * q[qb + d];
          }
        }
        accK[c] = ak;
        accV[c] = av;
      }
    }
    workgroupBarrier();
  }
  for (var c = 0u; c < ${SLOTS}u; c++) {
    let d = lid + c * ${ATTN_BWD_WG}u;
    if (d < P.hd) {
      dk[kb + d] = P.scale * accK[c];
      dv[kb + d] = accV[c];
    }
  }
}
`;
}
