// What training keeps in this browser, as Models & GPU's Training storage lists it, and freeing what finished
// runs no longer need (store/training-storage.ts says what is kept). Read again whenever the view asks:
// training in another tab of the app changes it meanwhile.
import type { ReactiveControllerHost } from 'lit';
import { freeTrainingStorage, trainingStorageUsage, type TrainingStorageUsage } from '../../store/training-storage';
import { formatBytes } from '../progress-tracker';

export type { TrainingStorageUsage };

export class StoredTraining {
  /** Null until first read. */
  usage: TrainingStorageUsage | null = null;
  /** What the last read or freeing said (bytes freed, or why it failed); empty until then. */
  message = '';
  /** Freeing is under way. */
  busy = false;

  constructor(
    private readonly host: ReactiveControllerHost,
    private readonly dbName: () => string | undefined,
  ) {}

  async refresh(): Promise<void> {
    try {
      this.usage = await trainingStorageUsage(this.dbName());
    } catch (e) {
      this.message = `Could not read training storage: ${(e as Error).message}`;
    }
    this.host.requestUpdate();
  }

  async free(): Promise<void> {
    this.busy = true;
    this.host.requestUpdate();
    try {
      const freed = await freeTrainingStorage(this.dbName());
      this.message = `Freed ${formatBytes(freed)}.`;
    } catch (e) {
      this.message = `Could not free training storage: ${(e as Error).message}`;
    } finally {
      this.busy = false;
      await this.refresh();
    }
  }
}
