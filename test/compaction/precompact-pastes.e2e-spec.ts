import { countPrompt } from '@guardian/stub-backend';

import { startStack, type Stack } from '../support/stack';
import {
  assistantItem,
  filler,
  itemsOf,
  loadRecordings,
  openingBody,
  userItem,
  type Json,
  type Recording,
} from '../support/recordings';
import { until } from '../support/wait';
import { forwarded, getJson, summaryCalls } from './support';

/**
 * Issue 30 item 12 and issue 32 item 8: pre-compaction at its default covers the real clients' paste sessions. Each
 * recorded client's shape sends fourteen ~17 KB pastes through the sidecar, at 32,768 and at a window the client's
 * own part nearly fills (every turn's paste must be cut). With pre-compaction on and a person reading each answer
 * before the next turn, the background summary is made by then and no turn waits on one in the foreground. Before,
 * the background planned its cut without the rule the foreground cuts by: at the tight windows 13 or 14 of the 14
 * turns waited, and Claude Code's shape at 32,768 waited 13 of 14, while every background job said "not needed".
 *
 * What goes out must not depend on that timing: the forwarded requests are byte for byte those of the same session
 * with pre-compaction off, and of the same session sent without a pause, where the next turn meets the background
 * summary still under way.
 */
const TURNS = 14;
const PASTE_CHARS = 17_000;
/** guardian's default GUARDIAN_PRECOMPACT_THRESHOLD (the test stack turns it off unless asked). */
const DEFAULT_PRECOMPACT = '0.8';

function paste(turn: number): string {
  const lines: string[] = [];
  for (let i = 0; lines.join('\n').length < PASTE_CHARS; i++)
    lines.push(`${String(turn).padStart(2, '0')}:${String(i).padStart(4, '0')} ${filler(60, turn * 41 + i)}`);
  return lines.join('\n').slice(0, PASTE_CHARS);
}

const userText = (turn: number): string =>
  `${turn === 1 ? 'Remember this: the deploy key is ZEBRA-7431. ' : ''}Step ${turn}: what does this log say?\n${paste(turn)}`;

interface Session {
  path: string;
  bodies: Json[];
  own: number;
  pasteTokens: number;
}

function session(rec: Recording): Session {
  const opening = openingBody(rec, userText(1));
  const key = Array.isArray(opening.body.messages) ? 'messages' : 'input';
  let history = itemsOf(opening.body);
  const bodies: Json[] = [];
  for (let turn = 1; turn <= TURNS; turn++) {
    if (turn > 1) history = [...history, userItem(opening.route, userText(turn))];
    bodies.push({ ...opening.body, [key]: history });
    history = [...history, assistantItem(opening.route, `Turn ${turn}: nothing unusual.`)];
  }
  const own = countPrompt(openingBody(rec, '').body, opening.route);
  return { path: opening.path, bodies, own, pasteTokens: countPrompt(opening.body, opening.route) - own };
}

type Mode = 'reading' | 'at once' | 'off';

interface Run {
  /** What the stub received for each turn, span references made alike (their names hold the run's time). */
  sent: string[];
  waits: number;
  calls: number;
  compacted: number;
  precompact: { done: number; used: number };
}

const SPAN_REF = /\d{8}-\d{6}-[0-9a-f]{8}-[0-9a-f]{8}\/\d{4,}\.json/g;

async function idle(stack: Stack): Promise<void> {
  await until(
    'the background pre-compaction to finish',
    async () =>
      ((await getJson(`${stack.guardian.url}/guardian/stats`)).body as { precompact: { running: number } })
        .precompact.running === 0,
  );
}

async function run(s: Session, window: number, mode: Mode): Promise<Run> {
  const stack = await startStack({
    // "at once": the summariser is slow enough that the next turn comes while the background one is under way.
    stub: { window, ...(mode === 'at once' ? { summaryDelayMs: 300 } : {}) },
    env: { GUARDIAN_PRECOMPACT_THRESHOLD: mode === 'off' ? '0' : DEFAULT_PRECOMPACT },
  });
  try {
    for (const body of s.bodies) {
      const res = await fetch(`${stack.guardian.url}${s.path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer sk-test',
          'x-api-key': 'sk-test',
          'anthropic-version': '2023-06-01',
        },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      if (mode === 'reading') await idle(stack);
    }
    await idle(stack);
    const stats = (await getJson(`${stack.guardian.url}/guardian/stats`)).body as {
      summary_waits: number;
      precompact: { done: number; used: number };
    };
    const sent = forwarded(stack.stub).map((r) => r.body.toString('utf8').replace(SPAN_REF, '<span>'));
    return {
      sent,
      waits: stats.summary_waits,
      calls: summaryCalls(stack.stub).length,
      compacted: sent.filter((b) => b.includes('## Context Guardian: archived conversation')).length,
      precompact: stats.precompact,
    };
  } finally {
    await stack.close();
  }
}

/** The client's own part and 60% of one paste, in whole KiB: the newest paste never fits whole beside that part. */
const tightWindow = (s: Session): number => Math.ceil((s.own + 0.6 * s.pasteTokens) / 1024) * 1024;

describe.each(loadRecordings().map((r) => [`${r.client} ${r.version}`, r] as const))(
  'a %s-shaped session of 17 KB pastes with pre-compaction at its default',
  (_name, rec) => {
    const s = session(rec);

    describe.each([
      ['at 32,768', 32_768],
      ['at a window its own part nearly fills', tightWindow(s)],
    ])('%s', (_w, window) => {
      const runs = {} as Record<Mode, Run>;

      beforeAll(async () => {
        for (const mode of ['reading', 'at once', 'off'] as const) runs[mode] = await run(s, window, mode);
      }, 600_000);

      it('compacts, and no turn waits on a summary in the foreground: each was made behind the answer before', () => {
        const { reading } = runs;
        expect(reading.sent).toHaveLength(TURNS);
        expect(reading.compacted).toBeGreaterThan(TURNS / 2);
        expect(reading.waits).toBe(0);
        expect(reading.precompact.used).toBeGreaterThan(0);
        // Every summary was one the next turn took, but the last, made for a turn that never came.
        expect(reading.calls).toBeGreaterThanOrEqual(reading.precompact.done);
        expect(reading.precompact.used).toBeGreaterThanOrEqual(reading.precompact.done - 1);
      });

      it('forwards the same bytes whether the background summary was made first, was under way, or never ran', () => {
        // Without pre-compaction, the turns that needed a summary waited on it.
        expect(runs.off.calls).toBeGreaterThan(0);
        expect(runs.off.waits).toBeGreaterThan(0);
        runs.reading.sent.forEach((body, i) =>
          expect({ turn: i + 1, body }).toEqual({ turn: i + 1, body: runs.off.sent[i] }),
        );
        runs['at once'].sent.forEach((body, i) =>
          expect({ turn: i + 1, body }).toEqual({ turn: i + 1, body: runs.off.sent[i] }),
        );
      });
    });
  },
);
