// The agent on the real planner engine with the qwen2-tiny fixture (random weights): the tokenizer, the
// tool and the settings shared by the e2e page (tests/e2e/pages/agent-planner.html) and the Node side of
// tests/e2e/agent-planner.e2e.test.ts.
//
// The fixture has no tokenizer, so the test ships a byte-level one (tests/support/byte-tokenizer.ts). Its
// byte alphabet and chat tokens use ids 0..258; the model's ids 259..317 would decode to nothing. Here they
// are whole-phrase tokens instead (as real BPE vocabularies have multi-character tokens): most spell a
// complete planner action that also carries executor arguments, some name a tool that does not exist. A
// random model samples them now and then, so its otherwise meaningless text sometimes parses and the loop
// really calls a tool, and sometimes does not and the parsers' fallbacks run.
import { BYTE_SPECIALS, byteTokenizerConfig, byteTokenizerJson } from '../../support/byte-tokenizer';
import type { Tool } from '../../../src/tools/tool';
import type { AgentConfigInput } from '../../../src/agent/loop';

export const QUERY = 'Reverse the word hello.';

/** A planner action with the executor's arguments in the same object: any module that reads it parses it. */
export const PHRASE_ACTION = '{"sub_goal": "reverse hello", "tool_name": "reverse", "args": {"text": "hello"}}';
/** The same task done by the Python tool (Pyodide): prints 'olleh'. */
export const PHRASE_PYTHON = '{"sub_goal": "reverse hello in Python", "tool_name": "python", "args": {"code": "print(\'hello\'[::-1])"}}';
/** A well-formed action naming a tool nobody registered: the executor must record a tool-calling error. */
export const PHRASE_UNKNOWN_TOOL = '{"sub_goal": "look it up", "tool_name": "atlas"}';

export const FIRST_PHRASE_ID = 259;
/** 318 and 319 are the config's bos and eos ids: left alone. */
export const LAST_PHRASE_ID = 317;

const PHRASES = [PHRASE_ACTION, PHRASE_PYTHON, PHRASE_UNKNOWN_TOOL];

/** The phrase token id -> its text, the three phrases in turn. */
export function phraseTokens(): Map<number, string> {
  const m = new Map<number, string>();
  for (let id = FIRST_PHRASE_ID; id <= LAST_PHRASE_ID; id++) m.set(id, PHRASES[(id - FIRST_PHRASE_ID) % PHRASES.length]);
  return m;
}

/** tokenizer.json: the byte-level tokenizer plus the phrase tokens (added, not special: decoded as text). */
export function plannerTokenizerJson(): Record<string, unknown> {
  const base = byteTokenizerJson() as Record<string, unknown> & { added_tokens: Array<Record<string, unknown>> };
  // Two ids cannot share one content in a vocabulary, so repeats get a distinguishing suffix of spaces
  // (trailing whitespace after a JSON object changes nothing for the parsers).
  const seen = new Map<string, number>();
  const added = [...phraseTokens()].map(([id, text]) => {
    const n = seen.get(text) ?? 0;
    seen.set(text, n + 1);
    return { id, content: text + ' '.repeat(n), single_word: false, lstrip: false, rstrip: false, normalized: false, special: false };
  });
  return { ...base, added_tokens: [...base.added_tokens, ...added] };
}

export function plannerTokenizerConfig(): unknown {
  return byteTokenizerConfig();
}

export { BYTE_SPECIALS };

export const reverseTool: Tool = {
  card: {
    name: 'reverse',
    description: 'Reverses a piece of text.',
    input: { type: 'object', properties: { text: { type: 'string', description: 'the text to reverse' } }, required: ['text'] },
    output: 'the text, last character first',
    limitations: [],
    examples: [{ goal: 'reverse abc', args: { text: 'abc' } }],
    usesNetwork: false,
  },
  async run(args) {
    return { ok: true, output: [...String(args.text)].reverse().join('') };
  },
};

export const MAX_TURNS = 2;
/** Sampling seeds of analysis, planner, executor, verifier, generator. */
// With these the fixture's run has the planner choose the reverse tool on turn 1, for which the executor
// writes Python's arguments (a tool-calling error); the verifier's nonsense falls back to CONTINUE; on
// turn 2 it calls the Python tool successfully. The test asserts those outcomes, which are reproducible,
// not hand-written. The planner's prompt decides what these seeds draw: after a prompt change, find new
// ones with bench/agent-planner-seeds.ts (the same run in Node) and confirm them with the e2e.
export const SEEDS: [number, number, number, number, number] = [11, 5, 182, 14, 15];
export const MAX_NEW_TOKENS = 12;

/**
 * Every module on the planner engine (web-llm cannot load a model here), sampled at temperature 1 with a
 * fixed seed so the run is reproducible: a resumed run must write exactly what an uninterrupted one wrote.
 */
export function plannerConfig(seeds = SEEDS): AgentConfigInput {
  const gen = (seed: number) => ({ maxNewTokens: MAX_NEW_TOKENS, temperature: 1, seed });
  const [a, p, e, v, g] = seeds;
  return {
    maxTurns: MAX_TURNS,
    // The first Python call starts a worker and loads Pyodide.
    toolTimeouts: { python: 180_000 },
    answerTags: false,
    // Free text, as before reply schemas: the scenario is the parsers' fallbacks on what a random model writes
    // (phrase tokens that sometimes spell an action). Constrained replies: src/agent/reply-schemas.test.ts.
    constrainReplies: false,
    engineFor: { analysis: 'planner', planner: 'planner', executor: 'planner', verifier: 'planner', generator: 'planner' },
    generation: { analysis: gen(a), planner: gen(p), executor: gen(e), verifier: gen(v), generator: gen(g) },
  };
}
