import { DEFAULT_PORT } from '@guardian/config';

import { statuslineDefaults } from './config';

describe('statuslineDefaults', () => {
  // libs/client (which the status line loads, and zod must not) repeats the default port; it must be the sidecar's.
  it("finds the sidecar on the sidecar's own default port when nothing is set", () => {
    expect(statuslineDefaults({}).url).toBe(`http://127.0.0.1:${DEFAULT_PORT}`);
  });
});
