// The memory plan of a training pass (LoraBackwardPass, backward.ts), in one place: what is kept from the
// forward per layer (LayerActivations, model/activations.ts), the trainer's scratch and per-row inputs
// (below), and trainingBytesPerRow(), which both add up. memory-plan.node.gpu.test.ts checks the sum
// against what the GPU actually allocates.
//
// Nothing is recomputed except the logits, which are never stored for the whole batch: they are made chunk
// by chunk (only for response rows) in the forward and again in the backward.
//
// Qwen2.5-0.5B (H 896, I 4864, nH 14, nKV 2, hd 64, 24 layers, V 151936), r = 16, "8 turns × 600 tokens":
//   kept activations: (4·896 + 2·896 + 2·128 + 14 + 3·4864 + 2 + 7·16) = 20,352 floats = 81.4 KB per row
//   per layer, × 24 layers = 1.95 MB per row; scratch and per-row plan buffers 21,180 floats = 85 KB per row.
//   Fixed: f16 weights 988 MB (tied embedding; a q4f16_1 base is 9/16 byte per weight, ~280 MB, which
//   lowers every total below by ~0.7 GB), LoRA 8.8M params × (A/B, grad, m, v) = 176 MB, one 32-row
//   logits chunk 19 MB.
//   All 4,800 rows in one pass would need 9.8 GB, so passes are capped by microBatchTokens (default 768):
//   768 × 2.04 MB = 1.57 GB + 1.18 GB fixed ≈ 2.74 GB. The 4,800 rows then run as 7 micro-batches with
//   gradient accumulation, which gives the same gradient as one pass (the loss is normalised by the
//   mini-batch's total response tokens before accumulating). The engine's scoring plan and KV cache
//   (inference, no `keep`) come on top and are small next to this.
//   Recomputing each layer's forward in the backward (keeping only x per layer, 3.6 KB/row/layer) would
//   allow all 4,800 rows in ~2 GB; that needs a per-layer forward recording from the engine (not there yet).
import { keptWordsPerLayer, planRowWords } from './activations';
import type { Qwen2Config } from '../io/qwen2-config';

/**
 * The backward's scratch, shared by all layers, f32 words per row. dX is the gradient of the residual
 * stream; dnF of the final norm's output; dn of a norm's output (the input of q/k/v or gate/up).
 */
export type ScratchField = 'dX' | 'dnF' | 'dn' | 'dq' | 'datt' | 'dk' | 'dv' | 'dact' | 'dgate' | 'dup' | 'attStats' | 'dt';

export function scratchWidths(c: Qwen2Config, rank: number): Record<ScratchField, number> {
  const H = c.hiddenSize;
  const qd = c.numHeads * c.headDim;
  const kvd = c.numKvHeads * c.headDim;
  const I = c.intermediateSize;
  return {
    dX: H, dnF: H, dn: H, // (N, H)
    dq: qd, datt: qd, // (N, nH*hd)
    dk: kvd, dv: kvd, // (N, nKV*hd)
    dact: I, dgate: I, dup: I, // (N, I)
    attStats: 2 * c.numHeads, // (N, nH, 2) attention backward's per-head row stats
    dt: rank, // (N, r) LoRA backward's d(x A^T), one module at a time
  };
}

/** Per-row inputs and outputs of the grpo loss kernel (backward.ts RowInputs), f32 words per row. */
export type RowInputField = 'old' | 'ref' | 'adv' | 'weight' | 'dlogp' | 'stats';

export const ROW_INPUT_WIDTHS: Record<RowInputField, number> = { old: 1, ref: 1, adv: 1, weight: 1, dlogp: 1, stats: 3 };

const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);

/**
 * Bytes a training pass needs per row: `kept`, every layer's activations; `scratch`, the trainer's scratch
 * and loss inputs plus the activation plan's own per-row buffers outside the layers. Buffers sized per
 * logits chunk (not per row) are not included.
 */
export function trainingBytesPerRow(c: Qwen2Config, rank: number): { kept: number; scratch: number } {
  return {
    kept: 4 * keptWordsPerLayer(c, rank) * c.numLayers,
    scratch: 4 * (sum(scratchWidths(c, rank)) + sum(ROW_INPUT_WIDTHS) + planRowWords(c)),
  };
}
