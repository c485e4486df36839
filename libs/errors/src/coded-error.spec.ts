import { CodedError, codeOf } from './coded-error';

type ThingCode = 'THING_MISSING' | 'THING_BROKEN';
class ThingError extends CodedError<ThingCode> {
  override readonly name = 'ThingError';
}

describe('CodedError', () => {
  it('carries its code, message and cause, and is an Error of its own class', () => {
    const cause = new Error('disk');
    const err = new ThingError('THING_BROKEN', 'the thing broke', { cause });
    expect(err).toBeInstanceOf(Error);
    expect(err).toBeInstanceOf(CodedError);
    expect(err).toBeInstanceOf(ThingError);
    expect([err.code, err.message, err.cause, err.name]).toEqual([
      'THING_BROKEN',
      'the thing broke',
      cause,
      'ThingError',
    ]);
  });

  it('is(err, code) narrows by class and, when given, by code', () => {
    const err: unknown = new ThingError('THING_MISSING', 'gone');
    expect(ThingError.is(err)).toBe(true);
    expect(ThingError.is(err, 'THING_MISSING')).toBe(true);
    expect(ThingError.is(err, 'THING_BROKEN')).toBe(false);
    expect(ThingError.is(new Error('plain'))).toBe(false);
  });
});

describe('codeOf', () => {
  it("names a coded error's code, a system error's code, else nothing", () => {
    expect(codeOf(new ThingError('THING_MISSING', 'gone'))).toBe('THING_MISSING');
    expect(codeOf(Object.assign(new Error('full'), { code: 'ENOSPC' }))).toBe('ENOSPC');
    expect(codeOf(new Error('plain'))).toBeUndefined();
    expect(codeOf('a string')).toBeUndefined();
  });
});
