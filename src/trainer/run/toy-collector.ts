// The toy task's rollouts (src/trainer/toy-task.ts): its tiny planner picks a tool token, the environment
// answers with a result token, the planner picks an argument, and the reward is 1 when both were right.
// A step's groups are played together (turn 1 for all, then turn 2), so a GPU policy batches them.
import { Rng } from '../../util/rng';
import { mixSeed, type GroupPlan } from './schedule';
import type { CollectContext, RolloutCollector } from './collector';
import type { TokenPolicy } from '../token-policy';
import { playToyRollouts, type ToyTask } from '../toy-task';
import type { CollectedGroup, Trajectory } from './rollout-samples';

export class ToyCollector implements RolloutCollector {
  /**
   * @param policy The policy being trained, as it is now (the session's backend: sampling is on-policy).
   * @param adapterId Recorded as the adapter that sampled each turn.
   */
  constructor(
    readonly task: ToyTask,
    private readonly policy: () => TokenPolicy,
    readonly temperature: number,
    private readonly adapterId: () => string | null = () => null,
  ) {}

  get items(): number {
    return this.task.numQueries;
  }

  async collect(plans: readonly GroupPlan[], ctx: CollectContext): Promise<CollectedGroup[]> {
    if (!plans.length || ctx.signal?.aborted) return [];
    const size = plans[0].rollouts.length;
    if (plans.some((p) => p.rollouts.length !== size)) throw new Error('toy task: every group of a step must have the same size');
    // The rollouts' own seeds, mixed: one stream for the step, reproducible from the plan alone.
    const rng = new Rng(mixSeed(...plans.flatMap((p) => p.rollouts.map((r) => r.seed))));
    const step = plans[0].step;
    ctx.onProgress?.({ step, groupsDone: 0, groups: plans.length, rolloutsDone: 0, groupSize: size });
    const { rollouts, samples } = await playToyRollouts(this.task, this.policy(), plans.map((p) => p.item), size, this.temperature, rng, `step${step}`);
    const adapterId = this.adapterId();
    const groups = plans.map((p, qi): CollectedGroup => {
      const trajectories = Array.from({ length: size }, (_, g): Trajectory => {
        const r = rollouts[qi * size + g];
        const turns = samples
          .filter((s) => s.rolloutId === r.rolloutId)
          .map((s) => ({
            turn: s.turn,
            promptTokens: s.promptTokens,
            responseTokens: s.responseTokens,
            logprobs: s.oldLogprobs ?? [],
            adapterId,
            // No tokenizer: the ids stand in for text in the export.
            prompt: `token ids: ${s.promptTokens.join(' ')}`,
            completion: `token ids: ${s.responseTokens.join(' ')}`,
          }));
        return { rolloutId: p.rollouts[g].id, rollout: g, reward: r.reward, turns, status: 'done', answer: `tool ${r.tool}, argument ${r.argument}`, skipped: [] };
      });
      return { groupId: p.groupId, item: p.item, trajectories };
    });
    ctx.onProgress?.({ step, groupsDone: plans.length, groups: plans.length, rolloutsDone: size, groupSize: size });
    return groups;
  }
}
