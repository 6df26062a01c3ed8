// How fast is the float64 CPU backend (cpu-model.ts forward and backward, cpu-decode.ts decoding) on the
// tool-choice task's planner shapes? Times one training sequence's forward + backward and a decoded reply,
// and prints a checksum of every result so a speed change can be checked to leave the arithmetic bit-identical.
//   npx tsx bench/cpu-model-speed.ts [--width 32|64] [--tokens 121] [--prompt 90] [--reps 20]
import { initLoraAdapter } from '../src/trainer/lora-init';
import { cpuBackward, cpuForward, zeroLoraGrads } from '../src/trainer/cpu-model';
import { CpuDecoder } from '../src/trainer/cpu-decode';
import { toolTaskModel } from '../src/tasks/tool-task';
import { Rng } from '../src/util/rng';

function arg(name: string, d: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : d;
}

const width = arg('width', 64);
const T = arg('tokens', 121);
const P = arg('prompt', 90);
const reps = arg('reps', 20);
const V = 739;
const shape = width === 64 ? { hiddenSize: 64, numHeads: 4, numKvHeads: 2, intermediateSize: 128 } : {};
const { config, weights } = toolTaskModel(V, shape);
const rng = new Rng(7);
const adapter = initLoraAdapter(config, { r: 4, alpha: 8 }, rng);
// A trained adapter's B is not zero: give it values so every LoRA term is exercised.
for (const p of adapter.pairs.values()) for (let i = 0; i < p.B.length; i++) p.B[i] = (rng.next() - 0.5) * 0.1;
const tokens = Array.from({ length: T }, () => Math.floor(rng.next() * V));
const dlogp = Float64Array.from({ length: T - 1 }, (_, t) => (t >= P - 1 ? rng.next() - 0.5 : 0));

// The median of the repetitions: this machine's other work shows as outliers, not as a shifted mean.
function median(run: () => void): number {
  const ms: number[] = [];
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    run();
    ms.push(performance.now() - t0);
  }
  return ms.sort((a, b) => a - b)[Math.floor(reps / 2)];
}

let sum = 0;
const grads = zeroLoraGrads(adapter);
const fwd = median(() => {
  const f = cpuForward(config, weights, tokens, adapter, P - 1);
  sum += f.logprobs.reduce((a, b) => a + b, 0);
});
const fb = median(() => {
  const f = cpuForward(config, weights, tokens, adapter, P - 1);
  cpuBackward(config, weights, f, dlogp, adapter, grads);
});
for (const g of grads.values()) for (const a of [g.A, g.B]) for (const v of a) sum += v;
const dec = median(() => {
  const d = new CpuDecoder(config, weights, adapter);
  const logits = d.feed(tokens);
  sum += logits[0] + logits[V - 1];
});
console.log(`medians of ${reps}: width ${width} tokens ${T} prompt ${P}: forward ${fwd.toFixed(2)} ms, forward+backward ${fb.toFixed(2)} ms, decode ${T} tokens ${dec.toFixed(2)} ms; checksum ${sum.toPrecision(17)}`);
