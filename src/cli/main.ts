// Planner CLI (Node, Dawn WebGPU): score sequences or generate tokens with a Hugging Face Qwen2
// checkpoint and an optional PEFT adapter. stdout carries only the JSON result; progress and errors go
// to stderr, and any error exits non-zero.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { requestGpu } from '../gpu/device';
import { loadAdapter, loadCheckpoint } from '../engine/load-checkpoint';
import { adapterBaseWarning } from '../io/peft';
import { directorySource } from '../io/sources';
import { Qwen2Runtime } from '../engine/runtime';
import { runGrpoGrad } from './grpo-grad-command';
import { runTrain } from './train';
import { runEval } from './eval';
import { numberFlag, parseArgs, parseIdList, parseSequencesJson, required, reportFailure, UsageError } from './args';

const FLAGS = {
  score: ['model', 'adapter', 'input'],
  generate: ['model', 'adapter', 'prompt-ids', 'max-new-tokens', 'temperature', 'top-k', 'top-p', 'seed'],
};

const log = (msg: string) => process.stderr.write(`${msg}\n`);

function checkDir(path: string, what: string): void {
  if (!existsSync(path)) throw new UsageError(`${what} directory '${path}' does not exist`);
  if (!statSync(path).isDirectory()) throw new UsageError(`${what} '${path}' is not a directory`);
}

async function openRuntime(modelDir: string, adapterDir: string | undefined, maxContext: number): Promise<Qwen2Runtime> {
  checkDir(modelDir, '--model');
  if (adapterDir !== undefined) checkDir(adapterDir, '--adapter');
  let lastPct = -1;
  const ckpt = await loadCheckpoint(directorySource(modelDir), {
    onProgress: (p) => {
      const pct = p.bytesTotal ? Math.floor((100 * p.bytesDone) / p.bytesTotal) : 100;
      if (pct !== lastPct && pct % 25 === 0) log(`reading ${p.file}: ${pct}%`);
      lastPct = pct;
    },
    onNote: (note) => log(`note: ${note}`),
  });
  // Parse the adapter before touching the GPU: a bad adapter should fail fast and cheaply.
  const lora = adapterDir === undefined ? undefined : await loadAdapter(directorySource(adapterDir), ckpt.config);
  const other = lora && adapterBaseWarning(lora.config, basename(resolve(modelDir)), adapterDir!);
  if (other) log(`warning: ${other}`);
  const ctx = await requestGpu();
  log(`gpu: ${ctx.caps.description || ctx.caps.vendor || 'unknown'} (shader-f16: ${ctx.caps.f16})`);
  const rt = await Qwen2Runtime.create(ctx, ckpt.config, ckpt.tensors, { maxContext: Math.min(maxContext, ckpt.config.maxPositionEmbeddings) });
  ckpt.release();
  if (lora) {
    if (lora.ignored) log(`adapter: ${lora.ignored.length} module(s) with LoRA weights that target_modules does not select are left out (e.g. ${lora.ignored[0]})`);
    await rt.addAdapter('cli', lora);
    rt.setActiveAdapter('cli');
    log(`adapter: ${adapterDir}`);
  }
  return rt;
}

async function run(argv: string[]): Promise<unknown> {
  const args = parseArgs(argv, FLAGS);
  const model = required(args, 'model');
  const adapter = args.flags.get('adapter');
  if (args.command === 'score') {
    const input = required(args, 'input');
    if (!existsSync(input)) throw new UsageError(`--input file '${input}' does not exist`);
    const sequences = parseSequencesJson(readFileSync(input, 'utf8'), input);
    const longest = Math.max(1, ...sequences.map((s) => s.length));
    const rt = await openRuntime(model, adapter, longest);
    const logprobs = await rt.score(sequences);
    return { logprobs };
  }
  const promptIds = parseIdList(required(args, 'prompt-ids'), 'prompt-ids');
  const maxNewTokens = numberFlag(args, 'max-new-tokens', undefined, true);
  if (maxNewTokens === undefined) throw new UsageError(`'generate' needs --max-new-tokens`);
  if (maxNewTokens < 0) throw new UsageError(`--max-new-tokens must be >= 0, got ${maxNewTokens}`);
  const rt = await openRuntime(model, adapter, promptIds.length + maxNewTokens);
  const out = await rt.generate(promptIds, {
    maxNewTokens,
    temperature: numberFlag(args, 'temperature', 0),
    topK: numberFlag(args, 'top-k', undefined, true),
    topP: numberFlag(args, 'top-p', undefined),
    seed: numberFlag(args, 'seed', 0, true),
  });
  log(`${out.tokens.length} tokens, finish: ${out.finishReason}, prefill ${out.prefillMs.toFixed(0)} ms, decode ${out.decodeMs.toFixed(0)} ms`);
  return { tokens: out.tokens, logprobs: out.logprobs, finishReason: out.finishReason };
}

const argv = process.argv.slice(2);
if (argv[0] === 'grpo-grad' || argv[0] === 'train') {
  // The training commands print their own JSON and return the exit status.
  void (argv[0] === 'train' ? runTrain(argv.slice(1)) : runGrpoGrad(argv.slice(1))).then((code) => process.stdout.write('', () => process.exit(code)));
} else if (argv[0] === 'eval') {
  void runEval(argv.slice(1)).then((code) => process.stdout.write('', () => process.exit(code)));
} else {
  main(argv);
}

function main(argv: string[]): void {
  run(argv).then(
    (result) => {
      // Dawn's threads keep the event loop alive: exit once stdout has drained.
      process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
    },
    (e: unknown) => process.exit(reportFailure(e)),
  );
}
