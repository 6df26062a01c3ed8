// The float64 CPU backend scoring sequences that share prompt prefixes once per prefix: a step's turns all begin
// with the same system message, and a group's turns with the same prompt. Scoring (the reference policy's
// logprobs, old ones when missing, and the trust region's rescoring) is a forward only, so it runs token by token
// with the keys and values kept (cpu-decode.ts), each sequence forked from the previous one at their common prefix
// (into the reply: a group's replies share their opening tokens); the LM head runs only on loss rows (free tokens).
// Training's forward and backward run over the batch's prefix tree (cpu-prefix-tree.ts).
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
    let prev: { tokens: number[]; decoder: CpuDecoder; start: number } | null = null;
    for (const { s, tokens } of seqs) {
      // Only loss rows need logits (the LM head is skipped on the prompt and on tokens the grammar forced), so a
      // sequence has scored exactly its own loss rows.
      const need = (t: number) => batch.lossMask[s.start + t] === 1;
      // Rows whose position and target both lie in the prefix shared with the previous sequence (t + 1 < n) hold the
      // same logprob there: a group's replies share their opening tokens as well as their prompt. They are copied
      // where the previous sequence scored them; decoding resumes at the first row that is not.
      let fork = 0;
      if (prev) {
        let n = 0;
        const max = Math.min(tokens.length, prev.tokens.length);
        while (n < max && prev.tokens[n] === tokens[n]) n++;
        fork = Math.min(Math.max(0, n - 1), prev.decoder.length);
        for (let t = s.promptLen - 1; t < fork; t++) {
          if (need(t) && batch.lossMask[prev.start + t] !== 1) {
            fork = t;
            break;
          }
        }
      }
      const decoder: CpuDecoder = prev && fork > 0 ? prev.decoder.fork(fork) : new CpuDecoder(this.modelConfig, this.weights, adapter);
      for (let t = s.promptLen - 1; t < fork; t++) if (need(t)) out[s.start + t] = out[prev!.start + t];
      for (let t = decoder.length; t + 1 < tokens.length; t++) {
        const want = need(t);
        const logits = decoder.step(tokens[t], want);
        if (!want) continue;
        out[s.start + t] = logits[tokens[t + 1]] - logSumExp(logits);
      }
      prev = { tokens, decoder, start: s.start };
    }
    return out;
  }
}

function compareTokens(a: number[], b: number[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}
