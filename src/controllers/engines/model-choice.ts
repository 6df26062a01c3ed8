// The models the user last loaded, kept in settings so a reload brings them back from the cache instead of
// dropping the page to "no model" (and the form to its default ids).
import { getSetting, putSetting } from '../../store/settings';

export const MODEL_CHOICE_KEY = 'models';

export interface ModelChoice {
  plannerModel: string;
  plannerFromShared: boolean;
  /** web-llm model id; '' runs every module on the planner. */
  sharedModel: string;
  adapterId: string | null;
  /** Load these when the page starts (false after the user switched to the scripted demo). */
  restore: boolean;
}

/** The stored choice, or null when none was stored or it is not one (a foreign or older value). */
export async function loadModelChoice(dbName?: string): Promise<ModelChoice | null> {
  const v = (await getSetting<Partial<ModelChoice>>(MODEL_CHOICE_KEY, dbName).catch(() => undefined)) ?? null;
  if (!v || typeof v.plannerModel !== 'string' || typeof v.sharedModel !== 'string') return null;
  return {
    plannerModel: v.plannerModel,
    plannerFromShared: v.plannerFromShared === true,
    sharedModel: v.sharedModel,
    adapterId: typeof v.adapterId === 'string' && v.adapterId ? v.adapterId : null,
    restore: v.restore !== false,
  };
}

export function saveModelChoice(choice: ModelChoice, dbName?: string): Promise<void> {
  return putSetting(MODEL_CHOICE_KEY, choice, dbName);
}
