import fc from 'fast-check';

import { permissiveSegments, upstreamRoot, upstreamTarget } from './upstream-path';

const TENANT = '/tenant-a/v1';

function target(url: string, basePath = TENANT): string {
  const t = upstreamTarget(url, basePath);
  return t.ok ? t.path : 'refused';
}

describe('upstreamRoot', () => {
  it('is the base path without its final /v1', () => {
    expect(['/tenant-a/v1', '/v1', '', '/openai', '/v1beta', '/a/v1/b'].map(upstreamRoot)).toEqual([
      '/tenant-a',
      '',
      '',
      '/openai',
      '/v1beta',
      '/a/v1/b',
    ]);
  });
});

describe('upstreamTarget (issue 30 item 4: the base path is a boundary)', () => {
  it('maps /v1/<rest> to <base>/<rest> and any other path under the root, keeping the query', () => {
    expect(target('/v1/chat/completions?beta=true')).toBe('/tenant-a/v1/chat/completions?beta=true');
    expect(target('/v1')).toBe('/tenant-a/v1');
    expect(target('/tokenize')).toBe('/tenant-a/tokenize');
    expect(target('/')).toBe('/tenant-a/');
    expect(target('/v1/models', '/openai')).toBe('/openai/models');
    expect(target('/api/chat', '/openai')).toBe('/openai/api/chat');
  });

  it('keeps the default upstream (base /v1) as it was: native paths go to the origin', () => {
    expect(target('/v1/models', '/v1')).toBe('/v1/models');
    expect(target('/api/tags?x=1', '/v1')).toBe('/api/tags?x=1');
    expect(target('/', '/v1')).toBe('/');
    expect(target('/etc/passwd', '')).toBe('/etc/passwd');
  });

  it("puts a path that names another tenant under this one's root, where it cannot reach the other", () => {
    expect(target('/tenant-b/v1/models')).toBe('/tenant-a/tenant-b/v1/models');
    expect(target('//tenant-b/v1/models')).toBe('/tenant-a//tenant-b/v1/models');
  });

  it.each([
    ['/v1/../../tenant-b/v1/models', 'plain dot segments (when the edge has not resolved them)'],
    ['/v1/%2e%2e/%2e%2e/tenant-b/secret', 'percent-encoded dots'],
    ['/v1/%2E%2e/.%2E/tenant-b/secret', 'mixed case and half-encoded dots'],
    ['/v1/..%2f..%2ftenant-b/secret', 'an encoded slash'],
    ['/v1/..%2F..%2Ftenant-b/secret', 'an encoded slash, upper case'],
    ['/v1/%2e%2e%2f%2e%2e%2ftenant-b', 'dots and slashes all encoded'],
    ['/v1/..\\..\\tenant-b/secret', 'backslashes'],
    ['/v1/..%5c..%5ctenant-b/secret', 'encoded backslashes'],
    ['/v1/%252e%252e/%252e%252e/tenant-b', 'double-encoded dots'],
    ['/v1/%25252e%25252e%25252f%25252e%25252e%25252ftenant-b', 'triple-encoded dots and slashes'],
    ['/v1//..//..//tenant-b', 'doubled slashes around dot segments (merge_slashes)'],
    ['/v1/..;/..;/tenant-b/secret', 'path parameters on dot segments (Tomcat, Spring)'],
    ['/v1/%c0%ae%c0%ae/%c0%ae%c0%ae/tenant-b', 'overlong UTF-8 dots'],
    ['/v1/..%c0%af..%c0%aftenant-b', 'overlong UTF-8 slashes'],
    ['/tokenize/../../tenant-b', 'a native path climbing out'],
    ['/%2e%2e/tenant-b?x=/v1/', 'a climb with a query that looks like a path'],
  ])('refuses %s (%s)', (url) => {
    expect(target(url)).toBe('refused');
  });

  it('refuses a request target that is not a path', () => {
    expect(target('http://tenant-b.example/v1/models')).toBe('refused');
    expect(target('*')).toBe('refused');
  });

  it('forwards, as written, encodings that stay inside: a model id with an encoded slash, a dot segment within', () => {
    expect(target('/v1/models/Qwen%2FQwen2.5-7B')).toBe('/tenant-a/v1/models/Qwen%2FQwen2.5-7B');
    expect(target('/v1/..%2fv1%2fmodels')).toBe('/tenant-a/v1/..%2fv1%2fmodels');
    expect(target('/v1/files/a%20b;c')).toBe('/tenant-a/v1/files/a%20b;c');
  });

  it('refuses a path whose decoding never settles', () => {
    expect(permissiveSegments(`/%${'25'.repeat(8)}2e`)).toBeNull();
  });

  // Every spelling a server is known to read as `.`, `..` or `/`, mixed with ordinary segments.
  const piece = fc.constantFrom(
    '..',
    '.',
    '%2e%2e',
    '%2E%2e',
    '.%2e',
    '%252e%252e',
    '..;',
    '%c0%ae%c0%ae',
    '/',
    '//',
    '\\',
    '%2f',
    '%2F',
    '%5c',
    '%252f',
    '%c0%af',
    'v1',
    'tenant-a',
    'tenant-b',
    'models',
    'x%20y',
  );
  const clientPath = fc
    .array(piece, { minLength: 1, maxLength: 12 })
    .map((parts) => `/${parts.join('')}`)
    .chain((p) => fc.constantFrom(p, `/v1/${p.slice(1)}`));

  /**
   * An oracle written apart from the code under test: decode with decodeURIComponent (latin1 stand-ins for the
   * overlong forms) until stable, then let the WHATWG URL parser resolve dots and backslashes, as Node and browsers do.
   */
  function urlParserReading(path: string): string {
    let text = path.replace(/%c0%ae/gi, '.').replace(/%c0%af/gi, '/');
    for (let i = 0; i < 8; i++) {
      const next = text.replace(/%[0-9a-f]{2}/gi, (m) => decodeURIComponent(m));
      if (next === text) break;
      text = next.replace(/%c0%ae/gi, '.').replace(/%c0%af/gi, '/');
    }
    const pathname = new URL(text.replace(/;[^/\\]*/g, ''), 'http://upstream.test').pathname;
    return pathname.replace(/\/{2,}/g, '/');
  }

  it('never forwards a path that a URL parser reads outside the root (property)', () => {
    fc.assert(
      fc.property(clientPath, fc.constantFrom('/tenant-a/v1', '/tenant-a', '/a/b/v1'), (path, base) => {
        const t = upstreamTarget(path, base);
        if (!t.ok) return;
        const root = upstreamRoot(base);
        expect(t.path.startsWith(`${root}/`) || t.path === root).toBe(true);
        const read = urlParserReading(t.path);
        expect([path, read.startsWith(`${root}/`) || read === root]).toEqual([path, true]);
      }),
      { numRuns: 2000 },
    );
  });
});
