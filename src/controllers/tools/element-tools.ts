// The tools the agent is offered: the host's registry when it shares one (<agentflow-chat> in the app gets
// the app's), otherwise one of its own with the built-in tools (a lone <agentflow-chat>, and the app shell,
// whose registry its tabs share); the page's extra tools are added to either, and the switches come from
// storage, or from the `tools` attribute when it is set.
import type { ReactiveControllerHost } from 'lit';
import type { ChatEngine } from '../../engine/chat-engine';
import { registerBuiltinTools } from '../../tools/builtin';
import { ToolRegistry } from '../../tools/registry';
import type { Tool } from '../../tools/tool';
import { restoreToolSwitches } from './tool-settings';

/** What the tools are set up from; a host that leaves one out gets the default (the app shell sets none). */
export interface ToolsHost extends Pick<ReactiveControllerHost, 'requestUpdate'> {
  /** A registry shared with the host; unset: the controller keeps its own, with the built-in tools. */
  readonly registry?: ToolRegistry;
  readonly extraTools?: Tool[];
  /** Comma-separated names of the tools switched on; unset keeps the stored or default switches. */
  readonly tools?: string;
  readonly dbName?: string;
}

export class ElementTools {
  /** Each tool's switch, as the registry lists it; follows the registry's changes. */
  status: ReturnType<ToolRegistry['list']> = [];
  private own: ToolRegistry | null = null;
  private builtinsFor: ToolRegistry | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly host: ToolsHost,
    /** The shared engine the built-in tools that call a model use (loaded when one first runs). */
    private readonly sharedEngine: () => Promise<ChatEngine>,
  ) {}

  /** The registry in use: the host's, or the element's own with the built-in and extra tools. */
  get registry(): ToolRegistry {
    if (this.host.registry) return this.host.registry;
    this.own ??= new ToolRegistry();
    return this.own;
  }

  async setUp(): Promise<void> {
    const h = this.host;
    const reg = this.registry;
    for (const t of h.extraTools ?? []) if (!reg.has(t.card.name)) reg.register(t);
    if (reg === this.own && this.builtinsFor !== reg) {
      this.builtinsFor = reg;
      registerBuiltinTools(reg, { engine: this.sharedEngine });
    }
    await restoreToolSwitches(reg, h.dbName);
    if (h.tools !== undefined) {
      const on = new Set(h.tools.split(',').map((s) => s.trim()).filter(Boolean));
      for (const s of reg.list()) reg.setEnabled(s.name, on.has(s.name));
    }
    this.unsubscribe?.();
    this.unsubscribe = reg.subscribe(() => this.setStatus(reg.list()));
    this.setStatus(reg.list());
  }

  dispose(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  private setStatus(s: ElementTools['status']): void {
    this.status = s;
    this.host.requestUpdate();
  }
}
