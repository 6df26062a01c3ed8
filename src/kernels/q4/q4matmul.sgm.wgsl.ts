// The 4-bit tiled forward matmul on subgroup matrices (common/sgm-tile.wgsl.ts: tensor cores on NVIDIA):
// y[n, yOffset + o] (+)= x[n, i] · deq(W)[o, i] (+ b[o]), as q4TiledWgsl computes it, for prefill, scoring and
// the training forward (n >= SGM_MIN_ROWS) of matrices that have no f16 copy (the LM head; every matrix when
// the weights were uploaded without copies). Each K step of 32 (one quantisation group: 4 words + 1 scale
// per W row) dequantises the W tile to f16 in workgroup memory. On an H200 (2026-11-27) this measured only
// 1.15-1.40x the tiled kernel (the f16-weight kernel of the probe 3.6-4.7x): dequantising every group of every
// block is what the f16 copies (q4dequant.ts) avoid.

import type { SubgroupMatrixShape } from '../../gpu/device';
import { sgmTileWgsl, type SgmGeometry, type SgmStaging, type SgmTileOptions } from '../common/sgm-tile.wgsl';
import type { Q4Path } from './q4.wgsl';
import { header, type Q4MatmulVariant } from './q4matmul.wgsl';

export { SGM_MIN_ROWS, SGM_WORKGROUP, sgmGeometry, sgmProblem } from '../common/sgm-tile.wgsl';

/** deq(W): blockCols rows x 4 words of 8 weights (word c holds k = 8c .. 8c+7). */
function stageQ4(g: SgmGeometry, S: number, staging: SgmStaging): { count: number; body: string } {
  const load = staging !== 'loop'
    ? `let gi = (dims.wRow + min(wo, dims.outDim - 1u)) * G + g;
      let scale = select(0.0, S_at(gi), wo < dims.outDim);
      let word = Wq[gi * 4u + (e & 3u)];
      let lo = q4lo(word) * scale;
      let hi = q4hi(word) * scale;`
    : `var lo = vec4<f32>(0.0);
      var hi = vec4<f32>(0.0);
      if (wo < dims.outDim) {
        let gi = (dims.wRow + wo) * G + g;
        let word = Wq[gi * 4u + (e & 3u)];
        let scale = S_at(gi);
        lo = q4lo(word) * scale;
        hi = q4hi(word) * scale;
      }`;
  return {
    count: g.blockCols * 4,
    body: `let wo = col0 + (e >> 2u);
      ${load}
      let o = (e >> 2u) * ${S}u + (e & 3u) * 8u;
      ${['lo.x', 'lo.y', 'lo.z', 'lo.w', 'hi.x', 'hi.y', 'hi.z', 'hi.w'].map((c, j) => `tw[o${j ? ` + ${j}u` : ''}] = f16(${c});`).join(' ')}`,
  };
}

/**
 * The kernel; bindings as q4TiledWgsl's (W words as u32, x as vec4<f32>), grid sgmGrid. Needs native f16
 * (`p.f16`), `subgroups` and the feature; `emulate` for lavapipe (common/sgm-tile.wgsl.ts).
 */
export function q4SgmWgsl(p: Q4Path, v: Q4MatmulVariant, s: SubgroupMatrixShape, o: SgmTileOptions = {}): string {
  if (!p.f16) throw new Error('q4SgmWgsl: subgroup matrices take f16 operands: the native-f16 path only');
  return sgmTileWgsl(
    { kernel: 'q4SgmWgsl', header: header(p, v, 'u32', 'vec4<f32>'), stageW: stageQ4, direct: !v.bias && !v.accumulate },
    s,
    o,
  );
}
