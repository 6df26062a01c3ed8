// Token-by-token decoding with the keys and values kept (cpu-decode.ts) against the whole-sequence float64
// forward (cpu-model.ts), with a LoRA adapter whose B is not zero; and the forward's `logitsFrom` leaving only
// the rows before it out.
import { describe, expect, it } from 'vitest';
import { toolTaskModel } from '../tasks/tool-task';
import { Rng } from '../util/rng';
import { CpuDecoder } from './cpu-decode';
import { cpuForward } from './cpu-model';
import { adapterTensors, initLoraAdapter } from './lora-init';

function setup() {
  const { config, weights } = toolTaskModel(61, { hiddenSize: 16, numHeads: 2, numKvHeads: 1, intermediateSize: 24, numLayers: 2, modelSeed: 7 });
  const rng = new Rng(5);
  const adapter = initLoraAdapter(config, { r: 2, alpha: 4, baseModelNameOrPath: 'test' }, rng);
  // A fresh adapter has B = 0 and changes nothing; a trained one does.
  for (const t of adapterTensors(adapter)) if (t.which === 'B') for (let i = 0; i < t.data.length; i++) t.data[i] = rng.normal() * 0.3;
  const tokens = Array.from({ length: 37 }, () => rng.int(config.vocabSize));
  return { config, weights, adapter, tokens };
}

describe('CpuDecoder', () => {
  it('gives the logits of the whole-sequence forward at every position, with and without the adapter', () => {
    const { config, weights, adapter, tokens } = setup();
    const V = config.vocabSize;
    for (const a of [adapter, null]) {
      const full = cpuForward(config, weights, tokens, a);
      const dec = new CpuDecoder(config, weights, a);
      let worst = 0;
      tokens.forEach((t, pos) => {
        const logits = dec.step(t);
        for (let j = 0; j < V; j++) worst = Math.max(worst, Math.abs(logits[j] - full.logits[pos * V + j]));
      });
      expect(dec.length).toBe(tokens.length);
      expect(worst).toBeLessThan(1e-9);
    }
  });

  it('feed() returns the last position, and an id outside the vocabulary is refused by name', () => {
    const { config, weights, adapter, tokens } = setup();
    const full = cpuForward(config, weights, tokens, adapter);
    const last = new CpuDecoder(config, weights, adapter).feed(tokens);
    const V = config.vocabSize;
    expect(Math.max(...Array.from(last, (v, j) => Math.abs(v - full.logits[(tokens.length - 1) * V + j])))).toBeLessThan(1e-9);
    expect(() => new CpuDecoder(config, weights, null).step(V)).toThrow(/token id 61 at position 0 is outside the vocabulary/);
  });
});

describe('cpuForward logitsFrom', () => {
  it('computes the same logprobs from that row on and leaves the earlier rows 0', () => {
    const { config, weights, adapter, tokens } = setup();
    const full = cpuForward(config, weights, tokens, adapter);
    const part = cpuForward(config, weights, tokens, adapter, 20);
    for (let t = 0; t < tokens.length - 1; t++) {
      if (t < 20) expect(part.logprobs[t]).toBe(0);
      else expect(part.logprobs[t]).toBeCloseTo(full.logprobs[t], 12);
    }
  });
});

describe('CpuDecoder.fork', () => {
  it('goes on from a prefix exactly as decoding the whole sequence does, leaving the original as it was', () => {
    const { config, weights, adapter, tokens } = setup();
    const dec = new CpuDecoder(config, weights, adapter);
    dec.feed(tokens.slice(0, 30));
    const fork = dec.fork(12);
    expect(fork.length).toBe(12);
    const viaFork = fork.feed(tokens.slice(12));
    const whole = new CpuDecoder(config, weights, adapter).feed(tokens);
    expect(Math.max(...Array.from(viaFork, (v, j) => Math.abs(v - whole[j])))).toBeLessThan(1e-12);
    expect(dec.length).toBe(30);
    const more = dec.feed(tokens.slice(30));
    expect(Math.max(...Array.from(more, (v, j) => Math.abs(v - whole[j])))).toBeLessThan(1e-12);
    expect(() => dec.fork(99)).toThrow(/not within the 37 positions/);
  });
});
