// One planner engine serving every module: the executor, verifier and generator are AgentFlow's frozen
// modules, so they must not sample from the adapter being trained (or the one the user activated for the
// planner). This view asks the same engine for its base weights on every call; because it is the same
// engine underneath, a group's executor calls still meet in its batcher and decode together. (It does not
// forward expectConcurrentCalls: the planner's count is the rollouts' to set, through engines.planner.)
import type { ChatEngine, ChatMessage, ChatStream, GenerateOptions } from './chat-engine';

export class BaseModelView implements ChatEngine {
  readonly id: string;

  constructor(readonly engine: ChatEngine) {
    this.id = `${engine.id} (base)`;
  }

  get gone(): Error | null {
    return this.engine.gone ?? null;
  }

  // The engine's own stream, not a copy: a piece crosses no extra layer for the view.
  stream(messages: ChatMessage[], options: GenerateOptions = {}): ChatStream {
    return this.engine.stream(messages, { ...options, adapter: null });
  }
}

/** The engine's base model as a ChatEngine for the frozen modules (see BaseModelView). */
export function baseModelView(engine: ChatEngine): ChatEngine {
  return engine instanceof BaseModelView ? engine : new BaseModelView(engine);
}

/** Whether `shared` is `planner` itself or its base-model view: one engine runs every module. */
export function servesAllModules(engines: { planner: ChatEngine; shared: ChatEngine }): boolean {
  const s = engines.shared;
  return s === engines.planner || (s instanceof BaseModelView && s.engine === engines.planner);
}
