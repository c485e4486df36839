import { Writable } from 'node:stream';
import { createLogger, logOnce } from './logger';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, destination };
}

describe('createLogger', () => {
  it('writes JSON lines with the name and level', () => {
    const { lines, destination } = capture();
    createLogger({ name: 'guardian', level: 'info', destination }).info({ route: 'chat' }, 'compacted');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ name: 'guardian', level: 30, route: 'chat', msg: 'compacted' });
    expect(typeof lines[0]?.time).toBe('string');
  });

  it('redacts secret headers wherever they appear', () => {
    const { lines, destination } = capture();
    const logger = createLogger({ destination });
    logger.warn(
      {
        authorization: 'Bearer sk-top',
        req: { headers: { authorization: 'Bearer sk-1', 'x-api-key': 'sk-2', cookie: 'a=b', host: 'h' } },
        err: { request: { headers: { 'X-Guardian-Token': 'tok-3', Authorization: 'Bearer sk-4' } } },
        'x-guardian-token': 'tok-5',
      },
      'upstream rejected',
    );
    const text = JSON.stringify(lines);
    for (const secret of ['sk-top', 'sk-1', 'sk-2', 'a=b', 'tok-3', 'sk-4', 'tok-5'])
      expect(text).not.toContain(secret);
    expect(lines[0]).toMatchObject({ req: { headers: { authorization: '[redacted]', host: 'h' } } });
  });

  it('honours the level', () => {
    const { lines, destination } = capture();
    const logger = createLogger({ level: 'warn', destination });
    logger.info('quiet');
    logger.warn('loud');
    expect(lines.map((l) => l.msg)).toEqual(['loud']);
  });
});

describe('logOnce', () => {
  it('logs a key once per logger and drops repeats', () => {
    const { lines, destination } = capture();
    const logger = createLogger({ destination });
    expect(logOnce(logger, 'fail_open:memo', { stage: 'memo' }, 'memo store unreachable; failing open')).toBe(
      true,
    );
    expect(logOnce(logger, 'fail_open:memo', { stage: 'memo' }, 'memo store unreachable; failing open')).toBe(
      false,
    );
    expect(logOnce(logger, 'fail_open:count', { stage: 'count' }, 'count failed', 'error')).toBe(true);
    expect(lines.map((l) => [l.level, l.once])).toEqual([
      [40, 'fail_open:memo'],
      [50, 'fail_open:count'],
    ]);
  });

  it('keeps a separate memory per logger', () => {
    const a = capture();
    const b = capture();
    logOnce(createLogger({ destination: a.destination }), 'k', {}, 'm');
    logOnce(createLogger({ destination: b.destination }), 'k', {}, 'm');
    expect([a.lines.length, b.lines.length]).toEqual([1, 1]);
  });
});
