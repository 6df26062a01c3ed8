// The trust region's parts on their own (grpo-step.test.ts checks the whole against an independent float64
// forward): the blend of two adapters, and the backend swapping its adapter's weights without its moments.
import { describe, expect, it } from 'vitest';
import { Rng } from '../util/rng';
import { CpuPolicyBackend } from './cpu-backend';
import { adapterTensors, cloneAdapter, initLoraAdapter } from './lora-init';
import { blendAdapter } from './update-trust-region';
import { ToyTask, toyModel } from './toy-task';

const task = new ToyTask({ numQueries: 2 });
const model = toyModel(task, { seed: 5, hiddenSize: 16, intermediateSize: 24, numLayers: 1 });

/** The adapter with every weight moved by a pattern of its own (B too: a fresh B is zero). */
function moved(seed: number) {
  const a = initLoraAdapter(model.config, { r: 2, alpha: 4 }, new Rng(seed));
  for (const t of adapterTensors(a)) t.data.forEach((v, i) => (t.data[i] = v + 0.01 * Math.sin(seed + i)));
  return a;
}

describe('trust region', () => {
  it('blendAdapter writes before + scale · (after − before) into its target, tensor by tensor, and refuses a changed shape', () => {
    const before = moved(1);
    const after = moved(2);
    const into = cloneAdapter(after);
    expect(blendAdapter(before, after, 0.25, into)).toBe(into);
    const b = adapterTensors(before);
    const a = adapterTensors(after);
    adapterTensors(into).forEach((t, k) => t.data.forEach((x, i) => expect(Math.abs(x - (b[k].data[i] + 0.25 * (a[k].data[i] - b[k].data[i])))).toBeLessThan(1e-7)));
    // The endpoints themselves were not written.
    expect(adapterTensors(after).map((t) => Array.from(t.data))).toEqual(adapterTensors(moved(2)).map((t) => Array.from(t.data)));
    const short = cloneAdapter(after);
    const first = [...short.pairs.values()][0];
    first.A = first.A.subarray(1);
    expect(() => blendAdapter(before, short, 0.5, cloneAdapter(after))).toThrow(/trust region: adapter tensor '.*lora_A.*' changed shape during the update/);
  });

  it('the CPU backend sets its adapter weights in place and keeps its moments; a wrong-shaped adapter is refused whole, naming the tensor', async () => {
    const backend = new CpuPolicyBackend(model.config, model.weights, moved(3));
    const state = await backend.exportState();
    // Moments that are not zero, to tell "kept" from "reset".
    for (const mv of state.moments.values()) mv.m.fill(0.5);
    await backend.importState(state);
    const live = backend.currentAdapter;
    const target = moved(4);
    await backend.importAdapter(target);
    // In place: whoever holds the live adapter (the task's planner engine) sees the new weights.
    expect(backend.currentAdapter).toBe(live);
    const now = await backend.exportState();
    expect(adapterTensors(now.adapter).map((t) => Array.from(t.data))).toEqual(adapterTensors(target).map((t) => Array.from(t.data)));
    for (const mv of now.moments.values()) expect(mv.m.every((x) => x === 0.5)).toBe(true);
    expect(adapterTensors(await backend.exportAdapter()).map((t) => Array.from(t.data))).toEqual(adapterTensors(target).map((t) => Array.from(t.data)));
    // A copy: changing it leaves the backend alone.
    const copy = await backend.exportAdapter();
    adapterTensors(copy)[0].data.fill(9);
    expect(adapterTensors(backend.currentAdapter)[0].data[0]).not.toBe(9);

    const bad = moved(5);
    const pairs = [...bad.pairs.values()];
    pairs[pairs.length - 1].B = new Float32Array(3);
    await expect(backend.importAdapter(bad)).rejects.toThrow(/importAdapter: tensor '.*lora_B.*' is missing or has another shape than the trained adapter/);
    // Refused before any tensor was written, the first ones included.
    expect(adapterTensors(backend.currentAdapter).map((t) => Array.from(t.data))).toEqual(adapterTensors(target).map((t) => Array.from(t.data)));
  });
});
