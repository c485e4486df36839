import { LEDGER_HEADING } from '@guardian/compaction';
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
import { forwarded, messagesOf, postChat, textOf } from './support';

/**
 * Issue 17: the user's standing instructions survive compaction verbatim, on all three routes, in the five real
 * clients' request shapes (test/works-with/recordings), and over a session of hundreds of turns where they keep
 * changing. The stub's summariser lists only FACT- tokens, so an instruction that reaches a compacted request got
 * there through the ledger, not through a summary; the ledger switched off shows the difference.
 */
const RULES = 'Never touch the prod database. Use pnpm.';
const OPENING = `Let us start the billing migration. ${RULES}`;
const TURNS = 10;
const PASTE_CHARS = 12_000;

function userText(turn: number): string {
  if (turn === 1) return OPENING;
  const lines: string[] = [];
  for (let i = 0; lines.join('\n').length < PASTE_CHARS; i++)
    lines.push(`${turn}:${i} ${filler(60, turn * 31 + i)}`);
  return `Step ${turn}: review the log below.\n${lines.join('\n').slice(0, PASTE_CHARS)}`;
}

function session(rec: Recording): { route: 'chat' | 'messages' | 'responses'; path: string; bodies: Json[] } {
  const opening = openingBody(rec, userText(1));
  const key = Array.isArray(opening.body.messages) ? 'messages' : 'input';
  let history = itemsOf(opening.body);
  const bodies: Json[] = [];
  for (let turn = 1; turn <= TURNS; turn++) {
    if (turn > 1) history = [...history, userItem(opening.route, userText(turn))];
    bodies.push({ ...opening.body, [key]: history });
    history = [...history, assistantItem(opening.route, `Reviewed step ${turn}.`)];
  }
  return { route: opening.route, path: opening.path, bodies };
}

async function send(stack: Stack, path: string, bodies: readonly Json[]): Promise<number[]> {
  const statuses: number[] = [];
  for (const body of bodies) {
    const res = await fetch(`${stack.guardian.url}${path}`, {
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
  return statuses;
}

/** The forwarded requests that no longer hold the user's first message: it was evicted. */
function evictedOpening(stack: Stack): string[] {
  return forwarded(stack.stub)
    .map((r) => requestText(r.json as Json))
    .filter((text) => !text.includes(OPENING));
}

describe.each(loadRecordings().map((r) => [`${r.client} ${r.version}`, r] as const))(
  'standing instructions in a %s-shaped session through the sidecar',
  (_name, rec) => {
    const s = session(rec);
    // Small enough that the first message is evicted by the fourth turn.
    const window = Math.floor((countPrompt(s.bodies[3], s.route) - 1) / 1024) * 1024;
    let on: Stack;
    let off: Stack;
    const statuses: number[][] = [];

    beforeAll(async () => {
      on = await startStack({ stub: { window } });
      off = await startStack({ stub: { window }, env: { GUARDIAN_LEDGER_MAX_CHARS: '0' } });
      statuses.push(await send(on, s.path, s.bodies), await send(off, s.path, s.bodies));
    });

    afterAll(async () => {
      await on.close();
      await off.close();
    });

    it('carries them verbatim, newest first, in every request that evicted the message they were typed in', () => {
      expect(statuses[0]).toEqual(new Array<number>(TURNS).fill(200));
      const evicted = evictedOpening(on);
      expect(evicted.length).toBeGreaterThan(0);
      for (const text of evicted)
        expect(text).toContain(`${LEDGER_HEADING}\n- Use pnpm.\n- Never touch the prod database.`);
    });

    it('loses them with the ledger off: a summary is all that stands for the message then', () => {
      expect(statuses[1]).toEqual(new Array<number>(TURNS).fill(200));
      const evicted = evictedOpening(off);
      expect(evicted.length).toBeGreaterThan(0);
      for (const text of evicted) {
        expect(text).not.toContain(LEDGER_HEADING);
        expect(text).not.toContain('Use pnpm.');
      }
    });
  },
);

describe('a 240-turn chat session whose rules keep changing, against a hard 8k window', () => {
  const TURN_COUNT = 240;
  const CAP = 1200;
  /** Every 5th turn types a rule; every 40th repeats an old one, which the ledger then carries once, at its newest. */
  const ruleAt = (turn: number): string | undefined => {
    if (turn % 40 === 0) return 'Never touch the prod database.';
    return turn % 5 === 0 ? `From now on, tag every release with RULE-${turn}.` : undefined;
  };
  let stack: Stack;
  const statuses: number[] = [];
  const history: Json[] = [{ role: 'system', content: 'You are a careful engineer.' }];
  const typed: { turn: number; rule: string }[] = [];

  beforeAll(async () => {
    stack = await startStack({ stub: { window: 8192 }, env: { GUARDIAN_RESERVE_OUTPUT: '1024' } });
    for (let turn = 1; turn <= TURN_COUNT; turn++) {
      const rule = ruleAt(turn);
      if (rule) typed.push({ turn, rule });
      history.push({
        role: 'user',
        content: `Step ${turn}.\n${filler(600, turn)}${rule ? `\n${rule}` : ''}`,
      });
      const res = await postChat(stack.baseURL, { model: 'stub-model', messages: history, max_tokens: 64 });
      statuses.push(res.status);
      history.push({ role: 'assistant', content: `Step ${turn} done.` });
    }
  });

  afterAll(async () => {
    await stack.close();
  });

  it('answers every turn and carries exactly the newest evicted rules that fit the cap, each once', () => {
    expect(statuses).toEqual(new Array<number>(TURN_COUNT).fill(200));
    let checked = 0;
    let capped = 0;
    // One forwarded request per turn (none was refused and retried): request i is turn i + 1.
    expect(forwarded(stack.stub)).toHaveLength(TURN_COUNT);
    forwarded(stack.stub).forEach((req, i) => {
      const msgs = messagesOf(req);
      const system = textOf(msgs[0]!);
      const tail = msgs.slice(1).map(textOf).join('\n');
      const at = system.indexOf(LEDGER_HEADING);
      const ledger =
        at === -1
          ? []
          : system
              .slice(at + LEDGER_HEADING.length)
              // The ledger's list ends at the blank line before the block's next list (the stated values).
              .split('\n\n')[0]!
              .split('\n')
              .filter((l) => l.startsWith('- '))
              .map((l) => l.slice(2));
      // The rules typed in messages this request no longer holds, newest first, each once, while they fit.
      const evicted = typed
        .filter(({ turn }) => turn <= i + 1 && !tail.includes(`Step ${turn}.\n`))
        .reverse();
      const expected: string[] = [];
      let total = 0;
      for (const { rule } of evicted) {
        if (expected.includes(rule)) continue;
        if (total + rule.length + 3 > CAP) break;
        total += rule.length + 3;
        expected.push(rule);
      }
      // The block lists them newest first.
      expect(ledger).toEqual(expected);
      if (expected.length > 0) checked += 1;
      if (new Set(evicted.map((e) => e.rule)).size > expected.length) capped += 1;
    });
    expect(checked).toBeGreaterThan(100);
    // Late in the session the cap is what bounds the ledger: more rules were evicted than it holds.
    expect(capped).toBeGreaterThan(0);
  });
});
