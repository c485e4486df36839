import { countPrompt } from '@guardian/stub-backend';

import { startStack, type Stack } from '../support/stack';
import {
  assistantItem,
  filler,
  itemsOf,
  loadRecordings,
  openingBody,
  requestText,
  userItem,
  type Json,
  type Recording,
} from '../support/recordings';
import { COUNTING, forwarded } from './support';

/**
 * Issue 30 item 11: at a window where the client's own part (instructions, tools) is over guardian's budget, the
 * newest message must itself be cut for the request to fit the window. Codex at 16,384 (its own part is 9,476
 * tokens, over the 8,192 budget the default 8,192-token reserve leaves) answered 1 turn of 14 through the sidecar:
 * the newest 17 KB paste went on whole, over the window, and the overflow retry sent the same bytes again. Each
 * recorded client's shape, fourteen 17 KB pastes, at a window its own part and the newest paste together exceed and
 * whose budget its own part exceeds: every turn is answered, first time, within the window, with the head of the
 * newest message forwarded.
 */
const TURNS = 14;
const PASTE_CHARS = 17_000;

function paste(turn: number): string {
  const lines: string[] = [];
  for (let i = 0; lines.join('\n').length < PASTE_CHARS; i++)
    lines.push(`${String(turn).padStart(2, '0')}:${String(i).padStart(4, '0')} ${filler(60, turn * 37 + i)}`);
  return lines.join('\n').slice(0, PASTE_CHARS);
}

const head = (turn: number): string => `Turn ${turn}: what does this log say?`;

function bodies(rec: Recording): {
  route: string;
  path: string;
  bodies: Json[];
  own: number;
  pasteTokens: number;
} {
  const opening = openingBody(rec, `${head(1)}\n${paste(1)}`);
  const key = Array.isArray(opening.body.messages) ? 'messages' : 'input';
  const own = countPrompt(openingBody(rec, '').body, opening.route);
  const pasteTokens = countPrompt(opening.body, opening.route) - own;
  let history = itemsOf(opening.body);
  const out: Json[] = [];
  for (let turn = 1; turn <= TURNS; turn++) {
    if (turn > 1) history = [...history, userItem(opening.route, `${head(turn)}\n${paste(turn)}`)];
    out.push({ ...opening.body, [key]: history });
    history = [...history, assistantItem(opening.route, `Turn ${turn}: nothing unusual.`)];
  }
  return { route: opening.route, path: opening.path, bodies: out, own, pasteTokens };
}

/**
 * The client's own part and 60% of one paste, in whole KiB of tokens: the newest paste alone does not fit beside the
 * client's own part, and the budget (the window less the 8,192-token default reserve) is below that own part.
 */
const windowFor = (own: number, pasteTokens: number): number =>
  Math.ceil((own + 0.6 * pasteTokens) / 1024) * 1024;

describe.each(
  COUNTING.flatMap((c) =>
    loadRecordings().map((r) => [`${r.client} ${r.version}`, c.counting, r, c] as const),
  ),
)(
  'a %s-shaped session of 17 KB pastes at a window whose budget its own part fills, with %s',
  (_name, _counting, rec, counting) => {
    const s = bodies(rec);
    const window = windowFor(s.own, s.pasteTokens);
    const statuses: number[] = [];
    const cutHeaders: (string | null)[] = [];
    let stack: Stack;

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
        cutHeaders.push(res.headers.get('x-guardian-newest-cut'));
        await res.arrayBuffer();
      }
    });

    afterAll(async () => {
      await stack.close();
    });

    it('answers every turn with one forwarded request that fits the window', () => {
      // The setting is what the issue describes: direct, the first turn alone overflows; the budget is under the
      // client's own part.
      expect(s.own + s.pasteTokens).toBeGreaterThan(window);
      expect(window - 8192).toBeLessThan(s.own);
      expect(statuses).toEqual(new Array<number>(TURNS).fill(200));
      const sent = forwarded(stack.stub);
      expect(sent).toHaveLength(TURNS);
      for (const r of sent) expect(r.promptTokens!).toBeLessThanOrEqual(window);
    });

    it("forwards the newest message's question, cut if it must be, never dropped", () => {
      forwarded(stack.stub).forEach((r, i) => {
        expect(requestText(r.json as Json)).toContain(head(i + 1));
      });
    });

    it('tells the client, in a header and an event, on exactly the turns whose newest message was cut', async () => {
      const cut = forwarded(stack.stub).map((r, i) => !requestText(r.json as Json).includes(paste(i + 1)));
      // The client's own part and one paste are over the window, so every turn that fits had its paste cut.
      expect(cut).toEqual(new Array<boolean>(TURNS).fill(true));
      cutHeaders.forEach((h, i) => {
        if (cut[i]) expect(h).toMatch(/^omitted_tokens=[1-9]\d*; original_tokens=[1-9]\d*; span=\S+$/);
        else expect(h).toBeNull();
      });
      const events = (await (await fetch(`${stack.guardian.url}/guardian/events`)).json()) as {
        events: { kind: string }[];
      };
      expect(events.events.filter((e) => e.kind === 'newest_cut')).toHaveLength(cut.filter(Boolean).length);
    });
  },
);
