// Main-thread handle on the planner worker (its protocol: planner-protocol.ts): starts it, forwards calls
// over comlink, and gives each generation its own line (a MessagePort, see GenerationLine) that brings its
// tokens to the caller (a callback; RemotePlannerEngine's stream for chat) and carries its AbortSignal's
// cancel.
// `RemotePlannerEngine` is the ChatEngine the agent uses when the planner runs in the worker; the client
// itself is the PlannerTrainer the app hands to its Training tab.
import * as Comlink from 'comlink';
import type { PolicyTrainer } from '../trainer/training-host';
import type { DecodeStats, GenerationLine, GenerationLineMessage, ModelSpec, LoadOptions, PlannerInfo, PlannerTraining, PlannerWorkerApi, RemoteTokenOptions } from './planner-protocol';
import type { TokenGeneration } from '../engine/runtime';
import type { ChatEngine, ChatMessage, GenerateOptions, GenerationResult, LoadProgress } from '../engine/chat-engine';
import { chatStream, type ChatStream } from '../engine/chat-stream';
import { guardCalls, watchWorker, type WorkerGoneError, type WorkerWatch } from '../util/worker-watch';

export type { DecodeStats, ModelSpec, LoadOptions, PlannerInfo, TrainStartOptions, TrainAdapterSpec } from './planner-protocol';
export type { TrainSessionInfo } from '../trainer/training-host';

/**
 * The planner worker as the app hands it to its panels: the optimizer next to the policy (PolicyTrainer,
 * what a training run drives) and the adapters the planner samples with (what the app activates).
 * PlannerClient implements it; the page gets it from loadEngines beside the engines, never from them.
 */
export interface PlannerTrainer extends PolicyTrainer {
  decodeStats(): Promise<DecodeStats>;
  info(): Promise<PlannerInfo>;
  setActiveAdapter(id: string | null): Promise<void>;
  addAdapterBytes(id: string, adapterConfig: unknown, weights: Uint8Array): Promise<PlannerInfo>;
}

export interface TokenStreamOptions extends RemoteTokenOptions {
  signal?: AbortSignal;
  onToken?: (id: number, logprob: number) => void;
}

type Training = Comlink.Remote<PlannerTraining>;

export class PlannerClient implements PlannerTrainer {
  /** The worker's API; every call rejects with a WorkerGoneError once the worker is gone. */
  readonly api: Comlink.Remote<PlannerWorkerApi>;
  private readonly raw: Comlink.Remote<PlannerWorkerApi>;
  private readonly watch: WorkerWatch;

  /**
   * Rejects with a WorkerGoneError when the worker is gone: it reported an error it did not handle (e.g. its
   * script could not be loaded, offline), sent an unreadable message, or was terminated.
   */
  readonly failed: Promise<never>;

  // PolicyTrainer: the worker's optimizer itself (PlannerWorkerApi.training). Comlink applies each call to it
  // in the worker; guardCalls only adds the gone-worker rejection.
  readonly trainStart: Training['trainStart'];
  readonly trainStep: Training['trainStep'];
  readonly trainCheckpoint: Training['trainCheckpoint'];
  readonly trainInfo: Training['trainInfo'];
  readonly exportAdapter: Training['exportAdapter'];
  readonly trainStop: Training['trainStop'];

  constructor(createWorker: () => Worker = () => new Worker(new URL('../../workers/planner.worker.ts', import.meta.url), { type: 'module', name: 'planner' })) {
    const worker = createWorker();
    this.watch = watchWorker(worker, 'planner');
    this.raw = Comlink.wrap<PlannerWorkerApi>(worker);
    this.api = guardCalls(this.raw, this.watch);
    this.failed = this.watch.gone;
    // From the unguarded proxy: its `training` is a path into the worker, where the guarded one would call it.
    const training = guardCalls(this.raw.training, this.watch);
    this.trainStart = training.trainStart;
    this.trainStep = training.trainStep;
    this.trainCheckpoint = training.trainCheckpoint;
    this.trainInfo = training.trainInfo;
    this.exportAdapter = training.exportAdapter;
    this.trainStop = training.trainStop;
  }

  /** Why the worker is gone (a WorkerGoneError), or null while it runs. */
  get goneReason(): WorkerGoneError | null {
    return this.watch.goneReason;
  }

  load(spec: ModelSpec, opts: LoadOptions = {}, onProgress?: (p: LoadProgress) => void): Promise<PlannerInfo> {
    return this.api.load(spec, opts, onProgress ? Comlink.proxy(onProgress) : undefined);
  }

  info(): Promise<PlannerInfo> {
    return this.api.info();
  }

  loadAdapter(id: string, spec: ModelSpec, onProgress?: (p: LoadProgress) => void): Promise<PlannerInfo> {
    return this.api.loadAdapter(id, spec, onProgress ? Comlink.proxy(onProgress) : undefined);
  }

  addAdapterBytes(id: string, adapterConfig: unknown, weights: Uint8Array): Promise<PlannerInfo> {
    return this.api.addAdapterBytes(id, adapterConfig, weights);
  }

  /** The planner runtime's decode steps so far and the sequences they served (batching at work). */
  decodeStats(): Promise<DecodeStats> {
    return this.api.decodeStats();
  }

  /** See ChatEngine.expectConcurrentCalls: the worker's batcher holds calls for that many. */
  expectConcurrentCalls(n: number): Promise<void> {
    return this.api.expectConcurrentCalls(n);
  }

  setActiveAdapter(id: string | null): Promise<void> {
    return this.api.setActiveAdapter(id);
  }

  score(sequences: number[][]): Promise<number[][]> {
    return this.api.score(sequences);
  }

  /** Tokens of `messages` as chat() would prompt the model with them. */
  promptTokens(messages: ChatMessage[]): Promise<number> {
    return this.api.promptTokens(messages);
  }

  /** `onPiece` takes each piece of text as the worker posts it (RemotePlannerEngine's stream pushes them). */
  async chat(messages: ChatMessage[], options: GenerateOptions = {}, onPiece?: (piece: string) => void): Promise<GenerationResult> {
    const { signal, ...rest } = options;
    return overLine(signal, onPiece, (line) => this.api.chat(messages, rest, line));
  }

  async generateIds(promptIds: number[], options: TokenStreamOptions = {}): Promise<TokenGeneration> {
    const { signal, onToken, ...rest } = options;
    return overLine(signal, onToken, (line) => this.api.generateIds(promptIds, rest, line));
  }

  /** Ends the worker; pending and later calls reject with a WorkerGoneError ('terminated'). */
  terminate(): void {
    this.raw[Comlink.releaseProxy]();
    this.watch.terminate();
  }
}

/**
 * A generation over its own line (GenerationLine): the caller's callback itself (for chat, the push into its
 * stream) takes each token the worker posts, and the signal's abort is the one cancel message. Settles once
 * the call has answered and the line has ended (every token delivered), or at once when the call fails; a
 * dead worker fails the call (the client's api is raced against it), so nothing waits on a line that will
 * not end.
 */
async function overLine<T>(signal: AbortSignal | undefined, onToken: ((...token: never[]) => unknown) | undefined, run: (line?: GenerationLine) => Promise<T>): Promise<T> {
  if (!signal && !onToken) return run();
  const { port1, port2 } = new MessageChannel();
  let ended!: () => void;
  const end = new Promise<void>((resolve) => (ended = resolve));
  port1.onmessage = (e: MessageEvent<GenerationLineMessage>) => {
    if ('end' in e.data) ended();
    else (onToken as ((...token: unknown[]) => unknown) | undefined)?.(...e.data.token);
  };
  const cancel = () => port1.postMessage('cancel');
  signal?.addEventListener('abort', cancel, { once: true });
  try {
    const line: GenerationLine = { port: port2, tokens: !!onToken, aborted: !!signal?.aborted };
    const [out] = await Promise.all([run(Comlink.transfer(line, [port2])), end]);
    return out;
  } finally {
    signal?.removeEventListener('abort', cancel);
    port1.close();
  }
}

/** The planner as a ChatEngine, running in the worker. */
export class RemotePlannerEngine implements ChatEngine {
  constructor(
    private readonly client: PlannerClient,
    readonly id: string,
    /** PlannerInfo.maxContext: prompt and reply together. */
    readonly contextTokens?: number,
  ) {}

  get gone(): Error | null {
    return this.client.goneReason;
  }

  countPromptTokens(messages: ChatMessage[]): Promise<number> {
    return this.client.promptTokens(messages);
  }

  stream(messages: ChatMessage[], options?: GenerateOptions): ChatStream {
    return chatStream((emit) => this.client.chat(messages, options, emit));
  }

  expectConcurrentCalls(n: number): void {
    // A hint: a worker that cannot take it (no model yet) simply does not wait.
    this.client.expectConcurrentCalls(n).catch(() => undefined);
  }
}
