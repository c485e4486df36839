import { UpstreamClient } from '@guardian/upstream';

import { GuardianConfig } from '../../config/guardian-config';
import { EXACT_FAILURES, EXACT_REST_MS, ExactCountRest, RequestCounter } from './request-counter';

// Calibration is kept per model, and model names are the client's to choose (issue 12 defect 6): the table holds
// the 256 models calibrated most recently, and names too long to be a model are not kept at all.

describe('RequestCounter calibration table', () => {
  const config = GuardianConfig.fromEnv({}, { version: 't', home: '/nonexistent' });
  const upstream = new UpstreamClient({
    origin: 'http://127.0.0.1:9',
    timeoutSeconds: 1,
    connectTimeoutSeconds: 1,
  });
  afterAll(() => upstream.close());

  const calibrate = (counter: RequestCounter, model: string) => {
    for (let i = 0; i < 5; i++) counter.observe(model, 1200, 1000);
  };

  it('forgets the oldest model past 256', () => {
    const counter = new RequestCounter(config, upstream);
    for (let i = 0; i <= 256; i++) calibrate(counter, `m-${i}`);
    expect(counter.isCalibrated('m-0')).toBe(false);
    expect(counter.isCalibrated('m-1')).toBe(true);
    expect(counter.counterFor('m-256').factor).toBeCloseTo(1.2);
  });

  it('keeps a model that is still sampled while 256 newer ones are calibrated', () => {
    const counter = new RequestCounter(config, upstream);
    calibrate(counter, 'busy');
    for (let i = 1; i <= 256; i++) {
      calibrate(counter, `m-${i}`);
      if (i === 200) counter.observe('busy', 1200, 1000);
    }
    expect(counter.isCalibrated('busy')).toBe(true);
    expect(counter.counterFor('busy').factor).toBeCloseTo(1.2);
    expect(counter.isCalibrated('m-1')).toBe(false);
    expect(counter.isCalibrated('m-2')).toBe(true);
  });

  it('keeps nothing for a name over 256 characters', () => {
    const counter = new RequestCounter(config, upstream);
    const huge = 'x'.repeat(5000);
    calibrate(counter, huge);
    expect(counter.isCalibrated(huge)).toBe(false);
  });
});

// Issue 30 item 8: three exact-count failures in a row stopped exact counting for the life of the process. It rests
// and asks again; the clock is an argument.
describe('ExactCountRest', () => {
  it('rests a route after EXACT_FAILURES failures in a row, then asks once: a success ends the rest', () => {
    const rest = new ExactCountRest();
    for (let i = 1; i < EXACT_FAILURES; i++) rest.failure('chat', 0);
    expect(rest.allows('chat', 0)).toBe(true);
    rest.failure('chat', 0);
    expect(rest.allows('chat', 0)).toBe(false);
    expect(rest.allows('messages', 0)).toBe(true);
    expect(rest.allows('chat', EXACT_REST_MS[0] - 1)).toBe(false);
    expect(rest.allows('chat', EXACT_REST_MS[0])).toBe(true);
    rest.success('chat');
    expect(rest.allows('chat', EXACT_REST_MS[0])).toBe(true);
    // Counted from zero again: one failure does not rest it.
    rest.failure('chat', EXACT_REST_MS[0]);
    expect(rest.allows('chat', EXACT_REST_MS[0])).toBe(true);
  });

  it('rests longer each time the one request asked after a rest fails, up to the last step', () => {
    const rest = new ExactCountRest();
    let now = 0;
    for (let i = 0; i < EXACT_FAILURES; i++) rest.failure('chat', now);
    const rests: number[] = [];
    for (let i = 0; i < EXACT_REST_MS.length + 2; i++) {
      let waited = 0;
      while (!rest.allows('chat', now + waited)) waited += 1_000;
      rests.push(waited);
      now += waited;
      rest.failure('chat', now);
    }
    expect(rests).toEqual([...EXACT_REST_MS, EXACT_REST_MS.at(-1), EXACT_REST_MS.at(-1)]);
  });
});
