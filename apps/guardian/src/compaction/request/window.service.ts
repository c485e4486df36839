import { Injectable } from '@nestjs/common';

import type { BudgetInfo } from '@guardian/compaction';
import { detectWindow, type HeaderMap, UpstreamClient } from '@guardian/upstream';

import { GuardianConfig } from '../../config/guardian-config';
import { GuardianState, type WindowInfo } from '../../state/guardian-state';

/** The seed's default window when nothing says otherwise (ARCHITECTURE.md#compaction). */
export const DEFAULT_WINDOW = 32768;

/** Longest model name guardian keeps state for or asks the upstream about; longer ones get the default window. */
export const MAX_MODEL_NAME_CHARS = 256;

/**
 * Window discovery calls the upstream (up to five endpoints) for every model name it has not seen, and names are the
 * client's to choose: a burst of DISCOVERY_BURST, then DISCOVERY_PER_MINUTE (issue 12 defect 6). A name that finds
 * the budget empty gets the default window for that request, and is detected on a later one.
 */
const DISCOVERY_BURST = 16;
const DISCOVERY_PER_MINUTE = 16;

/** A token bucket: `take()` is true while discoveries are within the budget. */
class DiscoveryBudget {
  private tokens = DISCOVERY_BURST;
  private last = Date.now();

  take(): boolean {
    const now = Date.now();
    this.tokens = Math.min(
      DISCOVERY_BURST,
      this.tokens + ((now - this.last) / 60_000) * DISCOVERY_PER_MINUTE,
    );
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** True for a model name guardian keeps per-model state for (window, calibration). */
export function trackableModel(model: string): boolean {
  return model.length <= MAX_MODEL_NAME_CHARS;
}

/**
 * The context window per model (ARCHITECTURE.md#compaction): GUARDIAN_NUM_CTX wins; else detected from the upstream
 * on the first request for that model and cached (one probe at a time per model, rate-limited across models); else
 * the default.
 * An overflow answer that names a smaller window lowers it (`learned`). The cache is bounded (GuardianState).
 */
@Injectable()
export class WindowService {
  private readonly pending = new Map<string, Promise<WindowInfo>>();
  private readonly budget = new DiscoveryBudget();
  private largest:
    { version: number; budgetOf: (window: number) => BudgetInfo; budget: BudgetInfo } | undefined;

  constructor(
    private readonly config: GuardianConfig,
    private readonly upstream: UpstreamClient,
    private readonly state: GuardianState,
  ) {}

  async windowFor(model: string, headers: HeaderMap): Promise<WindowInfo> {
    const known = this.known(model);
    if (known) return known;
    let p = this.pending.get(model);
    if (!p) {
      if (!this.budget.take()) return { window: DEFAULT_WINDOW, source: 'default' };
      p = this.detect(model, headers).finally(() => this.pending.delete(model));
      this.pending.set(model, p);
    }
    return p;
  }

  /** The window when it is known without asking the upstream (configured, or detected before); else undefined. */
  known(model: string): WindowInfo | undefined {
    const fixed = this.config.compaction.window;
    if (!trackableModel(model)) {
      // Neither remembered nor asked about: such a name would only grow state and cost upstream calls.
      return fixed !== undefined
        ? { window: fixed, source: 'env' }
        : { window: DEFAULT_WINDOW, source: 'default' };
    }
    const known = this.state.windowOf(model);
    if (fixed !== undefined) {
      // A configured window wins, unless the upstream has since proven it smaller (an overflow answer, or a prompt
      // it truncated without saying so).
      if (known && known.source.startsWith('learned:') && known.window < fixed) return known;
      return this.remember(model, { window: fixed, source: 'env' });
    }
    return known;
  }

  /**
   * The largest `budgetOf(window)` over every window `known()` can answer today (the remembered ones, and the
   * configured or default one it gives a model it does not track). Taken over budgets, not windows: a budget is not
   * monotone in its window where the output reserve is clamped. Worked out again only when a window changed.
   */
  largestBudget(budgetOf: (window: number) => BudgetInfo): BudgetInfo {
    const version = this.state.windowsVersion;
    if (this.largest?.version === version && this.largest.budgetOf === budgetOf) return this.largest.budget;
    let budget = budgetOf(this.config.compaction.window ?? DEFAULT_WINDOW);
    for (const [, info] of this.state.windows.entries()) {
      const b = budgetOf(info.window);
      if (b.budget > budget.budget) budget = b;
    }
    this.largest = { version, budgetOf, budget };
    return budget;
  }

  /**
   * The upstream said the window is smaller than we thought (`overflow`: it refused the request; `truncation`: it
   * reported fewer prompt tokens than were sent): believe it from now on.
   */
  learn(model: string, window: number, how: 'overflow' | 'truncation' = 'overflow'): void {
    if (!trackableModel(model)) return;
    const known = this.known(model) ?? this.state.windowOf(model);
    if (!known || window < known.window) this.remember(model, { window, source: `learned:${how}` });
  }

  /**
   * Asks the upstream's discovery endpoints again, past GUARDIAN_NUM_CTX and the cache: an overflow answer without
   * numbers (Ollama's) still means the window is smaller than believed, and Ollama's `/api/ps` says how small.
   */
  async probe(model: string, headers: HeaderMap): Promise<WindowInfo | undefined> {
    if (!trackableModel(model) || !this.budget.take()) return undefined;
    const found = await this.discover(model, headers);
    return found ? { window: found.window, source: `detected:${found.backend}` } : undefined;
  }

  private discover(model: string, headers: HeaderMap) {
    return detectWindow(this.upstream, {
      basePath: this.config.upstream.basePath,
      model,
      headers: pickAuth(headers),
      timeoutMs: 3000,
    });
  }

  private async detect(model: string, headers: HeaderMap): Promise<WindowInfo> {
    const found = await this.discover(model, headers);
    return this.remember(
      model,
      found
        ? { window: found.window, source: `detected:${found.backend}` }
        : { window: DEFAULT_WINDOW, source: 'default' },
    );
  }

  private remember(model: string, info: WindowInfo): WindowInfo {
    this.state.rememberWindow(model, info);
    return info;
  }
}

/** Only the credentials go along on guardian's own calls (a keyed backend refuses /v1/models without them). */
export function pickAuth(headers: HeaderMap): HeaderMap {
  const out: HeaderMap = {};
  for (const name of [
    'authorization',
    'x-api-key',
    'anthropic-version',
    'anthropic-beta',
    'openai-organization',
    'openai-project',
  ]) {
    const v = headers[name];
    if (v !== undefined) out[name] = v;
  }
  return out;
}
