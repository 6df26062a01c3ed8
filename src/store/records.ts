// Shapes of what is stored in IndexedDB. Owned by the modules named in each comment; add fields freely.

/** A chat conversation or a benchmark/training run of the agent (agent loop). */
export interface ConversationRecord {
  id: string;
  title: string;
  createdAt: number;
  updatedAt: number;
  /** 'running' until the generator's answer is stored; a reload leaves it 'running' -> shown as interrupted. */
  status: 'running' | 'done' | 'error' | 'interrupted';
  query: string;
  answer?: string;
  reference?: string;
  reward?: number;
  settings?: Record<string, unknown>;
}

/** The modules of the loop, as stored steps name them. */
export type StepModule = 'analysis' | 'planner' | 'executor' | 'verifier' | 'generator';

/**
 * What every model call's step carries about the call. Optional: records written before a field existed
 * still load, so readers treat each as possibly absent.
 */
export interface CallUsage {
  engineId?: string;
  promptTokenCount?: number | null;
  completionTokenCount?: number | null;
  finishReason?: string;
  timings?: { prefillMs: number; decodeMs: number; cachedPromptTokens?: number };
  /** The call was the group's shared analysis, made once for all rollouts. */
  sharedWithGroup?: boolean;
  /** The adapter the planner sampled with (planner calls). */
  adapterId?: string | null;
}

export interface AnalysisStepData extends CallUsage {
  text: string;
}

export interface PlannerStepData extends CallUsage {
  raw: string;
  action: { justification: string; context: string; subGoal: string; toolName: string };
  parseMethod: string;
  /** The tool the name matched (exactly or fuzzily), or null when none did. */
  resolvedTool: string | null;
  toolMatch?: 'exact' | 'fuzzy' | 'none';
}

export interface ExecutorStepData extends CallUsage {
  subGoal: string;
  toolName: string;
  /** The tool's arguments, or null when none could be made. */
  args: Record<string, unknown> | null;
  ok: boolean;
  result: string;
  error: string | null;
  errorKind?: string | null;
  raw?: string;
  parseMethod?: string;
  toolMs?: number;
  droppedArgs?: string[];
}

export interface VerifierStepData extends CallUsage {
  raw: string;
  verdict: 'STOP' | 'CONTINUE';
  explanation: string;
  parseMethod: string;
}

export interface GeneratorStepData extends CallUsage {
  text: string;
  /** The text inside <answer> tags when asked for, else the whole text trimmed. */
  finalAnswer: string;
  stopReason: string | null;
}

/** A module call that failed (engine error, unusable output); the loop went on or ended as the rules say. */
export interface ErrorStepData extends CallUsage {
  module: StepModule;
  message: string;
  errorKind: string;
  raw?: string;
}

export interface StepDataOf {
  analysis: AnalysisStepData;
  planner: PlannerStepData;
  executor: ExecutorStepData;
  verifier: VerifierStepData;
  generator: GeneratorStepData;
  error: ErrorStepData;
}

export type StepKind = keyof StepDataOf;

interface StepBase {
  conversationId: string;
  seq: number;
  turn: number;
  startedAt: number;
  endedAt: number;
}

/** One completed step of a conversation's run (agent loop), by kind. `seq` orders steps within the conversation. */
export type StepRecord = { [K in StepKind]: StepBase & { kind: K; data: StepDataOf[K] } }[StepKind];

/** The step of one kind. */
export type StepOf<K extends StepKind> = Extract<StepRecord, { kind: K }>;

/** A planner call recorded for training (agent loop writes, trainer reads). */
export interface RolloutRecord {
  id: string;
  runId: string;
  groupId: string;
  conversationId: string;
  turn: number;
  /** Training runs: the step that trained on this call, and the rollout's index in its group. */
  step?: number;
  rollout?: number;
  adapterId: string | null;
  promptTokens: number[];
  tokens: number[];
  logprobs: number[];
  reward?: number;
  advantage?: number;
  prompt: string;
  completion: string;
  createdAt: number;
  /** The chat messages the planner saw (the engine applied its chat template to these). */
  messages?: Array<{ role: 'system' | 'user' | 'assistant'; content: string }>;
  /** Engine that sampled the completion, and whether the loop could use the completion. */
  engineId?: string;
  parsedOk?: boolean;
  finishReason?: 'stop' | 'length' | 'abort';
}

/** A LoRA adapter in PEFT layout (trainer). Tensors keyed by PEFT name, f32. */
export interface AdapterRecord {
  id: string;
  name: string;
  createdAt: number;
  baseModel: string;
  config: Record<string, unknown>;
  tensors: Record<string, { shape: number[]; data: Float32Array }>;
  trainingRunId?: string;
  /** Saved by the user under a name of their own: pruning a run's checkpoints never deletes it. */
  keep?: boolean;
}

export interface CheckpointRecord {
  id: string;
  runId: string;
  step: number;
  createdAt: number;
  adapterId: string;
  /** AdamW first and second moments, by PEFT tensor name. */
  moments: Record<string, { m: Float32Array; v: Float32Array }>;
  rngState: number;
}

export interface TrainingRunRecord {
  id: string;
  createdAt: number;
  updatedAt: number;
  status: 'running' | 'paused' | 'done' | 'error';
  config: Record<string, unknown>;
  /**
   * Per-step metrics: the newest steps, after those sealed in 'trainingRunSteps' chunks (run-store-idb.ts), so a
   * step rewrites a bounded record, not the whole history. Records written before v3 hold every step here.
   */
  stats: Array<Record<string, number | string | boolean>>;
}

/** A sealed, never rewritten run of consecutive steps of a training run's history (schema v3). */
export interface TrainingRunChunk {
  runId: string;
  /** 0, 1, 2, … in step order. */
  chunk: number;
  stats: Array<Record<string, number | string | boolean>>;
}

export interface ExperimentRecord {
  id: string;
  createdAt: number;
  name: string;
  status: 'running' | 'done' | 'error' | 'interrupted';
  config: Record<string, unknown>;
  total: number;
  summary?: Record<string, number>;
}

export interface ExperimentItemRecord {
  experimentId: string;
  /** Position in the run. */
  index: number;
  /** 1-based position in the benchmark file, as the subset box numbers items (absent in runs stored before). */
  number?: number;
  pid: string;
  query: string;
  reference: string;
  answer?: string;
  correct?: boolean;
  conversationId?: string;
  toolCalls?: Record<string, number>;
  errors?: string[];
  /** The rule that scored the answer and the part of it compared (rewards' ScoreDetail); absent before it was kept. */
  scoring?: { rule: string; compared?: string };
  /** Which run of the item this is when a run samples each item several times (`cli eval --samples`); absent: 0. */
  sample?: number;
  /** Planner turns the run took, and its wall-clock seconds (absent in runs stored before). */
  turns?: number;
  seconds?: number;
}

/**
 * An imported benchmark file, kept so Experiments and Training offer it after a reload (src/store/benchmarks.ts).
 * `id` is derived from the file name and items: importing the same file again replaces it, not a copy.
 */
export interface BenchmarkRecord {
  id: string;
  name: string;
  fileName: string;
  importedAt: number;
  kind: 'exact' | 'numeric' | 'choice' | 'gameof24';
  items: Array<{ pid: string; query: string; answer: unknown; numbers?: number[]; options?: string[] }>;
  problems: Array<{ line?: number; index?: number; message: string }>;
}
