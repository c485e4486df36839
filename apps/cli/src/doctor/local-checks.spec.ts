import { checkNode } from './local-checks';

describe('checkNode', () => {
  it.each([
    ['20.18.1', 'ok'],
    ['20.19.0', 'ok'],
    ['22.0.0', 'ok'],
    ['24.3.1', 'ok'],
    ['20.18.0', 'fail'],
    ['21.7.3', 'fail'],
    ['18.20.4', 'fail'],
  ])('Node %s is %s (engines: >=20.18.1 <21 || >=22)', (version, status) => {
    const check = checkNode(version);
    expect(check.status).toBe(status);
    expect(check.detail).toBe(`v${version} (needs >=20.18.1 <21, or >=22)`);
    if (status === 'fail') expect(check.fix).toContain('install Node 22');
  });
});
