// One `cli train` at a time per output directory. Two processes on one run would both append to
// rollouts.jsonl and race on run.json's temporary file, so the second is refused while the first lives.
// The lock is a file created exclusively ('wx': the create fails if it exists), holding who took it; a lock
// whose process is gone (SIGKILL, power loss) is stale and taken over with a note.
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

export const LOCK_FILE = 'train.lock';

interface LockOwner {
  pid: number;
  host: string;
  startedAt: string;
}

export class LockHeldError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LockHeldError';
  }
}

export interface RunLock {
  readonly file: string;
  /** Why a stale lock was taken over, when it was. */
  readonly note?: string;
  release(): void;
}

/** Whether process `pid` on this host still runs (EPERM: it does, as another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === 'EPERM';
  }
}

function readOwner(file: string): { text: string; owner: LockOwner | null } | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as { code?: string }).code === 'ENOENT') return null;
    throw e;
  }
  try {
    const o = JSON.parse(text) as Partial<LockOwner>;
    if (Number.isInteger(o.pid) && typeof o.host === 'string') return { text, owner: { pid: o.pid!, host: o.host, startedAt: String(o.startedAt ?? '?') } };
  } catch {
    // A lock torn by a crash while it was written names no process: it is stale.
  }
  return { text, owner: null };
}

function tryCreate(file: string, owner: LockOwner): boolean {
  let fd: number;
  try {
    fd = openSync(file, 'wx');
  } catch (e) {
    if ((e as { code?: string }).code === 'EEXIST') return false;
    throw e;
  }
  try {
    writeSync(fd, `${JSON.stringify(owner)}\n`);
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * Takes `dir`'s lock or throws LockHeldError naming the process that holds it. A lock from another host
 * cannot be checked and counts as held.
 */
export function acquireRunLock(dir: string, alive: (pid: number) => boolean = processAlive): RunLock {
  const file = join(dir, LOCK_FILE);
  const me: LockOwner = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString() };
  let note: string | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    if (tryCreate(file, me)) return lockHandle(file, note);
    const found = readOwner(file);
    if (!found) continue; // released between our create and our read
    const { owner } = found;
    if (owner && (owner.host !== me.host || alive(owner.pid))) {
      throw new LockHeldError(
        `${dir} is in use by another 'cli train' (pid ${owner.pid} on ${owner.host}, started ${owner.startedAt}); wait for it to end, ` +
          `or delete ${file} if that process is not training`,
      );
    }
    // Re-read just before removing: another process taking over the same stale lock may have replaced it.
    if (readOwner(file)?.text !== found.text) continue;
    try {
      unlinkSync(file);
    } catch (e) {
      if ((e as { code?: string }).code !== 'ENOENT') throw e;
    }
    note = owner ? `took over ${file} from pid ${owner.pid} (started ${owner.startedAt}), which is no longer running` : `took over ${file}, which named no process (torn)`;
  }
  throw new LockHeldError(`${dir}: could not take ${file} (another process keeps taking it)`);
}

function lockHandle(file: string, note: string | undefined): RunLock {
  let held = true;
  return {
    file,
    ...(note !== undefined ? { note } : {}),
    release() {
      if (!held) return;
      held = false;
      // Never another process's lock: one that found ours stale (we were stopped for long) now holds its own.
      if (readOwner(file)?.owner?.pid !== process.pid) return;
      try {
        unlinkSync(file);
      } catch {
        // Already gone: nothing to release.
      }
    },
  };
}
