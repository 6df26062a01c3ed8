// GenerateBatcher against a fake runtime that records every call and finishes it only when the test says
// so. The fake's "model" gives each sequence tokens determined by its prompt, seed and the adapter active
// when the runtime call ran, so a result routed to the wrong caller, or run under the wrong adapter, shows.
import { describe, expect, it } from 'vitest';
import { GenerateBatcher, type BatchingRuntime } from './generate-batcher';
import type { GenerateRequest, GenerateTokensOptions, TokenGeneration } from './runtime';

/** A prompt holding this id makes the fake runtime reject (in a batch: after streaming one step). */
const POISON = 999;

/** The fake model's token j for a prompt, independent of how calls are batched. */
function tokenAt(prompt: number[], seed: number, adapter: string | null, j: number): number {
  const a = adapter === null ? 0 : adapter.charCodeAt(0);
  return (prompt.reduce((s, t) => s + t, 0) * 31 + seed * 7 + a * 3 + 13 * j) % 997;
}

/** What generate() gives when nothing stops it early. */
function expected(prompt: number[], o: GenerateTokensOptions, adapter: string | null): Pick<TokenGeneration, 'tokens' | 'logprobs' | 'finishReason'> {
  const tokens = Array.from({ length: o.maxNewTokens ?? 3 }, (_, j) => tokenAt(prompt, o.seed ?? 0, adapter, j));
  return { tokens, logprobs: tokens.map((t) => -t / 1000), finishReason: 'length' };
}

/** One sequence being decoded, with the runtime's per-token checks (stop ids, onToken's stop, abort). */
class Row {
  readonly tokens: number[] = [];
  finish: TokenGeneration['finishReason'] | null = null;
  constructor(readonly prompt: number[], readonly o: GenerateTokensOptions, readonly adapter: string | null) {
    if (o.signal?.aborted) this.finish = 'abort';
    else if ((o.maxNewTokens ?? 3) === 0) this.finish = 'length';
  }
  step(): void {
    if (this.finish) return;
    const id = tokenAt(this.prompt, this.o.seed ?? 0, this.adapter, this.tokens.length);
    this.tokens.push(id);
    const userStop = this.o.onToken?.(id, -id / 1000) === true;
    if (userStop || this.o.stopIds?.includes(id)) this.finish = 'stop';
    else if (this.o.signal?.aborted) this.finish = 'abort';
    else if (this.tokens.length >= (this.o.maxNewTokens ?? 3)) this.finish = 'length';
  }
  result(): TokenGeneration {
    return { tokens: this.tokens, logprobs: this.tokens.map((t) => -t / 1000), finishReason: this.finish!, prefillMs: 0, decodeMs: 0, reusedPrefixTokens: 0, redrawnTokens: 0 };
  }
}

interface Call {
  kind: 'generate' | 'batch';
  requests: GenerateRequest[];
  /** Active adapter when the call was made. */
  adapter: string | null;
  release: () => void;
  done: boolean;
}

class FakeRuntime implements BatchingRuntime {
  maxDecodeRows = 4;
  activeAdapterId: string | null = null;
  readonly loaded = new Set(['a', 'b']);
  readonly calls: Call[] = [];

  setActiveAdapter(id: string | null): void {
    if (id !== null && !this.loaded.has(id)) throw new Error(`no adapter '${id}' is loaded`);
    this.activeAdapterId = id;
  }

  generate(prompt: number[], o: GenerateTokensOptions = {}): Promise<TokenGeneration> {
    return this.record('generate', [{ prompt, options: o }], (rows) => {
      if (prompt.includes(POISON)) throw new Error('generate: prompt holds the poison id');
      while (!rows[0].finish) rows[0].step();
      return [rows[0].result()];
    }).then((r) => r[0]);
  }

  generateBatch(requests: GenerateRequest[]): Promise<TokenGeneration[]> {
    return this.record('batch', requests, (rows) => {
      // Lockstep: one token of every row per step, as the runtime's batched decode streams them.
      rows.forEach((r) => r.step());
      const bad = requests.findIndex((r) => r.prompt.includes(POISON));
      if (bad >= 0) throw new Error(`generateBatch: request ${bad} holds the poison id`);
      while (rows.some((r) => !r.finish)) rows.forEach((r) => r.step());
      return rows.map((r) => r.result());
    });
  }

  private record(kind: Call['kind'], requests: GenerateRequest[], run: (rows: Row[]) => TokenGeneration[]): Promise<TokenGeneration[]> {
    const adapter = this.activeAdapterId;
    return new Promise<void>((release) => {
      const c: Call = { kind, requests, adapter, release: () => ((c.done = true), release()), done: false };
      this.calls.push(c);
    }).then(() => run(requests.map((r) => new Row(r.prompt, r.options ?? {}, adapter))));
  }

  /** Finishes the oldest call still running. */
  releaseNext(): void {
    const c = this.calls.find((x) => !x.done);
    if (!c) throw new Error('no runtime call is running');
    c.release();
  }
}

/** Lets every queued microtask and promise continuation run. */
const settle = () => new Promise<void>((r) => setTimeout(r, 0));

async function runAll(rt: FakeRuntime): Promise<void> {
  for (let guard = 0; guard < 50; guard++) {
    await settle();
    if (!rt.calls.some((c) => !c.done)) return;
    rt.releaseNext();
  }
  throw new Error('runtime calls kept coming');
}

/** The message a promise rejects with (handled from the start, so its rejection is never unhandled). */
const caught = (p: Promise<unknown>): Promise<string> => p.then(() => 'resolved', (e: Error) => e.message);

const prompts = [[1, 2], [3], [4, 5, 6], [7, 8], [9], [10, 11], [12]];

describe('GenerateBatcher', () => {
  it('sends a lone call straight to generate with its options unchanged', async () => {
    const rt = new FakeRuntime();
    const b = new GenerateBatcher(rt);
    const o = { seed: 5, maxNewTokens: 4 };
    const p = b.submit(prompts[0], o);
    await settle();
    expect(rt.calls.map((c) => c.kind)).toEqual(['generate']);
    expect(rt.calls[0].requests[0].options).toBe(o);
    rt.releaseNext();
    expect(await p).toMatchObject(expected(prompts[0], o, null));
  });

  it('merges calls made together into one generateBatch, in order, each result to its caller', async () => {
    const rt = new FakeRuntime();
    const b = new GenerateBatcher(rt);
    const opts = [0, 1, 2].map((i) => ({ seed: 10 + i, maxNewTokens: 2 + i }));
    const ps = opts.map((o, i) => b.submit(prompts[i], o));
    await runAll(rt);
    expect(rt.calls.map((c) => [c.kind, c.requests.map((r) => r.prompt)])).toEqual([['batch', prompts.slice(0, 3)]]);
    const got = await Promise.all(ps);
    got.forEach((g, i) => expect(g).toMatchObject(expected(prompts[i], opts[i], null)));
  });

  it('holds calls that arrive during a run and merges them when it ends; streams stay per caller', async () => {
    const rt = new FakeRuntime();
    const b = new GenerateBatcher(rt);
    const streams: number[][] = prompts.map(() => []);
    const submit = (i: number) => b.submit(prompts[i], { seed: i, maxNewTokens: 3, onToken: (id) => void streams[i].push(id) });
    const first = submit(0);
    await settle();
    expect(rt.calls.length).toBe(1);
    const later = [1, 2, 3].map(submit);
    await settle();
    // Nothing new reaches the runtime while the first call runs.
    expect(rt.calls.length).toBe(1);
    expect(b.pending).toBe(3);
    await runAll(rt);
    expect(rt.calls.map((c) => [c.kind, c.requests.length])).toEqual([['generate', 1], ['batch', 3]]);
    const got = await Promise.all([first, ...later]);
    got.forEach((g, i) => {
      expect(g.tokens).toEqual(expected(prompts[i], { seed: i, maxNewTokens: 3 }, null).tokens);
      expect(streams[i]).toEqual(g.tokens);
    });
  });

  it('takes at most maxDecodeRows calls per runtime call, oldest first', async () => {
    const rt = new FakeRuntime();
    const b = new GenerateBatcher(rt);
    const first = b.submit(prompts[0], { seed: 0 });
    await settle();
    const rest = [1, 2, 3, 4, 5, 6].map((i) => b.submit(prompts[i], { seed: i }));
    await runAll(rt);
    expect(rt.calls.map((c) => c.requests.map((r) => r.prompt))).toEqual([[prompts[0]], prompts.slice(1, 5), prompts.slice(5, 7)]);
    expect(rt.calls.map((c) => c.kind)).toEqual(['generate', 'batch', 'batch']);
    const got = await Promise.all([first, ...rest]);
    got.forEach((g, i) => expect(g).toMatchObject(expected(prompts[i], { seed: i }, null)));
  });

  it('never batches when the runtime decodes one row at a time', async () => {
    const rt = new FakeRuntime();
    rt.maxDecodeRows = 1;
    const b = new GenerateBatcher(rt);
    const ps = [0, 1, 2].map((i) => b.submit(prompts[i], { seed: i }));
    await runAll(rt);
    expect(rt.calls.map((c) => c.kind)).toEqual(['generate', 'generate', 'generate']);
    (await Promise.all(ps)).forEach((g, i) => expect(g).toMatchObject(expected(prompts[i], { seed: i }, null)));
  });

  it('merges only calls made under the same adapter, runs each group under it and restores the choice', async () => {
    const rt = new FakeRuntime();
    const b = new GenerateBatcher(rt);
    rt.setActiveAdapter('a');
    const first = b.submit(prompts[0], { seed: 0 });
    await settle();
    const under: Array<string | null> = [];
    const ps: Array<Promise<TokenGeneration>> = [first];
    under.push('a');
    for (const [i, adapter] of [[1, 'a'], [2, 'b'], [3, 'a'], [4, null], [5, 'b']] as const) {
      rt.setActiveAdapter(adapter);
      under.push(adapter);
      ps.push(b.submit(prompts[i], { seed: i }));
    }
    // The user's last choice: the base model.
    rt.setActiveAdapter(null);
    await runAll(rt);
    expect(rt.calls.map((c) => [c.adapter, c.requests.map((r) => r.prompt)])).toEqual([
      ['a', [prompts[0]]],
      ['a', [prompts[1], prompts[3]]],
      ['b', [prompts[2], prompts[5]]],
      [null, [prompts[4]]],
    ]);
    (await Promise.all(ps)).forEach((g, i) => expect(g).toMatchObject(expected(prompts[i], { seed: i }, under[i])));
    expect(rt.activeAdapterId).toBeNull();
  });

  it('a call made while a run is switched to another adapter gets the adapter chosen, not the run\'s', async () => {
    // One engine serving every module: the frozen modules' calls run on the base weights while the planner's
    // rollouts keep calling under the trained adapter, which stays the runtime's choice.
    const rt = new FakeRuntime();
    const b = new GenerateBatcher(rt);
    rt.setActiveAdapter('a');
    const frozen = b.submit(prompts[0], { seed: 0 }, null);
    await settle();
    expect(rt.activeAdapterId).toBeNull();
    expect(b.activeAdapterId).toBe('a');
    const planner = b.submit(prompts[1], { seed: 1 });
    await runAll(rt);
    expect(rt.calls.map((c) => [c.adapter, c.requests.map((r) => r.prompt)])).toEqual([
      [null, [prompts[0]]],
      ['a', [prompts[1]]],
    ]);
    expect(await planner).toMatchObject(expected(prompts[1], { seed: 1 }, 'a'));
    expect(await frozen).toMatchObject(expected(prompts[0], { seed: 0 }, null));
    expect(rt.activeAdapterId).toBe('a');
    expect(b.activeAdapterId).toBe('a');
    // A choice made during a switched run is the choice.
    const again = b.submit(prompts[2], { seed: 2 }, null);
    await settle();
    rt.setActiveAdapter('b');
    expect(b.activeAdapterId).toBe('b');
    await runAll(rt);
    await again;
    expect(rt.activeAdapterId).toBe('b');
  });

  it('fails the calls of an adapter removed before they ran, naming it, and runs the rest', async () => {
    const rt = new FakeRuntime();
    const b = new GenerateBatcher(rt);
    const first = b.submit(prompts[0], {});
    await settle();
    rt.setActiveAdapter('b');
    const gone = caught(b.submit(prompts[1], {}));
    rt.setActiveAdapter(null);
    rt.loaded.delete('b');
    const kept = b.submit(prompts[2], {});
    await runAll(rt);
    expect(await gone).toMatch(/adapter 'b'.*no longer loaded/);
    expect(await first).toMatchObject(expected(prompts[0], {}, null));
    expect(await kept).toMatchObject(expected(prompts[2], {}, null));
  });

  it('re-runs each call alone when a merged run fails: only the bad one fails, streams are not repeated', async () => {
    const rt = new FakeRuntime();
    const b = new GenerateBatcher(rt);
    const streams: number[][] = [[], [], []];
    const bad = [prompts[1][0], POISON];
    const inputs = [prompts[0], bad, prompts[2]];
    const ps = inputs.map((p, i) => b.submit(p, { seed: i, maxNewTokens: 4, onToken: (id) => void streams[i].push(id) }));
    const outcomes = Promise.allSettled(ps);
    await runAll(rt);
    expect(rt.calls.map((c) => c.kind)).toEqual(['batch', 'generate', 'generate', 'generate']);
    // Alone again without prefix reuse, so the tokens are the ones the batch would have given.
    expect(rt.calls.slice(1).map((c) => c.requests[0].options?.reusePrefix)).toEqual([false, false, false]);
    const [r0, r1, r2] = await outcomes;
    expect(r1.status).toBe('rejected');
    expect((r1 as PromiseRejectedResult).reason.message).toMatch(/poison/);
    for (const [i, r] of [[0, r0], [2, r2]] as const) {
      expect(r.status).toBe('fulfilled');
      const g = (r as PromiseFulfilledResult<TokenGeneration>).value;
      expect(g).toMatchObject(expected(inputs[i], { seed: i, maxNewTokens: 4 }, null));
      // The batch streamed token 0 before failing; the caller sees it once.
      expect(streams[i]).toEqual(g.tokens);
    }
    // The re-run is handed the very callback the batch had (the batcher wraps a caller's onToken once).
    const batchOnToken = rt.calls[0].requests.map((r) => r.options?.onToken);
    expect(rt.calls[1].requests[0].options?.onToken).toBe(batchOnToken[0]);
    expect(rt.calls[3].requests[0].options?.onToken).toBe(batchOnToken[2]);
  });

  it('a re-run keeps a stop onToken already answered in the failed batch', async () => {
    const rt = new FakeRuntime();
    const b = new GenerateBatcher(rt);
    let calls = 0;
    const stopper = b.submit(prompts[0], { maxNewTokens: 5, onToken: () => (++calls, true) });
    const bad = caught(b.submit([POISON], {}));
    await runAll(rt);
    expect(await bad).toMatch(/poison/);
    const g = await stopper;
    expect(calls).toBe(1);
    expect(g.tokens).toEqual(expected(prompts[0], { maxNewTokens: 1 }, null).tokens);
    expect(g.finishReason).toBe('stop');
  });

  it('an abort seen during a failed batch ends the re-run where the caller\'s stream ended', async () => {
    const rt = new FakeRuntime();
    const b = new GenerateBatcher(rt);
    const ac = new AbortController();
    const seen: number[] = [];
    // The batch streams one token of each row, then fails; the caller aborts on its first token.
    const p = b.submit(prompts[0], { maxNewTokens: 6, signal: ac.signal, onToken: (id) => void (seen.push(id), ac.abort()) });
    void b.submit([POISON], {}).catch(() => undefined);
    await runAll(rt);
    const g = await p;
    expect(g.finishReason).toBe('abort');
    expect(g.tokens).toEqual(expected(prompts[0], { maxNewTokens: 1 }, null).tokens);
    expect(seen).toEqual(g.tokens);
  });

  it('answers an already aborted call as generate does, without a row of the batch', async () => {
    const rt = new FakeRuntime();
    const b = new GenerateBatcher(rt);
    const first = b.submit(prompts[0], {});
    await settle();
    const ac = new AbortController();
    const aborted = b.submit(prompts[1], { signal: ac.signal });
    const others = [2, 3].map((i) => b.submit(prompts[i], { seed: i }));
    ac.abort(); // while waiting for the first run
    await runAll(rt);
    const kinds = rt.calls.map((c) => [c.kind, c.requests.map((r) => r.prompt)]);
    expect(kinds).toContainEqual(['generate', [prompts[1]]]);
    expect(kinds).toContainEqual(['batch', [prompts[2], prompts[3]]]);
    expect(await aborted).toMatchObject({ tokens: [], logprobs: [], finishReason: 'abort' });
    expect(await first).toMatchObject(expected(prompts[0], {}, null));
    (await Promise.all(others)).forEach((g, i) => expect(g).toMatchObject(expected(prompts[i + 2], { seed: i + 2 }, null)));
  });

  it('an abort during a merged run ends that row only', async () => {
    const rt = new FakeRuntime();
    const b = new GenerateBatcher(rt);
    const ac = new AbortController();
    let n = 0;
    const p0 = b.submit(prompts[0], { maxNewTokens: 5, signal: ac.signal, onToken: () => void (++n === 2 && ac.abort()) });
    const p1 = b.submit(prompts[1], { maxNewTokens: 5 });
    await runAll(rt);
    expect(rt.calls.map((c) => c.kind)).toEqual(['batch']);
    const [g0, g1] = await Promise.all([p0, p1]);
    expect(g0.finishReason).toBe('abort');
    expect(g0.tokens).toEqual(expected(prompts[0], { maxNewTokens: 2 }, null).tokens);
    expect(g1).toMatchObject(expected(prompts[1], { maxNewTokens: 5 }, null));
  });

  describe('expect(n): waiting for the calls of concurrent rollouts', () => {
    it('holds a lone call until the announced calls wait, then runs them as one batch', async () => {
      const rt = new FakeRuntime();
      const b = new GenerateBatcher(rt, 60_000);
      b.expect(3);
      const p0 = b.submit(prompts[0], { seed: 1 });
      await settle();
      expect(rt.calls.length, 'nothing runs while 1 of 3 waits').toBe(0);
      const p1 = b.submit(prompts[1], { seed: 2 });
      await settle();
      expect(rt.calls.length).toBe(0);
      const p2 = b.submit(prompts[2], { seed: 3 });
      await runAll(rt);
      expect(rt.calls.map((c) => [c.kind, c.requests.length])).toEqual([['batch', 3]]);
      const got = await Promise.all([p0, p1, p2]);
      got.forEach((g, i) => expect(g).toMatchObject(expected(prompts[i], { seed: i + 1 }, null)));
    });

    it('runs what waits after maxWaitMs, when a lower count is announced, or when a waiting call aborts', async () => {
      const rt = new FakeRuntime();
      const b = new GenerateBatcher(rt, 30);
      b.expect(4);
      const p0 = b.submit(prompts[0], { seed: 1 });
      const p1 = b.submit(prompts[1], { seed: 2 });
      await settle();
      expect(rt.calls.length).toBe(0);
      // The wait ends on its own (a stalled rollout does not hold the others).
      await new Promise((r) => setTimeout(r, 60));
      expect(rt.calls.map((c) => [c.kind, c.requests.length])).toEqual([['batch', 2]]);
      await runAll(rt);
      await Promise.all([p0, p1]);

      // A rollout ended: 2 announced, 2 waiting, so they run at once.
      const slow = new GenerateBatcher(rt, 60_000);
      slow.expect(3);
      const q0 = slow.submit(prompts[3], { seed: 4 });
      const q1 = slow.submit(prompts[4], { seed: 5 });
      await settle();
      const before = rt.calls.length;
      slow.expect(2);
      await settle();
      expect(rt.calls.length).toBe(before + 1);
      await runAll(rt);
      await Promise.all([q0, q1]);

      // An abort does not sit out the wait.
      slow.expect(4);
      const ac = new AbortController();
      const r0 = slow.submit(prompts[5], { seed: 6, signal: ac.signal });
      await settle();
      const n = rt.calls.length;
      ac.abort();
      await runAll(rt);
      expect(rt.calls.length).toBeGreaterThan(n);
      expect((await r0).finishReason).toBe('abort');
      // With 1 announced, a lone call runs at once again.
      slow.expect(1);
      const lone = slow.submit(prompts[6], { seed: 7 });
      await settle();
      expect(rt.calls.at(-1)!.kind).toBe('generate');
      await runAll(rt);
      await lone;
      expect(() => slow.expect(0)).toThrow(/positive integer, got 0/);
    });
  });
});

describe('GenerateBatcher listeners', () => {
  it('removes its abort listener from the caller’s signal when a call settles', async () => {
    const added: number[] = [];
    const removed: number[] = [];
    const ctl = new AbortController();
    const signal = ctl.signal;
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = ((type: string, l: EventListenerOrEventListenerObject, o?: AddEventListenerOptions) => (added.push(1), add(type, l, o))) as typeof signal.addEventListener;
    signal.removeEventListener = ((type: string, l: EventListenerOrEventListenerObject, o?: EventListenerOptions) => (removed.push(1), remove(type, l, o))) as typeof signal.removeEventListener;
    const rt = {
      maxDecodeRows: 4,
      activeAdapterId: null as string | null,
      setActiveAdapter(id: string | null) {
        this.activeAdapterId = id;
      },
      generate: async () => ({ tokens: [1], logprobs: [0], finishReason: 'length' as const, prefillMs: 0, decodeMs: 0, reusedPrefixTokens: 0, redrawnTokens: 0 }),
      generateBatch: async () => [],
    };
    const b = new GenerateBatcher(rt as never);
    for (let i = 0; i < 20; i++) await b.submit([1, 2], { maxNewTokens: 1, signal });
    expect(added.length).toBe(20);
    expect(removed.length).toBe(20);
  });
});
