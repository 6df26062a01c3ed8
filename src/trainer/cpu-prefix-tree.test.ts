// The prefix tree of a batch's sequences, and training's forward and backward over it against one sequence at
// a time (cpu-model.ts cpuForward / cpuBackward): logprobs bit-identical, gradients equal to float64 rounding.
import { describe, expect, it } from 'vitest';
import { toolTaskModel } from '../tasks/tool-task';
import { Rng } from '../util/rng';
import { cpuBackward, cpuForward, zeroLoraGrads, type LoraGrads } from './cpu-model';
import { cpuPrefixTreeStep, prefixTree, type PrefixTreeNode } from './cpu-prefix-tree';
import { adapterTensors, initLoraAdapter } from './lora-init';

function walk(nodes: PrefixTreeNode[], path: PrefixTreeNode[], out: Map<number, PrefixTreeNode[]>): void {
  for (const n of nodes) {
    if (n.sequence !== undefined) out.set(n.sequence, [...path, n]);
    walk(n.children, [...path, n], out);
  }
}

describe('prefixTree', () => {
  it('gives each sequence one leaf, shares every common prefix once, and keeps rows that need logits in the leaf', () => {
    const seqs = [
      { tokens: [1, 2, 3, 4, 5, 6], shareable: 4 },
      { tokens: [1, 2, 3, 4, 9, 9], shareable: 4 },
      { tokens: [1, 2, 7, 7], shareable: 2 },
      { tokens: [1, 2, 3, 4, 5, 8], shareable: 2 },
      { tokens: [5, 5], shareable: 1 },
    ];
    const roots = prefixTree(seqs);
    expect(roots.map((r) => [r.start, r.end])).toEqual([[0, 2], [0, 2]]);
    const paths = new Map<number, PrefixTreeNode[]>();
    walk(roots, [], paths);
    expect([...paths.keys()].sort()).toEqual([0, 1, 2, 3, 4]);
    for (const [i, path] of paths) {
      // The path covers the sequence exactly, each node's positions hold its tokens, and the leaf starts at or
      // before `shareable`.
      expect(path[0].start).toBe(0);
      path.forEach((n, j) => {
        if (j) expect(n.start).toBe(path[j - 1].end);
        expect(Array.from(seqs[n.source].tokens).slice(n.start, n.end)).toEqual(seqs[i].tokens.slice(n.start, n.end));
      });
      expect(path[path.length - 1].end).toBe(seqs[i].tokens.length);
      expect(path[path.length - 1].start).toBeLessThanOrEqual(seqs[i].shareable);
    }
    // 0 and 1 share [1,2,3,4]; 3 stops sharing at 2 (its own logits start there), so 0,1 and 3 share [1,2] only
    // with 2, and [3,4] is a node of 0 and 1.
    expect(paths.get(0)!.map((n) => [n.start, n.end])).toEqual([[0, 2], [2, 4], [4, 6]]);
    expect(paths.get(1)![1]).toBe(paths.get(0)![1]);
    expect(paths.get(3)!.map((n) => [n.start, n.end])).toEqual([[0, 2], [2, 6]]);
    expect(paths.get(4)!.map((n) => [n.start, n.end])).toEqual([[0, 2]]);
  });

  it('names the sequence whose shareable length is out of range', () => {
    expect(() => prefixTree([{ tokens: [1, 2], shareable: 0 }, { tokens: [1, 2], shareable: 2 }])).toThrow(/sequence 1 has 2 tokens and shareable 2/);
  });
});

describe('cpuPrefixTreeStep', () => {
  it('gives each sequence its own logprobs to the bit and the summed gradients of separate backwards', () => {
    const { config, weights } = toolTaskModel(53, { hiddenSize: 16, numHeads: 2, numKvHeads: 1, intermediateSize: 24, numLayers: 2, modelSeed: 3 });
    const rng = new Rng(9);
    const adapter = initLoraAdapter(config, { r: 2, alpha: 4, baseModelNameOrPath: 'test' }, rng);
    for (const t of adapterTensors(adapter)) if (t.which === 'B') for (let i = 0; i < t.data.length; i++) t.data[i] = rng.normal() * 0.3;
    const tok = (n: number) => Array.from({ length: n }, () => rng.int(config.vocabSize));
    const system = tok(9);
    const q1 = [...system, ...tok(5)];
    const q2 = [...system, ...tok(4)];
    // Three levels of sharing (system, query, a first reply), sequences whose logits start inside a shared
    // part, and a sequence sharing nothing.
    const turns = [
      { tokens: [...q1, ...tok(4)], shareable: q1.length - 1 },
      { tokens: [...q1, ...tok(6)], shareable: q1.length - 1 },
      { tokens: [...q1, 3, 3, 3, ...tok(3)], shareable: q1.length + 2 },
      { tokens: [...q1, 3, 3, 3, ...tok(2)], shareable: q1.length + 2 },
      { tokens: [...q2, ...tok(5)], shareable: q2.length - 1 },
      { tokens: [...q2, ...tok(3)], shareable: 4 },
      { tokens: tok(8), shareable: 3 },
    ];
    const dl = turns.map((s) => Float64Array.from({ length: s.tokens.length - 1 }, (_, t) => (t >= s.shareable ? rng.normal() : 0)));
    const want = zeroLoraGrads(adapter);
    const wantLogp = turns.map((s, i) => {
      const f = cpuForward(config, weights, s.tokens, adapter, s.shareable);
      cpuBackward(config, weights, f, dl[i], adapter, want);
      return f.logprobs;
    });
    const got = zeroLoraGrads(adapter);
    const seen: number[] = [];
    cpuPrefixTreeStep(config, weights, adapter, got, turns, (i, logp) => {
      seen.push(i);
      expect(Array.from(logp), `sequence ${i}`).toEqual(Array.from(wantLogp[i]));
      return dl[i];
    });
    expect(seen.sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
    // Worst difference over every tensor, relative to the tensor's largest entry in `a`.
    const worstRelative = (a: LoraGrads, b: LoraGrads) => {
      let worst = 0;
      for (const [k, g] of a) {
        for (const which of ['A', 'B'] as const) {
          const x = g[which];
          const y = b.get(k)![which];
          const scale = Math.max(...x.map(Math.abs));
          expect(scale, `${k}.${which}`).toBeGreaterThan(0);
          for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i] - y[i]) / scale);
        }
      }
      return worst;
    };
    expect(worstRelative(want, got)).toBeLessThan(1e-12);
    // With an entropy bonus's dEntropy beside dlogp (RowGradients): the same sums as separate backwards.
    const de = turns.map((s) => Float64Array.from({ length: s.tokens.length - 1 }, (_, t) => (t >= s.shareable ? rng.normal() : 0)));
    const wantE = zeroLoraGrads(adapter);
    turns.forEach((s, i) => cpuBackward(config, weights, cpuForward(config, weights, s.tokens, adapter, s.shareable), dl[i], adapter, wantE, de[i]));
    const gotE = zeroLoraGrads(adapter);
    cpuPrefixTreeStep(config, weights, adapter, gotE, turns, (i) => ({ dlogp: dl[i], dEntropy: de[i] }));
    expect(worstRelative(wantE, gotE)).toBeLessThan(1e-12);
    // The entropy term moved the gradients (by far more than the 1e-12 above).
    expect(worstRelative(wantE, want)).toBeGreaterThan(1e-6);
    // Over choices (two groups, one of two ids, on every other own row): the same sums as separate backwards, and not the whole-vocabulary ones.
    const sets = turns.map((s) => Array.from({ length: s.tokens.length - 1 }, (_, t) => (t >= s.shareable && t % 2 === 0 ? [[s.tokens[t + 1]], [(s.tokens[t + 1] + 3) % config.vocabSize, (s.tokens[t + 1] + 5) % config.vocabSize]] : null)));
    const wantC = zeroLoraGrads(adapter);
    turns.forEach((s, i) => cpuBackward(config, weights, cpuForward(config, weights, s.tokens, adapter, s.shareable), dl[i], adapter, wantC, de[i], sets[i]));
    const gotC = zeroLoraGrads(adapter);
    cpuPrefixTreeStep(config, weights, adapter, gotC, turns, (i) => ({ dlogp: dl[i], dEntropy: de[i], choices: sets[i] }));
    expect(worstRelative(wantC, gotC)).toBeLessThan(1e-12);
    expect(worstRelative(wantC, wantE)).toBeGreaterThan(1e-6);
    expect(() => cpuPrefixTreeStep(config, weights, adapter, zeroLoraGrads(adapter), turns.slice(0, 1), () => ({ dlogp: dl[0], dEntropy: de[0], choices: sets[0].slice(1) }))).toThrow(/choices of sequence 0 has \d+ rows, not \d+/);
    expect(() => cpuPrefixTreeStep(config, weights, adapter, zeroLoraGrads(adapter), turns.slice(0, 2), (i) => ({ dlogp: dl[i], dEntropy: Float64Array.from(de[i], (v, t) => (t === 3 ? 1 : v)) }))).toThrow(/dEntropy of sequence 0 is 1 at row 3, inside the prefix it shares/);
    // Sequences whose rows all carry zero (a group that scored alike) skip their backward, and a shared segment
    // whose every sequence does skips its own: q1's four turns here (3 leaves, the shared q1 and "3 3 3"
    // segments); the system prompt still runs for q2's turns. Same sums as separate backwards, as if the zero
    // rows were not there; a zero dlogp beside a non-zero dEntropy still runs.
    const zeroQ1 = dl.map((d, i) => (i < 4 ? new Float64Array(d.length) : d));
    const wantZ = zeroLoraGrads(adapter);
    turns.forEach((s, i) => cpuBackward(config, weights, cpuForward(config, weights, s.tokens, adapter, s.shareable), zeroQ1[i], adapter, wantZ));
    const gotZ = zeroLoraGrads(adapter);
    const full = cpuPrefixTreeStep(config, weights, adapter, zeroLoraGrads(adapter), turns, (i) => dl[i]);
    const counts = cpuPrefixTreeStep(config, weights, adapter, gotZ, turns, (i) => zeroQ1[i]);
    expect(worstRelative(wantZ, gotZ)).toBeLessThan(1e-12);
    expect(full.backwards).toBe(full.segments);
    expect(counts.segments).toBe(full.segments);
    expect(full.backwards - counts.backwards).toBe(6);
    const entropyOnly = cpuPrefixTreeStep(config, weights, adapter, zeroLoraGrads(adapter), turns, (i) => ({ dlogp: zeroQ1[i], dEntropy: i === 0 ? de[0] : null }));
    expect(full.backwards - entropyOnly.backwards).toBe(4);
    // A loss on a shared row cannot be carried by one sequence's leaf: refused, naming the row.
    expect(() => cpuPrefixTreeStep(config, weights, adapter, zeroLoraGrads(adapter), turns.slice(0, 2), (i) => Float64Array.from(dl[i], (v, t) => (t === 3 ? 1 : v)))).toThrow(/sequence 0 is 1 at row 3, inside the prefix it shares/);
  });
});
