// "Stop what runs on the loaded models?": an action that replaces the engines in use (loading others, the
// demo) waits for the user while something runs on them, and the question follows what runs until answered.
import type { ReactiveController, ReactiveControllerHost } from 'lit';
import { describeUses, type EngineUse } from './engine-use';

export interface SwapAsked {
  uses: readonly EngineUse[];
  action: string;
  when: string;
  button: string;
  go: () => void;
}

export class SwapQuestion implements ReactiveController {
  asked: SwapAsked | null = null;
  /** Re-reads what runs on the engines while the question is open (see hostUpdated). */
  private watch: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly host: ReactiveControllerHost,
    /** What runs on the engines in use now (the app, which owns them, says). */
    private readonly inUse: () => readonly EngineUse[],
    /** Says why a question closed by itself. */
    private readonly say: (notice: string) => void,
  ) {
    host.addController(this);
  }

  /**
   * Whether `action` must wait for the user: when something runs on the engines in use, the question is
   * asked, and `go` runs once they accept stopping it.
   */
  askFirst(action: string, when: string, button: string, go: () => void): boolean {
    const uses = this.inUse();
    this.set(uses.length ? { uses, action, when, button, go } : null);
    return uses.length > 0;
  }

  accept(): void {
    const c = this.asked;
    this.set(null);
    c?.go();
  }

  decline(): void {
    this.set(null);
  }

  /**
   * While the question is open, what it asks about may end by itself (a run finishes, the user pauses it in
   * its tab) or change (one of two ends, an experiment moves on). An EngineUse says nothing when it ends, so
   * the question re-reads the uses a few times a second, which costs nothing next to what it waits on.
   */
  hostUpdated(): void {
    const on = this.asked !== null;
    if (on && !this.watch) this.watch = setInterval(() => this.recheck(), 250);
    if (!on) this.stopWatching();
  }

  hostDisconnected(): void {
    this.stopWatching();
  }

  private stopWatching(): void {
    if (this.watch) {
      clearInterval(this.watch);
      this.watch = null;
    }
  }

  /**
   * Nothing in use any more: the question no longer applies, so it closes and says so, and the action is not
   * started for the user. The click it answers may be long past (a training run can take an hour) and the
   * user may have been about to keep the run; a download or a swap the user did not confirm must not start
   * then by itself. Pressing the button again goes ahead without a question.
   */
  private recheck(): void {
    const c = this.asked;
    if (!c) return;
    const uses = this.inUse();
    if (!uses.length) {
      this.set(null);
      this.say(`Nothing uses the loaded models any more (${describeUses(c.uses)} ended), so there is nothing to stop. ${c.action} did not start: press “${c.button}” again to go ahead.`);
    } else if (describeUses(uses) !== describeUses(c.uses) || uses.map((u) => u.kept).join() !== c.uses.map((u) => u.kept).join()) {
      this.set({ ...c, uses });
    }
  }

  private set(a: SwapAsked | null): void {
    this.asked = a;
    this.host.requestUpdate();
  }
}
