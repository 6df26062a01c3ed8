// Runs a benchmark subset through the agent: each item is a stored conversation with answer tags and its
// reward scored against the item's reference; results go to IndexedDB as they complete. A run is named by
// the model, adapter, benchmark, item count, turn budget and date it ran with, and made unique among the stored
// runs (" (2)"), so runs told apart in the list are told apart in the chart and in Compare too.
import { readConstrainReplies } from '../tools/tool-settings';
import type { BenchmarkItem, ImportedBenchmark } from '../../agent/benchmark-import';
import { isScripted } from '../../agent/engines-used';
import { referenceText, scoreRunInto } from '../../agent/experiment-file';
import type { AgentEngines } from '../../agent/loop';
import type { ModuleName } from '../../agent/prompts';
import { startConversation } from '../../agent/session';
import type { ExperimentItemRecord, ExperimentRecord } from '../../store/records';
import type { Tool } from '../../tools/tool';
import { getExperiment, listExperiments, putExperiment, putExperimentItem, summarize, uniqueRunName } from './experiment-store';
import { nextCall } from '../conversation/module-calls';

/** Where a run is: item `item` of `total` (1-based, `number` as the subset box counts), and its module and turn. */
export interface ExperimentProgress {
  item: number;
  total: number;
  number: number;
  pid: string;
  module: ModuleName;
  turn: number;
}

export interface ExperimentRunOptions {
  benchmark: ImportedBenchmark;
  /** Indices into benchmark.items. */
  indices: number[];
  maxTurns: number;
  engines: AgentEngines;
  tools: Tool[];
  /** Default: experimentName() of the engines, adapter, benchmark, items, turns and date. Made unique either way. */
  name?: string;
  /** The stored benchmark's id (src/store/benchmarks.ts), recorded with the run. */
  benchmarkId?: string;
  /** The planner's active LoRA adapter, when it has one: named in the run's name and recorded. */
  adapter?: { id: string; name: string } | null;
  signal?: AbortSignal;
  dbName?: string;
  onItem?: (item: ExperimentItemRecord, done: number, total: number) => void;
  /** Each item as it starts, and each module call within it. */
  onProgress?: (p: ExperimentProgress) => void;
}

/** The model part of an engine id ('planner:Qwen2.5-0.5B-Instruct' -> 'Qwen2.5-0.5B-Instruct'). */
function modelName(id: string): string {
  return id.replace(/^(planner|web-llm|shared):/, '');
}

/** "Qwen2.5-0.5B-Instruct + adapter “toy run” · bamboogle × 2 · 3 turns · 2025-06-01 14:05" (local time). */
export function experimentName(o: { engines: AgentEngines; adapter?: { name: string } | null; benchmark: string; items: number; maxTurns: number; at: Date }): string {
  const model = isScripted(o.engines) ? 'scripted demo' : modelName(o.engines.planner.id);
  const p = (n: number) => String(n).padStart(2, '0');
  const d = o.at;
  const date = `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
  return `${model}${o.adapter ? ` + adapter “${o.adapter.name}”` : ''} · ${o.benchmark} × ${o.items} · ${o.maxTurns} turn${o.maxTurns === 1 ? '' : 's'} · ${date}`;
}

export async function runExperiment(o: ExperimentRunOptions): Promise<{ experiment: ExperimentRecord; items: ExperimentItemRecord[] }> {
  if (!o.indices.length) throw new Error('experiment: choose at least one item to run');
  if (!Number.isInteger(o.maxTurns) || o.maxTurns < 1) throw new Error(`experiment: turn budget must be a positive integer, got ${o.maxTurns}`);
  const id = globalThis.crypto?.randomUUID?.() ?? `x-${Date.now().toString(36)}`;
  const createdAt = Date.now();
  const wanted = o.name ?? experimentName({ engines: o.engines, adapter: o.adapter, benchmark: o.benchmark.name, items: o.indices.length, maxTurns: o.maxTurns, at: new Date(createdAt) });
  const name = uniqueRunName(wanted, (await listExperiments(o.dbName)).map((r) => r.name));
  // Recorded with the run: whether module replies were decoded under their JSON Schemas changes what a run measures.
  const constrainReplies = await readConstrainReplies(o.dbName);
  const experiment: ExperimentRecord = {
    id,
    createdAt,
    name,
    status: 'running',
    config: {
      benchmark: o.benchmark.name,
      ...(o.benchmarkId ? { benchmarkId: o.benchmarkId } : {}),
      rewardKind: o.benchmark.kind,
      indices: o.indices,
      maxTurns: o.maxTurns,
      engines: [o.engines.planner.id, o.engines.shared.id],
      adapter: o.adapter ?? null,
      scripted: isScripted(o.engines),
      tools: o.tools.map((t) => t.card.name),
      constrainReplies,
    },
    total: o.indices.length,
  };
  await putExperiment(experiment, o.dbName);
  const items: ExperimentItemRecord[] = [];
  try {
    for (const [k, index] of o.indices.entries()) {
      if (o.signal?.aborted) break;
      const item: BenchmarkItem = o.benchmark.items[index];
      if (!item) throw new Error(`experiment: item ${index} is not in '${o.benchmark.name}' (it has ${o.benchmark.items.length})`);
      const rec: ExperimentItemRecord = { experimentId: id, index: k, number: index + 1, pid: item.pid, query: item.query, reference: referenceText(item.answer) };
      const started = Date.now();
      const at = { item: k + 1, total: o.indices.length, number: index + 1, pid: item.pid };
      o.onProgress?.({ ...at, module: 'analysis', turn: 0 });
      try {
        const r = await startConversation(item.query, {
          tools: o.tools,
          engines: o.engines,
          config: { maxTurns: o.maxTurns, answerTags: true, constrainReplies },
          title: `${o.benchmark.name} #${index + 1}${item.pid !== String(index + 1) ? ` (${item.pid})` : ''}`,
          settings: { experiment: { id, name } },
          onStep: (step) => {
            const next = nextCall(step, o.maxTurns);
            if (next) o.onProgress?.({ ...at, ...next });
          },
          ...(item.answer !== undefined ? { reward: { kind: o.benchmark.kind, reference: item.answer, numbers: item.numbers, options: item.options } } : {}),
          signal: o.signal,
          dbName: o.dbName,
        });
        rec.conversationId = r.conversationId;
        // The session scored it (with a judge, maybe); the same pure rule again says how, for the Items table.
        scoreRunInto(rec, item, o.benchmark.kind, r, r.reward);
        rec.seconds = (Date.now() - started) / 1000;
      } catch (e) {
        rec.errors = [(e as Error).message ?? String(e)];
      }
      items.push(rec);
      await putExperimentItem(rec, o.dbName);
      o.onItem?.(rec, k + 1, o.indices.length);
    }
    experiment.status = o.signal?.aborted ? 'interrupted' : 'done';
  } catch (e) {
    experiment.status = 'error';
    throw e;
  } finally {
    experiment.summary = { ...summarize(items) };
    // The run may have been renamed while it ran: the stored name wins.
    experiment.name = (await getExperiment(id, o.dbName).catch(() => undefined))?.name ?? experiment.name;
    await putExperiment(experiment, o.dbName).catch(() => undefined);
  }
  return { experiment, items };
}
