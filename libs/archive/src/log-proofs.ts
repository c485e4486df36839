import {
  LogCheckFailed,
  folderSource,
  listLogs,
  parseSpanEntry,
  readEntries,
  readLogState,
  tlogProofFor,
  type LogState,
} from './span-log-read';

/** What a recall answer carries for one span (issue 29): its log entry and a `c2sp.org/tlog-proof@v1` bundle. */
export interface LogFields {
  /** The entry text, `context-guardian span <run> <index> sha256:<hex>`; null when no log holds the span. */
  log_entry: string | null;
  /** The proof bundle against the log's newest checkpoint; null with `log_entry`. */
  log_proof: string | null;
}

/**
 * Where a span is in a writer's log and the checkpoint that covers it (the native compaction handle names it, issue
 * 29 item 4): enough for a holder to fetch the checkpoint and tiles and check the entry's inclusion.
 */
export interface LogPosition {
  /** The log's folder name under `.tlog/` (its writer), as `/guardian/archive/logs/<name>/` serves it. */
  log: string;
  /** The checkpoint's origin (its key name). */
  origin: string;
  /** The entry's index in the log. */
  index: number;
  /** The tree size of the newest checkpoint, which covers the entry. */
  size: number;
  /** That checkpoint's root hash, base64 (as the checkpoint writes it). */
  root: string;
  /** SHA-256 hex of the span file's bytes, from the entry. */
  sha256: string;
}

interface LogView {
  size: number;
  byRef: Map<string, { index: number; entry: string }>;
}

/**
 * Finds the entry and proof of spans across every writer's log on a span volume. Entries are immutable, so what was
 * read stays valid while a log only grows: a log whose checkpoint moved is read from where the last read stopped. A
 * log that does not check out (bad signature, missing tile) gives no proofs: --verify is the place that names the
 * break.
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

  /** The log position of one span under the newest checkpoints on the volume; null when no log holds it yet. */
  async locate(span: { run: string; span: number }): Promise<LogPosition | null> {
    for (const { state, view } of await this.refresh()) {
      const hit = view.byRef.get(`${span.run}/${span.span}`);
      const entry = hit && parseSpanEntry(hit.entry);
      if (!hit || !entry) continue;
      return {
        log: state.name,
        origin: state.checkpoint.origin,
        index: hit.index,
        size: state.checkpoint.size,
        root: state.checkpoint.root.toString('base64'),
        sha256: entry.sha256,
      };
    }
    return null;
  }

  private async refresh(): Promise<{ state: LogState; view: LogView }[]> {
    const out = [];
    for (const name of await listLogs(this.spanDir)) {
      try {
        const state = await readLogState(this.spanDir, name);
        if (state === null) continue;
        const size = state.checkpoint.size;
        let view = this.views.get(name);
        // A log read before and grown since is read on from its old size; one that shrank was rewritten: read anew.
        if (view !== undefined && view.size > size) view = undefined;
        if (view?.size !== size) {
          const from = view?.size ?? 0;
          const byRef = view?.byRef ?? new Map<string, { index: number; entry: string }>();
          (await readEntries(folderSource(state.dir), size, from)).forEach((entry, i) => {
            const span = parseSpanEntry(entry);
            if (span !== null) byRef.set(`${span.run}/${span.span}`, { index: from + i, entry });
          });
          view = { size, byRef };
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
