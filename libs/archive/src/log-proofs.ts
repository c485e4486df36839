import {
  LogCheckFailed,
  folderSource,
  listLogs,
  parseSpanEntry,
  readEntries,
  readLogState,
  tlogProofFor,
} from './span-log-read';

/** What a recall answer carries for one span (issue 29): its log entry and a `c2sp.org/tlog-proof@v1` bundle. */
export interface LogFields {
  /** The entry text, `context-guardian span <run> <index> sha256:<hex>`; null when no log holds the span. */
  log_entry: string | null;
  /** The proof bundle against the log's newest checkpoint; null with `log_entry`. */
  log_proof: string | null;
}

interface LogView {
  size: number;
  byRef: Map<string, { index: number; entry: string }>;
}

/**
 * Finds the entry and proof of spans across every writer's log on a span volume. Entries are immutable, so what was
 * read stays valid while a log only grows; a log is read again when its checkpoint moved. A log that does not check
 * out (bad signature, missing tile) gives no proofs: --verify is the place that names the break.
 */
export class LogProofs {
  private readonly views = new Map<string, LogView>();

  constructor(private readonly spanDir: string) {}

  /** `items` with `log_entry` and `log_proof` added (null for a span no log holds, like the capture journal). */
  async attach<T extends { run: string; span: number }>(items: readonly T[]): Promise<(T & LogFields)[]> {
    if (items.length === 0) return [];
    const logs = await this.refresh();
    const out: (T & LogFields)[] = [];
    for (const item of items) {
      let fields: LogFields = { log_entry: null, log_proof: null };
      for (const { state, view } of logs) {
        const hit = view.byRef.get(`${item.run}/${item.span}`);
        if (hit === undefined) continue;
        fields = { log_entry: hit.entry, log_proof: await tlogProofFor(state, hit.index) };
        break;
      }
      out.push({ ...item, ...fields });
    }
    return out;
  }

  private async refresh() {
    const out = [];
    for (const name of await listLogs(this.spanDir)) {
      try {
        const state = await readLogState(this.spanDir, name);
        if (state === null) continue;
        let view = this.views.get(name);
        if (view?.size !== state.checkpoint.size) {
          const byRef = new Map<string, { index: number; entry: string }>();
          (await readEntries(folderSource(state.dir), state.checkpoint.size)).forEach((entry, index) => {
            const span = parseSpanEntry(entry);
            if (span !== null) byRef.set(`${span.run}/${span.span}`, { index, entry });
          });
          view = { size: state.checkpoint.size, byRef };
          this.views.set(name, view);
        }
        out.push({ state, view });
      } catch (err) {
        // A broken log answers without proofs (fail-open for recall); --verify reports it with its kind.
        if (!(err instanceof LogCheckFailed)) throw err;
      }
    }
    return out;
  }
}
