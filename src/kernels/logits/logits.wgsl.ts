// Log-softmax statistics over a vocabulary that arrives in column chunks. Per row, a running
// (max, sum of exp(scale*logit - max), target logit) triple lives in `stats` [rows, 3]; each chunk
// dispatch merges its columns into it (the first chunk initialises it), and a finalize dispatch turns it
// into lse and log p(target). `scale` is 1/temperature (1 for training log-probs).

export const LSE_WG = 256;
export const LSE_NEG = -3.0e38;

export function lseChunkWgsl(withTargets: boolean): string {
  return /* wgsl */ `
struct Dims { rows: u32, cols: u32, ld: u32, colOffset: u32, vocabOffset: u32, first: u32, scale: f32 }
@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> stats: array<f32>;
@group(0) @binding(2) var<uniform> dims: Dims;
${withTargets ? '@group(0) @binding(3) var<storage, read> targets: array<u32>;' : ''}

var<workgroup> rm: array<f32, ${LSE_WG}>;
var<workgroup> rs: array<f32, ${LSE_WG}>;

fn merge(m1: f32, s1: f32, m2: f32, s2: f32) -> vec2<f32> {
  let m = max(m1, m2);
  return vec2<f32>(m, s1 * exp(m1 - m) + s2 * exp(m2 - m));
}

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
    var prev = vec3<f32>(${LSE_NEG}, 0.0, ${LSE_NEG});
    if (dims.first == 0u) { prev = vec3<f32>(stats[row * 3u], stats[row * 3u + 1u], stats[row * 3u + 2u]); }
    let r = merge(prev.x, prev.y, rm[0], rs[0]);
    var tgt = prev.z;
    ${
      withTargets
        ? `let t = targets[row];
    if (t >= dims.vocabOffset && t - dims.vocabOffset < dims.cols) { tgt = logits[base + t - dims.vocabOffset] * dims.scale; }`
        : ''
    }
    stats[row * 3u] = r.x;
    stats[row * 3u + 1u] = r.y;
    stats[row * 3u + 2u] = tgt;
  }
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
