// The refresh loop: one refresh at a time, the next `every()` ms after the last ended; a
// refresh asked for while one runs (a selector changed) runs right after it. The timers
// are injected, so node tests drive this without waiting.

export class Poller {
  // refresh: async () => void (handles its own errors); every: () => ms.
  constructor(refresh, every, timers = globalThis) {
    this.refresh = refresh;
    this.every = every;
    this.timers = timers;
    this.timer = 0;
    this.busy = false;
    this.again = false;
    this.stopped = true;
  }

  start() {
    this.stopped = false;
    return this.tick();
  }

  stop() {
    this.stopped = true;
    this.timers.clearTimeout(this.timer);
  }

  // Refresh now (or right after the refresh that runs), then every every() ms.
  async tick() {
    if (this.stopped) return;
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = true;
    this.timers.clearTimeout(this.timer);
    try {
      await this.refresh();
    } finally {
      this.busy = false;
      if (!this.stopped) {
        this.timer = this.timers.setTimeout(() => this.tick(), this.again ? 0 : this.every());
        this.again = false;
      }
    }
  }
}
