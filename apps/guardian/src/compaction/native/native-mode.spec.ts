import { probeVerdict } from './native-mode';

describe('probeVerdict: only a protocol answer proves the upstream serves it', () => {
  const compacted = {
    object: 'response.compaction',
    output: [{ type: 'compaction', encrypted_content: 'x' }],
  };
  const compactionMessage = { type: 'message', content: [{ type: 'compaction', content: 's' }] };

  it.each([
    ['responses', 200, compacted, 'serves'],
    ['responses', 200, { object: 'response', output: [{ type: 'message' }] }, 'absent'],
    ['responses', 404, { detail: 'Not Found' }, 'absent'],
    ['responses', 405, undefined, 'absent'],
    ['responses', 400, { error: { message: 'Unrecognized request argument' } }, 'absent'],
    ['messages', 200, compactionMessage, 'serves'],
    ['messages', 200, { type: 'message', content: [{ type: 'text', text: 'p' }] }, 'absent'],
    ['messages', 400, { type: 'error' }, 'absent'],
    ['responses', 401, undefined, 'inconclusive'],
    ['messages', 403, undefined, 'inconclusive'],
    ['responses', 429, undefined, 'inconclusive'],
    ['responses', 503, undefined, 'inconclusive'],
    ['responses', 200, 'not json', 'absent'],
    ['responses', 302, undefined, 'inconclusive'],
  ] as const)('%s answered %i: %s', (family, status, body, verdict) => {
    expect(probeVerdict(family, status, body)).toBe(verdict);
  });
});
