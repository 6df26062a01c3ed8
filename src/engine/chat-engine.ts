// The one small chat-engine interface that every agent module talks to. Two implementations: the
// planner engine (our WebGPU Qwen2 runtime, with LoRA, token ids and logprobs) and the shared web-llm
// engine (token ids and logprobs empty). Any module can run on either. A call is a pull stream
// (ChatStream; engines make theirs with chat-stream.ts): its pieces are read, not handed to a callback, and
// its one AbortSignal stops it.

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface GenerateOptions {
  maxNewTokens?: number;
  /** 0 means greedy. */
  temperature?: number;
  topK?: number;
  topP?: number;
  seed?: number;
  /** Stop when the decoded text ends with one of these (the stop string is not returned). */
  stop?: string[];
  /** The call's only cancel: a reader that stops reading its stream does not stop the generation. */
  signal?: AbortSignal;
  /** Ask for a JSON object (web-llm `response_format: {type: 'json_object'}`); planner engine ignores it. */
  json?: boolean;
  /**
   * A JSON Schema (as JSON text) the reply must follow. The planner engine compiles it with
   * @mlc-ai/web-xgrammar and masks every draw; web-llm (0.2.86, which has no 'json_schema' type) gets it as
   * `response_format: {type: 'json_object', schema}`.
   * Absent: unconstrained (the reply parser then has to cope). Takes precedence over `json`.
   */
  jsonSchema?: string;
  /**
   * The LoRA adapter to sample with, by id, or null for the base model; default: the engine's active one.
   * Engines without adapters (web-llm) ignore it. Lets one planner engine serve the frozen modules with its
   * base weights while the planner's own calls use the adapter being trained.
   */
  adapter?: string | null;
}

export type FinishReason = 'stop' | 'length' | 'abort';

export interface GenerationResult {
  text: string;
  /** Exact prompt token ids as fed to the model (empty where the engine does not expose them). */
  promptTokens: number[];
  /** Sampled token ids, and log p of each under the model at temperature 1, before any top-k / top-p (same length). */
  tokens: number[];
  logprobs: number[];
  /** Adapter active while sampling, or null for the base model. */
  adapterId: string | null;
  finishReason: FinishReason;
  /** Under a jsonSchema: how many of `tokens` the grammar forced (jump-forward, no forward of their own). */
  forcedTokens?: number;
  /**
   * Under a jsonSchema: forced[t] is true where tokens[t] was forced (same length as tokens). Its logprob is
   * the model's own all the same; the trainer leaves forced tokens out of the loss (TurnSample.forced).
   */
  forced?: boolean[];
  /**
   * Under a jsonSchema, where the engine records them: choices[t] is the ids the grammar allowed where tokens[t]
   * was drawn, grouped by the reply each leads to up to the next choice, when they were few (CHOICE_SET_MAX: a
   * choice among tools, not free text) and in two groups or more, else null. The entropy bonus over choices
   * reads them (GrpoConfig.entropyOver).
   */
  choices?: Array<number[][] | null>;
  /** cachedPromptTokens: prompt tokens the engine did not prefill again (KV reused from its previous call). */
  timings: { prefillMs: number; decodeMs: number; cachedPromptTokens?: number };
}

/**
 * One generation's text as it is decoded, and its outcome. Reading the pieces is optional; they wait for a
 * late reader, and a reader that stops (break, return()) only stops reading: the generation runs on to its
 * result, and only its signal ends it early. The iteration ends when the generation does, however it ends;
 * a failure is `result`'s rejection, not the iteration's. One reader per stream.
 */
export interface ChatStream extends AsyncIterable<string> {
  /** Settles when the generation ends, after every piece has been pushed; rejects where it fails. */
  readonly result: Promise<GenerationResult>;
}

export interface ChatEngine {
  /** A human-readable id, e.g. 'planner:Qwen2.5-0.5B-Instruct' or 'web-llm:Qwen2.5-1.5B-Instruct-q4f16_1-MLC'. */
  readonly id: string;
  /**
   * True for engines that replay scripted replies instead of running a model (the demo, tests): what they
   * write must be labelled as scripted wherever it is shown.
   */
  readonly scripted?: boolean;
  /**
   * Why the engine can no longer answer (its worker died: a WorkerGoneError), or null/absent while it can.
   * The chat then offers to reload the models instead of failing every question the same way.
   */
  readonly gone?: Error | null;
  /** The most tokens a prompt and its reply may take together, when the engine knows it. */
  readonly contextTokens?: number;
  /** The prompt tokens `messages` make with this engine's chat template, when it can count them. */
  countPromptTokens?(messages: ChatMessage[]): Promise<number>;
  /**
   * Starts a generation: its decoded text comes piece by piece from the stream (a stop string never
   * reaches it), its outcome is `result`. A caller that wants only the outcome awaits `result`.
   */
  stream(messages: ChatMessage[], options?: GenerateOptions): ChatStream;
  /**
   * `n` callers will call stream() concurrently from now on (the live rollouts of a Flow-GRPO group; 1 when
   * they are over). An engine that decodes overlapping calls together (the planner) may then hold a call
   * briefly for the others. Optional: engines that serve one call at a time ignore it.
   */
  expectConcurrentCalls?(n: number): void;
}

// Defined where files are read (io/ sits below engine/); re-exported because every engine reports it.
export type { LoadProgress } from '../io/sources';
