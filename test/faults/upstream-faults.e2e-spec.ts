import { BIG_400, BIG_503, MALFORMED, type Fault } from './support/fault-proxy';
import { startFaultStack, type FaultStack } from './support/fault-stack';
import {
  formatCounted,
  formatTable,
  LONG,
  runFault,
  SHORT,
  type Counted,
  type FaultSpec,
  type Row,
} from './support/scenario';
import { Conversation, PATHS, ROUTES } from './support/traffic';

// The fault suite, part 1: the upstream and the summariser misbehave (docs/RELIABILITY.md "Fail open").
// stub <- fault proxy <- guardian, real HTTP on loopback, the official SDKs as clients, the three routes streamed
// and not. Each fault is switched on after a few healthy turns (the conversations are compacting by then) and off
// again; the table says what every client saw and what the archive holds of the spans the requests named.
// Where the upstream itself breaks, the client gets the break (guardian's 502/504, the upstream's own status, a cut
// answer); where only guardian's own work breaks (the summariser), the client gets an answer. Either way guardian
// counts what happened: a fail-open or an upstream error is a designed path, never silence.

const shape = process.env.LONG === '1' ? LONG : SHORT;

interface Case {
  fault: Fault;
  /** What a client may see while the fault is on. */
  during: FaultSpec['during'];
  /** What guardian must have counted, given how many requests did not end `ok`. */
  counted: (c: Counted, notOk: number) => void;
}

const CASES: Case[] = [
  {
    fault: 'none',
    during: ['ok'],
    counted: (c) => expect(c).toMatchObject({ failOpen: {}, upstreamError: 0, archiveDeferred: 0 }),
  },
  // Unreachable or silent: guardian answers 502/504 itself (ARCHITECTURE.md#fail-open rule 6 shapes them), each one
  // counted.
  { fault: 'refuse', during: ['http 502'], counted: (c, notOk) => expect(c.upstreamError).toBe(notOk) },
  { fault: 'hang', during: ['http 504'], counted: (c, notOk) => expect(c.upstreamError).toBe(notOk) },
  // The upstream's own answer, passed through: not guardian's error; the summariser's failure is counted.
  {
    fault: 'http-503',
    during: ['http 503'],
    counted: (c) => expect([c.upstreamError, c.summariserFailures > 0]).toEqual([0, true]),
  },
  // An error answer over 1 MB (a proxy's HTML page, a verbose 400): the client gets the upstream's status, headers
  // and body, not guardian's 502 (issue 12 defect 4); the upstream answered, so it is no upstream error.
  {
    fault: 'http-503-big',
    during: ['http 503'],
    counted: (c) => expect(c.upstreamError).toBe(0),
  },
  {
    fault: 'http-400-big',
    during: ['http 400'],
    counted: (c) => expect(c.upstreamError).toBe(0),
  },
  {
    fault: 'reset-mid-stream',
    during: ['broken', 'malformed'],
    counted: (c, notOk) => expect(c.upstreamError).toBe(notOk),
  },
  // Guardian cannot tell a malformed answer from a good one: it streams the bytes on (checked byte for byte below).
  { fault: 'malformed-sse', during: ['malformed', 'broken', 'ok'], counted: () => undefined },
  { fault: 'summary-empty', during: ['ok'], counted: (c) => expect(c.summariserFailures).toBeGreaterThan(0) },
  {
    fault: 'summary-garbage',
    during: ['ok'],
    counted: (c) => expect(c.summariserFailures).toBeGreaterThan(0),
  },
  {
    fault: 'summary-slow',
    during: ['ok'],
    counted: (c) => expect([c.failOpen, c.summariserFailures]).toEqual([{}, 0]),
  },
  { fault: 'summary-hung', during: ['ok'], counted: (c) => expect(c.summariserFailures).toBeGreaterThan(0) },
];

describe('faults in the upstream and the summariser', () => {
  let stack: FaultStack;
  const rows: Row[] = [];
  const counted: Counted[] = [];
  beforeAll(async () => {
    stack = await startFaultStack({
      stub: { window: 4096 },
      env: {
        GUARDIAN_RESERVE_OUTPUT: '512',
        // Short, so that a hung upstream or summariser is seen in seconds (the defaults are 600 s and 60 s).
        GUARDIAN_UPSTREAM_TIMEOUT: '1',
        GUARDIAN_SUMMARY_TIMEOUT_MS: '700',
        GUARDIAN_UPSTREAM_CONNECT_TIMEOUT: '1',
      },
    });
    stack.proxy.slowMs = 300;
  });
  afterAll(async () => {
    process.stdout.write(
      `\nfault table (upstream and summariser), ${JSON.stringify(shape)}\n${formatTable(rows)}\n` +
        `${formatCounted(counted)}\n`,
    );
    await stack?.close();
  });

  it.each(CASES.map((c) => [c.fault, c] as const))(
    '%s: every request answered as the fault allows',
    async (_, k) => {
      const fault: FaultSpec = {
        name: k.fault,
        on: () => stack.proxy.set(k.fault),
        off: () => stack.proxy.set('none'),
        during: k.during,
      };
      const ctx = {
        baseURL: stack.guardian.url,
        stub: stack.stub,
        dataDir: stack.dataDir,
        seed: rows.length + 1,
      };
      const { rows: got, counted: c } = await runFault(ctx, fault, shape);
      rows.push(...got);
      counted.push(c);
      for (const row of got) {
        const id = [row.fault, row.route, row.mode];
        expect([...id, row.answered]).toEqual([...id, row.sent]);
        expect([...id, row.missing, row.unarchived]).toEqual([...id, [], 0]);
        expect([...id, row.verify]).toEqual([...id, expect.stringMatching(/^OK/)]);
      }
      // The conversations were compacting, so the archive was really at work in this row.
      expect(got.reduce((n, r) => n + r.acked.size, 0)).toBeGreaterThan(0);
      k.counted(
        c,
        got.reduce((n, r) => n + r.sent - (r.outcomes.get('ok') ?? 0), 0),
      );
    },
  );

  it('passes an error answer over 1 MB to the client as the upstream sent it (defect 4)', async () => {
    const seen: string[] = [];
    for (const [fault, body] of [
      ['http-503-big', BIG_503],
      ['http-400-big', BIG_400],
    ] as const) {
      await stack.proxy.set(fault);
      try {
        for (const route of ROUTES) {
          const res = await fetch(`${stack.guardian.url}${PATHS[route]}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(new Conversation(route, 900).body(1, false)),
          });
          const text = await res.text();
          seen.push(
            `${fault} ${route}: ${res.status}${text === body ? ', body byte for byte' : `, not the upstream's body (${text.slice(0, 80)})`}${res.headers.get('retry-after') ? `, retry-after ${res.headers.get('retry-after')}` : ''}`,
          );
          expect([fault, route, res.status, text === body]).toEqual([
            fault,
            route,
            fault === 'http-503-big' ? 503 : 400,
            true,
          ]);
          if (fault === 'http-503-big') expect(res.headers.get('retry-after')).toBe('7');
        }
      } finally {
        await stack.proxy.set('none');
      }
    }
    process.stdout.write(`error answers over 1 MB:\n${seen.join('\n')}\n`);
  });

  it('passes a malformed answer to the client byte for byte', async () => {
    await stack.proxy.set('malformed-sse');
    try {
      for (const route of ROUTES)
        for (const stream of [false, true]) {
          const res = await fetch(`${stack.guardian.url}${PATHS[route]}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              model: 'stub-model',
              stream,
              max_tokens: 8,
              messages: [{ role: 'user', content: 'hi' }],
            }),
          });
          const expected = stream ? MALFORMED.sse : MALFORMED.json;
          expect([route, stream, await res.text()]).toEqual([route, stream, expected]);
        }
    } finally {
      await stack.proxy.set('none');
    }
  });
});
