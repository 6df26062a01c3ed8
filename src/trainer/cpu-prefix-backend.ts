// The float64 CPU backend scoring sequences that share prompt prefixes once per prefix: a step's turns all begin
// with the same system message, and a group's turns with the same prompt. Scoring (the reference policy's
// logprobs, and old ones when missing) is a forward only, so it runs token by token with the keys and values kept
// (cpu-decode.ts), each sequence forked from the previous one at their common prefix; the LM head runs only on
// the response's rows. Training's forward and backward run over the batch's prefix tree (cpu-prefix-tree.ts).
import type { LoraAdapter } from '../io/peft';
import { logSumExp } from '../kernels/sampling/draw';
import { addSums, emptySums, type GrpoLossParams, type GrpoLossSums } from '../model/loss';
import { CpuPolicyBackend, sameTokens, sequencesLoss } from './cpu-backend';
import { CpuDecoder } from './cpu-decode';
import { cpuPrefixTreeStep } from './cpu-prefix-tree';
import type { PackedBatch } from '../model/samples';

export class PrefixSharingCpuBackend extends CpuPolicyBackend {
  readonly microBatchTokens = Number.MAX_SAFE_INTEGER;

  override async accumulate(batch: PackedBatch, loss: GrpoLossParams, normalizer: number): Promise<GrpoLossSums> {
    let sums = emptySums();
    const groups = sameTokens(batch);
    const seqs = groups.map((g) => ({ tokens: Array.from(batch.ids.subarray(g[0].start, g[0].start + g[0].length)), shareable: g[0].promptLen - 1 }));
    cpuPrefixTreeStep(this.modelConfig, this.weights, this.currentAdapter, this.gradients, seqs, (i, logp) => {
      const r = sequencesLoss(batch, groups[i], logp, loss, normalizer);
      sums = addSums(sums, r.sums);
      return r;
    });
    return sums;
  }

  override async logprobs(batch: PackedBatch, adapterOn: boolean): Promise<Float32Array> {
    const out = new Float32Array(batch.rows);
    const adapter: LoraAdapter | null = adapterOn ? this.currentAdapter : null;
    const seqs = batch.seqs.map((s) => ({ s, tokens: Array.from(batch.ids.subarray(s.start, s.start + s.length)) }));
    // Sorted by their tokens, sequences with a common prefix are neighbours.
    seqs.sort((a, b) => compareTokens(a.tokens, b.tokens));
    let prev: { tokens: number[]; decoder: CpuDecoder } | null = null;
    for (const { s, tokens } of seqs) {
      // Rows before promptLen - 1 carry no loss; from there on each needs its logits, so the shared part stops there.
      const first = s.promptLen - 1;
      let decoder: CpuDecoder;
      if (prev) {
        let n = 0;
        const max = Math.min(first, prev.decoder.length);
        while (n < max && prev.tokens[n] === tokens[n]) n++;
        decoder = prev.decoder.fork(n);
      } else decoder = new CpuDecoder(this.modelConfig, this.weights, adapter);
      for (let t = decoder.length; t + 1 < tokens.length; t++) {
        const logits = decoder.step(tokens[t], t >= first);
        if (t >= first) out[s.start + t] = logits[tokens[t + 1]] - logSumExp(logits);
      }
      prev = { tokens, decoder };
    }
    return out;
  }
}

function compareTokens(a: number[], b: number[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}
