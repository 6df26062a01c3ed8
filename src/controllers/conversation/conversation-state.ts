// What the chat shows of its conversations (ConversationState, the run in progress as `Live`), the events it
// sends the page for each step and answer, and what the ConversationController reads from the element it serves.
import type { ReactiveControllerHost } from 'lit';
import type { ModuleName } from '../../agent/prompts';
import type { SessionResult } from '../../agent/session';
import type { StorageNotice } from '../../store/db';
import type { ConversationRecord, StepRecord } from '../../store/records';
import type { CallClock, CallStat } from './module-calls';

export interface AgentflowTurnDetail {
  conversationId: string;
  turn: number;
  kind: StepRecord['kind'];
  step: StepRecord;
}

export interface AgentflowAnswerDetail {
  conversationId: string;
  query: string;
  answer: string | null;
  finalAnswer: string | null;
  status: SessionResult['status'];
  stopReason: SessionResult['stopReason'];
}

export interface Live {
  id: string;
  module: ModuleName | null;
  turn: number;
  text: string;
  answer: string;
  controller: AbortController;
  /** The module call in progress, timed here (performance.now() ms): a wait shows what it is waiting for. */
  call: CallClock;
  /** The run's finished module calls, newest last. */
  calls: CallStat[];
  /** Not started yet: the database is still opening (another tab may hold it at an older version). */
  waitingForStorage: boolean;
  /** What the running tool says it is doing (ToolContext.note), e.g. starting Python; null for none. */
  toolNote: string | null;
  /** A resumed run before its first call ends: the heading says where it picks up. */
  resuming: boolean;
}

export interface ConversationState {
  conversations: ConversationRecord[];
  /** The conversations shown (one: each question is its own conversation). */
  thread: string[];
  stepsById: Record<string, StepRecord[]>;
  live: Live | null;
  /** The chat's error line. */
  error: string | null;
  /** Runs that threw (storage would not open, a step could not be saved): their question and the error. */
  failed: Record<string, { query: string; error: string }>;
  /** A resume that would switch engines, waiting for the user to say yes or no. */
  confirmResume: { id: string; message: string } | null;
}

/** What the controller reads from the element it serves, and the question box it empties or refills. */
export interface ConversationHost extends ReactiveControllerHost, EventTarget {
  readonly dbName: string | undefined;
  readonly maxTurns: number;
  readonly storageNotice: StorageNotice | null;
  /** A host loading models for this chat says what, shown instead of "no model". */
  readonly modelsLoading: string | null;
  /** A run started with the question in the input: the input is emptied. */
  questionTaken(query: string): void;
  /** A run stopped before anything was stored: its question goes back to an empty input. */
  questionReturned(query: string, id: string): void;
}
