import { startStack, type Stack } from '../support/stack';

// `/guardian/*` is guardian's own namespace (ARCHITECTURE.md#http-surface): a path there that guardian does not serve
// is a 404 from guardian, never forwarded to the upstream (issue 12 defect 8), whatever the method.

describe('unknown paths under /guardian', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => {
    await stack.close();
  });

  it.each([
    ['GET', '/guardian/nope'],
    ['GET', '/guardian/archive/..%2f..%2fetc%2fpasswd'],
    ['POST', '/guardian/stats'],
    ['DELETE', '/guardian/events'],
    ['GET', '/guardian'],
    ['PUT', '/guardian/'],
  ])('%s %s is a 404 with a stable code, and the upstream hears nothing', async (method, path) => {
    stack.stub.reset();
    const res = await fetch(`${stack.guardian.url}${path}`, {
      method,
      body: method === 'GET' ? undefined : '{}',
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: 'GUARDIAN_NOT_FOUND' } });
    expect(stack.stub.requests).toEqual([]);
  });

  it('still serves the known ones', async () => {
    for (const path of ['/guardian/stats', '/guardian/events', '/guardian/health']) {
      expect([path, (await fetch(`${stack.guardian.url}${path}`)).status]).toEqual([path, 200]);
    }
  });
});
