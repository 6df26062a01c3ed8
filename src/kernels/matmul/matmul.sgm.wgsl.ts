// The f16-weight forward matmul on subgroup matrices (common/sgm-tile.wgsl.ts: tensor cores on NVIDIA):
// y[n, yOffset + o] (+)= x[n, i] · W[wRow + o, i] (+ b[o]), W f16 [rows, in] (Hugging Face layout), for an f16
// model's prefill, scoring and training forward and for the f16 copies of a 4-bit model's matrices
// (q4/q4dequant.ts). Each K step of 32 copies the W tile's 8 vec4<f16> a row into workgroup memory as they
// are: no dequantisation, the probe's staged-8sg-4x2-bk32 kernel with the matmuls' epilogue.

import type { SubgroupMatrixShape } from '../../gpu/device';
import { sgmTileWgsl, type SgmGeometry, type SgmStaging, type SgmTileOptions } from '../common/sgm-tile.wgsl';
import { matmulStoreWgsl, type MatmulVariant } from './matmul.wgsl';

function header(v: MatmulVariant): string {
  return `struct Dims { n: u32, inDim: u32, outDim: u32, yStride: u32, yOffset: u32, wRow: u32 }
@group(0) @binding(0) var<storage, read> W: array<vec4<f16>>;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> dims: Dims;
${v.bias ? '@group(0) @binding(4) var<storage, read> b: array<f32>;' : ''}
${matmulStoreWgsl(v)}`;
}

/** W: blockCols rows x 8 vec4<f16> of the step's 32 columns. */
function stageF16(g: SgmGeometry, S: number, staging: SgmStaging): { count: number; body: string } {
  const load = staging === 'unchecked'
    ? 'let wv = W[(dims.wRow + wo) * x4PerRow + g * 8u + (e & 7u)];'
    : staging === 'unrolled'
    ? 'let wv = select(vec4<f16>(0.0), W[(dims.wRow + min(wo, dims.outDim - 1u)) * x4PerRow + g * 8u + (e & 7u)], wo < dims.outDim);'
    : 'var wv = vec4<f16>(0.0);\n      if (wo < dims.outDim) { wv = W[(dims.wRow + wo) * x4PerRow + g * 8u + (e & 7u)]; }';
  return {
    count: g.blockCols * 8,
    body: `let wo = col0 + (e >> 3u);
      ${load}
      let o = (e >> 3u) * ${S}u + (e & 7u) * 4u;
      tw[o] = wv.x; tw[o + 1u] = wv.y; tw[o + 2u] = wv.z; tw[o + 3u] = wv.w;`,
  };
}

/**
 * The kernel; bindings W (f16 as vec4s), x (vec4<f32>), y, dims, [b]; grid sgmGrid; inDim a multiple of 32.
 * `emulate` for lavapipe (common/sgm-tile.wgsl.ts).
 */
export function matmulSgmWgsl(v: MatmulVariant, s: SubgroupMatrixShape, o: SgmTileOptions = {}): string {
  return sgmTileWgsl({ kernel: 'matmulSgmWgsl', header: header(v), stageW: stageF16, direct: !v.bias && !v.accumulate }, s, o);
}
