import { Injectable } from '@nestjs/common';

import { detectWindow, type HeaderMap, UpstreamClient } from '@guardian/upstream';

import { GuardianConfig } from '../config/guardian-config';
import { GuardianState, type WindowInfo } from '../state/guardian-state';

/** The seed's default window when nothing says otherwise (CONTRACTS §3). */
export const DEFAULT_WINDOW = 32768;

/**
 * The context window per model (CONTRACTS §3): GUARDIAN_NUM_CTX wins; else detected from the upstream on the first
 * request for that model and cached (one probe at a time per model); else the default. An overflow answer that
 * names a smaller window lowers it (`learned`).
 */
@Injectable()
export class WindowService {
  private readonly pending = new Map<string, Promise<WindowInfo>>();

  constructor(
    private readonly config: GuardianConfig,
    private readonly upstream: UpstreamClient,
    private readonly state: GuardianState,
  ) {}

  async windowFor(model: string, headers: HeaderMap): Promise<WindowInfo> {
    const fixed = this.config.env.GUARDIAN_NUM_CTX;
    const known = this.state.windows.get(model);
    if (fixed !== undefined) {
      // A configured window wins, unless the upstream has since proven it smaller (an overflow answer).
      if (known && known.source === 'learned:overflow' && known.window < fixed) return known;
      return this.remember(model, { window: fixed, source: 'env' });
    }
    if (known) return known;
    let p = this.pending.get(model);
    if (!p) {
      p = this.detect(model, headers).finally(() => this.pending.delete(model));
      this.pending.set(model, p);
    }
    return p;
  }

  /** The upstream said the window is smaller than we thought: believe it from now on. */
  learn(model: string, window: number): void {
    const known = this.state.windows.get(model);
    if (!known || window < known.window) this.remember(model, { window, source: 'learned:overflow' });
  }

  /**
   * Asks the upstream's discovery endpoints again, past GUARDIAN_NUM_CTX and the cache: an overflow answer without
   * numbers (Ollama's) still means the window is smaller than believed, and Ollama's `/api/ps` says how small.
   */
  async probe(model: string, headers: HeaderMap): Promise<WindowInfo | undefined> {
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
    this.state.windows.set(model, info);
    this.state.lastModel = model;
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
