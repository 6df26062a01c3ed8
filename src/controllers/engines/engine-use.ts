// What the app shell asks of each tab before it replaces the loaded engines: is anything running on them
// (a training run, an experiment, a chat answer), and stop it cleanly. The shell owns the engines and
// disposes the old ones on a swap, which would otherwise cut whatever runs on them mid-call.

/** Something running on the page's loaded engines right now. */
export interface EngineUse {
  /** What runs, for people: 'a training run (Imported benchmark …, run agent-…)'. */
  what: string;
  /** What stopping it keeps, for people: 'its checkpoints are kept; resume it in Training'. */
  kept: string;
  /** More than one thing (a tab's answer and its training run, stopped together): "are", "them". */
  plural?: boolean;
  /** Stops it the way its own Stop or Pause button does; resolves once it no longer uses the engines. */
  stop(): Promise<void>;
}

/** A tab that may run things on the page's engines. */
export interface EngineUser {
  engineUse(): EngineUse | null;
}

/** "a training run (…) and an experiment run" */
export function describeUses(uses: readonly EngineUse[]): string {
  const w = uses.map((u) => u.what);
  return w.length <= 1 ? (w[0] ?? '') : `${w.slice(0, -1).join(', ')} and ${w[w.length - 1]}`;
}

/** Whether these uses are more than one thing, for the verb and pronoun that follow describeUses(). */
export function manyUses(uses: readonly EngineUse[]): boolean {
  return uses.length > 1 || uses.some((u) => u.plural === true);
}

/** 'planner:tiny-chat' -> 'tiny-chat', 'web-llm:Qwen2.5-1.5B-Instruct-q4f16_1-MLC' -> 'Qwen2.5-1.5B-Instruct-q4f16_1-MLC'. */
function modelName(engineId: string): string {
  return engineId.replace(/^[\w-]+:/, '');
}

/**
 * The loaded engines for people, plain words first and the engine ids second (they are what run records and
 * error messages name): 'tiny-chat does every step: plans, runs tools, checks and answers (planner:tiny-chat,
 * all modules)', or 'tiny-chat plans; Qwen… runs tools, checks and answers (planner:tiny-chat + web-llm:Qwen…)'.
 */
export function enginesLabel(plannerId: string, sharedId: string | null): string {
  const planner = modelName(plannerId);
  if (sharedId === null || sharedId === plannerId) return `${planner} does every step: plans, runs tools, checks and answers (${plannerId}, all modules)`;
  return `${planner} plans; ${modelName(sharedId)} runs tools, checks and answers (${plannerId} + ${sharedId})`;
}

/** The engines line's adapter part: the name the user gave it, its id only when it has none. */
export function adapterLabel(id: string, name?: string | null): string {
  return name && name !== id ? `adapter “${name}”` : `adapter ${id}`;
}

/** adapterLabel for a stored adapter, its name read from this browser's storage (the id when it is gone). */
export async function storedAdapterLabel(id: string, dbName?: string): Promise<string> {
  const { openAgentDb } = await import('../../store/db');
  const rec = await (await openAgentDb(dbName)).get('adapters', id).catch(() => undefined);
  return adapterLabel(id, rec?.name);
}
