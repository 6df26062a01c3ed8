// Split-K ("flash-decoding") attention for few query rows over many keys. The one-workgroup-per-(row,
// head) kernel gives decode nH workgroups, each walking the whole KV cache: most of a large GPU idles.
// Here the key range of each (row, head) is cut into up to `splits` slices:
//   pass 1: one workgroup per (row, head, split) runs the usual online softmax over its slice and stores
//           the partial (max m, exp-sum l, unnormalised output acc) in `partials`;
//   pass 2: one workgroup per (row, head) rescales the partials to their common max and sums them into
//           out and lse, the layouts and conventions of the single-pass kernel.
// The slicing is computed on the GPU from each row's range (no CPU readback: the dispatch is recorded once
// and replayed every decode step): slices are an even share of the range in whole key blocks, at least
// `minKeys` long, so a short range is one slice and the trailing splits are empty and do nothing.
// A range of at most minKeys keys is therefore computed exactly as the single-pass kernel computes it
// (same loop text, the lone partial's weight is exactly 1).
//
// partials (f32): [n*nH*splits, hd] unnormalised outputs, then [n*nH*splits, 2] (m, l).

import { ATTN_NEG, ATTN_WG, attentionKeyLoopWgsl, attentionLoadQueryWgsl, attentionSharedWgsl } from './attention.wgsl';

const DIMS = 'struct Dims { n: u32, nH: u32, nKV: u32, hd: u32, scale: f32, splits: u32, minKeys: u32 }';

// Keys per slice for a range of len keys, and how many slices are non-empty; both passes must agree.
const SLICING = `fn sliceKeys(len: u32) -> u32 {
  let share = (len + dims.splits - 1u) / dims.splits;
  return max(dims.minKeys, ((share + ${ATTN_WG - 1}u) / ${ATTN_WG}u) * ${ATTN_WG}u);
}

fn rangeLen(r: vec2<u32>) -> u32 { return select(0u, r.y - r.x, r.y > r.x); }
`;

const ENTRY = `@compute @workgroup_size(${ATTN_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32)`;

export function attentionSplitPartialsWgsl(): string {
  return /* wgsl */ `${DIMS}
@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> ranges: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read_write> partials: array<f32>;
@group(0) @binding(5) var<uniform> dims: Dims;

${attentionSharedWgsl()}
${SLICING}
${ENTRY} {
  let idx = wg.x + wg.y * nwg.x;
  if (idx >= dims.n * dims.nH * dims.splits) { return; }
  let pair = idx / dims.splits;
  let split = idx - pair * dims.splits;
  let row = pair / dims.nH;
  let h = pair - row * dims.nH;
  let range = ranges[row];
  let len = rangeLen(range);
  let keys = sliceKeys(len);
  // Slices past the end of this row's range hold nothing; pass 2 does not read them.
  if (split * keys >= len) { return; }
  let start = range.x + split * keys;
  let end = min(range.y, start + keys);
${attentionLoadQueryWgsl()}  workgroupBarrier();

${attentionKeyLoopWgsl()}  let ob = idx * hd;
  for (var c = 0u; c < 4u; c++) {
    let d = lid + c * ${ATTN_WG}u;
    if (d < hd) { partials[ob + d] = acc[c]; }
  }
  if (lid == 0u) {
    let sb = dims.n * dims.nH * dims.splits * hd + 2u * idx;
    partials[sb] = m;
    partials[sb + 1u] = l;
  }
}
`;
}

/** `prefixed`: each row's keys are its shared-prefix range's and then its own (attention.decode.wgsl.ts). */
export function attentionSplitCombineWgsl(prefixed = false): string {
  return /* wgsl */ `${DIMS}
@group(0) @binding(0) var<storage, read> ranges: array<vec2<u32>>;
@group(0) @binding(1) var<storage, read> partials: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read_write> lse: array<f32>;
@group(0) @binding(4) var<uniform> dims: Dims;
${prefixed ? '@group(0) @binding(5) var<storage, read> prefixes: array<vec2<u32>>;' : ''}

${SLICING}
${ENTRY} {
  let idx = wg.x + wg.y * nwg.x;
  if (idx >= dims.n * dims.nH) { return; }
  let row = idx / dims.nH;
  let hd = dims.hd;
  let len = rangeLen(ranges[row])${prefixed ? ' + rangeLen(prefixes[row])' : ''};
  let keys = sliceKeys(len);
  let used = (len + keys - 1u) / keys;
  let first = idx * dims.splits;
  let statBase = dims.n * dims.nH * dims.splits * hd;
  var mAll = ${ATTN_NEG};
  for (var s = 0u; s < used; s++) { mAll = max(mAll, partials[statBase + 2u * (first + s)]); }
  var l = 0.0;
  var acc = vec4<f32>(0.0);
  for (var s = 0u; s < used; s++) {
    let ms = partials[statBase + 2u * (first + s)];
    // The slice holding the overall max gets weight exactly 1, so a single slice passes through unchanged.
    let w = select(exp(ms - mAll), 1.0, ms == mAll);
    l += partials[statBase + 2u * (first + s) + 1u] * w;
    let ob = (first + s) * hd;
    for (var c = 0u; c < 4u; c++) {
      let d = lid + c * ${ATTN_WG}u;
      if (d < hd) { acc[c] += partials[ob + d] * w; }
    }
  }
  let inv = select(0.0, 1.0 / l, l > 0.0);
  let qBase = idx * hd;
  for (var c = 0u; c < 4u; c++) {
    let d = lid + c * ${ATTN_WG}u;
    if (d < hd) { out[qBase + d] = acc[c] * inv; }
  }
  if (lid == 0u) { lse[idx] = select(${ATTN_NEG}, mAll + log(l), l > 0.0); }
}
`;
}
