import type { FastifyRequest } from 'fastify';

import { GuardianConfig } from '../config/guardian-config';
import { toHttpError } from '../http/http-error';
import { checkHostAndOrigin } from './access.guard';

function config(env: Record<string, string>): GuardianConfig {
  return GuardianConfig.fromEnv(env, { version: 'test', home: '/nonexistent' });
}

function req(headers: Record<string, string>): FastifyRequest {
  return { headers } as unknown as FastifyRequest;
}

function verdict(c: GuardianConfig, headers: Record<string, string>): number {
  try {
    checkHostAndOrigin(c, req(headers));
    return 200;
  } catch (err) {
    return toHttpError(err, 'openai').status;
  }
}

describe('checkHostAndOrigin (ARCHITECTURE.md#access, DNS rebinding)', () => {
  it('on a loopback bind accepts loopback names, IPv6 included, and refuses any other', () => {
    const c = config({ GUARDIAN_HOST: '127.0.0.1' });
    expect(verdict(c, { host: '[::1]:8786' })).toBe(200);
    expect(verdict(c, { host: 'LOCALHOST:8786', origin: 'http://[::1]:8786' })).toBe(200);
    expect(verdict(c, { host: '127.0.0.1.evil.example:8786' })).toBe(403);
    expect(verdict(c, {})).toBe(403);
    expect(verdict(c, { host: '127.0.0.1', origin: 'http://localhost.evil.example' })).toBe(403);
  });

  it('on a loopback bind refuses `Origin: null` as it refuses a foreign Origin (issue 30 item 6)', () => {
    const c = config({ GUARDIAN_HOST: '127.0.0.1' });
    for (const origin of ['null', 'NULL', ' null ']) {
      expect([origin, verdict(c, { host: '127.0.0.1:8786', origin })]).toEqual([origin, 403]);
    }
  });

  it('beyond loopback leaves Host and Origin to the tokens', () => {
    const c = config({ GUARDIAN_HOST: '0.0.0.0' });
    expect(verdict(c, { host: 'guardian.team.example', origin: 'https://grafana.team.example' })).toBe(200);
  });
});
