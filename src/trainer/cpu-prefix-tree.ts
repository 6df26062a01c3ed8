// Training's float64 forward and backward over sequences that share prefixes, each shared part computed once.
// A step's planner turns all begin with the same system message and tool cards, and a group's first turns with
// the same prompt: as separate sequences, most of a tiny planner's training time went to those shared rows.
// The sequences form a prefix tree; it is walked depth first, so only the segments on the current path are held:
// a segment runs its forward on its ancestors' keys and values (cpu-model.ts cpuForward with a context), its
// children run to the end of their backward, handing it the gradients of the keys and values they read from it,
// and then its own backward runs. The forward is bit-identical to one sequence at a time; the gradients differ
// only in the order of float64 additions. A subtree whose rows all carry a zero gradient (a Flow-GRPO group whose
// rollouts all scored alike: advantage 0, and no KL or entropy term on it) skips its backward: it would add
// exact zeros. Late in a run most groups are such, and the backward is about half of an update.
import type { LoraAdapter } from '../io/peft';
import { cpuContext, cpuForward, cpuSegmentBackward, type ChoiceGroups, type HostQwen2Weights, type KvContext, type LoraGrads } from './cpu-model';
import type { Qwen2Config } from '../io/qwen2-config';

export interface PrefixTreeNode {
  /** Positions start..end-1 of `tokens` of sequence `source` (every sequence below it has the same ones). */
  start: number;
  end: number;
  source: number;
  children: PrefixTreeNode[];
  /** The sequence that ends here (leaves only; a leaf holds every row of its sequence that needs logits). */
  sequence?: number;
}

export interface TreeSequence {
  tokens: ArrayLike<number>;
  /** How many leading positions may be shared: rows from here on need their own logits (a turn: promptLen - 1). */
  shareable: number;
}

/**
 * The prefix tree of `seqs`: roots in first-seen order of their first token. Each sequence is one leaf, starting
 * at most at its `shareable`; every inner node is shared by two or more sequences.
 */
export function prefixTree(seqs: readonly TreeSequence[]): PrefixTreeNode[] {
  seqs.forEach((s, i) => {
    if (!(s.tokens.length >= 1) || !Number.isInteger(s.shareable) || s.shareable < 0 || s.shareable >= s.tokens.length) {
      throw new Error(`prefixTree: sequence ${i} has ${s.tokens.length} tokens and shareable ${s.shareable} (must be 0..length-1)`);
    }
  });
  return build(seqs, seqs.map((_, i) => i), 0);
}

function build(seqs: readonly TreeSequence[], members: number[], depth: number): PrefixTreeNode[] {
  if (members.length === 1) {
    const i = members[0];
    return [{ start: depth, end: seqs[i].tokens.length, source: i, children: [], sequence: i }];
  }
  const limit = Math.min(...members.map((i) => seqs[i].shareable));
  let end = depth;
  const first = seqs[members[0]].tokens;
  while (end < limit && members.every((i) => seqs[i].tokens[end] === first[end])) end++;
  const leaves = members.filter((i) => seqs[i].shareable === end);
  const byToken = new Map<number, number[]>();
  for (const i of members) {
    if (seqs[i].shareable === end) continue;
    const t = seqs[i].tokens[end];
    const g = byToken.get(t);
    if (g) g.push(i);
    else byToken.set(t, [i]);
  }
  const below = [...leaves.map((i) => ({ start: end, end: seqs[i].tokens.length, source: i, children: [], sequence: i })), ...[...byToken.values()].flatMap((g) => build(seqs, g, end))];
  if (end === depth) return below;
  return [{ start: depth, end, source: members[0], children: below }];
}

export interface TreeStepSequence extends TreeSequence {
  tokens: number[];
}

/**
 * What a sequence's loss gives its rows: d loss / d logp_t and, with an entropy bonus, d loss / d H_t (with
 * `choices`, H_t over row t's groups of choices where it has them: the bonus over choices).
 */
export interface RowGradients {
  dlogp: ArrayLike<number>;
  dEntropy?: ArrayLike<number> | null;
  choices?: ReadonlyArray<ChoiceGroups | null> | null;
}

/** What a tree step ran: segments forwarded, and how many of them also ran a backward. */
export interface TreeStepCounts {
  segments: number;
  backwards: number;
}

/**
 * Accumulates into `grads` the gradient of Σ_seq Σ_t dlogp_seq[t] · logprobs_seq[t] (+ dEntropy_seq[t] · H_seq,t).
 * `lossOf(i, logprobs)` gets sequence i's logprobs (length tokens-1, rows before `shareable` 0) as soon as its
 * forward is done and returns its dlogp (same length), or its RowGradients.
 */
export function cpuPrefixTreeStep(cfg: Qwen2Config, w: HostQwen2Weights, adapter: LoraAdapter, grads: LoraGrads, seqs: readonly TreeStepSequence[], lossOf: (i: number, logprobs: Float64Array) => ArrayLike<number> | RowGradients): TreeStepCounts {
  const kvd = cfg.numKvHeads * cfg.headDim;
  interface Open {
    node: PrefixTreeNode;
    extra: Array<{ k: Float64Array; v: Float64Array }>;
  }
  const counts: TreeStepCounts = { segments: 0, backwards: 0 };
  /** Runs the subtree; true when its backward ran (it had a non-zero gradient to hand up). */
  const visit = (node: PrefixTreeNode, ctx: KvContext | undefined, path: Open[]): boolean => {
    counts.segments++;
    const seq = seqs[node.source];
    const T = node.end - node.start;
    const leaf = node.sequence !== undefined;
    const f = cpuForward(cfg, w, seq.tokens.slice(node.start, node.end), adapter, leaf ? seq.shareable - node.start : T, ctx);
    let dlogp: ArrayLike<number> | null = null;
    let dEntropy: ArrayLike<number> | null = null;
    let choices: Array<ChoiceGroups | null> | null = null;
    if (leaf) {
      const full = new Float64Array(seq.tokens.length - 1);
      full.set(f.logprobs, node.start);
      const got = lossOf(node.sequence!, full);
      const rows = 'dlogp' in got ? got : { dlogp: got, dEntropy: null };
      // Rows before the leaf belong to shared segments, whose backward carries no loss of its own.
      const own = (d: ArrayLike<number>, what: string): Float64Array => {
        if (d.length !== full.length) throw new Error(`cpuPrefixTreeStep: ${what} of sequence ${node.sequence} has ${d.length} rows, not ${full.length}`);
        for (let t = 0; t < node.start; t++) if (d[t] !== 0) throw new Error(`cpuPrefixTreeStep: ${what} of sequence ${node.sequence} is ${d[t]} at row ${t}, inside the prefix it shares (rows before ${seq.shareable} must be 0)`);
        return Float64Array.from({ length: T - 1 }, (_, t) => d[node.start + t]);
      };
      dlogp = own(rows.dlogp, 'dlogp');
      if (rows.dEntropy) dEntropy = own(rows.dEntropy, 'dEntropy');
      if (rows.choices) {
        if (rows.choices.length !== full.length) throw new Error(`cpuPrefixTreeStep: choices of sequence ${node.sequence} has ${rows.choices.length} rows, not ${full.length}`);
        choices = Array.from({ length: T - 1 }, (_, t) => rows.choices![node.start + t]);
      }
    }
    let carries = nonZero(dlogp) || nonZero(dEntropy);
    // A leaf with nothing to hand up needs no key/value gradient buffers: skip before allocating them.
    if (!carries && !node.children.length) return false;
    const open: Open = { node, extra: Array.from({ length: cfg.numLayers }, () => ({ k: new Float64Array(T * kvd), v: new Float64Array(T * kvd) })) };
    if (node.children.length) {
      const inner = cpuContext(f);
      for (const c of node.children) if (visit(c, inner, [...path, open])) carries = true;
    }
    // No loss of its own and none handed up from below: its backward would add zeros.
    if (!carries) return false;
    counts.backwards++;
    // The context's positions belong to the open ancestors: each takes its own range.
    cpuSegmentBackward(
      cfg,
      w,
      f,
      dlogp,
      adapter,
      grads,
      open.extra,
      (l, dk, dv) => {
        for (const a of path) {
          const from = a.node.start * kvd;
          const { k, v } = a.extra[l];
          for (let j = 0; j < k.length; j++) {
            k[j] += dk[from + j];
            v[j] += dv[from + j];
          }
        }
      },
      dEntropy,
      choices,
    );
    return true;
  };
  for (const root of prefixTree(seqs)) visit(root, undefined, []);
  return counts;
}

function nonZero(d: ArrayLike<number> | null): boolean {
  if (!d) return false;
  for (let t = 0; t < d.length; t++) if (d[t] !== 0) return true;
  return false;
}
