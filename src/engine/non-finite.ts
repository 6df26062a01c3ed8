// Activations that leave float32's range. Weights are checked for NaN and infinity as they load, but finite
// weights can still drive the residual stream, an MLP product or a logit past f32's limit; the kernels then
// yield NaN (RMSNorm pre-scales rows that are only too big to square: rms-scale.wgsl.ts). A NaN or infinite
// log-prob is how it shows, in values score and generate read back anyway, so finding it costs nothing per
// token. Only then is the offending position run once more, through the general forward with a copy of its
// residual row after every layer's attention and MLP, to name where it first went non-finite.
import { AgentFlowError } from '../errors';
import { ActivationPlan } from '../model/activations';
import { packSequences, writeBatch } from './batch';
import { recordForward, recordLogits } from '../model/forward';
import { encodeSteps } from '../model/graph';
import { readF32 } from './gpu-calls';
import { createStorage } from '../gpu/buffers';
import type { RuntimeResources } from './runtime-resources';

/** Where a position's values first were non-finite: after a layer's attention or MLP, or in its logits. */
export type OverflowSite = { layer: number; part: 'attention' | 'MLP' } | { layer: null; part: 'final norm' | 'logits' | 'not located' };

export class NonFiniteActivationError extends AgentFlowError {
  readonly category = 'non-finite';
  constructor(
    message: string,
    /** The position (token index) whose log-probabilities came out non-finite, its sequence (score) or request (generateBatch). */
    readonly position: number,
    readonly site: OverflowSite,
    readonly sequence?: number,
  ) {
    super(message);
    this.name = 'NonFiniteActivationError';
  }
}

/**
 * Thrown by the decode loop when a drawn token's log-prob is not finite; the runtime turns it into a
 * NonFiniteActivationError (it needs the GPU to say where). `tokens` are those the logits were computed
 * over: the prompt and the tokens before this one.
 */
export class NonFiniteLogprob extends Error {
  /** The request's index in its decode batch, set by the decoder. */
  request = 0;
  constructor(readonly tokens: number[], readonly loop: object) {
    super(`the log-probability at position ${tokens.length - 1} is not finite`);
  }
}

const finite = (a: ArrayLike<number>) => {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i])) return false;
  return true;
};

/** The first entry of `a` that is NaN or infinite, or -1. */
export function firstNonFinite(a: ArrayLike<number>): number {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i])) return i;
  return -1;
}

/**
 * Runs `tokens` (their last row is the position at fault) through the general forward under the active
 * adapter and returns where that row first holds a NaN or infinity. An error path: it allocates a plan of
 * its own for the sequence and reads back after the one submission.
 */
export async function locateOverflow(res: RuntimeResources, tokens: number[]): Promise<OverflowSite> {
  const { ctx, config: c, weights } = res;
  const n = tokens.length;
  const H = c.hiddenSize;
  const L = c.numLayers;
  const plan = await ActivationPlan.create(ctx, c, { rows: n, loraRank: res.adapters.maxRank(), logitsRows: 1 });
  // Residual row after each layer's attention (2l) and MLP (2l + 1), then the final norm's output (2L).
  const probe = createStorage(ctx, 'overflow probe', (2 * L + 1) * H * 4);
  try {
    writeBatch(ctx, plan, packSequences([tokens], n));
    const row = n - 1;
    const steps = await recordForward(ctx, { plan, weights, adapter: res.adapters.active, n, probe: { buffer: probe, row } });
    steps.push(...(await recordLogits(ctx, plan, weights, row, 1)));
    const enc = ctx.device.createCommandEncoder({ label: 'locating an overflow' });
    encodeSteps(ctx, enc, steps);
    ctx.device.queue.submit([enc.finish()]);
    const rows = await readF32(ctx, probe, (2 * L + 1) * H, 0, 'locating an overflow');
    for (let k = 0; k < 2 * L; k++) {
      if (!finite(rows.subarray(k * H, (k + 1) * H))) return { layer: k >> 1, part: k % 2 === 0 ? 'attention' : 'MLP' };
    }
    if (!finite(rows.subarray(2 * L * H))) return { layer: null, part: 'final norm' };
    const logits = await readF32(ctx, plan.logits, c.vocabSize, 0, 'locating an overflow');
    return { layer: null, part: finite(logits) ? 'not located' : 'logits' };
  } finally {
    probe.destroy();
    plan.destroy();
  }
}

/**
 * The error for `what` (score, generate, ...) whose log-prob at the last row of `tokens` was not finite:
 * it names the sequence or request, the position and where the values left f32's range.
 */
export async function nonFiniteError(res: RuntimeResources, what: string, tokens: number[], sequence?: number): Promise<NonFiniteActivationError> {
  const position = tokens.length - 1;
  let site: OverflowSite;
  try {
    site = await locateOverflow(res, tokens);
  } catch {
    // Out of memory for the probe, say: the position is still worth reporting.
    site = { layer: null, part: 'not located' };
  }
  const where =
    site.layer !== null
      ? `the hidden state became NaN or infinite in layer ${site.layer}'s ${site.part} (layer ${site.layer} of 0..${res.config.numLayers - 1})`
      : site.part === 'final norm'
        ? 'the final norm gave NaN or infinity'
        : site.part === 'logits'
          ? 'the hidden state is finite but the logits overflowed float32'
          : 'the decode step gave NaN or infinite logits (the general forward of the same tokens did not)';
  const seq = sequence === undefined ? '' : `${what === 'score' ? 'sequence' : 'request'} ${sequence}, `;
  return new NonFiniteActivationError(
    `${what}: ${seq}position ${position}: ${where}. The weights${res.adapters.active ? ' and adapter' : ''} are finite, but the activations exceed float32's range, so there is no valid result.`,
    position,
    site,
    sequence,
  );
}
