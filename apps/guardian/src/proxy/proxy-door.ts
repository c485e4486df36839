import type { IncomingMessage } from 'node:http';

import { Injectable } from '@nestjs/common';

import type { UpstreamResponse } from '@guardian/upstream';

import { AccessPolicy } from '../access/access-policy';
import { GuardianConfig } from '../config/guardian-config';
import { forwardedPath } from '../http/dot-segments';
import { GuardianError } from '../http/http-error';
import type { OwnedRoute } from '../formats/owned-route';
import type { PrepareInput } from '../compaction/handoff';
import { NativeCompaction } from '../compaction/native/native-compaction';
import { countRoute, TokenCounts } from './count-tokens';
import { sendError, type ProxiedRequest } from './proxy-front';
import { ProxyReporter } from './proxy-reporter';
import {
  readClientSession,
  readSessionHeader,
  readSubAgent,
  sessionRequiredMessage,
} from './session-headers';

/** What the door lets through: whose session the request is, and the upstream path it may go to. */
export interface Admission extends Pick<PrepareInput, 'sessionHeader' | 'owner'> {
  path: string;
}

/** The body compaction goes on with, and what the backend's answer needs added (context management's report). */
export interface Passed {
  body: Buffer | undefined;
  answer?: (upstream: UpstreamResponse) => UpstreamResponse;
}

/**
 * The door every proxied request passes before compaction sees it, and the one place that refuses: team mode's
 * token (ARCHITECTURE.md#access), a required session header, a path outside the upstream's root (ADR 0019), and the
 * providers' compaction protocols (docs/native-compaction.md), which are answered here or rewritten for the backend.
 * Each refusal is sent in the route's error shape and counted.
 */
@Injectable()
export class ProxyDoor {
  constructor(
    private readonly config: GuardianConfig,
    private readonly access: AccessPolicy,
    private readonly native: NativeCompaction,
    private readonly counts: TokenCounts,
    private readonly reporter: ProxyReporter,
  ) {}

  /**
   * The owner and session of the request, and its upstream path; undefined when refused (the refusal is sent). The
   * token and the session header are read from their separate header lines: two different values name no one.
   */
  admit(p: ProxiedRequest, route: OwnedRoute | undefined): Admission | undefined {
    const { req } = p;
    const verdict = this.access.proxy(
      this.access.identify(headerLines(req, 'x-guardian-token')),
      req.method ?? 'GET',
    );
    if (!verdict.ok) return this.refuse(p, route, verdict.refusal);
    const sessionHeader = readSessionHeader(headerLines(req, 'x-guardian-session'));
    if (route && this.config.proxy.sessionHeaderRequired && sessionHeader.kind !== 'value') {
      const message = sessionRequiredMessage(sessionHeader);
      return this.refuse(p, route, new GuardianError('GUARDIAN_SESSION_REQUIRED', message, 400));
    }
    // Nothing reaches the upstream outside its root (ADR 0019): a path that would climb out is refused here.
    const target = forwardedPath(p.url, this.config.upstream.basePath);
    if (!target.ok) return this.refuse(p, route, target.refusal);
    // No header of guardian's: the client's own session id names the session (issue 28 item 1, docs/sessions.md).
    const named =
      sessionHeader.kind === 'absent' ? readClientSession((name) => headerLines(req, name)) : sessionHeader;
    // A sub-agent keeps its own compaction state under the session a header named (a derived session has no parent
    // to keep it under: its own first messages name it).
    const agent = named.kind === 'value' ? readSubAgent((name) => headerLines(req, name)) : undefined;
    const withAgent = agent === undefined || named.kind !== 'value' ? named : { ...named, agent };
    return { sessionHeader: withAgent, owner: verdict.value, path: target.value };
  }

  /**
   * The body compaction goes on with: the client's, or the native protocol's rewrite of it (a compaction item
   * expanded into guardian's block). Undefined when the request was answered or refused here: a token count
   * (`asIs` sends it upstream unchanged; guardian answers when the upstream has no such endpoint, issue 28 item 4)
   * or a compaction the protocol asked for.
   */
  async protocols(
    p: ProxiedRequest,
    route: OwnedRoute | undefined,
    inputFor: (body: Buffer, route: OwnedRoute) => PrepareInput,
    asIs: () => Promise<UpstreamResponse>,
  ): Promise<Passed | undefined> {
    const counting = route || !p.body ? undefined : countRoute(p.req.method ?? 'GET', p.url);
    if (counting && p.body) {
      await this.counts.serve(p, counting, inputFor(p.body, counting.as), asIs);
      return undefined;
    }
    const native = await this.native.intercept(p.req.method ?? 'GET', p.url, p.body, inputFor);
    if (!native) return { body: p.body };
    if (native.kind === 'forward')
      return native.answer ? { body: native.body, answer: native.answer } : { body: native.body };
    if (native.kind === 'refuse') return this.refuse(p, route, native.error);
    // Answered by guardian itself: the compaction the protocol asked for (the one path answered here that is not an
    // owned route is Responses' own, /v1/responses/compact).
    this.reporter.served(route ?? 'responses');
    p.res.writeHead(200, {
      'content-type': native.contentType,
      'content-length': Buffer.byteLength(native.body),
    });
    p.res.end(native.body);
    return undefined;
  }

  private refuse(p: ProxiedRequest, route: OwnedRoute | undefined, err: GuardianError): undefined {
    this.reporter.refused(route ?? 'other');
    sendError(p.req, p.res, err);
    return undefined;
  }
}

/** A request header's separate lines (RFC 9110 §5.3), or undefined when it was not sent. */
function headerLines(req: IncomingMessage, name: string): string[] | undefined {
  return req.headers[name] === undefined ? undefined : req.headersDistinct[name];
}
