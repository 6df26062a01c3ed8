import { openDB, type IDBPDatabase } from 'idb';
import { DB_NAME, DB_VERSION, MIGRATIONS, type AgentFlowDB } from './schema';

export class StorageError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StorageError';
  }
}

const opened = new Map<string, Promise<IDBPDatabase<AgentFlowDB>>>();

/** Opens (and migrates) the database. `name` is for tests that want an isolated database. */
export function openAgentDb(name = DB_NAME): Promise<IDBPDatabase<AgentFlowDB>> {
  let p = opened.get(name);
  if (!p) {
    p = openDB<AgentFlowDB>(name, DB_VERSION, {
      upgrade(db, oldVersion, _newVersion, tx) {
        for (let v = oldVersion; v < DB_VERSION; v++) MIGRATIONS[v](db, tx);
      },
      blocked() {
        console.warn('agentflow: database upgrade blocked by another open tab');
      },
      terminated() {
        opened.delete(name);
      },
    });
    p.catch(() => opened.delete(name));
    opened.set(name, p);
  }
  return p;
}

/** Turns a QuotaExceededError into a message that says what to do. */
export function describeStorageError(e: unknown, what: string): StorageError {
  const name = (e as { name?: string })?.name;
  if (name === 'QuotaExceededError') {
    return new StorageError(
      `Browser storage is full while saving ${what}. Delete cached models or old conversations (Models and Chat panels) and retry; nothing already saved was lost.`,
      { cause: e },
    );
  }
  return new StorageError(`Could not save ${what}: ${String((e as Error)?.message ?? e)}`, { cause: e });
}
