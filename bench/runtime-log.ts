// The runtime as the planner's GenerateBatcher sees it, with a log of every call the batcher makes: how long
// it ran, under which adapter, which module each of its sequences was for, and the decode steps it took.
// One runtime serves every module in a training run (the planner with the trained adapter, the frozen
// modules on the base weights), so runtime.decodeCounters alone mixes them; the batcher runs one call at a
// time and each call runs under one adapter, so counter deltas around a call belong to it alone.
import type { BatchingRuntime } from '../src/engine/generate-batcher';
import type { GenerateRequest, GenerateTokensOptions, Qwen2Runtime, TokenGeneration } from '../src/engine/runtime';

export interface RuntimeCall {
  /** The adapter active for the call (null: the base model). */
  adapter: string | null;
  /** The tag of each sequence (the module its prompt was tagged with; '?' for an untagged prompt). */
  tags: string[];
  ms: number;
  decodeSteps: number;
  /** Sequences' rows the decode steps computed (rows / steps: sequences a step served). */
  decodeRows: number;
  /**
   * New tokens after each sequence's first (which its prefill gives): the rows the decode needed. decodeRows
   * exceeds it by the rows recomputed after GPU draws that could not decide (engine/batch-decoder.ts), which the
   * flat rows of random weights sampled at temperature > 0 make common.
   */
  decodeTokens: number;
}

const now = () => performance.now();

export class LoggedRuntime implements BatchingRuntime {
  readonly calls: RuntimeCall[] = [];
  /** Decode steps and rows since creation, of calls under an adapter and of calls on the base weights. */
  readonly totals = { adapter: { steps: 0, rows: 0 }, base: { steps: 0, rows: 0 } };
  private readonly tagOf = new WeakMap<number[], string>();

  constructor(readonly runtime: Qwen2Runtime) {}

  get maxDecodeRows(): number {
    return this.runtime.maxDecodeRows;
  }

  get activeAdapterId(): string | null {
    return this.runtime.activeAdapterId;
  }

  setActiveAdapter(id: string | null): void {
    this.runtime.setActiveAdapter(id);
  }

  /**
   * Names what `prompt` is for. The batcher hands the runtime the very array it was given, so the tag
   * finds the call the prompt ends up in, alone or in a batch.
   */
  tag(prompt: number[], tag: string): void {
    this.tagOf.set(prompt, tag);
  }

  async generate(prompt: number[], o?: GenerateTokensOptions): Promise<TokenGeneration> {
    const [g] = await this.logged([prompt], async () => [await this.runtime.generate(prompt, o)]);
    return g;
  }

  generateBatch(requests: GenerateRequest[]): Promise<TokenGeneration[]> {
    return this.logged(
      requests.map((r) => r.prompt),
      () => this.runtime.generateBatch(requests),
    );
  }

  /** Takes the calls logged so far (the log starts empty again). */
  take(): RuntimeCall[] {
    return this.calls.splice(0);
  }

  private async logged(prompts: number[][], f: () => Promise<TokenGeneration[]>): Promise<TokenGeneration[]> {
    const adapter = this.runtime.activeAdapterId;
    const c0 = { ...this.runtime.decodeCounters };
    const t0 = now();
    let out: TokenGeneration[] | null = null;
    try {
      out = await f();
      return out;
    } finally {
      const c = this.runtime.decodeCounters;
      const call: RuntimeCall = {
        adapter,
        tags: prompts.map((p) => this.tagOf.get(p) ?? '?'),
        ms: now() - t0,
        decodeSteps: c.steps - c0.steps,
        decodeRows: c.rows - c0.rows,
        decodeTokens: (out ?? []).reduce((a, g) => a + Math.max(0, g.tokens.length - 1), 0),
      };
      this.calls.push(call);
      const t = this.totals[adapter === null ? 'base' : 'adapter'];
      t.steps += call.decodeSteps;
      t.rows += call.decodeRows;
    }
  }
}
