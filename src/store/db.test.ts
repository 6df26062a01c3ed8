// What other tabs and the browser do to the database, on fake-indexeddb: a newer tab's upgrade makes this
// tab close its connection and say "reload" (and every later open says so too), an upgrade held up by an
// older tab says which tab to close until it goes through, a connection the browser closes is reported and
// reopened, and an open that fails rejects with a StorageError naming the database.
import 'fake-indexeddb/auto';
import { forceCloseDatabase } from 'fake-indexeddb';
import { openDB, unwrap } from 'idb';
import { afterEach, describe, expect, it, vi } from 'vitest';

// One more (no-op) migration than the real schema, so that a tab at the real version can be the older one.
vi.mock('./schema', async (importOriginal) => {
  const real = await importOriginal<typeof import('./schema')>();
  return { ...real, MIGRATIONS: [...real.MIGRATIONS, () => undefined], DB_VERSION: real.MIGRATIONS.length + 1 };
});

const { STORAGE_MESSAGES, StorageError, onStorageNotice, openAgentDb, storageNotice, storageOpenError } = await import('./db');
const { DB_VERSION } = await import('./schema');
import type { StorageNotice } from './db';

let n = 0;
const freshDb = () => `db-test-${++n}-${Math.random()}`;

function collect(): { notices: StorageNotice[]; stop: () => void } {
  const notices: StorageNotice[] = [];
  return { notices, stop: onStorageNotice((x) => notices.push(x)) };
}
let stop: (() => void) | undefined;
afterEach(() => stop?.());

describe('openAgentDb and other tabs', () => {
  it('closes for a newer tab that upgrades, tells the user to reload, and refuses to reopen', async () => {
    const name = freshDb();
    const c = collect();
    stop = c.stop;
    await (await openAgentDb(name)).put('settings', { key: 'k', value: 1, updatedAt: 0 });
    // The newer tab's upgrade goes through only because this tab let go.
    const newer = await openDB(name, DB_VERSION + 1);
    expect(newer.version).toBe(DB_VERSION + 1);
    expect(c.notices).toEqual([{ dbName: name, kind: 'blocking', message: STORAGE_MESSAGES.blocking }]);
    expect(storageNotice(name)?.kind).toBe('blocking');
    await expect(openAgentDb(name)).rejects.toThrow(new StorageError(STORAGE_MESSAGES.blocking));
    newer.close();
  });

  it('says which tab to close while an older one holds the database, and goes on when it lets go', async () => {
    const name = freshDb();
    const older = await openDB(name, 1); // an old tab: no handler, so it never lets go by itself
    const c = collect();
    stop = c.stop;
    const opening = openAgentDb(name);
    await vi.waitFor(() => expect(c.notices.map((x) => x.kind)).toEqual(['blocked']));
    expect(c.notices[0].message).toBe(STORAGE_MESSAGES.blocked);
    expect(storageNotice(name)?.kind).toBe('blocked');
    older.close();
    expect((await opening).version).toBe(DB_VERSION);
    expect(c.notices.map((x) => x.kind)).toEqual(['blocked', 'resolved']);
    expect(storageNotice(name)).toBeNull();
  });

  it('reports a connection the browser closed, and opens a fresh one next time', async () => {
    const name = freshDb();
    const c = collect();
    stop = c.stop;
    const db = await openAgentDb(name);
    forceCloseDatabase(unwrap(db) as unknown as Parameters<typeof forceCloseDatabase>[0]);
    expect(c.notices).toEqual([{ dbName: name, kind: 'terminated', message: STORAGE_MESSAGES.terminated }]);
    const again = await openAgentDb(name);
    expect(again).not.toBe(db);
    await again.put('settings', { key: 'k', value: 2, updatedAt: 0 });
    expect(storageNotice(name)).toBeNull();
  });

  it('rejects with a StorageError naming the database when it cannot open, and retries next time', async () => {
    const name = freshDb();
    (await openDB(name, DB_VERSION + 5)).close(); // newer than this code: VersionError
    await expect(openAgentDb(name)).rejects.toThrow(StorageError);
    await expect(openAgentDb(name)).rejects.toThrow(new RegExp(`Could not open this browser's storage \\(IndexedDB database '${name}'\\): .*nothing can be saved until it opens`));
    const open = vi.spyOn(indexedDB, 'open').mockImplementation(() => {
      throw new DOMException('The operation is insecure.', 'SecurityError');
    });
    try {
      const other = freshDb();
      const p = openAgentDb(other); // must not throw synchronously
      await expect(p).rejects.toThrow(/\(IndexedDB database 'db-test-.*'\): The operation is insecure\./);
    } finally {
      open.mockRestore();
    }
  });
});

describe('storageOpenError', () => {
  it('shows a StorageError as it is (it already says the storage would not open) and prefixes any other error once', async () => {
    const name = freshDb();
    (await openDB(name, DB_VERSION + 5)).close();
    const e = await openAgentDb(name).catch((x: unknown) => x);
    expect(storageOpenError(e)).toBe((e as Error).message);
    expect(storageOpenError(e).match(/Could not open this browser's storage/g)).toHaveLength(1);
    expect(storageOpenError(new Error('disk on fire'))).toBe("Could not open this browser's storage: disk on fire");
    // Worded as openAgentDb words its own errors: a DOMException without a message is named.
    expect(storageOpenError(new DOMException('', 'SecurityError'))).toBe("Could not open this browser's storage: SecurityError");
  });
});
