import { timingSafeEqual } from 'node:crypto';

import { CanActivate, ExecutionContext, HttpException, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';

import { GuardianConfig } from '../config/guardian-config';

const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '[::1]', '::1'];

function hostOnly(value: string): string {
  const v = value.trim().toLowerCase();
  if (v.startsWith('[')) return v.slice(0, v.indexOf(']') + 1);
  const colon = v.lastIndexOf(':');
  return colon === -1 ? v : v.slice(0, colon);
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
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
 * DNS rebinding defence (CONTRACTS §6): on a loopback bind, Host and Origin must name a loopback host (or one
 * of GUARDIAN_ALLOWED_HOSTS), so a page on another site that rebinds its name to 127.0.0.1 is refused.
 * Beyond loopback the tokens do that job and any Host is accepted.
 */
export function checkHostAndOrigin(config: GuardianConfig, req: FastifyRequest): void {
  if (!config.loopbackBind) return;
  const allowed = new Set([...LOOPBACK_HOSTS, ...config.allowedHosts.map(hostOnly)]);
  if (!allowed.has(hostOnly(String(req.headers.host ?? ''))))
    throw new HttpException(
      { code: 'GUARDIAN_HOST_REFUSED', message: 'Host not allowed on a loopback bind' },
      403,
    );
  const origin = req.headers.origin;
  // `Origin: null` comes from privacy-sensitive contexts (RFC 6454 §7.3); it names no site to compare.
  if (origin && origin !== 'null' && !allowed.has(hostOnly(originHost(origin))))
    throw new HttpException(
      { code: 'GUARDIAN_ORIGIN_REFUSED', message: 'Origin not allowed on a loopback bind' },
      403,
    );
}

/**
 * Guards the dashboard page itself: Host and Origin only. The page carries no data (it fetches everything with
 * the token), so it must load without one in order to ask for it (issue 6 item 7).
 */
@Injectable()
export class PageGuard implements CanActivate {
  constructor(private readonly config: GuardianConfig) {}

  canActivate(context: ExecutionContext): boolean {
    checkHostAndOrigin(this.config, context.switchToHttp().getRequest<FastifyRequest>());
    return true;
  }
}

/**
 * Access to guardian's own `/guardian/*` data endpoints (CONTRACTS §6): Host and Origin as {@link PageGuard},
 * then, with GUARDIAN_ADMIN_TOKEN set, `X-Guardian-Token` must carry it (never `Authorization`, which is the
 * upstream's): missing is 401, wrong is 403.
 */
@Injectable()
export class AccessGuard implements CanActivate {
  constructor(private readonly config: GuardianConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    checkHostAndOrigin(this.config, req);
    const admin = this.config.env.GUARDIAN_ADMIN_TOKEN;
    if (!admin) return true;
    const raw = req.headers['x-guardian-token'];
    const token = Array.isArray(raw) ? raw[0] : raw;
    if (!token)
      throw new HttpException({ code: 'GUARDIAN_TOKEN_REQUIRED', message: 'X-Guardian-Token required' }, 401);
    if (!sameSecret(token, admin))
      throw new HttpException(
        { code: 'GUARDIAN_TOKEN_INVALID', message: 'X-Guardian-Token not accepted' },
        403,
      );
    return true;
  }
}
