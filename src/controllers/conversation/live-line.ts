// The live line of a run in progress (`Live`: which module and turn, the text streaming in, the call's clock)
// as each event of the run moves it on. Pure: the controller stores what these return.
import type { ModuleName } from '../../agent/prompts';
import type { StepRecord } from '../../store/records';
import type { Live } from './conversation-state';
import { callOfStep, callStat, startCall, tokenArrived, upcomingCall } from './module-calls';

/** A run just started: nothing streamed yet, waiting for storage to open. */
export function startLive(id: string, controller: AbortController, resuming: boolean, now: number): Live {
  return { id, module: null, turn: 0, text: '', answer: '', controller, call: startCall(now), calls: [], waitingForStorage: true, toolNote: null, resuming };
}

/** A token of `module`'s call in `turn`: a new call's first token starts the text afresh; the generator's is the answer too. */
export function withToken(l: Live, module: ModuleName, turn: number, piece: string, now: number): Live {
  const fresh = l.module !== module || l.turn !== turn;
  // Every call ends with a step, and a step restarts the clock: these tokens are the current call's.
  const call = tokenArrived(l.call, now);
  return { ...l, module, turn, call, text: fresh ? piece : l.text + piece, answer: module === 'generator' ? (fresh ? piece : l.answer + piece) : l.answer };
}

/**
 * A step stored (`steps`: the run's steps with it last): the call it ends joins the finished calls, and the line
 * says what runs next before its first token arrives (a slow prefill would otherwise show the last module).
 */
export function afterStep(l: Live, steps: StepRecord[], maxTurns: number, now: number): Live {
  const step = steps[steps.length - 1];
  const done = callOfStep(step);
  const calls = done ? [...l.calls, callStat(done.module, step.turn, l.call, now, step, done.outcome)] : l.calls;
  const next = upcomingCall(steps, maxTurns);
  return next
    ? { ...l, calls, call: startCall(now), module: next.module, turn: next.turn, text: '', toolNote: null, resuming: false }
    : { ...l, calls, call: startCall(now), toolNote: null, resuming: false };
}
