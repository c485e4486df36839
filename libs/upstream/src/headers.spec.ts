import { requestHeadersForUpstream, responseHeadersForClient } from './headers';

describe('hop-by-hop headers', () => {
  it('drops the Connection header and every field it names, whatever else it says', () => {
    for (const connection of ['keep-alive, x-hop', 'x-hop', 'Close, X-Hop', ['keep-alive', 'x-hop']]) {
      const out = requestHeadersForUpstream({
        connection: connection as string,
        'x-hop': '1',
        'x-kept': '2',
        host: 'a',
        'content-length': '3',
        'keep-alive': 'timeout=5',
        'x-guardian-session': 's',
      });
      expect([connection, out]).toEqual([connection, { 'x-kept': '2' }]);
    }
  });

  it('keeps everything else when Connection only says keep-alive or close', () => {
    for (const connection of ['keep-alive', 'close', 'Keep-Alive']) {
      expect(requestHeadersForUpstream({ connection, 'x-a': '1', authorization: 'Bearer k' })).toEqual({
        'x-a': '1',
        authorization: 'Bearer k',
      });
      expect(responseHeadersForClient({ connection, 'Content-Type': 'application/json' })).toEqual({
        'content-type': 'application/json',
      });
    }
  });
});
