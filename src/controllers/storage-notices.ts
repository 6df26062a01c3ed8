// What another tab or the browser did to a view's database (store/db.ts: held up by an older tab, closed
// under it), as the notice to show until it is resolved; <agentflow-chat> and the app shell follow it alike.
// Also the one text a view shows when its storage would not open.
import type { ReactiveControllerHost } from 'lit';
import { onStorageNotice, storageNotice, type StorageNotice } from '../store/db';
import { DB_NAME } from '../store/schema';

export { storageOpenError, type StorageNotice } from '../store/db';

export class StorageNotices {
  /** The notice standing for the host's database; null while nothing is wrong. */
  notice: StorageNotice | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly host: ReactiveControllerHost,
    private readonly dbName: () => string | undefined,
  ) {}

  /** Follows the host's database from now on, starting from the notice standing now (when connected). */
  watch(): void {
    this.unsubscribe?.();
    this.unsubscribe = onStorageNotice((n) => {
      if (n.dbName === (this.dbName() ?? DB_NAME)) this.set(n.kind === 'resolved' ? null : n);
    });
    this.set(storageNotice(this.dbName() ?? DB_NAME));
  }

  /** Stops following (when disconnected). */
  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  private set(n: StorageNotice | null): void {
    this.notice = n;
    this.host.requestUpdate();
  }
}
