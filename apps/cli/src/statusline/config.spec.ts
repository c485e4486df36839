import { sidecarUrl } from '@guardian/config';

import { statuslineDefaults } from './config';

describe('statuslineDefaults', () => {
  it('finds the sidecar where every other tool does (libs/config)', () => {
    for (const env of [{}, { GUARDIAN_PORT: '9100' }, { GUARDIAN_URL: 'https://guardian.example:9000' }])
      expect(statuslineDefaults(env).url).toBe(sidecarUrl(env));
  });
});
