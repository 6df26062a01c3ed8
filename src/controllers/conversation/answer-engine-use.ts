// Which of the page's engines a chat answer is on, so the page can stop it before it replaces them: a question
// still being checked (engines, fit) does not start; an answer running is interrupted with its steps kept.
import type { AgentEngines } from '../../agent/loop';
import type { EngineUse } from '../engines/engine-use';

/** A question being checked on the page's engines: a swap meanwhile marks it stopped and waits for the check. */
interface Checking {
  engines: AgentEngines;
  stopped: boolean;
  checked: Promise<void>;
  done: () => void;
}

export class AnswerEngineUse {
  /**
   * A question ask() is still checking on the page's engines, before it runs: a swap in that window would
   * otherwise find nothing in use and dispose the engines it is about to run on.
   */
  private checking: Checking | null = null;
  /** The engines the answer in progress runs on, and its end. */
  private running: { engines: AgentEngines; ended: Promise<void> } | null = null;

  /** A question is being checked on the page's engines. */
  get busy(): boolean {
    return this.checking !== null;
  }

  /**
   * A question's checks start, on `page` (the page's engines; undefined: the element's own, which no swap
   * replaces). Call `end` when they are over; `stopped` then says whether a swap came meanwhile.
   */
  check(page: AgentEngines | undefined): { end: () => void; stopped: () => boolean } {
    let done!: () => void;
    const c: Checking | null = page ? { engines: page, stopped: false, checked: new Promise<void>((r) => (done = r)), done: () => done() } : null;
    this.checking = c;
    return {
      end: () => {
        if (this.checking === c) this.checking = null;
        c?.done();
      },
      stopped: () => !!c?.stopped,
    };
  }

  /** An answer starts running on `engines`: returns what to call when it has ended. */
  run(engines: AgentEngines): () => void {
    let ended!: () => void;
    this.running = { engines, ended: new Promise<void>((r) => (ended = r)) };
    return () => {
      this.running = null;
      ended();
    };
  }

  /** The answer being checked or run on the page's engines `page`; `stop` stops a running one (Stop). */
  use(page: AgentEngines | undefined, stop: () => void): EngineUse | null {
    const a = this.checking;
    if (a && page && a.engines === page) {
      return {
        what: 'a chat answer',
        kept: 'it did not start; the question stays in the input',
        stop: async () => {
          a.stopped = true;
          await a.checked;
        },
      };
    }
    const on = this.running;
    if (!on || !page || on.engines !== page) return null;
    return {
      what: 'a chat answer',
      kept: 'it is interrupted with its steps kept; resume it in Chat',
      stop: async () => {
        stop();
        await on.ended;
      },
    };
  }
}
