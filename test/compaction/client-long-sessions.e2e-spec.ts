import { countPrompt } from '@guardian/stub-backend';

import { startStack, type Stack } from '../support/stack';
import {
  assistantItem,
  filler,
  itemText,
  itemsOf,
  loadRecordings,
  openingBody,
  requestText,
  userItem,
  type Json,
  type Recording,
} from '../support/recordings';
import { COUNTING, forwarded, getJson } from './support';

/**
 * Issue 11 findings 1 and 2, in the real clients' request shapes (test/works-with/recordings): ten turns that each
 * paste ~17 KB, "Remember this: the deploy key is ZEBRA-7431" on turn 1, against a backend with a hard window
 * (32,768 tokens, or less where the client's fixed part is small, so that the session sent direct overflows by turn
 * 5) and guardian's defaults. Before the rebuild policy moved into libs/compaction, pins were shed before the
 * spill was tried (the fact was missing from most compacted Codex and OpenCode requests), and the spill cut the
 * newest message, the one being asked, while older pastes stayed whole.
 */
const FACT = 'ZEBRA-7431';
const TURNS = 10;
const MAX_WINDOW = 32768;
const PASTE_CHARS = 17_000;

function paste(turn: number): string {
  const lines: string[] = [];
  for (let i = 0; lines.join('\n').length < PASTE_CHARS; i++)
    lines.push(`${String(turn).padStart(2, '0')}:${String(i).padStart(4, '0')} ${filler(60, turn * 31 + i)}`);
  return lines.join('\n').slice(0, PASTE_CHARS);
}

function userText(turn: number): string {
  const head =
    turn === 1
      ? `Remember this: the deploy key is ${FACT}. Review the log below.`
      : `Step ${turn}: review the next log below and say what changed.`;
  return `${head}\n${paste(turn)}`;
}

interface Session {
  route: 'chat' | 'messages' | 'responses';
  path: string;
  /** What the client sends each turn: its own full history, with a short fixed answer after every turn. */
  bodies: Json[];
}

function session(rec: Recording): Session {
  const opening = openingBody(rec, userText(1));
  const key = Array.isArray(opening.body.messages) ? 'messages' : 'input';
  let history = itemsOf(opening.body);
  const bodies: Json[] = [];
  for (let turn = 1; turn <= TURNS; turn++) {
    if (turn > 1) history = [...history, userItem(opening.route, userText(turn))];
    bodies.push({ ...opening.body, [key]: history });
    history = [...history, assistantItem(opening.route, `Reviewed step ${turn}; nothing blocks the deploy.`)];
  }
  return { route: opening.route, path: opening.path, bodies };
}

/** 32,768, or the largest multiple of 1,024 the fifth turn overflows when the client's own part is smaller. */
function windowFor(s: Session): number {
  const fifth = countPrompt(s.bodies[4], s.route);
  return Math.min(MAX_WINDOW, Math.floor((fifth - 1) / 1024) * 1024);
}

const recordings = loadRecordings();

describe.each(
  COUNTING.flatMap((c) => recordings.map((r) => [`${r.client} ${r.version}`, c.counting, r, c] as const)),
)(
  'a %s-shaped session of ten 17 KB pastes through the sidecar, with %s',
  (_name, _counting, rec, counting) => {
    let stack: Stack;
    const s = session(rec);
    const window = windowFor(s);
    const statuses: number[] = [];

    beforeAll(async () => {
      stack = await startStack({ stub: { window, ...counting.stub }, env: { ...counting.env } });
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
        statuses.push(res.status);
        await res.arrayBuffer();
      }
    });

    afterAll(async () => {
      await stack.close();
    });

    it('is a session the backend alone refuses by turn 5; through the sidecar every turn fits and is answered', () => {
      const direct = s.bodies.findIndex((b) => countPrompt(b, s.route) > window) + 1;
      expect(direct).toBeGreaterThan(0);
      expect(direct).toBeLessThanOrEqual(5);
      expect(statuses).toEqual(new Array<number>(TURNS).fill(200));
      // One forwarded request per turn: none was refused and retried.
      expect(forwarded(stack.stub)).toHaveLength(TURNS);
      for (const r of forwarded(stack.stub)) expect(r.promptTokens!).toBeLessThanOrEqual(window);
    });

    it('compacts, and carries the pinned fact in every request it forwards', async () => {
      const stats = (await getJson(`${stack.guardian.url}/guardian/stats`)).body;
      expect(stats.compactions_performed).toBeGreaterThan(0);
      const reqs = forwarded(stack.stub);
      const missing = reqs
        .map((r, i) => ({ turn: i + 1, text: requestText(r.json as Json) }))
        .filter((r) => !r.text.includes(FACT))
        .map((r) => r.turn);
      expect(missing).toEqual([]);
    });

    it('forwards the newest user message whole: it fits, so older pastes give way first', () => {
      forwarded(stack.stub).forEach((r, i) => {
        const newest = userText(i + 1);
        const texts = itemsOf(r.json as Json).map(itemText);
        expect(texts.some((t) => t.includes(newest))).toBe(true);
      });
    });
  },
);
