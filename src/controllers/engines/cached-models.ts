// The models kept in this browser's caches, as the Models & GPU tab lists them, and deleting one.
import type { ReactiveControllerHost } from 'lit';
import { deleteCachedModel, listCachedModels, type CachedModel } from './model-cache';

export class CachedModels {
  /** Null until first read. */
  list: CachedModel[] | null = null;

  constructor(
    private readonly host: ReactiveControllerHost,
    /** Where a cache that cannot be read is reported (the panel's error line). */
    private readonly fail: (error: string) => void,
  ) {}

  async refresh(): Promise<void> {
    try {
      this.list = await listCachedModels();
    } catch (e) {
      this.list = [];
      this.fail(`Could not read the model cache: ${(e as Error).message}`);
    }
    this.host.requestUpdate();
  }

  async delete(m: CachedModel): Promise<void> {
    await deleteCachedModel(m.key);
    await this.refresh();
  }
}
