// The Experiments tab's runs: the stored list, the run whose results are open (A) and the one compared with
// it (B), and the run in progress (one at a time; Stop, or the app's engine swap, interrupts it with its
// finished items kept). Everything here reads or writes IndexedDB or runs the agent; the tab renders it.
import type { ReactiveControllerHost } from 'lit';
import type { ImportedBenchmark } from '../../agent/benchmark-import';
import type { AgentEngines } from '../../agent/loop';
import { toolsFromRegistry } from '../../agent/registry-tools';
import type { PlannerClient } from '../../planner/planner-client';
import { getSteps } from '../../store/conversations';
import { openAgentDb } from '../../store/db';
import type { ExperimentItemRecord, ExperimentRecord, StepRecord } from '../../store/records';
import type { ToolRegistry } from '../../tools/registry';
import type { EngineUse } from '../engines/engine-use';
import { InFlight } from '../in-flight';
import { runExperiment, type ExperimentProgress } from './experiment-runner';
import { deleteExperiment, exportExperiment, getExperimentItems, importExperiment, listExperiments, markStaleExperiments, renameExperiment } from './experiment-store';

export interface ExperimentRunsHost extends ReactiveControllerHost {
  readonly dbName: string | undefined;
  readonly engines: AgentEngines | undefined;
  readonly registry: ToolRegistry | undefined;
}

export interface RunProgress {
  done: number;
  total: number;
  at: ExperimentProgress | null;
}

export class ExperimentRuns {
  runs: ExperimentRecord[] = [];
  /** Run A: its results are open. */
  selected: string | null = null;
  items: ExperimentItemRecord[] = [];
  /** Run B: compared with A. */
  compareId: string | null = null;
  compareItems: ExperimentItemRecord[] = [];
  progress: RunProgress | null = null;
  /** The tab's error line. */
  error: string | null = null;
  private abort: AbortController | null = null;
  /** The run in progress, so a stop can wait for its end. */
  private readonly running = new InFlight();

  constructor(
    private readonly host: ExperimentRunsHost,
    /** Another run's results are opened (or none): the tab closes the trajectory it showed. */
    private readonly onSelect: () => void,
  ) {}

  private changed(): void {
    this.host.requestUpdate();
  }

  setError(error: string | null): void {
    this.error = error;
    this.changed();
  }

  /** A run is in progress (its Stop button shows). */
  get busy(): boolean {
    return this.abort !== null;
  }

  /** A run is in progress and not yet settled (its stored record must not be deleted). */
  get inFlight(): boolean {
    return this.running.current !== null;
  }

  stop(): void {
    this.abort?.abort();
  }

  /** Runs a reload cut off are marked interrupted, then the list is read. */
  async start(): Promise<void> {
    await markStaleExperiments(new Set(), this.host.dbName);
    await this.refresh();
  }

  async refresh(): Promise<void> {
    const db = this.host.dbName;
    this.runs = await listExperiments(db);
    this.changed();
    if (this.selected) this.items = await getExperimentItems(this.selected, db);
    if (this.compareId) this.compareItems = await getExperimentItems(this.compareId, db);
    this.changed();
  }

  /**
   * The run in progress on the page's engines, for the app to stop before it replaces them. Stopping is the
   * Stop button: the items finished so far stay stored and the run is marked interrupted.
   */
  engineUse(): EngineUse | null {
    const c = this.abort;
    const running = this.running.current;
    if (!c || !running) return null;
    const p = this.progress;
    return {
      what: `an experiment run${p ? ` (item ${Math.min(p.done + 1, p.total)} of ${p.total})` : ''}`,
      kept: 'its finished items are kept and it is marked interrupted',
      stop: async () => {
        c.abort();
        await running;
      },
    };
  }

  /** Runs the items `indices` of `b` (one run at a time: a second call waits on the first). */
  run(b: ImportedBenchmark, benchmarkId: string | null, indices: () => number[], maxTurns: number): Promise<void> {
    const current = this.running.current;
    if (current) return current;
    // The list is read again after the run has settled, not as part of it: the Run button is back the moment
    // the run ends, and a click meanwhile must start a run, not be answered by this one's last refresh.
    return this.running.track(this.runSubset(b, benchmarkId, indices, maxTurns)).then(() => this.refresh());
  }

  private async runSubset(b: ImportedBenchmark, benchmarkId: string | null, pick: () => number[], maxTurns: number): Promise<void> {
    const { engines, registry, dbName } = this.host;
    this.setError(null);
    if (!engines) {
      this.setError('No engines: load models (or choose the scripted demo) in the Models & GPU tab first.');
      return;
    }
    if (!registry) {
      this.setError('No tools are set up.');
      return;
    }
    let indices: number[];
    try {
      indices = pick();
    } catch (e) {
      this.setError((e as Error).message);
      return;
    }
    this.abort = new AbortController();
    this.progress = { done: 0, total: indices.length, at: null };
    this.changed();
    let listed = false;
    try {
      const { experiment } = await runExperiment({
        benchmark: b,
        ...(benchmarkId ? { benchmarkId } : {}),
        indices,
        maxTurns,
        engines,
        adapter: await activeAdapter(engines, dbName),
        tools: toolsFromRegistry(registry),
        signal: this.abort.signal,
        dbName,
        onItem: (_item, done, total) => {
          this.progress = { done, total, at: this.progress?.at ?? null };
          this.changed();
          void this.refresh();
        },
        onProgress: (at) => {
          this.progress = { done: at.item - 1, total: at.total, at };
          this.changed();
          // The run's record is stored before its first item starts: list it now, as running.
          if (!listed) {
            listed = true;
            void this.refresh();
          }
        },
      });
      this.selected = experiment.id;
    } catch (e) {
      this.error = (e as Error).message;
    } finally {
      this.abort = null;
      this.progress = null;
      this.changed();
    }
  }

  async select(id: string | null): Promise<void> {
    this.selected = id;
    this.onSelect();
    this.changed();
    // A run compared with itself shows nothing: opening the compared run's results ends the comparison.
    if (id !== null && id === this.compareId) await this.compareWith(null);
    this.items = id ? await getExperimentItems(id, this.host.dbName) : [];
    this.changed();
  }

  async compareWith(id: string | null): Promise<void> {
    this.compareId = id;
    this.changed();
    this.compareItems = id ? await getExperimentItems(id, this.host.dbName) : [];
    this.changed();
  }

  /**
   * Imports a run from files: `cli eval`'s experiment.json, its results.jsonl (with summary.json beside it when
   * given), or a run this tab exported. The run is stored under a new id and opened.
   */
  async importRunFiles(files: Array<{ name: string; text: string }>): Promise<ExperimentRecord | null> {
    const summary = files.find((f) => /(^|[\/])summary\.json$/i.test(f.name));
    const main = files.find((f) => f !== summary);
    this.setError('');
    if (!main) {
      this.setError('Import a run: choose results.jsonl (with its summary.json) or experiment.json.');
      return null;
    }
    try {
      const rec = await importExperiment(main.text, main.name, summary?.text, this.host.dbName);
      await this.refresh();
      await this.select(rec.id);
      return rec;
    } catch (e) {
      this.setError(`Could not import the run from ${main.name}: ${(e as Error).message}`);
      return null;
    }
  }

  /** Renames a run; a refused name throws with the reason. */
  rename(id: string, name: string): Promise<void> {
    return renameExperiment(id, name, this.host.dbName).then(() => undefined);
  }

  /** The stored steps of an item's conversation, for its trajectory. */
  steps(conversationId: string): Promise<StepRecord[]> {
    return getSteps(conversationId, this.host.dbName);
  }

  exportRun(id: string): Promise<string> {
    return exportExperiment(id, this.host.dbName);
  }

  async deleteRun(id: string): Promise<void> {
    await deleteExperiment(id, this.host.dbName);
    if (this.selected === id) await this.select(null);
    if (this.compareId === id) await this.compareWith(null);
    await this.refresh();
  }
}

/** The planner's active LoRA adapter and its stored name, when the planner is this page's runtime. */
async function activeAdapter(engines: AgentEngines, dbName?: string): Promise<{ id: string; name: string } | null> {
  const client = (engines.planner as { client?: PlannerClient }).client;
  if (!client) return null;
  try {
    const id = (await client.info()).activeAdapter;
    if (!id) return null;
    const rec = await (await openAgentDb(dbName)).get('adapters', id);
    return { id, name: rec?.name ?? id };
  } catch {
    // The planner went away: the run fails on its first call and says so.
    return null;
  }
}
