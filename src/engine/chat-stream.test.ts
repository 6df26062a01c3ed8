import { describe, expect, it } from 'vitest';
import type { GenerationResult } from './chat-engine';
import { chatStream } from './chat-stream';

const resultOf = (text: string): GenerationResult => ({ text, promptTokens: [], tokens: [], logprobs: [], adapterId: null, finishReason: 'stop', timings: { prefillMs: 0, decodeMs: 0 } });

/** A generation the test drives: emit pieces, then finish or fail it. */
function driven() {
  let emit!: (piece: string) => void;
  let finish!: (r: GenerationResult) => void;
  let fail!: (e: unknown) => void;
  let runs = 0;
  const stream = chatStream((e) => {
    runs++;
    emit = e;
    return new Promise<GenerationResult>((resolve, reject) => ((finish = resolve), (fail = reject)));
  });
  return { stream, emit: (p: string) => emit(p), finish: (t: string) => finish(resultOf(t)), fail: (e: unknown) => fail(e), runs: () => runs };
}

async function readAll(stream: AsyncIterable<string>): Promise<string[]> {
  const seen: string[] = [];
  for await (const p of stream) seen.push(p);
  return seen;
}

describe('chatStream', () => {
  it('starts the generation when made and gives the pieces in order as they come, then ends with the result', async () => {
    const g = driven();
    expect(g.runs()).toBe(1);
    const seen: string[] = [];
    const reading = (async () => {
      for await (const p of g.stream) seen.push(p);
    })();
    g.emit('a');
    await Promise.resolve();
    await Promise.resolve();
    expect(seen).toEqual(['a']);
    g.emit('b');
    g.emit('c');
    g.finish('abc');
    await reading;
    expect(seen).toEqual(['a', 'b', 'c']);
    expect((await g.stream.result).text).toBe('abc');
  });

  it('keeps the pieces for a reader that comes after the generation ended', async () => {
    const g = driven();
    g.emit('x');
    g.emit('y');
    g.finish('xy');
    await g.stream.result;
    expect(await readAll(g.stream)).toEqual(['x', 'y']);
  });

  it('a failed generation ends the iteration after its pieces and rejects the result', async () => {
    const g = driven();
    const reading = readAll(g.stream);
    g.emit('p');
    g.fail(new Error('device lost'));
    expect(await reading).toEqual(['p']);
    await expect(g.stream.result).rejects.toThrow('device lost');
  });

  it("a run's synchronous throw is the result's rejection, not the caller's", async () => {
    const s = chatStream(() => {
      throw new Error('no model');
    });
    expect(await readAll(s)).toEqual([]);
    await expect(s.result).rejects.toThrow('no model');
  });

  it('a reader that stops early stops reading only: the generation runs on to its result', async () => {
    const g = driven();
    g.emit('1');
    g.emit('2');
    for await (const p of g.stream) {
      expect(p).toBe('1');
      break;
    }
    g.emit('3');
    g.finish('123');
    expect((await g.stream.result).text).toBe('123');
    expect(() => g.stream[Symbol.asyncIterator]()).toThrow(/one reader/);
  });

  it('a reader that aborts the signal mid-stream reads the pieces up to the abort, then the aborted result', async () => {
    const ac = new AbortController();
    // A generation that checks its signal between pieces, as the engines do between tokens.
    const s = chatStream(async (emit) => {
      const text: string[] = [];
      for (const p of ['one', ' two', ' three']) {
        await new Promise((r) => setTimeout(r, 1));
        if (ac.signal.aborted) return { ...resultOf(text.join('')), finishReason: 'abort' };
        emit(p);
        text.push(p);
      }
      return resultOf(text.join(''));
    });
    const seen: string[] = [];
    for await (const p of s) {
      seen.push(p);
      if (p === ' two') ac.abort();
    }
    expect(seen).toEqual(['one', ' two']);
    const r = await s.result;
    expect(r.finishReason).toBe('abort');
    expect(r.text).toBe('one two');
  });
});
