// The Training tab's settings: what to train (dataset, steps, starting adapter) in plain view, the Flow-GRPO
// and LoRA knobs under an Advanced fold, each labelled in plain words with the technical term after it. The
// agent-rollout part (benchmark import, an optional held-out file, rollout budgets) shows only when it applies: folded away in toy mode,
// so on a phone the toy's Start button stays near the top. The tool-choice task (no download) shows its own
// few settings (questions per step, held-out evaluation) under the same fold. Fields show the shown run's settings when it has
// them, so a 5000-step run is not shown beside a form that says 40.
import { html, nothing } from 'lit';
import type { ImportedBenchmark } from '../agent/benchmark-import';
import { LORA_MODULES, type LoraModule } from '../io/peft';
import { benchmarkLabel } from '../controllers/benchmark-choice';
import type { AdapterRecord, BenchmarkRecord } from '../store/records';
import { DEFAULT_GRPO_CONFIG } from '../trainer/grpo-config';
import type { RunSpec } from '../trainer/run/run-store';
import { TOY_TRAINING } from '../trainer/toy-task';
import { DEFAULT_AGENT_BUDGET, MAX_DEFAULT_ROLLOUT_CONCURRENCY, MAX_ROLLOUT_CONCURRENCY, rolloutConcurrency, type AgentBudget } from '../controllers/training/agent-training-driver';
import type { TrainingSettings } from '../controllers/training/training-driver';
import { adapterShape } from '../controllers/training/adapter-store';
import { toolTaskOf } from '../tasks/tool-task-run';
import { TOOL_TASK_FORM_DEFAULTS, type ToolTaskSettings } from '../controllers/training/tool-task-driver';
import { renderHeldOut, type HeldOutView } from './training-held-out-view';

/** toy: the toy task; tools: the tool-choice task (no download); agent: the loaded planner on a benchmark. */
export type TrainingMode = 'toy' | 'tools' | 'agent';

/** The mode a stored run was trained in (a tool-task run is an agent run whose spec records its task). */
export function specMode(spec: RunSpec): TrainingMode {
  return toolTaskOf(spec) ? 'tools' : spec.task === 'toy' ? 'toy' : 'agent';
}

export interface FormView {
  mode: TrainingMode;
  /** A planner is loaded that this page can train, and a benchmark with items is chosen. */
  agentReady: boolean;
  canTrainPlanner: boolean;
  scriptedLoaded: boolean;
  benchmark: ImportedBenchmark | null;
  storedBenchmarks: readonly BenchmarkRecord[];
  benchmarkChoice: string | null;
  busy: boolean;
  /** The learning rate field's value (typed for this mode, or the mode's default). */
  lr: string;
  startable: readonly AdapterRecord[];
  start: AdapterRecord | undefined;
  defaultRolloutsAtOnce: number;
  /** The shown run's spec, when it is a run of the form's mode: its settings fill the fields. */
  spec: RunSpec | null;
  onDataset(value: string): void;
  onGroupSize(value: number): void;
  onLrInput(): void;
  onStartChoice(id: string): void;
  onBenchmarkFile(e: Event): void;
  onChooseBenchmark(id: string): void;
  /** The optional held-out file (agent mode). */
  heldOut: HeldOutView;
}

/** The values the fields show: the shown run's where it has them, else the mode's defaults. */
export function formValues(mode: TrainingMode, spec: RunSpec | null): { steps: number; groupSize: number; learningRate: number | null; rank: number; targets: readonly LoraModule[] } {
  const s = spec && specMode(spec) === mode ? spec : null;
  const fresh = s?.adapter.kind === 'fresh' ? s.adapter : null;
  const defaults = mode === 'agent' ? { steps: 40, groupSize: 8 } : mode === 'tools' ? TOOL_TASK_FORM_DEFAULTS : TOY_TRAINING;
  return {
    steps: s?.steps ?? defaults.steps,
    groupSize: s?.grpo.groupSize ?? defaults.groupSize,
    learningRate: s?.grpo.learningRate ?? null,
    rank: fresh?.rank ?? (mode === 'tools' ? TOOL_TASK_FORM_DEFAULTS.rank : 4),
    targets: fresh?.targets ?? LORA_MODULES,
  };
}

function availability(v: FormView): string {
  const b = v.benchmark;
  if (!v.canTrainPlanner && v.scriptedLoaded) {
    return 'The scripted demo is loaded: its answers are scripted, not a model’s, so there is no planner to train. Load a planner model in Models & GPU to train it on agent rollouts; the toy task shows Flow-GRPO learning meanwhile.';
  }
  if (!v.canTrainPlanner) {
    return 'Imported benchmark (agent rollouts) trains the real planner and needs a planner model loaded in Models & GPU (it runs on this page’s WebGPU runtime; a planner on web-llm gives no token ids to train on). Until then the toy task shows Flow-GRPO learning in any browser.';
  }
  if (!b?.items.length) return 'Import a benchmark with reference answers below to train the loaded planner on agent rollouts.';
  return `Agent rollouts: each step runs the agent group-size times on each of a few of the ${b.items.length} items of “${b.name}”, scores the answers against the references, and updates the planner’s adapter in its worker.`;
}

export function renderSettings(v: FormView) {
  const agent = v.mode === 'agent';
  const b = v.benchmark;
  const f = formValues(v.mode, v.spec);
  const start = v.start;
  return html`<fieldset>
    <legend>Training settings</legend>
    <div class="grid">
      <label class="dataset">What to train on (dataset)<select id="dataset" @change=${(e: Event) => v.onDataset((e.target as HTMLSelectElement).value)}>
        <option value="toy" .selected=${v.mode === 'toy'}>Toy task (two-turn tool use, tiny planner)</option>
        <option value="tools" .selected=${v.mode === 'tools'}>Tool-choice task (no download)</option>
        <option value="agent" ?disabled=${!v.agentReady} .selected=${agent}>Imported benchmark (agent rollouts)</option>
      </select></label>
      <label>Training steps<input id="steps" type="number" min="1" max="10000" .value=${String(f.steps)} /></label>
      <label>Start from<select id="start-adapter" @change=${(e: Event) => v.onStartChoice((e.target as HTMLSelectElement).value)}>
        <option value="" .selected=${!start}>A fresh adapter</option>
        ${v.startable.map((a) => html`<option value=${a.id} .selected=${start?.id === a.id}>${a.name}</option>`)}
      </select></label>
    </div>
    ${start
      ? html`<p data-testid="start-adapter-note"><small>Training continues the stored adapter “${start.name}” (rank ${adapterShape(start).rank}, targets ${adapterShape(start).targets.join(', ')}); the stored copy is kept.</small></p>`
      : nothing}
    <details class="advanced" data-testid="advanced">
      <summary>Advanced: learning settings</summary>
      <div class="grid">
        <label>Scoring (reward)<select id="reward">${agent
          ? html`<option value="benchmark">Reference answers (${b!.kind})</option>`
          : v.mode === 'tools'
            ? html`<option value="exact">The answer, exactly (0 or 1)</option>`
            : html`<option value="toy">Toy: both turns right</option>`}</select></label>
        <label>Tries per question (group size)<input id="group" type="number" min="2" max="64" .value=${String(f.groupSize)}
          @input=${(e: Event) => v.onGroupSize(Number((e.target as HTMLInputElement).value))} /></label>
        <label>Step size of each update (learning rate)<input id="lr" type="number" min="0" step="any" .value=${f.learningRate !== null ? String(f.learningRate) : v.lr}
          @input=${() => v.onLrInput()} /></label>
        <label>Adapter size (LoRA rank)<input id="rank" type="number" min="1" max="256" .value=${String(f.rank)} ?disabled=${!!start} /></label>
      </div>
      <div class="targets" role="group" aria-label="Layers the adapter changes (LoRA target modules)">
        Layers the adapter changes (LoRA targets): ${LORA_MODULES.map((m) => html`<label><input type="checkbox" value=${m} .checked=${f.targets.includes(m)} ?disabled=${!!start} />${m}</label>`)}
      </div>
      ${agent ? renderAgentBudget(v) : v.mode === 'tools' ? renderToolTaskSettings(v.spec) : nothing}
    </details>
    ${agent ? html`<p data-testid="agent-availability"><small>${availability(v)}</small></p>` : nothing}
    ${v.mode === 'tools'
      ? html`<p data-testid="tool-task-about"><small>A tiny planner (random weights, in this browser's CPU, nothing downloaded) learns which tool answers a question —
          calculator, lookup table, unit converter — through the real agent loop; the other modules are fixed. Charts show its training reward and its
          accuracy on held-out questions. A step takes seconds.</small></p>`
      : nothing}
  </fieldset>`;
}

/** The tool-choice task's own settings, inside the Advanced fold: the shown run's, else the CLI's defaults. */
function renderToolTaskSettings(spec: RunSpec | null) {
  const s = spec && specMode(spec) === 'tools' ? spec : null;
  const queries = (s?.collector as { budget?: { queriesPerStep?: number } } | undefined)?.budget?.queriesPerStep ?? TOOL_TASK_FORM_DEFAULTS.queriesPerStep;
  const every = s ? (s.evaluation?.every ?? 0) : TOOL_TASK_FORM_DEFAULTS.evaluateEvery;
  const extra = s?.grpo.extraRollouts ?? TOOL_TASK_FORM_DEFAULTS.extraRollouts;
  // A stored run that recorded no bound ran without one.
  const maxKl = s ? (s.grpo.maxUpdateKl ?? DEFAULT_GRPO_CONFIG.maxUpdateKl) : TOOL_TASK_FORM_DEFAULTS.maxUpdateKl;
  return html`<div class="grid" role="group" aria-label="Tool-choice task">
      <label>Questions per step (queries per step)<input id="queries" type="number" min="1" max="64" .value=${String(queries)} /></label>
      <label title="Also at step 0 (before training) and the last step; 0: never">Test on held-out questions every (steps)<input id="eval-every" type="number" min="0" max="10000" .value=${String(every)} /></label>
      <label title="A group whose rollouts all failed gets up to this many more, until one succeeds (0: none)">More tries when all fail (extra rollouts)<input id="extra-rollouts" type="number" min="0" max="4096" .value=${String(extra)} /></label>
      ${maxUpdateKlField(maxKl)}
    </div>`;
}

/**
 * The trust region on each update (GrpoConfig.maxUpdateKl). Its words say what it does for the user: an update
 * that would change the planner's choices on its own batch by more than this is made smaller.
 */
function maxUpdateKlField(value: number) {
  return html`<label title="After each update the batch is scored again; an update that moved the planner's choices further than this from how they were sampled (KL per reply token) is scaled back. 0: no limit">Largest change per update (max update KL)<input id="max-update-kl" type="number" min="0" step="any" .value=${String(value)} /></label>`;
}

/** The trust region's bound from the form (0 turns it off); checked as GrpoConfig checks it. */
export function readMaxUpdateKl(root: ParentNode): number {
  const raw = (root.querySelector('#max-update-kl') as HTMLInputElement).value.trim();
  const v = Number(raw);
  if (raw === '' || !Number.isFinite(v) || v < 0) throw new Error(`Largest change per update (max update KL) must be a number, 0 or more (0: no limit), got '${raw}'`);
  return v;
}

/** The tool-choice task's settings from the form, each checked with a message naming its field. */
export function readToolTaskSettings(root: ParentNode): ToolTaskSettings {
  const n = (id: string) => Number((root.querySelector(`#${id}`) as HTMLInputElement).value);
  const queriesPerStep = n('queries');
  if (!Number.isInteger(queriesPerStep) || queriesPerStep < 1 || queriesPerStep > 64) throw new Error(`Questions per step must be a whole number from 1 to 64, got ${queriesPerStep}`);
  const evaluateEvery = n('eval-every');
  if (!Number.isInteger(evaluateEvery) || evaluateEvery < 0) throw new Error(`Test on held-out questions every … steps must be a whole number, 0 or more, got ${evaluateEvery}`);
  return { queriesPerStep, evaluateEvery, extraRollouts: readExtraRollouts(root), maxUpdateKl: readMaxUpdateKl(root) };
}

/** Rollout budgets of agent runs, inside the Advanced fold. */
function renderAgentBudget(v: FormView) {
  return html`<div class="grid" role="group" aria-label="Agent rollouts">
      <label>Turns per answer (max turns)<input id="max-turns" type="number" min="1" max="10" value=${DEFAULT_AGENT_BUDGET.maxTurns} /></label>
      <label>Planner reply length (planner tokens)<input id="planner-tokens" type="number" min="1" max="2048" value=${DEFAULT_AGENT_BUDGET.plannerTokens} /></label>
      <label>Other modules' reply length (other modules' tokens)<input id="module-tokens" type="number" min="1" max="4096" value=${DEFAULT_AGENT_BUDGET.moduleTokens} /></label>
      <label>Questions per step (queries per step)<input id="queries" type="number" min="1" max="64" value=${DEFAULT_AGENT_BUDGET.queriesPerStep} /></label>
      <label>Tokens per update batch (micro-batch tokens)<input id="micro-tokens" type="number" min="2" max="16384" value=${DEFAULT_AGENT_BUDGET.microBatchTokens} /></label>
      <label title="A group whose rollouts all failed gets up to this many more, until one succeeds (0: none)">More tries when all fail (extra rollouts)<input id="extra-rollouts" type="number" min="0" max="4096" value=${DEFAULT_GRPO_CONFIG.extraRollouts} /></label>
      ${maxUpdateKlField(DEFAULT_GRPO_CONFIG.maxUpdateKl)}
      <label>Tries run together (rollouts at once)<input id="rollout-concurrency" type="number" min="1" max=${MAX_ROLLOUT_CONCURRENCY} step="1"
        placeholder=${String(v.defaultRolloutsAtOnce)} aria-describedby="rollout-concurrency-hint" /></label>
    </div>
    <p id="rollout-concurrency-hint" data-testid="rollout-concurrency-hint"><small>Rollouts at once: a group's rollouts that run together have their planner calls decoded together, up to 8 sequences per step with 4-bit weights (4 with f16 weights); at most ${MAX_ROLLOUT_CONCURRENCY}; empty means min(group size, ${MAX_DEFAULT_ROLLOUT_CONCURRENCY}).</small></p>`;
}

/**
 * Importing a benchmark to train the loaded planner on: open in agent mode, and in toy mode a closed fold
 * below the run's controls (its text says why the option is greyed out until then).
 */
export function renderAgentSetup(v: FormView) {
  const b = v.benchmark;
  const agent = v.mode === 'agent';
  const body = html`<div class="row">
      <label>Benchmark file (AgentFlow data.json or JSONL)
        <input type="file" accept=".json,.jsonl,.ndjson,application/json" data-testid="training-benchmark-file" @change=${(e: Event) => v.onBenchmarkFile(e)} />
      </label>
      ${v.storedBenchmarks.length
        ? html`<label>Imported benchmarks
            <select data-testid="training-stored-benchmarks" ?disabled=${v.busy} @change=${(e: Event) => v.onChooseBenchmark((e.target as HTMLSelectElement).value)}>
              ${v.benchmarkChoice && !v.storedBenchmarks.some((r) => r.id === v.benchmarkChoice) ? html`<option value="" selected>${b?.name ?? ''} (being kept…)</option>` : nothing}
              ${v.storedBenchmarks.map((r) => html`<option value=${r.id} .selected=${r.id === v.benchmarkChoice}>${benchmarkLabel(r)}</option>`)}
            </select></label>`
        : nothing}
      ${b ? html`<span role="status" data-testid="training-benchmark-summary">Imported ${b.items.length} item${b.items.length === 1 ? '' : 's'} from “${b.name}” (reward: ${b.kind})${b.problems.length ? `; ${b.problems.length} skipped` : ''}.</span>` : nothing}
    </div>
    ${b?.problems.length
      ? html`<ul class="error" data-testid="training-import-problems" aria-label="Problems in the file">${b.problems.map((p) => html`<li>${p.message}</li>`)}</ul>`
      : nothing}`;
  return agent
    ? html`<fieldset data-testid="agent-setup"><legend>Agent rollouts: the benchmark</legend>${body}${renderHeldOut(v.heldOut)}</fieldset>`
    : html`<details class="agent-setup" data-testid="agent-setup">
        <summary>Train the loaded planner on a benchmark instead</summary>
        <p data-testid="agent-availability"><small>${availability(v)}</small></p>
        ${body}
      </details>`;
}

/** The form's settings for a new run; a stored adapter to start from brings its own rank and targets. */
export function readSettings(root: ParentNode, start: AdapterRecord | undefined): TrainingSettings {
  const v = (id: string) => (root.querySelector(`#${id}`) as HTMLInputElement | HTMLSelectElement).value;
  const targets = [...root.querySelectorAll<HTMLInputElement>('.targets input:checked')].map((i) => i.value as LoraModule);
  return {
    dataset: v('dataset'),
    reward: v('reward'),
    groupSize: Number(v('group')),
    steps: Number(v('steps')),
    learningRate: Number(v('lr')),
    ...(start ? { ...adapterShape(start), startAdapter: { id: start.id, name: start.name } } : { rank: Number(v('rank')), targets, startAdapter: null }),
  };
}

/** The agent rollouts' budgets from the form; a bad "rollouts at once" is refused with the driver's message. */
export function readBudget(root: ParentNode, groupSize: number): Partial<AgentBudget> {
  const n = (id: string) => Number((root.querySelector(`#${id}`) as HTMLInputElement).value);
  const budget: Partial<AgentBudget> = { maxTurns: n('max-turns'), plannerTokens: n('planner-tokens'), moduleTokens: n('module-tokens'), queriesPerStep: n('queries'), microBatchTokens: n('micro-tokens') };
  // An empty field leaves the driver's default, min(group size, MAX_DEFAULT_ROLLOUT_CONCURRENCY).
  const atOnce = (root.querySelector('#rollout-concurrency') as HTMLInputElement).value.trim();
  // The driver's check, so a bad value is refused before anything starts.
  if (atOnce !== '') budget.rolloutConcurrency = rolloutConcurrency({ rolloutConcurrency: Number(atOnce) }, groupSize);
  return budget;
}

/** Dynamic sampling's budget per group with no success (0 turns it off); checked as GrpoConfig checks it. */
export function readExtraRollouts(root: ParentNode): number {
  const v = Number((root.querySelector('#extra-rollouts') as HTMLInputElement).value);
  if (!Number.isInteger(v) || v < 0 || v > 4096) throw new Error(`Extra rollouts for a group with no success must be a whole number from 0 to 4096, got ${v}`);
  return v;
}
