// How much the chosen models would download, per engine and together. Without `network` only this browser's
// caches are read (what is already here, and web-llm shard sizes from a cached tensor-cache.json); with it the
// servers are asked (HEAD requests, the small JSON indexes), which the user asks for with "Check download size".
import type { ReactiveControllerHost } from 'lit';
import type { ModelChoice } from './model-choice';
import type { SizeReport } from './model-files';

export interface DownloadSizesReport {
  planner: SizeReport | null;
  shared: SizeReport | null;
  both: SizeReport | null;
  /** Sizes came from the servers (Check download size), not only from the cache. */
  checked: boolean;
  error?: string;
}

export class DownloadSizes {
  report: DownloadSizesReport | null = null;
  /** Only the newest estimate is shown: the form may change while an older one is still reading. */
  private run = 0;

  constructor(private readonly host: ReactiveControllerHost) {}

  async estimate(c: ModelChoice, network: boolean): Promise<void> {
    const run = ++this.run;
    try {
      const [{ plannerFiles, webllmFiles, combine }, { plannerModelUrl, sharedModelRecord }, { webllmModelUrl }] = await Promise.all([
        import('./model-files'),
        import('./model-loader'),
        import('../../io/webllm-cache'),
      ]);
      const record = c.sharedModel ? await sharedModelRecord(c.sharedModel) : null;
      const shared = record ? await webllmFiles(record, { network }) : null;
      let planner: SizeReport | null;
      if (c.plannerFromShared) planner = record ? await plannerFiles(webllmModelUrl(record.model), { network, mlc: true }) : null;
      else planner = await plannerFiles(plannerModelUrl(c.plannerModel), { network });
      const both = planner && shared ? combine(planner, shared) : (planner ?? shared);
      if (run === this.run) this.set({ planner, shared, both, checked: network });
    } catch (e) {
      if (run === this.run) this.set({ planner: null, shared: null, both: null, checked: network, error: (e as Error).message });
    }
  }

  private set(r: DownloadSizesReport): void {
    this.report = r;
    this.host.requestUpdate();
  }
}
