import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { sessionHash } from '@guardian/archive';
import { ANCHORS_HEADING, RECALL_HEADING } from '@guardian/compaction';

import { startStack, type Stack } from '../support/stack';
import {
  filler,
  forwarded,
  getJson,
  messagesOf,
  pinsIn,
  postChat,
  summaryBlock,
  textOf,
  type Json,
} from '../compaction/support';

/**
 * Issue 32 items 1, 2, 4 and 5 on the issue's own session, through the sidecar and the stub, whose summaries hold
 * nothing of this conversation (they list only FACT- tokens, and this session has none): whatever of it reaches a
 * compacted request got there by guardian's fixed rules. A pin changes at turn 18, a compacted document line is
 * asked about at turn 32, and the hand-off shows the pins as they stand.
 */
const SESSION = 'heron-release';
const OLD_PIN = 'Remember this: the release codename for project Heron is MAPLE-123.';
const OTHER_PIN = 'Remember this: the staging database host is db-7.internal.';
const UPDATE = "Update: project Heron's release codename is now CEDAR-789";
const DOC_LINE = 'doc12 L044: the retry budget is 7 attempts with a 250 ms backoff, then the job is parked.';
const ASK_CODENAME = 'What is the current release codename for project Heron?';
const ASK_DOC = 'What did doc12 L044 say about the retry budget?';
const TURNS = 32;

function userText(turn: number): string {
  if (turn === 1) return `Let us plan the Heron release in src/release/plan.ts. ${OLD_PIN}`;
  if (turn === 2) return `Step 2: ${filler(2, 80)}\n${OTHER_PIN}`;
  if (turn === 3)
    return [
      'Here is doc12, the job runner notes:',
      'doc12 L043: jobs are picked in order of their due time.',
      DOC_LINE,
      'doc12 L045: a parked job waits for an operator.',
    ].join('\n');
  if (turn === 18) return `Step 18: ${filler(18, 60)}\n${UPDATE}`;
  if (turn === 31) return ASK_CODENAME;
  if (turn === TURNS) return ASK_DOC;
  // Later turns still name the file of the first turn: an anchor the summary lost.
  return `Step ${turn}: ${filler(turn, 150)}${turn >= 5 ? '\nKeep working in src/release/plan.ts.' : ''}`;
}

describe("the issue's session: a pin that changes, a compacted line asked about, and the hand-off", () => {
  let stack: Stack;
  const statuses: number[] = [];
  const history: Json[] = [{ role: 'system', content: 'You are a coding assistant on the Heron project.' }];
  let replayed: Buffer | undefined;

  beforeAll(async () => {
    // Stated values off: with them on, the block itself quotes turn 1's file and turn 3's doc12 lines, so neither
    // recall nor the anchors would be needed. This test isolates those two rules; the whole session with every
    // default is test/retention/issue-session.e2e-spec.ts.
    stack = await startStack({ stub: { window: 8192 }, env: { GUARDIAN_STATED_MAX_CHARS: '0' } });
    for (let turn = 1; turn <= TURNS; turn++) {
      history.push({ role: 'user', content: userText(turn) });
      const res = await postChat(
        stack.baseURL,
        { model: 'stub-model', messages: history, max_tokens: 64 },
        { 'x-guardian-session': SESSION },
      );
      statuses.push(res.status);
      history.push({ role: 'assistant', content: `Done with step ${turn}.` });
    }
    // The last turn sent again, the same history: what is forwarded must be the same bytes.
    await postChat(
      stack.baseURL,
      { model: 'stub-model', messages: history.slice(0, -1), max_tokens: 64 },
      { 'x-guardian-session': SESSION },
    );
    replayed = forwarded(stack.stub).at(-1)?.body;
  });

  afterAll(async () => {
    await stack.close();
  });

  /** The forwarded request of a turn (one per turn: none was refused and retried). */
  const sent = (turn: number) => forwarded(stack.stub)[turn - 1]!;
  const tailOf = (turn: number): string =>
    messagesOf(sent(turn))
      .filter((m) => m.role !== 'system')
      .map(textOf)
      .join('\n');

  it('answers every turn, one forwarded request each, and has evicted turn 18 by turn 31', () => {
    expect(statuses).toEqual(new Array<number>(TURNS).fill(200));
    expect(forwarded(stack.stub)).toHaveLength(TURNS + 1);
    expect(tailOf(31)).not.toContain(UPDATE);
    expect(tailOf(31)).not.toContain('MAPLE-123');
  });

  it('forwards CEDAR-789 as current at turn 31, MAPLE-123 only marked superseded, the unrelated pin kept', () => {
    const block = summaryBlock(sent(31))!;
    expect(block).toBeDefined();
    const pins = pinsIn(block);
    expect(pins).toContain(`[current] ${UPDATE}`);
    expect(pins).toContain(OTHER_PIN);
    // MAPLE-123 appears once in the whole request, on its superseded pin.
    expect(pins).toContain(`[superseded by a later value] ${OLD_PIN}`);
    expect(JSON.stringify(sent(31).json).split('MAPLE-123')).toHaveLength(2);
  });

  it('brings back the compacted doc12 line when asked, naming its span, and adds nothing when nothing compacted is named', () => {
    const asked = messagesOf(sent(TURNS)).at(-1)!;
    const text = textOf(asked);
    expect(text.startsWith(ASK_DOC)).toBe(true);
    expect(text).toContain(RECALL_HEADING);
    expect(text).toMatch(
      new RegExp(`message 6, archived as [0-9-]+-[0-9a-f]{8}-[0-9a-f]{8}/\\d{4}\\.json: ${DOC_LINE}`),
    );
    // Only that turn: every other question named nothing that only evicted messages hold.
    const withRecall = forwarded(stack.stub)
      .slice(0, TURNS - 1)
      .filter((r) => JSON.stringify(r.json).includes(RECALL_HEADING));
    expect(withRecall).toEqual([]);
    expect(tailOf(31)).not.toContain(RECALL_HEADING);
  });

  it('forwards the same bytes for the same history', () => {
    expect(replayed?.equals(sent(TURNS).body)).toBe(true);
  });

  it("carries the first turn's file, which later turns still name, in the block", () => {
    const block = summaryBlock(sent(31))!;
    expect(block).toContain(`${ANCHORS_HEADING}\nsrc/release/plan.ts`);
  });

  it('counts and events the recall', async () => {
    const metrics = await (await fetch(`${stack.guardian.url}/metrics`)).text();
    expect(metrics).toMatch(/guardian_stale_recalls_total\{route="chat"\} 2\n/);
    const { body } = await getJson(`${stack.guardian.url}/guardian/events`);
    const events = (body.events as Json[]).filter((e) => e.kind === 'stale_recall');
    expect(events.map((e) => [e.excerpts, e.session])).toEqual([
      [1, expect.any(String)],
      [1, expect.any(String)],
    ]);
    expect(JSON.stringify(events)).not.toContain('doc12');
  });

  it('serves a hand-off with the current pins, JSON and Markdown, and writes it beside the run', async () => {
    const url = `${stack.guardian.url}/guardian/sessions/${SESSION}/handoff`;
    const { status, body } = await getJson(url);
    expect(status).toBe(200);
    expect(body.pins).toEqual([
      { text: OLD_PIN, status: 'superseded' },
      { text: OTHER_PIN, status: 'current' },
      { text: UPDATE, status: 'current' },
    ]);
    expect(body.goal).toBe(`Let us plan the Heron release in src/release/plan.ts. ${OLD_PIN}`);
    expect(body.open_question).toBe(ASK_DOC);
    const md = await (await fetch(`${url}?format=md`)).text();
    expect(md).toContain(`- ~~${OLD_PIN}~~ (superseded)`);
    expect(md).toContain(`- ${UPDATE}`);
    const accepted = await fetch(url, { headers: { accept: 'text/markdown' } });
    expect(accepted.headers.get('content-type')).toMatch(/^text\/markdown/);
    expect((await getJson(`${stack.guardian.url}/guardian/sessions/nobody/handoff`)).status).toBe(404);
    // The console names a session by its hash (the id its sessions list gives): the same hand-off answers there.
    const byHash = await getJson(`${stack.guardian.url}/guardian/sessions/${sessionHash(SESSION)}/handoff`);
    expect([byHash.status, byHash.body]).toEqual([200, body]);
    await stack.stopGuardian();
    const file = JSON.parse(
      await readFile(join(stack.dataDir, 'spans', String(body.run), 'handoff.json'), 'utf8'),
    ) as Json;
    expect(file.pins).toEqual(body.pins);
  });
});
