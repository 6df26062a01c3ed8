// The set of tools the agent may call. The UI turns tools on and off; a tool whose card says it uses the
// network stays off until the user explicitly allows it (allowNetwork), because it sends the agent's data
// off the device. The executor calls tools only through `run`, which checks that the tool is available,
// validates the arguments against the card, enforces the time limit and turns any throw into a ToolResult.

import { AgentFlowError, type ErrorCategory } from '../errors';
import type { Tool, ToolCard, ToolContext, ToolResult } from './tool';
import { startToolClock, type ToolClock } from './tool-clock';
import { checkCard, validateArgs, type ValidationResult } from './validate';

export interface ToolStatus {
  name: string;
  card: ToolCard;
  /** The user's on/off switch (default on). */
  enabled: boolean;
  /** The card says the tool sends data off the device; the UI marks these. */
  usesNetwork: boolean;
  /** The user allowed this network tool (always true for tools that do not use the network). */
  networkAllowed: boolean;
  /** enabled and (not a network tool or allowed): the agent may call it. */
  available: boolean;
}

export interface ToolSwitches {
  enabled: boolean;
  networkAllowed: boolean;
}

export interface RegisterOptions {
  /** Start switched on (default true). A network tool still needs allowNetwork. */
  enabled?: boolean;
  /** Replace a tool already registered under the same name (the old one is disposed). */
  replace?: boolean;
}

export class ToolRegistryError extends AgentFlowError {
  override readonly category: ErrorCategory = 'tool';
  constructor(message: string) {
    super(message);
    this.name = 'ToolRegistryError';
  }
}

interface Entry {
  tool: Tool;
  enabled: boolean;
  networkAllowed: boolean;
}

export class ToolRegistry {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<() => void>();

  /** Adds a tool (built-in or supplied by an embedding page). Throws naming the card's problems. */
  register(tool: Tool, options: RegisterOptions = {}): void {
    if (!tool || typeof tool.run !== 'function') throw new ToolRegistryError('register: a tool needs a card and a run(args, ctx) function');
    const problems = checkCard(tool.card);
    if (problems.length) throw new ToolRegistryError(`tool card ${JSON.stringify(tool.card?.name)} is invalid: ${problems.join('; ')}`);
    const existing = this.entries.get(tool.card.name);
    if (existing && !options.replace) throw new ToolRegistryError(`a tool named '${tool.card.name}' is already registered (pass replace: true to swap it)`);
    if (existing && existing.tool !== tool) existing.tool.dispose?.();
    this.entries.set(tool.card.name, { tool, enabled: options.enabled ?? true, networkAllowed: false });
    this.emit();
  }

  /** Removes and disposes a tool; false if there was none. */
  unregister(name: string): boolean {
    const e = this.entries.get(name);
    if (!e) return false;
    this.entries.delete(name);
    e.tool.dispose?.();
    this.emit();
    return true;
  }

  get(name: string): Tool | undefined {
    return this.entries.get(name)?.tool;
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  setEnabled(name: string, enabled: boolean): void {
    this.entry(name).enabled = enabled;
    this.emit();
  }

  /** The user's consent for a network tool to send data off the device. */
  allowNetwork(name: string): void {
    const e = this.entry(name);
    if (!e.tool.card.usesNetwork) return;
    e.networkAllowed = true;
    this.emit();
  }

  revokeNetwork(name: string): void {
    const e = this.entry(name);
    e.networkAllowed = false;
    this.emit();
  }

  /** Names of the tools whose cards say they use the network. */
  networkTools(): string[] {
    return [...this.entries.values()].filter((e) => e.tool.card.usesNetwork).map((e) => e.tool.card.name);
  }

  /** Every registered tool with its switches, in registration order. */
  list(): ToolStatus[] {
    return [...this.entries.values()].map((e) => this.status(e));
  }

  /** Cards of the tools the agent may call now, for the planner's and executor's prompts. */
  cards(): ToolCard[] {
    return this.list()
      .filter((s) => s.available)
      .map((s) => s.card);
  }

  isAvailable(name: string): boolean {
    const e = this.entries.get(name);
    return !!e && this.status(e).available;
  }

  /** Validates arguments against the named tool's card without running it. */
  validate(name: string, args: unknown): ValidationResult {
    const e = this.entries.get(name);
    if (!e) return { ok: false, error: this.unknownToolMessage(name) };
    return validateArgs(e.tool.card, args);
  }

  /**
   * Runs a tool as the executor should: never throws. Unknown, disabled or not-allowed tools, bad
   * arguments, a timeout, an abort and a tool's own throw all come back as `{ ok: false, error }`.
   */
  async run(name: string, args: unknown, ctx: ToolContext): Promise<ToolResult> {
    const e = this.entries.get(name);
    if (!e) return fail(this.unknownToolMessage(name));
    const st = this.status(e);
    if (!st.enabled) return fail(`tool '${name}' is switched off in the tool settings`);
    if (!st.networkAllowed) return fail(`tool '${name}' uses the network and the user has not allowed it; choose another tool`);
    const v = validateArgs(e.tool.card, args);
    if (!v.ok) return fail(v.error);
    if (ctx.signal.aborted) return fail(`tool '${name}' was cancelled before it started`);

    // The tool gets its own signal that fires on the caller's abort or on the time limit, so a tool that
    // honours its signal stops work; the race below returns even if it does not.
    const ac = new AbortController();
    let clock: ToolClock | undefined;
    const stopped = new Promise<ToolResult>((resolve) => {
      const onAbort = () => {
        ac.abort(ctx.signal.reason);
        resolve(fail(`tool '${name}' was cancelled`));
      };
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      ac.signal.addEventListener('abort', () => ctx.signal.removeEventListener('abort', onAbort), { once: true });
      clock = startToolClock(ctx.timeoutMs, (kind, limitMs) => {
        ac.abort(new Error('timeout'));
        resolve(
          fail(
            kind === 'queue'
              ? `tool '${name}' waited longer than its queue limit of ${limitMs} ms for its turn behind other calls and was stopped`
              : `tool '${name}' took longer than its time limit of ${ctx.timeoutMs} ms and was stopped`,
          ),
        );
      });
    });
    // A queued tool's notices stop and restart this clock and the caller's alike. The caller's restarts
    // first, so at the same deadline its timeout fires first, as when both clocks start at the call.
    const queued = () => {
      ctx.queued?.();
      clock?.queued();
    };
    const started = () => {
      ctx.started?.();
      clock?.started();
    };
    const ran = (async (): Promise<ToolResult> => {
      try {
        const r = await e.tool.run(v.args, { signal: ac.signal, timeoutMs: ctx.timeoutMs, queued, started, ...(ctx.note ? { note: ctx.note } : {}) });
        if (!r || typeof r.ok !== 'boolean' || typeof r.output !== 'string') return fail(`tool '${name}' returned a malformed result`);
        return r;
      } catch (err) {
        return fail(`tool '${name}' failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    })();
    try {
      return await Promise.race([ran, stopped]);
    } finally {
      clock?.stop();
      if (!ac.signal.aborted) ac.abort(new Error('finished'));
    }
  }

  /** The user's switches, to store in settings (consent to network tools must survive a reload). */
  exportSwitches(): Record<string, ToolSwitches> {
    const out: Record<string, ToolSwitches> = {};
    for (const [name, e] of this.entries) out[name] = { enabled: e.enabled, networkAllowed: e.tool.card.usesNetwork && e.networkAllowed };
    return out;
  }

  /** Restores switches saved by exportSwitches; names not registered (any more) are ignored. */
  applySwitches(saved: Record<string, Partial<ToolSwitches>>): void {
    for (const [name, sw] of Object.entries(saved ?? {})) {
      const e = this.entries.get(name);
      if (!e) continue;
      if (typeof sw.enabled === 'boolean') e.enabled = sw.enabled;
      if (typeof sw.networkAllowed === 'boolean') e.networkAllowed = e.tool.card.usesNetwork && sw.networkAllowed;
    }
    this.emit();
  }

  /** Called after every change of the registry (for the UI). Returns an unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Disposes every tool and empties the registry. */
  dispose(): void {
    for (const e of this.entries.values()) e.tool.dispose?.();
    this.entries.clear();
    this.emit();
  }

  private status(e: Entry): ToolStatus {
    const usesNetwork = e.tool.card.usesNetwork;
    const networkAllowed = !usesNetwork || e.networkAllowed;
    return { name: e.tool.card.name, card: e.tool.card, enabled: e.enabled, usesNetwork, networkAllowed, available: e.enabled && networkAllowed };
  }

  private entry(name: string): Entry {
    const e = this.entries.get(name);
    if (!e) throw new ToolRegistryError(this.unknownToolMessage(name));
    return e;
  }

  private unknownToolMessage(name: string): string {
    const known = this.list().filter((s) => s.available).map((s) => s.name);
    return `no tool named '${name}'; available tools: ${known.length ? known.join(', ') : '(none)'}`;
  }

  private emit(): void {
    for (const l of this.listeners) l();
  }
}

function fail(error: string): ToolResult {
  return { ok: false, output: '', error };
}
