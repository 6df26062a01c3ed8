// generate() for one sequence: prefill (reusing what the KV cache holds of the prompt), then one token per
// decode step, either drawn on the GPU with steps encoded ahead of the read-back (decodeAhead) or drawn on
// the CPU one round trip per token (decodeInStep); decode-loop.ts has the rules both apply to each token.
import { readBuffer, writeBuffer } from '../gpu/buffers';
import { DRAW_LOG_WORDS, gpuDrawServes, parseDrawLog } from '../kernels/sampling/sampling';
import type { ActivationPlan } from './activations';
import { acceptToken, DECODE_AHEAD, emptyGeneration, generationOf, REDRAW_WINDOW, type DecodeLoop } from './decode-loop';
import { recordedDecode } from './decode-record';
import { recordLogits } from './forward';
import type { CheckedRequest } from './generate-request';
import { loopFor } from './generate-request';
import type { TokenGeneration } from './generation';
import { dispatchStep } from './graph';
import { readF32, submitSteps, unlessLost } from './gpu-calls';
import { prefill } from './prefill';
import type { RuntimeResources } from './runtime-resources';

/** Generates for one checked request, streaming each token; leaves in res.kvHolds what the cache then holds. */
export async function generateOne(res: RuntimeResources, c: CheckedRequest): Promise<TokenGeneration> {
  const { prompt, o } = c;
  if (o.signal?.aborted || c.maxNew === 0) return emptyGeneration(o.signal?.aborted ? 'abort' : 'length');
  const reused = o.reusePrefix === false ? 0 : res.reusablePrefix(prompt);
  const adapter = res.adapters.active;
  const version = adapter?.version ?? 0;
  // Until this generate ends well, the cache's rows are a mix of old and new: claim nothing.
  res.kvHolds = null;
  const loop = loopFor(c);
  const plan = await prefill(res, prompt, true, reused);
  // The logits callback needs every row read back, and top-k above the GPU's candidates needs the CPU.
  if (!o.onLogits && gpuDrawServes(o, res.config.vocabSize)) await decodeAhead(res, plan, loop);
  else await decodeInStep(res, plan, loop);
  // Every token but the last has had its K/V written by the step that ran it. Weights rewritten while this
  // call ran (the trainer's step does not wait for it) leave `version` behind the adapter's, so the next
  // call will not reuse these rows.
  res.kvHolds = { tokens: prompt.concat(loop.tokens.slice(0, -1)), adapter, version };
  return generationOf(loop, reused);
}

/** Runs `token` at `position` (its K/V to cache row `position`); returns the decode plan holding its logits. */
async function decodeStep(res: RuntimeResources, token: number, position: number): Promise<ActivationPlan> {
  const { ctx } = res;
  const plan = await res.plan('decode', 1);
  const kv = await res.kvCache();
  writeBuffer(ctx, plan.ids, Uint32Array.of(token));
  writeBuffer(ctx, plan.pos, Uint32Array.of(position));
  writeBuffer(ctx, plan.ranges, Uint32Array.of(0, position + 1));
  const forward = await recordedDecode(res, plan, kv, position);
  const logitSteps = await res.records.get('decodeLogits', () => recordLogits(ctx, plan, res.weights, 0, 1));
  submitSteps(ctx, [forward, logitSteps], 'decoding', { cacheRow: position });
  res.countDecode(1);
  return plan;
}

/**
 * One token per round trip: sample on the CPU from the GPU's candidates, then run the token. Continues
 * from the tokens already taken (`first` holds the logits of the next one); `pending` are uniforms the
 * Rng already gave for the next tokens (a switch from decodeAhead), used before it gives more.
 */
async function decodeInStep(res: RuntimeResources, first: ActivationPlan, l: DecodeLoop, pending: number[] = []): Promise<void> {
  const { ctx } = res;
  let plan = first;
  const greedy = (l.o.temperature ?? 0) === 0;
  for (;;) {
    const i = l.tokens.length;
    if (l.o.onLogits) l.o.onLogits(await readF32(ctx, plan.logits, res.config.vocabSize, 0, 'reading logits'));
    const sampler = await res.sampler(plan);
    const u = greedy ? 0 : (pending.shift() ?? l.rng.next());
    const { token: id, logprob } = await unlessLost(ctx, sampler.sampleWithU(l.o, u), 'sampling');
    if (!acceptToken(l, id, logprob)) break;
    plan = await decodeStep(res, id, l.prompt.length + i);
  }
}

/**
 * Decoding with the token drawn on the GPU: step i+1's forward reads the id step i's draw wrote, so steps
 * are encoded and submitted up to DECODE_AHEAD ahead of the tokens read back, and the CPU's encoding and
 * the read-back latency overlap the GPU's work instead of adding to it. Each step's uniform is drawn from
 * the Rng in order, as the in-step path draws it, and a draw the GPU leaves undecided (gpu-draw.wgsl.ts)
 * is redone on the CPU from the same uniform, so both paths give the same tokens. Steps in flight past
 * a stop are wasted work; their cache rows lie beyond what the cache is said to hold.
 */
async function decodeAhead(res: RuntimeResources, first: ActivationPlan, l: DecodeLoop): Promise<void> {
  const { ctx } = res;
  const decode = await res.plan('decode', 1);
  const kv = await res.kvCache();
  const target = { ids: decode.ids, log: res.drawLogBuffer() };
  const firstSampler = await res.sampler(first);
  const stepSampler = await res.sampler(decode);
  const firstDraw = (await firstSampler.drawDispatches(l.o, target)).map(dispatchStep);
  const stepDraw = (await stepSampler.drawDispatches(l.o, target)).map(dispatchStep);
  const logitSteps = await res.records.get('decodeLogits', () => recordLogits(ctx, decode, res.weights, 0, 1));
  const greedy = (l.o.temperature ?? 0) === 0;
  const us: number[] = [];
  const redrawnAt: number[] = [];
  const reads: Array<Promise<ArrayBuffer>> = [];
  const entryBytes = DRAW_LOG_WORDS * 4;
  // Step i: the forward of token i-1 (none for i = 0: the prefill's logits), then the draw of token i.
  const submitStep = async (i: number) => {
    us[i] ??= greedy ? 0 : l.rng.next();
    if (i === 0) {
      firstSampler.setDraw(us[i], i);
      submitSteps(ctx, [firstDraw], 'sampling');
    } else {
      const p = l.prompt.length + i - 1;
      // Recorded once per adapter and context length class, so after the first steps this awaits nothing.
      const forward = await recordedDecode(res, decode, kv, p);
      writeBuffer(ctx, decode.pos, Uint32Array.of(p));
      writeBuffer(ctx, decode.ranges, Uint32Array.of(0, p + 1));
      stepSampler.setDraw(us[i], i);
      submitSteps(ctx, [forward, logitSteps, stepDraw], 'decoding', { cacheRow: p });
      res.countDecode(1);
    }
    const r = readBuffer(ctx, target.log, entryBytes, i * entryBytes);
    // A read abandoned after a stop must not surface as an unhandled rejection.
    r.catch(() => undefined);
    reads[i] = r;
  };
  let next = 0;
  for (let i = 0; i < l.maxNew; i++) {
    while (next < l.maxNew && next <= i + DECODE_AHEAD) await submitStep(next++);
    const e = parseDrawLog(await unlessLost(ctx, reads[i], 'decoding'));
    let id = e.token;
    let logprob = e.logit - e.lse1;
    if (e.undecided) {
      // Steps after i ran on a provisional token: let them finish, recompute step i's logits (the cache
      // rows it reads are unchanged) and draw on the CPU with the same uniform.
      await Promise.allSettled(reads.slice(i + 1, next));
      const plan = i === 0 ? first : await decodeStep(res, l.tokens[i - 1], l.prompt.length + i - 1);
      const r = await unlessLost(ctx, (await res.sampler(plan)).sampleWithU(l.o, us[i]), 'sampling');
      id = r.token;
      logprob = r.logprob;
      writeBuffer(ctx, decode.ids, Uint32Array.of(id));
      next = i + 1;
      l.redrawn++;
      if (!acceptToken(l, id, logprob)) break;
      // Rows this flat (random weights, a very high temperature) make most draws undecided, and each costs
      // a drained pipeline plus a recomputed step on top of the whole-row draw the in-step path pays too:
      // when half the recent tokens needed one, go on one token per round trip instead.
      redrawnAt.push(i);
      if (redrawnAt.filter((j) => j > i - REDRAW_WINDOW).length >= REDRAW_WINDOW / 2) {
        const plan = await decodeStep(res, id, l.prompt.length + i);
        return decodeInStep(res, plan, l, us.slice(i + 1).filter((u) => u !== undefined));
      }
      continue;
    }
    if (!acceptToken(l, id, logprob)) break;
  }
}
