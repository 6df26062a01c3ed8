// The Training tab's charts of a run's steps: reward, loss, drift from the base model (KL), clip fraction,
// tokens/s, and, for agent runs, rollout time and planner batching; with the smoothing control. Each title
// says it in plain words first and the technical term second.
import { html, nothing } from 'lit';
import type { EvalPoint } from '../trainer/run/metrics';
import { lineChart, type Series } from './charts';
import type { TrainingStepPoint } from '../controllers/training/training-driver';

/**
 * The reward chart's series: the training reward and its rolling mean and, when the run evaluates on held-out
 * items, their accuracy at the steps evaluated (step 0: the adapter before training), on one step axis.
 */
export function rewardSeries(p: readonly TrainingStepPoint[], evals: readonly EvalPoint[]): { series: Series[]; x?: number[] } {
  const scored = evals.filter((e) => !e.error);
  const reward = (k: 'reward' | 'rollingReward') => (pt: TrainingStepPoint | undefined) => (pt && typeof pt[k] === 'number' ? pt[k] : NaN);
  if (!scored.length) return { series: [{ label: 'reward', values: p.map(reward('reward')) }, { label: 'rolling', values: p.map(reward('rollingReward')) }] };
  const x = [...new Set([...p.map((pt) => pt.step), ...scored.map((e) => e.step)])].sort((a, b) => a - b);
  const at = new Map(p.map((pt) => [pt.step, pt]));
  const acc = new Map(scored.map((e) => [e.step, e.accuracy]));
  return {
    x,
    series: [
      { label: 'reward', values: x.map((s) => reward('reward')(at.get(s))) },
      { label: 'rolling', values: x.map((s) => reward('rollingReward')(at.get(s))) },
      { label: 'held-out accuracy', values: x.map((s) => acc.get(s) ?? NaN), sparse: true },
    ],
  };
}

export function renderTrainingCharts(p: readonly TrainingStepPoint[], evals: readonly EvalPoint[], smoothing: number, setSmoothing: (w: number) => void) {
  // Points stored before a field existed (or from a run that has no such figure) plot as gaps.
  const series = (k: keyof TrainingStepPoint) => p.map((x) => (typeof x[k] === 'number' ? (x[k] as number) : NaN));
  const r = rewardSeries(p, evals);
  return html`<label class="smoothing">Smoothing
      <select id="smoothing" @change=${(e: Event) => setSmoothing(Number((e.target as HTMLSelectElement).value))}>
        ${[0, 0.6, 0.9].map((w) => html`<option value=${w} .selected=${smoothing === w}>${w ? `EMA ${w}` : 'off'}</option>`)}
      </select></label>
    <div class="charts" data-testid="training-charts">
      ${lineChart(r.series.length > 2 ? 'Reward in training and accuracy on held-out items' : 'Reward (share of rollouts answered right)', r.series, {
        smoothing,
        ...(r.x ? { x: r.x } : {}),
        flat: (v) => (v === 0 ? 'no rollout was rewarded, so there is nothing to learn from yet' : v === 1 ? 'every rollout was rewarded, so groups give no learning signal' : null),
      })}
      ${lineChart('Loss (the clipped policy objective)', [{ label: 'loss', values: series('loss') }], {
        // The clipped objective's value at the sampling policy is -mean(advantage), and advantages are
        // normalised within each group: ≈ 0 is its usual value, not a sign that nothing is learned.
        zeroBelow: 1e-6,
        log: true,
        smoothing,
        flat: (v) => (v === 0 ? 'usual for Flow-GRPO, whose advantages average 0 within a group; the reward shows the learning' : null),
      })}
      ${lineChart('Drift from the base model (KL to the base policy)', [{ label: 'KL', values: series('kl') }], { zeroBelow: 1e-9, log: true, smoothing, flat: (v) => (v === 0 ? 'the adapter has not moved the planner from its base model' : null), empty: 'not measured: this run trains with beta 0 (no KL term), so no reference pass is made' })}
      ${lineChart('Updates held back (clip fraction)', [{ label: 'clip fraction', values: series('clipFraction') }], { smoothing, flat: (v) => (v === 0 ? 'no ratio was clipped (every update stayed within the clip range)' : null) })}
      ${lineChart('Training speed (tokens per second)', [{ label: 'tokens/s', values: series('tokensPerSecond') }], { smoothing })}
      ${p.some((x) => x.rolloutSeconds !== undefined) ? lineChart('Rollout time per step (s)', [{ label: 'rollouts s', values: series('rolloutSeconds') }], { smoothing }) : nothing}
      ${p.some((x) => x.plannerSequencesPerStep !== undefined)
        ? lineChart('Planner replies decoded together (sequences per decode step)', [{ label: 'sequences/step', values: series('plannerSequencesPerStep') }], { smoothing })
        : nothing}
    </div>`;
}
