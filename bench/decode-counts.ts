// npx tsx bench/decode-counts.ts [--q4 1] [--batch 0]: what generate() and generateBatch() hand the GPU per
// call on a tiny random model: command encoders, compute dispatches and buffer copies (read-backs included:
// each is one copy into a mappable buffer), by encoder label, plus submissions and queue writes, with the
// tokens each call gave. Two trees' outputs can be diffed to show that a change to the decode loops keeps
// both the tokens and the work per token. The cases cover greedy and sampled decoding, draws the GPU leaves
// to the CPU (and the switch to in-step decoding), top-k past the GPU's candidates, onLogits, stops, aborts,
// prefix reuse and batches of 2 and 4.
import { requestGpu } from '../src/gpu/device';
import { Qwen2Runtime, type GenerateRequest, type GenerateTokensOptions, type TokenGeneration } from '../src/engine/runtime';
import { Rng } from '../src/util/rng';
import { countEncoders } from '../tests/support/encoder-counts';
import { quantizeModel } from '../tests/support/q4-model';
import { randomAdapter, randomQwen2, randomTokens, toLoraAdapter, toQwen2Config, toWeightSource } from '../tests/support/random-qwen2';
import { flag, log } from './flags';

interface Counts {
  submits: number;
  writes: number;
  byLabel: Record<string, { encoders: number; dispatches: number; copies: number }>;
  dispatches: number;
  copies: number;
}

async function main(): Promise<void> {
  const q4 = flag('q4', '0') === '1';
  const withBatch = flag('batch', '1') === '1';
  const ctx = await requestGpu();
  const { config, weights } = randomQwen2(61, { numHeads: 4, numKvHeads: 2, headDim: 16, intermediateSize: 64, vocabSize: 300, tie: true });
  const src = q4 ? quantizeModel(config, weights, 'f16').source : toWeightSource(config, weights);
  const rt = await Qwen2Runtime.create(ctx, toQwen2Config(config), src, { maxContext: 64, maxBatchRows: 16, batchContext: 256 });
  await rt.addAdapter('a', toLoraAdapter(config, randomAdapter(62, config, 4, 8)));
  rt.setActiveAdapter('a');
  const rng = new Rng(63);
  const prompts = [6, 4, 9, 5].map((n) => randomTokens(rng, n, config.vocabSize));

  let c: Counts = { submits: 0, writes: 0, byLabel: {}, dispatches: 0, copies: 0 };
  const device = ctx.device;
  const queue = device.queue;
  const realSubmit = queue.submit.bind(queue);
  const realWrite = queue.writeBuffer.bind(queue);
  queue.submit = (bs: Iterable<GPUCommandBuffer>) => {
    c.submits++;
    realSubmit(bs);
  };
  queue.writeBuffer = ((...a: Parameters<GPUQueue['writeBuffer']>) => {
    c.writes++;
    realWrite(...a);
  }) as GPUQueue['writeBuffer'];
  countEncoders(device, (l) => {
    const label = l.startsWith('readback:') ? 'readback' : l || '?';
    const e = (c.byLabel[label] ??= { encoders: 0, dispatches: 0, copies: 0 });
    e.encoders++;
    return e;
  });
  /** The counts so far, with the totals over every label. */
  const counted = (): Counts => {
    const all = Object.values(c.byLabel);
    return structuredClone({ ...c, dispatches: all.reduce((a, e) => a + e.dispatches, 0), copies: all.reduce((a, e) => a + e.copies, 0) });
  };
  const fresh = (): Counts => ({ submits: 0, writes: 0, byLabel: {}, dispatches: 0, copies: 0 });
  const brief = (g: TokenGeneration) => ({ tokens: g.tokens, logprobs: g.logprobs.map((x) => Number(x.toFixed(6))), finishReason: g.finishReason, redrawn: g.redrawnTokens, reused: g.reusedPrefixTokens });
  const out: Record<string, unknown> = {};
  const one = async (name: string, prompt: number[], o: GenerateTokensOptions) => {
    // Once to compile and record, then counted.
    await rt.generate(prompt, { ...o, reusePrefix: false, signal: undefined, onToken: undefined });
    c = fresh();
    const g = await rt.generate(prompt, o);
    const k = counted();
    out[name] = { ...brief(g), counts: k };
    log(`${name}: ${g.tokens.length} tokens, ${k.dispatches} dispatches, ${k.copies} copies, ${k.submits} submits`);
  };
  const batch = async (name: string, reqs: GenerateRequest[]) => {
    await rt.generateBatch(reqs);
    c = fresh();
    const gs = await rt.generateBatch(reqs);
    const k = counted();
    out[name] = { results: gs.map(brief), counts: k };
    log(`${name}: ${gs.map((g) => g.tokens.length).join('+')} tokens, ${k.dispatches} dispatches, ${k.copies} copies, ${k.submits} submits`);
  };
  const p = prompts[0];
  const n = { maxNewTokens: 12, reusePrefix: false };
  await one('greedy', p, { ...n, temperature: 0 });
  await one('T=1', p, { ...n, temperature: 1, seed: 5 });
  await one('T=4 (redraws)', p, { ...n, temperature: 4, seed: 6 });
  await one('T=20 (redraws, then in-step)', p, { ...n, temperature: 20, seed: 10 });
  await one('T=0.8 top-k 20 top-p 0.9', p, { ...n, temperature: 0.8, topK: 20, topP: 0.9, seed: 7 });
  await one('top-k 100 (CPU draws)', p, { ...n, temperature: 1, topK: 100, seed: 8 });
  await one('onLogits', p, { ...n, temperature: 1, seed: 5, onLogits: () => undefined });
  const free = await rt.generate(p, { ...n, temperature: 1, seed: 3 });
  await one('stop id', p, { ...n, temperature: 1, seed: 3, stopIds: [free.tokens[4]] });
  await one('onToken stop', p, { ...n, temperature: 1, seed: 3, onToken: (_id, _lp) => false });
  const ctl = new AbortController();
  c = fresh();
  const aborted = await rt.generate(p, { ...n, temperature: 1, seed: 3, signal: ctl.signal, onToken: () => ctl.abort() });
  out['abort after token 0'] = { ...brief(aborted), counts: counted() };
  // Prefix reuse: a turn that extends the last one's prompt and tokens.
  const first = await rt.generate(p, { temperature: 1, seed: 4, maxNewTokens: 6 });
  c = fresh();
  const next = await rt.generate([...p, ...first.tokens, 7], { temperature: 1, seed: 4, maxNewTokens: 6 });
  out['prefix reuse'] = { ...brief(next), counts: counted() };
  if (withBatch) {
    const opts: GenerateTokensOptions[] = [
      { temperature: 0, maxNewTokens: 10 },
      { temperature: 4, seed: 1, maxNewTokens: 12 },
      { temperature: 1, seed: 2, maxNewTokens: 8 },
      { temperature: 1.5, topP: 0.9, seed: 3, maxNewTokens: 10 },
    ];
    const reqs = prompts.map((prompt, b) => ({ prompt, options: { ...opts[b], reusePrefix: false } }));
    await batch('batch 2', reqs.slice(0, 2));
    await batch('batch 4', reqs);
    await batch('batch 4 greedy', reqs.map((r) => ({ ...r, options: { ...r.options, temperature: 0 } })));
    await batch('batch 2 T=20 (redraws, then in-step)', reqs.slice(0, 2).map((r) => ({ ...r, options: { ...r.options, temperature: 20, maxNewTokens: 12 } })));
    await batch('batch 2 onLogits', reqs.slice(0, 2).map((r) => ({ ...r, options: { ...r.options, onLogits: () => undefined } })));
    await batch('batch 2 top-k 100', reqs.slice(0, 2).map((r) => ({ ...r, options: { ...r.options, temperature: 1, topK: 100 } })));
  }
  rt.destroy();
  process.stdout.write(`${JSON.stringify(out, null, 1)}\n`, () => process.exit(0));
}

main().catch((e: Error) => {
  process.stderr.write(`decode-counts failed: ${e.stack ?? e.message}\n`);
  process.exit(1);
});
