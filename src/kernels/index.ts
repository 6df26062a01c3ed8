// Forward kernel dispatch builders (see LAYOUTS.md for every buffer's shape and dtype).

export { matvec, type MatvecArgs } from './matvec/matvec';
export { embedding, validateTokenIds, type EmbeddingArgs } from './embedding/embedding';
export { rmsnorm, type RmsnormArgs } from './rmsnorm/rmsnorm';
export { matmul, type MatmulArgs } from './matmul/matmul';
export { lora, loraDown, loraUp, type LoraDownArgs, type LoraUpArgs } from './lora/lora';
export { loraDownGroup, loraUpGroup, type LoraGroupDownArgs, type LoraGroupUpArgs } from './lora/lora.group';
export { rope, ropeInvFreq, type RopeArgs } from './rope/rope';
export { SIN_COS_WGSL } from './rope/rope.wgsl';
export { attention, type AttentionArgs } from './attention/attention';
export { attentionSplit, splitAttentionPays, type AttentionSplitArgs } from './attention/attention.split';
export { swiglu, type SwigluArgs } from './swiglu/swiglu';
export { residual, type ResidualArgs } from './residual/residual';
export { lmHead, lseChunk, lseFinalize, type LmHeadArgs, type LseChunkArgs, type LseFinalizeArgs } from './logits/logits';
export { GpuSampler, greedy, topkPass, type SamplerArgs, type TopkPassArgs } from './sampling/sampling';
export { candidateDistribution, drawIndex, type SampleResult, type SamplingOptions } from './sampling/draw';
export { paramsUniform, checkDims } from './common/params';
