// Runs a benchmark subset through the agent: each item is a stored conversation with answer tags and its
// reward scored against the item's reference; results go to IndexedDB as they complete.
import type { BenchmarkItem, ImportedBenchmark } from '../agent/benchmark-import';
import { isScripted } from '../agent/engines-used';
import type { AgentEngines } from '../agent/loop';
import { startConversation } from '../agent/session';
import type { ExperimentItemRecord, ExperimentRecord } from '../store/records';
import type { Tool } from '../tools/types';
import { putExperiment, putExperimentItem, summarize } from './experiment-store';
import { toolUsage } from './trajectory';

export interface ExperimentRunOptions {
  benchmark: ImportedBenchmark;
  /** Indices into benchmark.items. */
  indices: number[];
  maxTurns: number;
  engines: AgentEngines;
  tools: Tool[];
  name?: string;
  signal?: AbortSignal;
  dbName?: string;
  onItem?: (item: ExperimentItemRecord, done: number, total: number) => void;
}

export async function runExperiment(o: ExperimentRunOptions): Promise<{ experiment: ExperimentRecord; items: ExperimentItemRecord[] }> {
  if (!o.indices.length) throw new Error('experiment: choose at least one item to run');
  if (!Number.isInteger(o.maxTurns) || o.maxTurns < 1) throw new Error(`experiment: turn budget must be a positive integer, got ${o.maxTurns}`);
  const id = globalThis.crypto?.randomUUID?.() ?? `x-${Date.now().toString(36)}`;
  const experiment: ExperimentRecord = {
    id,
    createdAt: Date.now(),
    name: o.name ?? `${o.benchmark.name} × ${o.indices.length} (${o.maxTurns} turns)`,
    status: 'running',
    config: { benchmark: o.benchmark.name, rewardKind: o.benchmark.kind, indices: o.indices, maxTurns: o.maxTurns, engines: [o.engines.planner.id, o.engines.shared.id], scripted: isScripted(o.engines), tools: o.tools.map((t) => t.card.name) },
    total: o.indices.length,
  };
  await putExperiment(experiment, o.dbName);
  const items: ExperimentItemRecord[] = [];
  try {
    for (const [k, index] of o.indices.entries()) {
      if (o.signal?.aborted) break;
      const item: BenchmarkItem = o.benchmark.items[index];
      if (!item) throw new Error(`experiment: item ${index} is not in '${o.benchmark.name}' (it has ${o.benchmark.items.length})`);
      const rec: ExperimentItemRecord = { experimentId: id, index: k, pid: item.pid, query: item.query, reference: typeof item.answer === 'string' ? item.answer : JSON.stringify(item.answer ?? null) };
      try {
        const r = await startConversation(item.query, {
          tools: o.tools,
          engines: o.engines,
          config: { maxTurns: o.maxTurns, answerTags: true },
          title: `${o.benchmark.name} #${item.pid}`,
          ...(item.answer !== undefined ? { reward: { kind: o.benchmark.kind, reference: item.answer, numbers: item.numbers, options: item.options } } : {}),
          signal: o.signal,
          dbName: o.dbName,
        });
        rec.conversationId = r.conversationId;
        if (r.finalAnswer !== null) rec.answer = r.finalAnswer;
        if (r.reward !== undefined) rec.correct = r.reward >= 1;
        const usage = toolUsage(r.steps);
        rec.toolCalls = usage.toolCalls;
        rec.errors = [...usage.errors, ...(r.error ? [r.error] : []), ...(r.status === 'interrupted' ? ['stopped'] : [])];
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
    await putExperiment(experiment, o.dbName).catch(() => undefined);
  }
  return { experiment, items };
}
