// Which stored adapter the planner wears: the choice kept in settings (the app re-applies it when a planner
// loads), the planner an adapter would go on (its id and shapes), and whether an adapter fits it.
import type { Qwen2Config } from '../../io/qwen2-config';
import type { PlannerInfo } from '../../planner/planner-protocol';
import type { AdapterRecord } from '../../store/records';
import { getSetting, putSetting } from '../../store/settings';
import { TOY_BASE_MODEL } from '../../trainer/run/toy-run';
import { adapterMisfit } from './adapter-store';

export const ACTIVE_ADAPTER_KEY = 'activeAdapter';

/** The planner adapters would go on: its id and shapes; null when none of this page's planners is loaded. */
export interface PlannerBase {
  id: string;
  config: Qwen2Config;
}

/** The planner behind the page's trainer (its worker's client answers info()); null for none, or one that cannot tell. */
export async function plannerBaseOf(trainer: unknown): Promise<PlannerBase | null> {
  const t = trainer as { info?: () => Promise<Partial<PlannerInfo>> } | undefined;
  const info = await t?.info?.().catch(() => null);
  return info?.config && info.id ? { id: info.id, config: info.config } : null;
}

/** The active adapter's id as kept in settings; null for none. */
export async function readActiveAdapter(dbName?: string): Promise<string | null> {
  return (await getSetting<string | null>(ACTIVE_ADAPTER_KEY, dbName)) ?? null;
}

export function saveActiveAdapter(id: string | null, dbName?: string): Promise<void> {
  return putSetting(ACTIVE_ADAPTER_KEY, id, dbName).then(() => undefined);
}

/** Why `a` cannot be activated on `planner`, or null when it can (with no planner loaded, it is kept for the next). */
export function activateRefusal(a: AdapterRecord, planner: PlannerBase | null): string | null {
  if (a.baseModel === TOY_BASE_MODEL) return 'made for the toy task’s tiny planner: it trains and charts, but no chat model can use it';
  if (!planner) return null;
  const misfit = adapterMisfit(a, planner.config);
  return misfit ? `made for another base model than ${planner.id}: ${misfit}` : null;
}
