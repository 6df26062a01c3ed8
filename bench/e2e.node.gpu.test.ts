// The end-to-end benchmark's harness on the qwen2-tiny fixture, a few tokens a call: one real Flow-GRPO step
// (TrainingRun, AgentCollector, the update on the runtime) where the agent loop accepts every scripted reply,
// every module call generates exactly its set number of tokens (the fixture's eos id ignored), the planner's
// turns carry token ids and logprobs the update trains on, and the two rollouts' planner calls decode together.
import { describe, expect, it } from 'vitest';
import { loadCheckpoint } from '../src/engine/load-checkpoint';
import { directorySource } from '../src/io/sources';
import { Qwen2Runtime } from '../src/engine/runtime';
import { gpuFor } from '../tests/support/gpu';
import { TINY } from '../tests/support/qwen2-fixture';
import { benchE2e, MODULES, type E2eOptions } from './e2e';
import { FixedLengthEngine } from './fixed-length-engine';
import { e2eReply } from './e2e-script';

const lengths = { analysis: 2, planner: 3, executor: 2, verifier: 2, generator: 2 };

describe('e2e benchmark (qwen2-tiny)', () => {
  it('plays a group of whole trajectories at fixed lengths, batches the planner and trains on its turns', async () => {
    const ctx = await gpuFor('native');
    const ckpt = await loadCheckpoint(directorySource(TINY));
    expect(ckpt.config.eosTokenIds.length).toBeGreaterThan(0);
    const o: E2eOptions = { group: 2, turns: 2, concurrency: 2, warmupSteps: 0, steps: 1, lengths, rank: 2, temperature: 1, microBatchTokens: 2048, maxContext: 2048 };
    const r = await benchE2e(ctx, 'qwen2-tiny', ckpt.config, ckpt.tensors, o, () => undefined);
    expect(r.steps).toHaveLength(1);
    const s = r.steps[0];
    // Whole trajectories: one shared analysis, then per rollout 2 planner turns and 2 tool calls, a verdict
    // after the first turn (CONTINUE; the last turn's is never asked) and an answer.
    expect(Object.fromEntries(MODULES.map((m) => [m, s.modules[m].calls]))).toEqual({ analysis: 1, planner: 4, executor: 4, verifier: 2, generator: 2 });
    for (const m of MODULES) expect(s.modules[m].newTokensPerCall).toBe(lengths[m]);
    // Every planner turn was trainable (token ids, logprobs), and answers alternate right / wrong.
    expect(s.trainingTurns).toBe(4);
    expect(s.responseTokens).toBe(4 * lengths.planner);
    expect(s.trainingTokens).toBe(4 * (s.modules.planner.promptTokensMean + lengths.planner));
    expect(s.reward).toBe(0.5);
    expect(s.skippedUpdate).toBeUndefined();
    expect(s.gradNorm).toBeGreaterThan(0);
    // Both rollouts' planner calls met in the batcher: each decode step served more than one sequence.
    expect(s.decode.planner.steps).toBeGreaterThan(0);
    expect(s.decode.planner.sequencesPerStep).toBeGreaterThan(1);
    // Decode rows needed: every token after a call's first (the frozen modules sample greedily, so none is redrawn).
    expect(s.decode.planner.tokens).toBe(4 * (lengths.planner - 1));
    expect(s.decode.frozen.tokens).toBe(MODULES.filter((m) => m !== 'planner').reduce((a, m) => a + s.modules[m].calls * (lengths[m] - 1), 0));
    expect(s.decode.frozen.sequences).toBe(s.decode.frozen.tokens);
    for (const v of [s.stepSeconds, s.rolloutSeconds, s.updateSeconds, s.engineSeconds, s.loss, s.updateTokensPerSec]) expect(Number.isFinite(v)).toBe(true);
    expect(s.modules.planner.engineSeconds).toBeGreaterThan(0);
    expect(r.gpuPeakBytes).toBeGreaterThan(r.runtimeMemory.weights);
  });

  it('refuses a runtime that would stop at an eos id', async () => {
    const ctx = await gpuFor('native');
    const ckpt = await loadCheckpoint(directorySource(TINY));
    const rt = await Qwen2Runtime.create(ctx, ckpt.config, ckpt.tensors, { maxContext: 64 });
    try {
      expect(() => new FixedLengthEngine(rt, { lengths, reply: e2eReply, name: 'x' })).toThrow(/eosTokenIds: \[\]/);
    } finally {
      rt.destroy();
    }
  });
});
