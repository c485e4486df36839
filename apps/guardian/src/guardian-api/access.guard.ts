import type { IncomingHttpHeaders } from 'node:http';

import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';

import { AccessPolicy, type Viewer } from '../access/access-policy';
import { GuardianConfig } from '../config/guardian-config';
import { GuardianError } from '../http/http-error';

const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '[::1]', '::1'];

function hostOnly(value: string): string {
  const v = value.trim().toLowerCase();
  if (v.startsWith('[')) return v.slice(0, v.indexOf(']') + 1);
  const colon = v.lastIndexOf(':');
  return colon === -1 ? v : v.slice(0, colon);
}

function originHost(origin: string): string {
  try {
    return new URL(origin).host;
  } catch {
    // An unparsable Origin is refused like a foreign one: the empty host matches no allowed name.
    return '';
  }
}

/**
 * DNS rebinding defence (ARCHITECTURE.md#access): on a loopback bind, Host and Origin must name a loopback host (or
 * one of GUARDIAN_ALLOWED_HOSTS) on EVERY route, the proxied `/v1/*` included, so a page on another site that rebinds
 * its name to 127.0.0.1 can drive neither guardian nor the user's backend through it. A browser's CORS preflight is
 * refused there as well: guardian grants no cross-origin access, and forwarding the preflight would let the
 * upstream's own CORS answer grant it in guardian's name. Beyond loopback the tokens do that job and any Host is
 * accepted. Built once; `verdict` runs on every request, so the allowed names are a prepared Set.
 */
export class HostGate {
  private readonly allowed: Set<string> | null;

  constructor(config: GuardianConfig) {
    this.allowed = config.loopbackBind
      ? new Set([...LOOPBACK_HOSTS, ...config.allowedHosts.map(hostOnly)])
      : null;
  }

  verdict(method: string, headers: IncomingHttpHeaders): GuardianError | undefined {
    const allowed = this.allowed;
    if (allowed === null) return undefined;
    if (!allowed.has(hostOnly(String(headers.host ?? ''))))
      return new GuardianError('GUARDIAN_HOST_REFUSED', 'Host not allowed on a loopback bind', 403);
    const origin = headers.origin;
    // `Origin: null` (RFC 6454 §7.3) names no site, and it is what a sandboxed iframe, a data: URL or a file:// page
    // sends: a "simple" text/plain POST from one needs no preflight (Fetch §3.2.3), so accepting it let any page drive
    // the backend (issue 30 item 6). It parses to no host, so it is refused like any other foreign Origin.
    if (origin && !allowed.has(hostOnly(originHost(origin))))
      return new GuardianError('GUARDIAN_ORIGIN_REFUSED', 'Origin not allowed on a loopback bind', 403);
    // A preflight is an OPTIONS request carrying Access-Control-Request-Method (Fetch standard §3.2.2).
    if (method === 'OPTIONS' && headers['access-control-request-method'] !== undefined)
      return new GuardianError(
        'GUARDIAN_PREFLIGHT_REFUSED',
        'cross-origin requests from browsers are not accepted on a loopback bind',
        403,
      );
    return undefined;
  }
}

/**
 * Throws the gate's refusal (a 403 with a stable code, docs/ARCHITECTURE.md#access) for the Nest guards; the error
 * filter shapes the body.
 */
export function checkHostAndOrigin(config: GuardianConfig, req: FastifyRequest): void {
  const refusal = new HostGate(config).verdict(req.method, req.headers);
  if (refusal) throw refusal;
}

/**
 * Guards the dashboard page itself: Host and Origin only. The page carries no data (it fetches everything with
 * the token), so it must load without one in order to ask for it (issue 6 item 7). The gate in bootstrap has
 * already run on every request; this repeats it so the controller is safe on its own.
 */
@Injectable()
export class PageGuard implements CanActivate {
  constructor(private readonly config: GuardianConfig) {}

  canActivate(context: ExecutionContext): boolean {
    checkHostAndOrigin(this.config, context.switchToHttp().getRequest<FastifyRequest>());
    return true;
  }
}

const viewers = new WeakMap<object, Viewer>();

/** The viewer a guard let through for this request (the controllers scope what they answer by it). */
export function viewerOf(req: FastifyRequest): Viewer {
  return viewers.get(req.raw) ?? { kind: 'all' };
}

function admit(policy: AccessPolicy, req: FastifyRequest, door: 'metadata' | 'archive'): boolean {
  const caller = policy.identify(req.raw.headersDistinct['x-guardian-token']);
  const verdict = door === 'metadata' ? policy.metadata(caller) : policy.archive(caller);
  if (!verdict.ok) throw verdict.refusal;
  viewers.set(req.raw, verdict.value);
  return true;
}

/**
 * Access to guardian's own `/guardian/*` metadata endpoints (ARCHITECTURE.md#access): Host and Origin as {@link PageGuard},
 * then the token rules of {@link AccessPolicy.metadata}: with GUARDIAN_ADMIN_TOKEN set, `X-Guardian-Token` must be
 * the admin's (everything) or a developer's (their own sessions); never `Authorization`, which is the upstream's.
 */
@Injectable()
export class AccessGuard implements CanActivate {
  constructor(
    private readonly config: GuardianConfig,
    private readonly policy: AccessPolicy,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    checkHostAndOrigin(this.config, req);
    return admit(this.policy, req, 'metadata');
  }
}

/** Access to archive content (`/guardian/archive/*`, `/guardian/capture`): {@link AccessPolicy.archive}. */
@Injectable()
export class ArchiveGuard implements CanActivate {
  constructor(
    private readonly config: GuardianConfig,
    private readonly policy: AccessPolicy,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    checkHostAndOrigin(this.config, req);
    return admit(this.policy, req, 'archive');
  }
}
