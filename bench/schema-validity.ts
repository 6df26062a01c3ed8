// npx tsx bench/schema-validity.ts [--calls N] [--free-calls M] [--fixtures DIR] [--tokens T]
// How many of N planner calls of the random-weight tiny planner (qwen2-tiny, byte-level test tokenizer) give
// a reply that parses as JSON and follows the planner reply schema (tool_name from the enum, sub_goal a
// string of at most --max-length characters), with the schema on; and, for contrast, of M calls with it off.
// Calls run 8 at a time (one batch, as a group's rollouts do), at temperature 1, each with its own seed.
// A schema reply is complete JSON only if the token budget holds the longest reply the schema allows: with
// byte tokens a character may take 4, so the default budget (160) covers a 16-character sub_goal. Replies
// cut by the budget are counted apart. JSON on stdout.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requestGpu } from '../src/gpu/device';
import { loadCheckpoint } from '../src/engine/load-checkpoint';
import { directorySource } from '../src/io/sources';
import { PlannerEngine } from '../src/engine/planner-engine';
import { Qwen2Runtime } from '../src/engine/runtime';
import { Tokenizer } from '../src/engine/tokenizer/tokenizer';
import { byteTokenizerConfig, byteTokenizerJson } from '../tests/support/byte-tokenizer';
import { PLANNER_SCHEMA } from './planner-schema';

const schemaWith = (maxLength: number) => {
  const s = JSON.parse(PLANNER_SCHEMA);
  s.properties.sub_goal.maxLength = maxLength;
  return JSON.stringify(s);
};
import { flag, log } from './flags';

const TOOLS: string[] = JSON.parse(PLANNER_SCHEMA).properties.tool_name.enum;

function valid(text: string): boolean {
  try {
    const v = JSON.parse(text) as Record<string, unknown>;
    return TOOLS.includes(v.tool_name as string) && typeof v.sub_goal === 'string';
  } catch {
    return false;
  }
}

async function run(engine: PlannerEngine, calls: number, tokens: number, schema: string | undefined, seed0: number) {
  let ok = 0;
  let cut = 0;
  let forced = 0;
  let n = 0;
  const t0 = performance.now();
  for (let k = 0; k < calls; k += 8) {
    const m = Math.min(8, calls - k);
    engine.expectConcurrentCalls(m);
    const rs = await Promise.all(
      Array.from({ length: m }, (_, j) =>
        engine.stream([{ role: 'user', content: `Question ${k + j}: which tool answers it?` }], { maxNewTokens: tokens, temperature: 1, seed: seed0 + k + j, jsonSchema: schema }).result,
      ),
    );
    engine.expectConcurrentCalls(1);
    for (const r of rs) {
      if (valid(r.text)) ok++;
      if (r.finishReason === 'length') cut++;
      forced += r.forcedTokens ?? 0;
      n += r.tokens.length;
    }
  }
  return { calls, valid: ok, unparseable: calls - ok, cutByTokenLimit: cut, tokens: n, forcedTokens: forced, seconds: (performance.now() - t0) / 1000 };
}

async function main() {
  const here = dirname(fileURLToPath(import.meta.url));
  const fixtures = resolve(flag('fixtures', join(here, '../../shared/fixtures')));
  const calls = Number(flag('calls', '200'));
  const free = Number(flag('free-calls', '48'));
  const tokens = Number(flag('tokens', '160'));
  const schema = schemaWith(Number(flag('max-length', '16')));
  const ckpt = await loadCheckpoint(directorySource(join(fixtures, 'qwen2-tiny')));
  const rt = await Qwen2Runtime.create(await requestGpu({}), ckpt.config, ckpt.tensors, { maxContext: 64 + tokens });
  ckpt.release();
  const engine = new PlannerEngine(rt, new Tokenizer({ tokenizerJson: byteTokenizerJson(), tokenizerConfig: byteTokenizerConfig() }), 'qwen2-tiny');
  try {
    const on = await run(engine, calls, tokens, schema, 1);
    log(`schema on: ${on.unparseable} of ${on.calls} replies unparseable or off-schema, ${on.cutByTokenLimit} cut by the token limit (${on.seconds.toFixed(0)} s)`);
    const off = await run(engine, free, tokens, undefined, 1);
    log(`schema off: ${off.unparseable} of ${off.calls} replies unparseable or off-schema, ${off.cutByTokenLimit} cut by the token limit (${off.seconds.toFixed(0)} s)`);
    process.stdout.write(`${JSON.stringify({ model: 'qwen2-tiny (random weights)', schema: JSON.parse(schema), maxNewTokens: tokens, on, off }, null, 2)}\n`);
  } finally {
    rt.destroy();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    log(`schema-validity: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    process.exit(1);
  },
);
