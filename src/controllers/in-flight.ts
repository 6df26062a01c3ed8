// "The work in progress, until it settles": the panels keep the promise of their run so that a stop (the
// app's engine swap) can wait for it, and forget it once it ends. Written out by hand in each panel, a
// settled promise that clears the field after a newer one was tracked would clear the newer one.

/** The promise of the work in progress, kept until it settles. */
export class InFlight<T = void> {
  private p: Promise<T> | null = null;

  /** The work in progress (as track() returned it), or null once it has settled. */
  get current(): Promise<T> | null {
    return this.p;
  }

  /** Keeps `work` as the work in progress until it settles; the returned promise settles as `work` does, after it is forgotten. */
  track(work: Promise<T>): Promise<T> {
    const t = work.finally(() => {
      if (this.p === t) this.p = null;
    });
    this.p = t;
    return t;
  }

  /** Resolves once nothing is in progress, work tracked meanwhile included; how the work ended does not matter. */
  async idle(): Promise<void> {
    while (this.p) await this.p.catch(() => undefined);
  }
}
