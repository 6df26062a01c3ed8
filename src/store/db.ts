import { AgentFlowError, type ErrorCategory } from '../errors';
import { openDB, type IDBPDatabase } from 'idb';
import { DB_NAME, DB_VERSION, MIGRATIONS, type AgentFlowDB } from './schema';

export class StorageError extends AgentFlowError {
  override readonly category: ErrorCategory = 'storage';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StorageError';
  }
}

/**
 * What another tab or the browser did to a database, for the user. `blocked`: this tab waits to upgrade it
 * until another tab lets go of an older version. `blocking`: another tab (a newer AgentFlow) wants to upgrade
 * it, so this tab has closed it and must be reloaded. `terminated`: the browser closed it (storage cleared,
 * disk error). `resolved`: a blocked open went through after all.
 */
export interface StorageNotice {
  dbName: string;
  kind: 'blocked' | 'blocking' | 'terminated' | 'resolved';
  message: string;
}

export const STORAGE_MESSAGES = {
  blocked: 'Another AgentFlow tab holds an older version of this browser’s storage: close or reload that tab so this one can update it. Until then this tab cannot load or save anything.',
  blocking: 'AgentFlow was updated in another tab: reload this tab. Until then nothing here can be loaded or saved.',
  terminated: 'The browser closed AgentFlow’s storage (it was cleared, or the disk failed): reload the page.',
} as const;

const opened = new Map<string, Promise<IDBPDatabase<AgentFlowDB>>>();
/** Databases this tab gave up for a newer tab's upgrade: opening them again would only block that tab. */
const retired = new Map<string, StorageError>();
const listeners = new Set<(n: StorageNotice) => void>();
const current = new Map<string, StorageNotice>();

/** Calls `listener` with every storage notice from now on; returns the unsubscribe function. */
export function onStorageNotice(listener: (n: StorageNotice) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The notice still in force for a database (a view that mounts late shows it too), or null. */
export function storageNotice(name = DB_NAME): StorageNotice | null {
  return current.get(name) ?? null;
}

function notify(n: StorageNotice): void {
  if (n.kind === 'resolved') current.delete(n.dbName);
  else current.set(n.dbName, n);
  for (const l of [...listeners]) {
    try {
      l(n);
    } catch (e) {
      console.error('agentflow: a storage notice listener failed', e);
    }
  }
}

/**
 * Opens (and migrates) the database; rejects (never throws) with a StorageError saying what went wrong.
 * `name` is for tests that want an isolated database.
 */
export function openAgentDb(name = DB_NAME): Promise<IDBPDatabase<AgentFlowDB>> {
  const gone = retired.get(name);
  if (gone) return Promise.reject(gone);
  let p = opened.get(name);
  if (!p) {
    try {
      p = openDB<AgentFlowDB>(name, DB_VERSION, {
        upgrade(db, oldVersion, _newVersion, tx) {
          for (let v = oldVersion; v < DB_VERSION; v++) MIGRATIONS[v](db, tx);
        },
        blocked() {
          notify({ dbName: name, kind: 'blocked', message: STORAGE_MESSAGES.blocked });
        },
        blocking(_current, _wanted, event) {
          // Holding on would leave the other tab waiting forever; this tab's copy of the code is the old one.
          (event.target as IDBDatabase).close();
          retired.set(name, new StorageError(STORAGE_MESSAGES.blocking));
          opened.delete(name);
          notify({ dbName: name, kind: 'blocking', message: STORAGE_MESSAGES.blocking });
        },
        terminated() {
          opened.delete(name);
          notify({ dbName: name, kind: 'terminated', message: STORAGE_MESSAGES.terminated });
        },
      });
    } catch (e) {
      // indexedDB missing, or open() refusing synchronously (a SecurityError where site data is blocked).
      p = Promise.reject(e);
    }
    const ready = p.then(
      (db) => {
        // A blocked open that went through, or a fresh one after the browser closed the last: all is well again.
        if (current.has(name)) notify({ dbName: name, kind: 'resolved', message: '' });
        return db;
      },
      (e: unknown) => {
        if (opened.get(name) === ready) opened.delete(name);
        throw openError(name, e);
      },
    );
    opened.set(name, ready);
    return ready;
  }
  return p;
}

/**
 * The text to show when a view could not read its storage. A StorageError from openAgentDb already begins with
 * "Could not open this browser's storage (IndexedDB database …)": it is shown as it is, not prefixed again.
 */
export function storageOpenError(e: unknown): string {
  return e instanceof StorageError ? e.message : couldNotOpen(e);
}

function openError(name: string, e: unknown): StorageError {
  if (e instanceof StorageError) return e;
  return new StorageError(`${couldNotOpen(e, name)}. Private browsing, blocked site data or a full disk can cause this; nothing can be saved until it opens.`, { cause: e });
}

/**
 * The one wording of storage that would not open, for openAgentDb's StorageError (which names the database)
 * and for a view's error of any other kind. A DOMException's message may be empty: its name then says why.
 */
function couldNotOpen(e: unknown, name?: string): string {
  const why = (e as Error)?.message || (e as { name?: string })?.name || String(e);
  return `Could not open this browser's storage${name === undefined ? '' : ` (IndexedDB database '${name}')`}: ${why}`;
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
