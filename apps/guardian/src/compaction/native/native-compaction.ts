import { Injectable } from '@nestjs/common';

import { pathOnly, type OwnedRoute } from '../../formats/owned-route';
import type { PrepareInput } from '../handoff';
import { MessagesCompaction } from './messages-compaction';
import { NativeMode } from './native-mode';
import type { NativeOutcome } from './native-outcome';
import { ResponsesCompaction } from './responses-compaction';

export type { NativeOutcome } from './native-outcome';

/**
 * The providers' compaction protocols served for a backend that has none (docs/native-compaction.md): a request on
 * `/v1/responses`, `/v1/responses/compact` or `/v1/messages` goes to its protocol, unless the mode passes them
 * through. Undefined: not ours.
 */
@Injectable()
export class NativeCompaction {
  constructor(
    private readonly messages: MessagesCompaction,
    private readonly responses: ResponsesCompaction,
    private readonly mode: NativeMode,
  ) {}

  async intercept(
    method: string,
    url: string,
    body: Buffer | undefined,
    inputFor: (body: Buffer, route: OwnedRoute) => PrepareInput,
  ): Promise<NativeOutcome | undefined> {
    if (method !== 'POST' || !body) return undefined;
    const path = pathOnly(url).replace(/\/+$/, '');
    const messages = path === '/v1/messages' || path === '/messages';
    const compact = path === '/v1/responses/compact' || path === '/responses/compact';
    if (!messages && !compact && path !== '/v1/responses' && path !== '/responses') return undefined;
    // Every request that speaks the protocol names it; the rest are not parsed here (ADR 0013: the hot path).
    if (!compact && !body.includes('compaction') && !body.includes('context_management')) return undefined;
    // Only such a request asks whether the upstream serves the protocol itself (`auto` probes once: native-mode.ts).
    const family = messages ? 'messages' : 'responses';
    if (await this.mode.passthrough(family, body, inputFor(body, family).upstreamHeaders)) return undefined;
    return messages
      ? this.messages.intercept(body, inputFor)
      : this.responses.intercept(body, compact, inputFor);
  }
}
