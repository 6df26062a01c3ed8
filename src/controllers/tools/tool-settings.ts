// Where the user's tool switches and the agent's decoding switch are kept (settings), and how they are read
// back: every chat, experiment and app shell reads the same saved choice.
import { getSetting, putSetting } from '../../store/settings';
import type { ToolRegistry, ToolSwitches } from '../../tools/registry';

export const TOOL_SWITCHES_KEY = 'toolSwitches';
export const CONSTRAIN_REPLIES_KEY = 'constrainReplies';

/** Whether the agent decodes module replies under their JSON Schemas: the saved choice, else on. */
export async function readConstrainReplies(dbName?: string): Promise<boolean> {
  const saved = await getSetting<unknown>(CONSTRAIN_REPLIES_KEY, dbName).catch(() => undefined);
  return typeof saved === 'boolean' ? saved : true;
}

export async function restoreToolSwitches(registry: ToolRegistry, dbName?: string): Promise<void> {
  const saved = await getSetting<Record<string, ToolSwitches>>(TOOL_SWITCHES_KEY, dbName).catch(() => undefined);
  if (saved) registry.applySwitches(saved);
}

/** Kept for the next page load; a failed write only loses the choice there, so it is not reported. */
export function saveToolSwitches(registry: ToolRegistry, dbName?: string): void {
  void putSetting(TOOL_SWITCHES_KEY, registry.exportSwitches(), dbName).catch(() => undefined);
}

export function saveConstrainReplies(on: boolean, dbName?: string): void {
  void putSetting(CONSTRAIN_REPLIES_KEY, on, dbName).catch(() => undefined);
}
