import { EventEmitter } from 'node:events';

/**
 * Says that the client went away, so the upstream request is aborted. undici takes an EventEmitter as a request's
 * signal (it listens for `abort`), which costs a request far less than an AbortController: that was 2% of the proxy's
 * CPU per request (ADR 0013). Guardian's own upstream calls on the full path (window, /tokenize, the summariser) take
 * an AbortSignal, made only when one is asked for.
 */
export class ClientGone extends EventEmitter {
  aborted = false;
  private controller: AbortController | undefined;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
    this.controller?.abort();
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort();
    }
    return this.controller.signal;
  }
}
