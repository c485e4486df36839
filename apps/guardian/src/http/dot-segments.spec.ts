import { toHttpError } from './http-error';
import { forwardedPath, withoutDotSegments } from './dot-segments';

describe('withoutDotSegments', () => {
  it.each([
    ['/v1/chat/completions', '/v1/chat/completions'],
    ['/v1/chat/completions?x=/../y', '/v1/chat/completions?x=/../y'],
    ['/v1/../x', '/x'],
    ['/v1/./models', '/v1/models'],
    ['/v1/chat/../models?limit=2', '/v1/models?limit=2'],
    ['/v1/../../../etc/passwd', '/etc/passwd'],
    ['/guardian/../v1/chat/completions', '/v1/chat/completions'],
    ['/v1/%2e%2e/guardian/stats', '/guardian/stats'],
    ['/v1/%2E./x', '/x'],
    ['/v1/.', '/v1/'],
    ['/v1/..', '/'],
    ['/v1/.well-known/x', '/v1/.well-known/x'],
    ['/v1/...', '/v1/...'],
    ['/v1/a%2eb', '/v1/a%2eb'],
    ['/v1//models', '/v1//models'],
  ])('%s -> %s', (input, expected) => {
    expect(withoutDotSegments(input)).toBe(expected);
  });

  it('returns the very same string when there is nothing to remove', () => {
    const url = '/v1/messages?beta=true';
    expect(withoutDotSegments(url)).toBe(url);
  });
});

describe('forwardedPath (issue 30 item 4)', () => {
  it('gives the upstream path under the root, or a 400 GUARDIAN_PATH_OUTSIDE_UPSTREAM in the route shape', () => {
    expect(forwardedPath('/v1/models', '/tenant-a/v1')).toEqual({ ok: true, value: '/tenant-a/v1/models' });
    const refused = forwardedPath('/v1/..%2f..%2ftenant-b', '/tenant-a/v1');
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    const { status, body } = toHttpError(refused.refusal, 'anthropic');
    expect([status, JSON.parse(body)]).toMatchObject([
      400,
      { type: 'error', error: { code: 'GUARDIAN_PATH_OUTSIDE_UPSTREAM' } },
    ]);
  });
});
