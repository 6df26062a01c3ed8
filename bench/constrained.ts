// npx tsx bench/constrained.ts [--model fixture|fixture-q4|qwen2.5-0.5b|qwen2.5-0.5b-q4] [--fixtures DIR]
//   [--tokens N] [--calls K] [--grammar-replies M] [--parts decode,grammar]
// What schema-constrained decoding costs (issue 26), printed as JSON on stdout (progress on stderr):
// - decode: the planner engine's decode tok/s at temperature 1 on the same prompts with and without a planner
//   reply schema (tool_name enum + sub_goal string), and their ratio; tokens the grammar forced
//   (jump-forward, appended without a draw) are counted apart. The fixtures use the byte-level test
//   tokenizer; the 0.5B shapes a synthetic byte-level BPE vocabulary of Qwen2.5's size (synthetic-vocab.ts).
// - grammar: the grammar alone on the CPU over a Qwen2.5-sized vocabulary (151,936 logits): ms per token of
//   the mask, the masked draw and the accept, with random logits, and the compile time of the schema.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requestGpu } from '../src/gpu/device';
import { loadCheckpoint } from '../src/engine/load-checkpoint';
import { directorySource } from '../src/io/sources';
import { PlannerEngine } from '../src/engine/planner-engine';
import { Qwen2Runtime } from '../src/engine/runtime';
import { Tokenizer } from '../src/engine/tokenizer/tokenizer';
import { SchemaGrammar } from '../src/engine/grammar/json-schema-constraint';
import { drawMasked } from '../src/engine/grammar/masked-draw';
import { Rng } from '../src/util/rng';
import { byteTokenizerConfig, byteTokenizerJson } from '../tests/support/byte-tokenizer';
import { QWEN25_05B, shapedQ4Weights, shapedWeights } from './shaped-model';
import { syntheticBpeTokenizer } from './synthetic-vocab';
import { flag, log } from './flags';
import { PLANNER_SCHEMA } from './planner-schema';


function num(name: string, fallback: string): number {
  const v = Number(flag(name, fallback));
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} must be an integer >= 1, got '${flag(name, fallback)}'`);
  return v;
}

async function loadModel(name: string, fixtures: string) {
  if (name === 'fixture' || name === 'fixture-q4') {
    const ckpt = await loadCheckpoint(directorySource(join(fixtures, name === 'fixture' ? 'qwen2-tiny' : 'qwen2-tiny-q4f16_1-MLC')));
    const tokenizer = new Tokenizer({ tokenizerJson: byteTokenizerJson(), tokenizerConfig: byteTokenizerConfig() });
    return { config: ckpt.config, source: ckpt.tensors, tokenizer, release: () => ckpt.release(), vocab: 'byte-level test tokenizer (259 tokens)' };
  }
  if (name === 'qwen2.5-0.5b' || name === 'qwen2.5-0.5b-q4') {
    const source = name.endsWith('-q4') ? shapedQ4Weights(QWEN25_05B) : shapedWeights(QWEN25_05B);
    return { config: QWEN25_05B, source, tokenizer: syntheticBpeTokenizer(), release: () => undefined, vocab: 'synthetic byte-level BPE (151,646 tokens)' };
  }
  throw new Error(`--model: unknown model '${name}' (fixture, fixture-q4, qwen2.5-0.5b, qwen2.5-0.5b-q4)`);
}

interface DecodeRun {
  calls: number;
  tokens: number;
  forcedTokens: number;
  decodeMs: number;
  tokensPerSec: number;
  /** Drawn tokens (not forced) per second: what a draw costs, forced tokens aside. */
  drawnTokensPerSec: number;
  grammarMs: number;
}

async function decodeBench(engine: PlannerEngine, calls: number, tokens: number, schema: string | undefined): Promise<DecodeRun> {
  let n = 0;
  let forced = 0;
  let ms = 0;
  const g0 = engine.grammarMs;
  for (let k = 0; k < calls; k++) {
    const r = await engine.stream([{ role: 'user', content: `What is ${k + 2} times 7?` }], { maxNewTokens: tokens, temperature: 1, seed: k + 1, jsonSchema: schema }).result;
    // A reply cut by the token limit is unfinished JSON; one that stopped must parse.
    if (schema && r.finishReason === 'stop') JSON.parse(r.text);
    // decodeMs runs from the first token on: the tokens after it.
    n += r.tokens.length - 1;
    forced += r.forcedTokens ?? 0;
    // The first token counts in neither (decodeMs starts after it): when it was forced, take it back out.
    if (r.forced?.[0]) forced--;
    ms += r.timings.decodeMs;
  }
  return { calls, tokens: n, forcedTokens: forced, decodeMs: ms, tokensPerSec: (n / ms) * 1000, drawnTokensPerSec: ((n - forced) / ms) * 1000, grammarMs: engine.grammarMs - g0 };
}

/** The grammar alone over a Qwen2.5-sized vocabulary: ms per drawn token of mask + masked draw + accept. */
async function grammarBench(replies: number) {
  const t0 = performance.now();
  const tok = syntheticBpeTokenizer();
  const t1 = performance.now();
  const V = QWEN25_05B.vocabSize;
  const stop = tok.stopTokenIds[0];
  const grammar = await SchemaGrammar.for(tok, { vocabSize: V, stopIds: [stop] });
  const t2 = performance.now();
  await grammar.compile(PLANNER_SCHEMA);
  const t3 = performance.now();
  const rng = new Rng(5);
  const logits = new Float32Array(V);
  let drawn = 0;
  let forced = 0;
  let maskMs = 0;
  let drawMs = 0;
  let acceptMs = 0;
  for (let k = 0; k < replies; k++) {
    const m = await grammar.matcher(PLANNER_SCHEMA);
    for (let step = 0; step < 400 && !m.terminated; step++) {
      const f0 = performance.now();
      forced += m.forced(64).length;
      acceptMs += performance.now() - f0;
      for (let i = 0; i < V; i++) logits[i] = (rng.next() - 0.5) * 4;
      const a = performance.now();
      const mask = await m.allowedMask();
      const b = performance.now();
      const d = drawMasked(logits, mask, { temperature: 1 }, rng.next());
      const c = performance.now();
      if (!m.accept(d.token)) throw new Error(`grammar bench: token ${d.token} rejected`);
      acceptMs += performance.now() - c;
      maskMs += b - a;
      drawMs += c - b;
      drawn++;
    }
    m.dispose();
  }
  return {
    vocabulary: 'synthetic byte-level BPE, 151,646 tokens, 151,936 logits',
    tokenizerBuildMs: t1 - t0,
    tokenizerInfoMs: t2 - t1,
    schemaCompileMs: t3 - t2,
    replies,
    drawnTokens: drawn,
    forcedTokens: forced,
    maskMsPerToken: maskMs / drawn,
    maskedDrawMsPerToken: drawMs / drawn,
    acceptAndJumpForwardMsPerToken: acceptMs / drawn,
    grammarMsPerToken: (maskMs + acceptMs) / drawn,
  };
}

async function main() {
  const here = dirname(fileURLToPath(import.meta.url));
  const fixtures = resolve(flag('fixtures', join(here, '../../shared/fixtures')));
  const modelName = flag('model', 'fixture');
  const tokens = num('tokens', '64');
  const calls = num('calls', '3');
  const parts = new Set(flag('parts', 'decode,grammar').split(','));
  for (const p of parts) if (!['decode', 'grammar'].includes(p)) throw new Error(`--parts: unknown part '${p}' (decode, grammar)`);
  const out: Record<string, unknown> = { model: modelName };
  if (parts.has('decode')) out.decode = await decodeParts(modelName, fixtures, tokens, calls);
  if (parts.has('grammar')) {
    const g = await grammarBench(num('grammar-replies', '5'));
    log(`grammar on a ${g.vocabulary}: mask ${g.maskMsPerToken.toFixed(3)} ms, masked draw ${g.maskedDrawMsPerToken.toFixed(3)} ms, accept + jump-forward ${g.acceptAndJumpForwardMsPerToken.toFixed(3)} ms per drawn token; compile ${g.schemaCompileMs.toFixed(0)} ms`);
    out.grammar = g;
  }
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}

async function decodeParts(modelName: string, fixtures: string, tokens: number, calls: number) {
  const ctx = await requestGpu({});
  const m = await loadModel(modelName, fixtures);
  const rt = await Qwen2Runtime.create(ctx, m.config, m.source, { maxContext: 256 + tokens });
  m.release();
  const engine = new PlannerEngine(rt, m.tokenizer, modelName);
  try {
    // Warm-up: pipelines, recorded steps, the compiled schema.
    await decodeBench(engine, 1, 8, undefined);
    await decodeBench(engine, 1, 8, PLANNER_SCHEMA);
    const free = await decodeBench(engine, calls, tokens, undefined);
    log(`${modelName}: without a schema ${free.tokensPerSec.toFixed(2)} tok/s (${free.tokens} tokens)`);
    const constrained = await decodeBench(engine, calls, tokens, PLANNER_SCHEMA);
    log(`${modelName}: with the schema ${constrained.tokensPerSec.toFixed(2)} tok/s (${constrained.tokens} tokens, ${constrained.forcedTokens} forced), grammar ${(constrained.grammarMs / constrained.tokens).toFixed(3)} ms/token`);
    return {
      vocabulary: m.vocab,
      free,
      constrained,
      ratio: constrained.tokensPerSec / free.tokensPerSec,
      drawnRatio: constrained.drawnTokensPerSec / free.tokensPerSec,
      grammarMsPerToken: constrained.grammarMs / constrained.tokens,
      grammarMsPerDrawnToken: constrained.grammarMs / (constrained.tokens - constrained.forcedTokens),
    };
  } finally {
    rt.destroy();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    log(`bench constrained: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    process.exit(1);
  },
);
