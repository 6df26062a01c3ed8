import { describeStorageError, openAgentDb } from './db';

export async function getSetting<T>(key: string, dbName?: string): Promise<T | undefined> {
  const db = await openAgentDb(dbName);
  return (await db.get('settings', key))?.value as T | undefined;
}

export async function putSetting(key: string, value: unknown, dbName?: string): Promise<void> {
  const db = await openAgentDb(dbName);
  try {
    await db.put('settings', { key, value, updatedAt: Date.now() });
  } catch (e) {
    throw describeStorageError(e, `setting '${key}'`);
  }
}
