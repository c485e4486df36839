import { Injectable } from '@nestjs/common';

import { GuardianConfig } from '../../config/guardian-config';
import { pathOnly, type OwnedRoute } from '../../formats/owned-route';
import type { PrepareInput } from '../handoff';
import { MessagesCompaction } from './messages-compaction';
import { nativeMode } from './native-mode';
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
    private readonly config: GuardianConfig,
    private readonly messages: MessagesCompaction,
    private readonly responses: ResponsesCompaction,
  ) {}

  intercept(
    method: string,
    url: string,
    body: Buffer | undefined,
    inputFor: (body: Buffer, route: OwnedRoute) => PrepareInput,
  ): Promise<NativeOutcome | undefined> {
    if (method !== 'POST' || !body || nativeMode(this.config) === 'passthrough')
      return Promise.resolve(undefined);
    const path = pathOnly(url).replace(/\/+$/, '');
    if (path === '/v1/messages' || path === '/messages') return this.messages.intercept(body, inputFor);
    if (path === '/v1/responses/compact' || path === '/responses/compact')
      return this.responses.intercept(body, true, inputFor);
    if (path === '/v1/responses' || path === '/responses')
      return this.responses.intercept(body, false, inputFor);
    return Promise.resolve(undefined);
  }
}
