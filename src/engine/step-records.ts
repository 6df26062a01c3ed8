// The runtime's recorded step lists (graph.ts): each forward shape is recorded once per adapter and reused
// by every later call, until the buffers it binds go (a plan or the KV cache replaced: clear()).
import type { ActivationPlan } from '../model/activations';
import type { AdapterSet, GpuAdapter } from '../model/adapters';
import type { Step } from '../model/graph';

const BASE = { id: '(base)' };

type Records = WeakMap<object, Map<string, Step[]>>;

export class StepRecords {
  // Per adapter object: a replaced adapter gets new buffers, hence new records.
  private records: Records = new WeakMap();
  private readonly planRecords = new WeakMap<ActivationPlan, Records>();

  constructor(private readonly adapters: AdapterSet) {}

  /**
   * The steps under `key` for the active adapter, made by `make` the first time. A one-off plan (training)
   * keeps its records on itself so they go away with it.
   */
  async get(key: string, make: (adapter: GpuAdapter | null) => Promise<Step[]>, oneOff?: ActivationPlan): Promise<Step[]> {
    const adapter = this.adapters.active;
    const owner = adapter ?? BASE;
    const store = oneOff?.keep ? this.oneOffRecords(oneOff) : this.records;
    let m = store.get(owner);
    if (!m) {
      m = new Map();
      store.set(owner, m);
    }
    let steps = m.get(key);
    if (!steps) {
      steps = await make(adapter);
      m.set(key, steps);
    }
    return steps;
  }

  /** Forgets every record of the shared plans (their buffers, or the KV cache's, are being replaced). */
  clear(): void {
    this.records = new WeakMap();
  }

  private oneOffRecords(plan: ActivationPlan): Records {
    let r = this.planRecords.get(plan);
    if (!r) {
      r = new WeakMap();
      this.planRecords.set(plan, r);
    }
    return r;
  }
}
