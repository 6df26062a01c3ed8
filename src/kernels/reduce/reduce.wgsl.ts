// Sums (or sums of squares) over a list of f32 buffers, in two stages so no float atomics are needed:
// one single-workgroup dispatch per buffer writes partials[slot], then one dispatch adds the partials and
// derives the global norm and the clip-by-norm scale. The scale stays on the GPU for adamw to read, so the
// CPU never waits for a read-back inside an optimizer step.

export const REDUCE_WG = 256;

function treeSum(): string {
  return /* wgsl */ `
  partial[lid] = acc;
  workgroupBarrier();
  for (var s = ${REDUCE_WG / 2}u; s > 0u; s >>= 1u) {
    if (lid < s) { partial[lid] += partial[lid + s]; }
    workgroupBarrier();
  }`;
}

/** partials[slot] = sum over src[offset .. offset+count) of v (square=0) or v*v (square=1). */
export function reducePartialWgsl(): string {
  return /* wgsl */ `
struct Params { count: u32, offset: u32, slot: u32, square: u32 }
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> partials: array<f32>;
@group(0) @binding(2) var<uniform> P: Params;
var<workgroup> partial: array<f32, ${REDUCE_WG}>;

@compute @workgroup_size(${REDUCE_WG})
fn main(@builtin(local_invocation_index) lid: u32) {
  var acc = 0.0;
  for (var i = lid; i < P.count; i += ${REDUCE_WG}u) {
    let v = src[P.offset + i];
    acc += select(v, v * v, P.square == 1u);
  }
${treeSum()}
  if (lid == 0u) { partials[P.slot] = partial[0]; }
}
`;
}

/** out = [total, sqrt(total), clipScale]; clipScale = min(1, maxNorm / (sqrt(total) + 1e-6)), 1 if maxNorm <= 0. */
export function reduceFinalWgsl(): string {
  return /* wgsl */ `
struct Params { count: u32, maxNorm: f32 }
@group(0) @binding(0) var<storage, read> partials: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> P: Params;
var<workgroup> partial: array<f32, ${REDUCE_WG}>;

@compute @workgroup_size(${REDUCE_WG})
fn main(@builtin(local_invocation_index) lid: u32) {
  var acc = 0.0;
  for (var i = lid; i < P.count; i += ${REDUCE_WG}u) { acc += partials[i]; }
${treeSum()}
  if (lid == 0u) {
    let total = partial[0];
    let norm = sqrt(max(total, 0.0));
    out[0] = total;
    out[1] = norm;
    out[2] = select(1.0, min(1.0, P.maxNorm / (norm + 1e-6)), P.maxNorm > 0.0);
  }
}
`;
}
