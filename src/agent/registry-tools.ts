// The agent's view of the tool registry: the tools available now, each run through the registry (which
// checks the user's switches and network consent at call time, validates and time-limits the call).
import type { ToolRegistry } from '../tools/registry';
import type { Tool } from '../tools/tool';

/** `note`, when given, hears what a running tool says it is doing (ToolContext.note), for a live view. */
export function toolsFromRegistry(registry: Pick<ToolRegistry, 'cards' | 'run'>, note?: (text: string | null) => void): Tool[] {
  return registry.cards().map((card) => ({
    card,
    run: (args, ctx) => registry.run(card.name, args, note ? { ...ctx, note } : ctx),
  }));
}
