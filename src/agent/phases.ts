// The loop's phase rules in one place: which module runs after a stored step, and where a conversation stands
// after its steps. The loop resumes from stateFromSteps, and the chat names the next module with nextModule,
// so a stored conversation, a resumed one and the live view agree on what comes next.
import type { StepModule, StepRecord } from '../store/records';
import type { MemoryEntry } from './memory';
import type { PlannerAction } from './parse';

export type Phase = 'analysis' | 'plan' | 'execute' | 'verify' | 'generate' | 'done';

/** Where a conversation stands, rebuilt from its stored steps. */
export interface LoopState {
  phase: Phase;
  turn: number;
  analysis: string;
  memory: MemoryEntry[];
  action: PlannerAction | null;
  /** The registered tool the planner's tool name resolved to, null when none did. */
  resolvedTool: string | null;
  answer: string | null;
  nextSeq: number;
  turnsUsed: number;
}

/** The module a successful step hands over to (null after the answer or a failed call: the loop decides). */
export function nextModule(step: StepRecord): StepModule | null {
  switch (step.kind) {
    case 'analysis':
      return 'planner';
    case 'planner':
      return 'executor';
    case 'executor':
      return 'verifier';
    case 'verifier':
      return step.data.verdict === 'STOP' ? 'generator' : 'planner';
    default:
      return null;
  }
}

export function memoryOfError(turn: number, action: PlannerAction | null, message: string): MemoryEntry {
  return { turn, subGoal: action?.subGoal ?? '', toolName: action?.toolName ?? '', args: null, result: '', ok: false, error: message };
}

/** Moves `s` past one stored step (the loop's own transitions, replayed). */
export function applyStep(s: LoopState, st: StepRecord): void {
  s.nextSeq = Math.max(s.nextSeq, st.seq + 1);
  const module = st.kind === 'error' ? st.data.module : st.kind;
  switch (module) {
    case 'analysis':
      s.analysis = st.kind === 'analysis' ? String(st.data.text ?? '') : '';
      s.phase = 'plan';
      break;
    case 'planner':
      s.turn = st.turn;
      s.turnsUsed = Math.max(s.turnsUsed, st.turn);
      if (st.kind === 'planner') {
        s.action = st.data.action;
        s.resolvedTool = st.data.resolvedTool ?? null;
        s.phase = 'execute';
      } else if (st.kind === 'error') {
        s.memory.push(memoryOfError(st.turn, null, `planner: ${String(st.data.message)}`));
        s.turn = st.turn + 1;
        s.phase = 'plan';
      }
      break;
    case 'executor':
      if (st.kind === 'executor') {
        const d = st.data;
        s.memory.push({
          turn: st.turn,
          subGoal: String(d.subGoal ?? ''),
          toolName: String(d.toolName ?? ''),
          args: d.args ?? null,
          result: String(d.result ?? ''),
          ok: d.ok === true,
          ...(d.error ? { error: String(d.error) } : {}),
        });
      } else if (st.kind === 'error') s.memory.push(memoryOfError(st.turn, s.action, String(st.data.message)));
      s.phase = 'verify';
      break;
    case 'verifier':
      if (st.kind === 'verifier' && st.data.verdict === 'STOP') s.phase = 'generate';
      else {
        s.turn = st.turn + 1;
        s.phase = 'plan';
      }
      break;
    case 'generator':
      if (st.kind === 'generator') {
        s.answer = String(st.data.text ?? '');
        s.phase = 'done';
      }
      break;
  }
}

/** Rebuilds memory and the next phase from stored steps (sorted by seq). */
export function stateFromSteps(steps: StepRecord[]): LoopState {
  const s: LoopState = { phase: 'analysis', turn: 1, analysis: '', memory: [], action: null, resolvedTool: null, answer: null, nextSeq: 0, turnsUsed: 0 };
  for (const st of [...steps].sort((a, b) => a.seq - b.seq)) applyStep(s, st);
  return s;
}
