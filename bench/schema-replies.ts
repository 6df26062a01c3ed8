// npx tsx bench/schema-replies.ts [--calls 200] [--max-new-tokens 256] [--temperature 1] [--concurrency 1] [--questions 4]
//   [--modes on,off] [--tools python,wikipedia,base_generator,web_search]
// How often the planner's reply cannot be used, with and without the reply schema (issue 26 item 1). The
// planner is the qwen2-tiny fixture with random weights, loaded as `cli train` and `cli eval` load a model
// (its byte-level tokenizer and Qwen's chat template, tests/support/tiny-chat-model.ts), on whatever WebGPU
// adapter Node's Dawn finds (set VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.json for lavapipe). Each call
// is the agent loop's first planner prompt (plannerMessages, the built-in tools' cards) for one of --questions
// questions (calls/questions each), sampled with its own seed, its reply read by the loop's parser (parsePlannerOutput): unparseable
// means no usable sub_goal and tool_name. Schemas on uses what runAgent passes by default (ReplySchemas with
// the default reply limits). Prints one JSON object per mode on stdout; progress on stderr.
import { parsePlannerOutput, matchToolName } from '../src/agent/parse';
import { plannerMessages } from '../src/agent/prompts';
import { resolveConfig } from '../src/agent/loop';
import { ReplySchemas } from '../src/agent/reply-schemas';
import { loadPlanner } from '../src/cli/train';
import { DEFAULT_AGENT_BUDGET } from '../src/trainer/run/agent-run';
import { BUILTIN_CARDS } from '../src/tools/cards';
import type { GenerationResult } from '../src/engine/chat-engine';
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TINY } from '../src/io/test-fixtures';
import { byteTokenizerConfig, byteTokenizerJson } from '../tests/support/byte-tokenizer';
import { flag, log } from './flags';

const QUESTIONS = [
  'What is 17% of 2,340?',
  'Who founded the company that makes the PlayStation?',
  'How many days are between 2024-01-15 and 2024-03-01?',
  'Convert 12 miles to kilometres.',
  'What is the capital of Peru?',
  'Summarise photosynthesis in one sentence.',
  'Count the letter r in "strawberry".',
  'Who won the most recent Tour de France?',
];

interface ModeResult {
  mode: 'on' | 'off';
  calls: number;
  unparseable: number;
  unparseableRate: number;
  /** Usable replies whose tool name is exactly a registered tool's. */
  exactTool: number;
  /** Replies that stopped at the token limit. */
  hitTokenLimit: number;
  meanTokens: number;
  /** Tokens the grammar forced (jump-forward), over all calls. */
  forcedTokens: number;
  seconds: number;
  /** Mean per call, from the engine's timings. */
  prefillMs: number;
  decodeMs: number;
  cachedPromptTokens: number;
  /** Up to 3 unusable replies, as written. */
  examples: string[];
}

/** The fixture as tests/support/tiny-chat-model.ts lays it out (that module finds the fixtures by __dirname, which tsx's ES modules lack). */
function tinyChatModelDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agentflow-schema-bench-'));
  const config = JSON.parse(readFileSync(join(TINY, 'config.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, max_position_embeddings: 4096 }));
  symlinkSync(join(TINY, 'model.safetensors'), join(dir, 'model.safetensors'));
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(byteTokenizerJson()));
  writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify(byteTokenizerConfig()));
  return dir;
}

async function main(): Promise<void> {
  const calls = Number(flag('calls', '200'));
  const maxNewTokens = Number(flag('max-new-tokens', String(DEFAULT_AGENT_BUDGET.plannerTokens)));
  const temperature = Number(flag('temperature', '1'));
  const concurrency = Number(flag('concurrency', '1'));
  const questions = Math.min(Number(flag('questions', '4')), QUESTIONS.length);
  const modes = flag('modes', 'on,off').split(',') as Array<'on' | 'off'>;
  // The built-in tools' cards by default; fewer make a shorter prompt (less to prefill on a software GPU).
  const cards = flag('tools', BUILTIN_CARDS.map((c) => c.name).join(',')).split(',').map((n) => {
    const card = BUILTIN_CARDS.find((c) => c.name === n);
    if (!card) throw new Error(`--tools: no built-in tool '${n}' (${BUILTIN_CARDS.map((c) => c.name).join(', ')})`);
    return card;
  });
  for (const [name, v] of [['calls', calls], ['max-new-tokens', maxNewTokens], ['concurrency', concurrency], ['questions', questions]] as const) {
    if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} must be a positive integer, got ${v}`);
  }
  if (!(temperature >= 0)) throw new Error(`--temperature must be >= 0, got ${temperature}`);
  if (modes.some((m) => m !== 'on' && m !== 'off')) throw new Error(`--modes takes on, off or both, got ${modes.join(',')}`);

  const { planner } = await loadPlanner(tinyChatModelDir(), 4096);
  const names = cards.map((c) => c.name);
  const cfg = resolveConfig();
  const schema = new ReplySchemas(names, cfg.replyLimits).forPlanner()!;
  log(`planner ${planner.id}; ${calls} calls per mode, ${maxNewTokens} new tokens, temperature ${temperature}, ${concurrency} at once`);

  for (const mode of modes) {
    const r: ModeResult = { mode, calls, unparseable: 0, unparseableRate: 0, exactTool: 0, hitTokenLimit: 0, meanTokens: 0, forcedTokens: 0, seconds: 0, prefillMs: 0, decodeMs: 0, cachedPromptTokens: 0, examples: [] };
    let tokens = 0;
    let next = 0;
    let done = 0;
    const t0 = performance.now();
    const one = async (i: number) => {
      // Calls go question by question, so a call's prompt is mostly its predecessor's and the engine reuses
      // its prefill (on a software GPU the prompt's prefill, not the reply, is most of a call's time).
      const question = QUESTIONS[Math.floor((i * questions) / calls)];
      const messages = plannerMessages({ query: question, analysis: '', cards, memory: [], turn: 1, maxTurns: 3 });
      const out: GenerationResult = await planner.stream(messages, { maxNewTokens, temperature, seed: i, ...(mode === 'on' ? { jsonSchema: schema } : {}) }).result;
      tokens += out.tokens.length;
      r.prefillMs += out.timings.prefillMs / calls;
      r.decodeMs += out.timings.decodeMs / calls;
      r.cachedPromptTokens += (out.timings.cachedPromptTokens ?? 0) / calls;
      r.forcedTokens += out.forcedTokens ?? 0;
      if (out.finishReason === 'length') r.hitTokenLimit++;
      const parsed = parsePlannerOutput(out.text, names);
      if (!parsed.ok) {
        r.unparseable++;
        if (r.examples.length < 3) r.examples.push(out.text.slice(0, 300));
      } else if (matchToolName(parsed.action.toolName, names)?.exact) r.exactTool++;
    };
    planner.expectConcurrentCalls(concurrency);
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let i = next++; i < calls; i = next++) {
          await one(i);
          if (++done % 20 === 0) log(`schemas ${mode}: ${done} of ${calls} calls, ${r.unparseable} unparseable`);
        }
      }),
    );
    planner.expectConcurrentCalls(1);
    r.seconds = (performance.now() - t0) / 1000;
    r.meanTokens = tokens / calls;
    r.unparseableRate = r.unparseable / calls;
    process.stdout.write(`${JSON.stringify(r)}\n`);
  }
  log(`grammar ms over the run: ${planner.grammarMs.toFixed(0)}`);
  planner.destroy();
}

main().catch((e) => {
  log(`error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
  process.exit(1);
});
