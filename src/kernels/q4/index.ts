// 4-bit (web-llm / mlc-llm q4f16_1, q4f32_1) kernels: the planner runs on the same download as web-llm.
export { q4Matmul, q4Matvec, type Q4MatmulArgs, type Q4MatvecArgs } from './q4matmul';
export { q4MatmulBackward, type Q4MatmulBackwardArgs } from './q4matmul.backward';
export { q4Embedding, type Q4EmbeddingArgs } from './q4embedding';
export { q4LmHead, type Q4LmHeadArgs } from './q4logits';
export { checkQ4Weight, destroyQ4, uploadQ4, type Q4Weight } from './q4weight';
export { Q4_GROUP, checkQ4InDim, dequantizeQ4, q4Bytes, quantizeQ4, type Q4Matrix, type Q4ScaleDtype } from './q4.ref';
export { q4DecodeLinear, Q4D_MAX_STORAGE, type F32Slice, type Q4DecodeArgs, type Q4DecodeNorm, type Q4DecodeSegment } from './q4decode';
