// The backward kernels of the planner model and the Flow-GRPO trainer's loss, reduction and optimizer
// kernels, for the trainer to chain after the forward (layouts: ./LAYOUTS.md). All return Dispatch or
// Dispatch[] (in the order they must run) and allocate nothing but their shape uniforms.
//
// Backward of the ops that need no kernel:
// - residual `x + f(x)`: the identity. The residual stream's gradient buffer is passed on unchanged and
//   each branch adds its input gradient into it (rmsnormBackward / matmulBackward with accumulate: true,
//   loraBackward always adds).
// - embedding: frozen and carries no LoRA, so the chain stops at the first layer's input.
//
// Per decoder layer, in reverse: down (matmulBackward + loraBackward) -> swigluBackward -> gate/up
// (matmulBackward + loraBackward, the second one accumulating) -> rmsnormBackward(accumulate) ->
// o_proj -> attentionBackward -> ropeBackward on dq and dk -> q/k/v projections -> rmsnormBackward.
// The head: dlogits + lmHeadBackward per vocab chunk, then the final rmsnormBackward.
// Loss: grpoLoss gives dlogp per token; after the backward, sumOfSquares(maxNorm) + adamw per tensor.

export { matmulBackward, type MatmulBackwardArgs } from './matmul/matmul.backward';
export { loraBackward, type LoraBackwardArgs } from './lora/lora.backward';
export { rmsnormBackward, type RmsnormBackwardArgs } from './rmsnorm/rmsnorm.backward';
export { ropeBackward, type RopeBackwardArgs } from './rope/rope.backward';
export { attentionBackward, type AttentionBackwardArgs } from './attention/attention.backward';
export { swigluBackward, type SwigluBackwardArgs } from './swiglu/swiglu.backward';
export { dlogits, lmHeadBackward, type DlogitsArgs, type LmHeadBackwardArgs } from './logits/logits.backward';
export { grpoLoss, type GrpoArgs, type GrpoHyper } from './grpo/grpo';
export { sumOf, sumOfSquares, CLIP_SCALE_INDEX, type ReduceArgs, type ReduceInput } from './reduce/reduce';
export { adamw, writeAdamwHyper, ADAMW_HYPER_BYTES, type AdamwArgs, type AdamwHyper } from './adamw/adamw';
