// Non-finite values in weights. A NaN or infinity in a checkpoint, a web-llm build's scales or an adapter
// does not fail any kernel: it spreads through every later activation and comes out as null logprobs or a
// generate of token 0s. The loaders look for one while they already touch the values (converting or
// copying them) and name the first they find.
import { AgentFlowError, type ErrorCategory } from '../errors';

/** A weight value that is NaN or infinite (or, converted to f16, beyond f16's range). */
export class NonFiniteError extends AgentFlowError {
  override readonly category: ErrorCategory = 'non-finite';
  constructor(
    message: string,
    readonly file: string,
    readonly tensor: string,
    readonly index: number,
    readonly value: number,
  ) {
    super(message);
    this.name = 'NonFiniteError';
  }
}

/** Index of the first IEEE half (bits) that is NaN or ±infinity, or -1. */
export function firstNonFiniteHalf(bits: Uint16Array): number {
  const n = bits.length;
  // Two halves per 32-bit word where the view allows it: half the loop iterations of a Uint16 scan.
  if (bits.byteOffset % 4 === 0 && n > 1) {
    const words = new Uint32Array(bits.buffer, bits.byteOffset, n >>> 1);
    for (let w = 0; w < words.length; w++) {
      const x = words[w];
      if ((x & 0x7c00) === 0x7c00 || (x & 0x7c000000) === 0x7c000000) return (x & 0x7c00) === 0x7c00 ? 2 * w : 2 * w + 1;
    }
    return n % 2 && (bits[n - 1] & 0x7c00) === 0x7c00 ? n - 1 : -1;
  }
  for (let i = 0; i < n; i++) if ((bits[i] & 0x7c00) === 0x7c00) return i;
  return -1;
}

/** Index of the first bfloat16 (bits) that is NaN or ±infinity, or -1. */
export function firstNonFiniteBf16(bits: Uint16Array): number {
  for (let i = 0; i < bits.length; i++) if ((bits[i] & 0x7f80) === 0x7f80) return i;
  return -1;
}

/** Index of the first float32 that is NaN or ±infinity, or -1. */
export function firstNonFiniteF32(values: Float32Array): number {
  // The exponent bits say it without a float compare per element.
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  for (let i = 0; i < bits.length; i++) if ((bits[i] & 0x7f800000) === 0x7f800000) return i;
  return -1;
}

/** `index` of a row-major tensor of `shape` as coordinates, e.g. [3, 17]. */
export function coordinates(index: number, shape: readonly number[]): number[] {
  const out = new Array<number>(shape.length);
  let rest = index;
  for (let d = shape.length - 1; d >= 0; d--) {
    const n = Math.max(1, shape[d]);
    out[d] = rest % n;
    rest = Math.floor(rest / n);
  }
  return out;
}

/**
 * The error for `value` at `index` of `tensor` in `file`. `overflow`: the value is finite in the file
 * but beyond f16's ±65504, which the runtime stores its weights in.
 */
export function nonFiniteError(file: string, tensor: string, shape: readonly number[], index: number, value: number, overflow = false): NonFiniteError {
  const at = shape.length > 1 ? `[${coordinates(index, shape).join(', ')}]` : `index ${index}`;
  const why = overflow ? `beyond f16's ±65504, which the runtime stores weights in` : 'the file is corrupt or comes from a diverged run';
  return new NonFiniteError(
    `${file}: tensor '${tensor}' has ${value} at ${at} (element ${index} of ${shape.reduce((a, b) => a * b, 1)}); ${why}`,
    file,
    tensor,
    index,
    value,
  );
}
