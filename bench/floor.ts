// Decode speed against the memory-bandwidth floor: the fastest a decode step can run if it only had to read,
// once and at the GPU's full bandwidth, the bytes it cannot avoid reading.
import type { Qwen2Config } from '../src/io/qwen2-config';

/** Bytes of one KV-cache row (every layer's f32 K and V at one position). */
export const kvRowBytes = (c: Qwen2Config): number => 2 * c.numLayers * c.numKvHeads * c.headDim * 4;

/** Mean KV rows a decode step reads over `decodeSteps` steps after a `prompt`-token prompt (step i reads rows 0..prompt + i). */
export const meanDecodeKvRows = (prompt: number, decodeSteps: number): number => prompt + (Math.max(1, decodeSteps) - 1) / 2 + 1;

export interface BandwidthFloor {
  bandwidthGBs: number;
  /**
   * Bytes one decode token must read, as counted: every weight buffer once (the tied embedding is read as
   * the LM head; the embedding lookup of one row is not counted separately) plus the f32 K and V rows of
   * every layer up to the position decoded. Activations, LoRA (the bench decodes without an adapter) and
   * the sampler are not counted: they are small next to these.
   */
  counted: string;
  weightBytes: number;
  /** Mean KV rows read per measured decode step (prompt + generated so far). */
  measuredKvRows: number;
  kvBytesPerToken: number;
  floorTokensPerSec: number;
  decodeTokensPerSec: number;
  /** decodeTokensPerSec / floorTokensPerSec. */
  fractionOfFloor: number;
  /** The floor with the KV cache full (`context` rows), for long generations. */
  atContext: { context: number; kvBytesPerToken: number; floorTokensPerSec: number };
}

/** One sequence's decode (generate()) against the floor. */
export function bandwidthFloor(config: Qwen2Config, gbs: number, weightBytes: number, prompt: number, decodeSteps: number, decodeTps: number, context: number): BandwidthFloor {
  const row = kvRowBytes(config);
  const measuredKvRows = meanDecodeKvRows(prompt, decodeSteps);
  const kvBytesPerToken = measuredKvRows * row;
  const floor = (gbs * 1e9) / (weightBytes + kvBytesPerToken);
  return {
    bandwidthGBs: gbs,
    counted: 'weights (every weight buffer once per token) + f32 K and V rows read by attention at the decoded positions',
    weightBytes,
    measuredKvRows,
    kvBytesPerToken,
    floorTokensPerSec: floor,
    decodeTokensPerSec: decodeTps,
    fractionOfFloor: decodeTps / floor,
    atContext: { context, kvBytesPerToken: context * row, floorTokensPerSec: (gbs * 1e9) / (weightBytes + context * row) },
  };
}

export interface BatchBandwidthFloor {
  bandwidthGBs: number;
  counted: string;
  /** Mean sequences per step (the batch's rows; sequences that stopped early leave it). */
  rowsPerStep: number;
  /** Prompt tokens every sequence shares, stored once in the KV cache (0: each has its own copy). */
  sharedPromptTokens: number;
  /** Unavoidable bytes of a mean step: the weights once, plus every distinct KV row the step's rows attend. */
  bytesPerStep: number;
  /** rowsPerStep tokens per step at the floor's step time. */
  floorTokensPerSec: number;
  tokensPerSec: number;
  fractionOfFloor: number;
}

/**
 * A batch decode (generateBatch: several sequences, one forward of all their rows per step) against the
 * floor. The weights are read once per step for all rows, so the floor grows with the rows; KV rows of a
 * prompt head stored once count once (each row's attention reads them, but not from DRAM every time at
 * best), so this is the stricter floor.
 */
export function batchBandwidthFloor(
  config: Qwen2Config, gbs: number, weightBytes: number,
  o: { rowsPerStep: number; prompt: number; decodeSteps: number; sharedPromptTokens: number }, tokensPerSec: number,
): BatchBandwidthFloor {
  if (!(o.rowsPerStep > 0)) throw new Error(`batchBandwidthFloor: rowsPerStep must be > 0, got ${o.rowsPerStep}`);
  if (o.sharedPromptTokens < 0 || o.sharedPromptTokens > o.prompt) throw new Error(`batchBandwidthFloor: sharedPromptTokens must be in 0..prompt (${o.prompt}), got ${o.sharedPromptTokens}`);
  const ownRows = meanDecodeKvRows(o.prompt, o.decodeSteps) - o.sharedPromptTokens;
  const bytesPerStep = weightBytes + (o.sharedPromptTokens + o.rowsPerStep * ownRows) * kvRowBytes(config);
  const floorTokensPerSec = (o.rowsPerStep * gbs * 1e9) / bytesPerStep;
  return {
    bandwidthGBs: gbs,
    counted: 'weights once per step + each distinct f32 K and V row the step attends (a shared prompt head once)',
    rowsPerStep: o.rowsPerStep,
    sharedPromptTokens: o.sharedPromptTokens,
    bytesPerStep,
    floorTokensPerSec,
    tokensPerSec,
    fractionOfFloor: tokensPerSec / floorTokensPerSec,
  };
}
