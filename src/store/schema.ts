// The IndexedDB schema, versioned. Each migration upgrades from version i to i+1 and is never edited
// once released; new stores or indexes go in a new migration at the end of the list. Record shapes
// live in records.ts; fields may be added there without a migration (IndexedDB stores whole objects),
// but a new store or index needs one.
import type { DBSchema, IDBPDatabase, IDBPTransaction, StoreNames } from 'idb';
import type {
  AdapterRecord,
  BenchmarkRecord,
  CheckpointRecord,
  ConversationRecord,
  ExperimentItemRecord,
  ExperimentRecord,
  RolloutRecord,
  StepRecord,
  TrainingRunChunk,
  TrainingRunRecord,
} from './records';

export const DB_NAME = 'agentflow';

export interface AgentFlowDB extends DBSchema {
  settings: { key: string; value: { key: string; value: unknown; updatedAt: number } };
  conversations: { key: string; value: ConversationRecord; indexes: { byUpdated: number } };
  /** One record per completed step of a run (analysis, planner, executor, verifier, generator). */
  steps: { key: [string, number]; value: StepRecord; indexes: { byConversation: string } };
  rollouts: { key: string; value: RolloutRecord; indexes: { byRun: string; byGroup: string } };
  adapters: { key: string; value: AdapterRecord; indexes: { byCreated: number } };
  /** Training checkpoints: adapter weights, optimizer moments, step, RNG state. */
  checkpoints: { key: string; value: CheckpointRecord; indexes: { byRun: string } };
  trainingRuns: { key: string; value: TrainingRunRecord; indexes: { byCreated: number } };
  /** Sealed chunks of a run's per-step history (v3); the run record keeps only the steps after them. */
  trainingRunSteps: { key: [string, number]; value: TrainingRunChunk };
  experiments: { key: string; value: ExperimentRecord; indexes: { byCreated: number } };
  experimentItems: { key: [string, number]; value: ExperimentItemRecord; indexes: { byExperiment: string } };
  /** Imported benchmark files (v2). */
  benchmarks: { key: string; value: BenchmarkRecord; indexes: { byImported: number } };
}

export type Migration = (
  db: IDBPDatabase<AgentFlowDB>,
  tx: IDBPTransaction<AgentFlowDB, StoreNames<AgentFlowDB>[], 'versionchange'>,
) => void;

export const MIGRATIONS: Migration[] = [
  // v1
  (db) => {
    db.createObjectStore('settings', { keyPath: 'key' });
    db.createObjectStore('conversations', { keyPath: 'id' }).createIndex('byUpdated', 'updatedAt');
    db.createObjectStore('steps', { keyPath: ['conversationId', 'seq'] }).createIndex('byConversation', 'conversationId');
    const rollouts = db.createObjectStore('rollouts', { keyPath: 'id' });
    rollouts.createIndex('byRun', 'runId');
    rollouts.createIndex('byGroup', 'groupId');
    db.createObjectStore('adapters', { keyPath: 'id' }).createIndex('byCreated', 'createdAt');
    db.createObjectStore('checkpoints', { keyPath: 'id' }).createIndex('byRun', 'runId');
    db.createObjectStore('trainingRuns', { keyPath: 'id' }).createIndex('byCreated', 'createdAt');
    db.createObjectStore('experiments', { keyPath: 'id' }).createIndex('byCreated', 'createdAt');
    db.createObjectStore('experimentItems', { keyPath: ['experimentId', 'index'] }).createIndex('byExperiment', 'experimentId');
  },
  // v2: imported benchmarks, which were kept only in the page until then.
  (db) => {
    db.createObjectStore('benchmarks', { keyPath: 'id' }).createIndex('byImported', 'importedAt');
  },
  // v3: a run's history in sealed chunks beside its record. Each step rewrote the record with every step so far,
  // which slowed a long run step by step. Records stored before keep their whole history in `stats` and are
  // read as they are; the run store moves it into chunks the next time it writes that run, in one transaction.
  (db) => {
    db.createObjectStore('trainingRunSteps', { keyPath: ['runId', 'chunk'] });
  },
];

export const DB_VERSION = MIGRATIONS.length;
