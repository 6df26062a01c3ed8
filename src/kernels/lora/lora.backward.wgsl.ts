// LoRA backward, y += s * (x A^T) B^T with t = x A^T saved by the forward. Four kernels, run in order
// (each is its own pass, so t/dt dependencies are ordered by WebGPU):
//   dB[out, r] += s * dy^T t        one thread per (o, j), loops over the N rows
//   dt[N, r]    = s * dy B          one workgroup per (row, j), reduces over out
//   dA[r, in]  += dt^T x            one thread per (j, i), loops over the N rows
//   dx[N, in]  += dt A              one thread per (row, i), loops over r
// dA and dB accumulate so micro-batches add up; no float atomics are needed because every output
// element has exactly one writer.

export const LORA_BWD_WG = 64;

const FLAT = `let idx = (wg.x + wg.y * nwg.x) * ${LORA_BWD_WG}u + lid;`;
const ENTRY = `@compute @workgroup_size(${LORA_BWD_WG})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32)`;
const PARAMS = 'struct Params { n: u32, inDim: u32, outDim: u32, r: u32, s: f32 }';

export function loraGradBWgsl(): string {
  return /* wgsl */ `${PARAMS}
@group(0) @binding(0) var<storage, read> dy: array<f32>;
@group(0) @binding(1) var<storage, read> t: array<f32>;
@group(0) @binding(2) var<storage, read_write> dB: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
${ENTRY} {
  ${FLAT}
  if (idx >= P.outDim * P.r) { return; }
  let o = idx / P.r;
  let j = idx % P.r;
  var acc = 0.0;
  for (var n = 0u; n < P.n; n++) { acc += dy[n * P.outDim + o] * t[n * P.r + j]; }
  dB[idx] = dB[idx] + P.s * acc;
}
`;
}

export function loraGradTWgsl(): string {
  return /* wgsl */ `${PARAMS}
@group(0) @binding(0) var<storage, read> dy: array<f32>;
@group(0) @binding(1) var<storage, read> B: array<f32>;
@group(0) @binding(2) var<storage, read_write> dt: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
var<workgroup> partial: array<f32, ${LORA_BWD_WG}>;
${ENTRY} {
  let idx = wg.x + wg.y * nwg.x;
  if (idx >= P.n * P.r) { return; }
  let n = idx / P.r;
  let j = idx % P.r;
  var acc = 0.0;
  for (var o = lid; o < P.outDim; o += ${LORA_BWD_WG}u) { acc += dy[n * P.outDim + o] * B[o * P.r + j]; }
  partial[lid] = acc;
  workgroupBarrier();
  for (var s = ${LORA_BWD_WG / 2}u; s > 0u; s >>= 1u) {
    if (lid < s) { partial[lid] += partial[lid + s]; }
    workgroupBarrier();
  }
  if (lid == 0u) { dt[idx] = P.s * partial[0]; }
}
`;
}

export function loraGradAWgsl(): string {
  return /* wgsl */ `${PARAMS}
@group(0) @binding(0) var<storage, read> dt: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> dA: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
${ENTRY} {
  ${FLAT}
  if (idx >= P.r * P.inDim) { return; }
  let j = idx / P.inDim;
  let i = idx % P.inDim;
  var acc = 0.0;
  for (var n = 0u; n < P.n; n++) { acc += dt[n * P.r + j] * x[n * P.inDim + i]; }
  dA[idx] = dA[idx] + acc;
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
