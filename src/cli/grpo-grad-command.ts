// `cli grpo-grad --model DIR --adapter DIR --batch FILE --out GRADS.safetensors [--micro-batch-tokens N]`
// Flow-GRPO loss and LoRA gradients of one batch, without an optimizer step. FILE holds an object shaped
// like the fixture's `flowgrpo`: {samples: [{tokens, prompt_len, advantage, old_logprobs}], eps_low,
// eps_high, beta}. Reference logprobs are always computed by the engine with the adapter off (any
// `ref_logprobs` in FILE are ignored). Prints {"loss": x} on stdout; writes F32 gradients under the
// adapter's PEFT tensor names. Returns the exit code (0 ok, 1 error, 2 usage); src/cli/main.ts wires it.
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { requestGpu } from '../gpu/device';
import { loadAdapter, loadCheckpoint } from '../engine/load-checkpoint';
import { writeSafetensors } from '../io/safetensors';
import { coordinates, firstNonFiniteF32 } from '../io/finite';
import { directorySource } from '../io/sources';
import { Qwen2Runtime } from '../engine/runtime';
import { GpuPolicyBackend } from '../trainer/gpu-backend';
import { grpoLossAndGrads } from '../trainer/grpo-grad';
import { adapterTensors } from '../trainer/lora-init';
import { fromFixtureSamples, type FixtureSample } from '../model/samples';
import { valueText } from '../util/value-text';

export const GRPO_GRAD_USAGE = 'usage: cli grpo-grad --model DIR --adapter DIR --batch FILE --out GRADS.safetensors [--micro-batch-tokens N]';
const FLAGS = ['model', 'adapter', 'batch', 'out', 'micro-batch-tokens'];

class GrpoGradUsageError extends Error {}

function parseFlags(args: string[]): Map<string, string> {
  const rest = args[0] === 'grpo-grad' ? args.slice(1) : args;
  const flags = new Map<string, string>();
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === '--help' || a === '-h') throw new GrpoGradUsageError(GRPO_GRAD_USAGE);
    if (!a.startsWith('--')) throw new GrpoGradUsageError(`unexpected argument '${a}' (flags are --name value)\n${GRPO_GRAD_USAGE}`);
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
    if (!FLAGS.includes(name)) throw new GrpoGradUsageError(`'grpo-grad' has no flag --${name} (flags: ${FLAGS.map((f) => `--${f}`).join(', ')})`);
    const value = eq > 0 ? a.slice(eq + 1) : rest[++i];
    if (value === undefined) throw new GrpoGradUsageError(`--${name} needs a value`);
    flags.set(name, value);
  }
  for (const req of ['model', 'adapter', 'batch', 'out']) if (!flags.has(req)) throw new GrpoGradUsageError(`'grpo-grad' needs --${req}\n${GRPO_GRAD_USAGE}`);
  return flags;
}

export interface GrpoBatchFile {
  samples: FixtureSample[];
  eps_low: number;
  eps_high: number;
  beta: number;
}

export function parseGrpoBatch(text: string, file: string): GrpoBatchFile {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new GrpoGradUsageError(`${file} is not valid JSON (${(e as Error).message})`);
  }
  const o = json as Partial<GrpoBatchFile> | null;
  if (!o || typeof o !== 'object' || !Array.isArray(o.samples) || o.samples.length === 0) {
    throw new GrpoGradUsageError(`${file}: expected {"samples": [{tokens, prompt_len, advantage, old_logprobs}, ...], "eps_low", "eps_high", "beta"}`);
  }
  for (const k of ['eps_low', 'eps_high', 'beta'] as const) {
    const v = o[k];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new GrpoGradUsageError(`${file}: '${k}' must be a finite number >= 0, got ${valueText(v)}`);
  }
  return o as GrpoBatchFile;
}

function dir(path: string, flag: string): string {
  if (!existsSync(path) || !statSync(path).isDirectory()) throw new GrpoGradUsageError(`--${flag} '${path}' is not a directory`);
  return path;
}

/**
 * Throws, naming the loss or the first gradient tensor and element, unless everything is finite: float32
 * overflows (an advantage near ±3.4e38, or one that large once multiplied) would otherwise be written as
 * "loss": null and a gradients file of NaNs.
 */
function checkFinite(loss: number, grads: Array<{ name: string; shape: number[]; data: Float32Array }>): void {
  const cause = 'a value of the batch overflows float32 (the GPU computes in it); no gradients were written';
  if (!Number.isFinite(loss)) throw new Error(`the loss is ${loss}: ${cause}`);
  for (const g of grads) {
    const i = firstNonFiniteF32(g.data);
    if (i >= 0) throw new Error(`the gradient of '${g.name}' has ${g.data[i]} at [${coordinates(i, g.shape).join(', ')}]: ${cause}`);
  }
}

export async function runGrpoGrad(args: string[]): Promise<number> {
  const log = (m: string) => process.stderr.write(`${m}\n`);
  let rt: Qwen2Runtime | undefined;
  let backend: GpuPolicyBackend | undefined;
  try {
    const flags = parseFlags(args);
    const batchFile = flags.get('batch')!;
    if (!existsSync(batchFile)) throw new GrpoGradUsageError(`--batch file '${batchFile}' does not exist`);
    const batch = parseGrpoBatch(readFileSync(batchFile, 'utf8'), batchFile);
    let samples;
    try {
      samples = fromFixtureSamples(batch.samples.map(({ ref_logprobs: _ignored, ...s }) => s), batchFile);
    } catch (e) {
      throw new GrpoGradUsageError((e as Error).message);
    }
    const longest = Math.max(...samples.map((s) => s.promptTokens.length + s.responseTokens.length));
    const budgetFlag = flags.get('micro-batch-tokens');
    const budget = budgetFlag === undefined ? Math.max(longest, 2048) : Number(budgetFlag);
    if (!Number.isInteger(budget) || budget < longest) {
      throw new GrpoGradUsageError(`--micro-batch-tokens must be an integer >= the longest sample (${longest} tokens), got '${budgetFlag}'`);
    }
    const ckpt = await loadCheckpoint(directorySource(dir(flags.get('model')!, 'model')));
    const adapter = await loadAdapter(directorySource(dir(flags.get('adapter')!, 'adapter')), ckpt.config);
    const ctx = await requestGpu();
    log(`gpu: ${ctx.caps.description || ctx.caps.vendor || 'unknown'} (shader-f16: ${ctx.caps.f16})`);
    rt = await Qwen2Runtime.create(ctx, ckpt.config, ckpt.tensors, { maxContext: Math.min(ckpt.config.maxPositionEmbeddings, Math.max(longest, 16)), maxBatchRows: Math.min(budget, 2048) });
    ckpt.release();
    backend = await GpuPolicyBackend.create(rt, adapter, { maxRows: budget });
    const r = await grpoLossAndGrads(backend, samples, { epsLow: batch.eps_low, epsHigh: batch.eps_high, beta: batch.beta }, budget);
    const grads = await backend.readGradients();
    const tensors = adapterTensors(adapter).map((t) => ({ name: t.name, shape: t.shape, data: grads.get(t.name)! }));
    checkFinite(r.loss, tensors);
    writeFileSync(flags.get('out')!, writeSafetensors(tensors));
    log(`${r.tokens} response tokens, kl ${r.kl.toExponential(3)}, clip fraction ${r.clipFraction.toFixed(3)}; gradients of ${tensors.length} tensors -> ${flags.get('out')}`);
    process.stdout.write(`${JSON.stringify({ loss: r.loss })}\n`);
    return 0;
  } catch (e) {
    const err = e as Error;
    log(err instanceof GrpoGradUsageError ? err.message : `error: ${err?.name ?? 'Error'}: ${err?.message ?? String(e)}`);
    return err instanceof GrpoGradUsageError ? 2 : 1;
  } finally {
    backend?.destroy();
    rt?.destroy();
  }
}
