// npm run bench [-- --models fixture,fixture-q4,qwen2.5-0.5b,qwen2.5-0.5b-q4 --prompt N --decode N]: scoring, prefill and decode
// speed of the planner runtime, printed as JSON on stdout (progress on stderr). Decode bytes/s is weight bytes x
// decode tokens/s: every decode step reads every weight once, so it shows how close decode runs to the
// memory bandwidth. On software adapters (lavapipe) the defaults are a few tokens only. The -q4 models are
// web-llm q4f16_1 builds kept 4-bit on the GPU (the same download web-llm uses); gpuMemory is what the
// runtime reports for weights, activations and KV cache after the run.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requestGpu, type GpuContext } from '../src/gpu/device';
import { loadCheckpoint } from '../src/engine/io/checkpoint';
import { directorySource } from '../src/engine/io/sources';
import type { Qwen2Config } from '../src/engine/io/config';
import { Qwen2Runtime } from '../src/engine/runtime';
import { expectedQwen2Tensors } from '../src/engine/io/config';
import type { GpuMemoryReport } from '../src/engine/runtime';
import type { Q4WeightSource, WeightSource } from '../src/engine/weights';
import { QWEN25_05B, shapedQ4Weights, shapedWeights } from './shaped-model';

const log = (s: string) => process.stderr.write(`${s}\n`);

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}

interface ModelResult {
  model: string;
  params: number;
  weightBytes: number;
  promptTokens: number;
  prefillMs: number;
  prefillTokensPerSec: number;
  decodeTokens: number;
  decodeMs: number;
  decodeTokensPerSec: number;
  decodeWeightBytesPerSec: number;
  /** score() over `scoreSequences` packed sequences of promptTokens each (the trainer's forward). */
  scoreSequences: number;
  scoreMs: number;
  scoreTokensPerSec: number;
  gpuMemory: GpuMemoryReport;
}

async function bench(ctx: GpuContext, model: string, config: Qwen2Config, tensors: WeightSource | Q4WeightSource, prompt: number, decode: number, scoreSeqs: number): Promise<ModelResult> {
  const t0 = performance.now();
  const rt = await Qwen2Runtime.create(ctx, config, tensors, { maxContext: prompt + decode + 8, maxBatchRows: Math.max(prompt * scoreSeqs, 8) });
  log(`${model}: uploaded ${(rt.weights.bytes / 2 ** 20).toFixed(1)} MiB in ${(performance.now() - t0).toFixed(0)} ms`);
  try {
    const ids = Array.from({ length: prompt }, (_, i) => (i * 7919 + 13) % config.vocabSize);
    // Warm-up compiles every pipeline and records the step lists for these shapes.
    await rt.generate(ids, { maxNewTokens: 2, temperature: 0 });
    const out = await rt.generate(ids, { maxNewTokens: decode, temperature: 0 });
    // The first new token comes from the prefill's logits; each further one is one decode step.
    const steps = Math.max(0, out.tokens.length - 1);
    const seqs = Array.from({ length: scoreSeqs }, (_, j) => ids.map((id) => (id + j) % config.vocabSize));
    await rt.score(seqs);
    const s0 = performance.now();
    await rt.score(seqs);
    const scoreMs = performance.now() - s0;
    const params = [...expectedQwen2Tensors(config).values()].reduce((a, shape) => a + shape.reduce((x, y) => x * y, 1), 0);
    const decodeTps = steps > 0 ? steps / (out.decodeMs / 1000) : 0;
    const r: ModelResult = {
      model,
      params,
      weightBytes: rt.weights.bytes,
      promptTokens: prompt,
      prefillMs: out.prefillMs,
      prefillTokensPerSec: prompt / (out.prefillMs / 1000),
      decodeTokens: steps,
      decodeMs: out.decodeMs,
      decodeTokensPerSec: decodeTps,
      decodeWeightBytesPerSec: decodeTps * rt.weights.bytes,
      scoreSequences: scoreSeqs,
      scoreMs,
      scoreTokensPerSec: (scoreSeqs * prompt) / (scoreMs / 1000),
      gpuMemory: rt.memory(),
    };
    log(`${model}: score ${r.scoreTokensPerSec.toFixed(1)} tok/s, prefill ${r.prefillTokensPerSec.toFixed(1)} tok/s, decode ${r.decodeTokensPerSec.toFixed(2)} tok/s (${(r.decodeWeightBytesPerSec / 1e9).toFixed(2)} GB/s of weights)`);
    return r;
  } finally {
    rt.destroy();
  }
}

async function main(): Promise<void> {
  const ctx = await requestGpu();
  const soft = ctx.caps.isSoftware;
  const models = flag('models', 'fixture,fixture-q4,qwen2.5-0.5b,qwen2.5-0.5b-q4').split(',');
  const results: ModelResult[] = [];
  for (const m of models) {
    if (m === 'fixture') {
      const dir = resolve(dirname(fileURLToPath(import.meta.url)), '../../shared/fixtures/qwen2-tiny');
      const ckpt = await loadCheckpoint(directorySource(dir));
      results.push(await bench(ctx, 'qwen2-tiny (fixture)', ckpt.config, ckpt.tensors, Number(flag('prompt', '32')), Number(flag('decode', '32')), 8));
    } else if (m === 'fixture-q4') {
      const dir = resolve(dirname(fileURLToPath(import.meta.url)), '../../shared/fixtures/qwen2-tiny-q4f16_1-MLC');
      const ckpt = await loadCheckpoint(directorySource(dir));
      results.push(await bench(ctx, 'qwen2-tiny-q4f16_1-MLC (fixture, 4-bit)', ckpt.config, ckpt.tensors, Number(flag('prompt', '32')), Number(flag('decode', '32')), 8));
    } else if (m === 'qwen2.5-0.5b' || m === 'qwen2.5-0.5b-q4') {
      // On software adapters 4 prompt rows keep prefill on the matmul row kernel (minutes, not tens of).
      const prompt = Number(flag('prompt', soft ? '4' : '128'));
      const decode = Number(flag('decode', soft ? '3' : '64'));
      const q4 = m.endsWith('-q4');
      const name = q4 ? 'Qwen2.5-0.5B shapes, q4f16_1 (random values)' : 'Qwen2.5-0.5B shapes, f16 (random values)';
      results.push(await bench(ctx, name, QWEN25_05B, q4 ? shapedQ4Weights(QWEN25_05B) : shapedWeights(QWEN25_05B), prompt, decode, soft ? 1 : 8));
    } else {
      throw new Error(`unknown model '${m}' (fixture, fixture-q4, qwen2.5-0.5b, qwen2.5-0.5b-q4)`);
    }
  }
  const device = { description: ctx.caps.description, vendor: ctx.caps.vendor, f16: ctx.caps.f16, software: soft };
  process.stdout.write(`${JSON.stringify({ device, results }, null, 2)}\n`, () => process.exit(0));
}

main().catch((e: Error) => {
  log(`bench failed: ${e.stack ?? e.message}`);
  process.exit(1);
});
