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

/**
 * Access to guardian's own `/guardian/*` endpoints (CONTRACTS §6). On a loopback bind, Host and Origin must name a
 * loopback host (or GUARDIAN_ALLOWED_HOSTS): a page on another site cannot reach the sidecar through DNS rebinding.
 * With GUARDIAN_ADMIN_TOKEN set, `X-Guardian-Token` must carry it (never `Authorization`, which is the upstream's).
 */
@Injectable()
export class AccessGuard implements CanActivate {
  constructor(private readonly config: GuardianConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    if (this.config.loopbackBind) {
      const allowed = new Set([...LOOPBACK_HOSTS, ...this.config.allowedHosts.map(hostOnly)]);
      const host = hostOnly(String(req.headers.host ?? ''));
      if (!allowed.has(host))
        throw new HttpException(
          { code: 'GUARDIAN_HOST_REFUSED', message: 'Host not allowed on a loopback bind' },
          403,
        );
      const origin = req.headers.origin;
      if (origin && origin !== 'null') {
        let originHost = '';
        try {
          originHost = new URL(origin).host;
        } catch {
          // An unparsable Origin is refused like a foreign one.
          originHost = '';
        }
        if (!allowed.has(hostOnly(originHost)))
          throw new HttpException(
            { code: 'GUARDIAN_ORIGIN_REFUSED', message: 'Origin not allowed on a loopback bind' },
            403,
          );
      }
    }
    const admin = this.config.env.GUARDIAN_ADMIN_TOKEN;
    if (admin) {
      const raw = req.headers['x-guardian-token'];
      const token = Array.isArray(raw) ? raw[0] : raw;
      if (!token)
        throw new HttpException(
          { code: 'GUARDIAN_TOKEN_REQUIRED', message: 'X-Guardian-Token required' },
          401,
        );
      if (!sameSecret(token, admin))
        throw new HttpException(
          { code: 'GUARDIAN_TOKEN_INVALID', message: 'X-Guardian-Token not accepted' },
          403,
        );
    }
    return true;
  }
}
