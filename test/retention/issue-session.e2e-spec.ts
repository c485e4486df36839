import { RECALL_HEADING } from '@guardian/compaction';
import type { RecordedRequest } from '@guardian/stub-backend';
import { createLogger } from '@guardian/telemetry';

import { startGuardian, type RunningGuardian } from '../../apps/guardian/src/bootstrap';
import { GuardianConfig } from '../../apps/guardian/src/config/guardian-config';
import { startStack, type Stack } from '../support/stack';
import {
  filler,
  forwarded,
  getJson,
  messagesOf,
  pinsIn,
  postChat,
  summaryBlock,
  summaryCalls,
  textOf,
  type Json,
} from '../compaction/support';

/**
 * Issue 32's own session, whole, with every default, against a summariser that holds nothing of it (the stub's
 * `blankSummaries`: a summary in the asked-for shape with no value in it): the coding agent reads a file on most
 * turns, the release codename changes at turn 18, the question about it comes at turn 31 and one about a compacted
 * document line at turn 32. Whatever of the session a request carries, guardian's own rules carried.
 */
const SESSION = 'heron-release-tools';
const WINDOW = 8192;
const TURNS = 32;
const OLD_PIN = 'Remember this: the release codename for project Heron is MAPLE-123.';
const OTHER_PIN = 'Remember this: the staging database host is db-7.internal.';
const UPDATE = "Update: project Heron's release codename is now CEDAR-789";
const DOC_LINE = 'doc12 L044: the retry budget is 7 attempts with a 250 ms backoff, then the job is parked.';
const ASK_CODENAME = 'What is the current release codename for project Heron?';
const ASK_DOC = 'What did doc12 L044 say about the retry budget?';
const POINTER = '[context-guardian: old result of read_file cleared';

/** doc12 as a user pastes it: forty numbered lines, the one asked about among them (a paste, not typed values). */
function docPaste(): string {
  const lines = Array.from({ length: 40 }, (_, i) => {
    const n = String(i + 20).padStart(3, '0');
    return `doc12 L${n}: ${filler(300 + i, 8).replace(/\n/g, ' ')}`;
  });
  lines[24] = DOC_LINE;
  return ['Here is doc12, the job runner notes:', ...lines].join('\n');
}

function userText(turn: number): string {
  if (turn === 1) return `Let us plan the Heron release in src/release/plan.ts. ${OLD_PIN}`;
  if (turn === 2) return `Step 2: ${filler(2, 40)}\n${OTHER_PIN}`;
  if (turn === 3) return docPaste();
  if (turn === 18) return `Step 18: ${filler(18, 40)}\n${UPDATE}`;
  if (turn === 31) return ASK_CODENAME;
  if (turn === TURNS) return ASK_DOC;
  return `Step ${turn}: ${filler(turn, 60)}`;
}

/** A file the agent reads, about 2 KB, different every turn. */
const fileText = (turn: number): string =>
  Array.from({ length: 20 }, (_, i) => `${i + 1}: ${filler(turn * 100 + i, 14).replace(/\n/g, ' ')}`).join(
    '\n',
  );
/** Turns 4 to 30 but 18 read a file before answering. */
const readsFile = (turn: number): boolean => turn >= 4 && turn <= 30 && turn !== 18;

describe("issue 32's session, whole, against a summariser that holds nothing", () => {
  let stack: Stack;
  const statuses: number[] = [];
  /** The forwarded request of each turn (1-based), found by the turn's own last message. */
  const sentAt = new Map<number, RecordedRequest>();
  const history: Json[] = [{ role: 'system', content: 'You are a coding agent on the Heron project.' }];

  beforeAll(async () => {
    stack = await startStack({ stub: { window: WINDOW, blankSummaries: true, maxRecorded: 1000 } });
    for (let turn = 1; turn <= TURNS; turn++) {
      history.push({ role: 'user', content: userText(turn) });
      if (readsFile(turn)) {
        // The request after the agent's tool call: the client sends the call and its result with the history.
        const id = `call_${turn}`;
        history.push({
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id,
              type: 'function',
              function: {
                name: 'read_file',
                arguments: JSON.stringify({ path: `src/release/step${turn}.ts` }),
              },
            },
          ],
        });
        history.push({ role: 'tool', tool_call_id: id, content: fileText(turn) });
      }
      const before = forwarded(stack.stub).length;
      const res = await postChat(
        stack.baseURL,
        { model: 'stub-model', messages: history, max_tokens: 64 },
        { 'x-guardian-session': SESSION },
      );
      statuses.push(res.status);
      const sent = forwarded(stack.stub).slice(before);
      if (sent.length === 1) sentAt.set(turn, sent[0]!);
      history.push({ role: 'assistant', content: `Done with step ${turn}.` });
    }
  });

  afterAll(async () => {
    await stack.close();
  });

  const sent = (turn: number): RecordedRequest => sentAt.get(turn)!;
  const block = (turn: number): string => summaryBlock(sent(turn)) ?? '';
  const whole = (turn: number): string => JSON.stringify(sent(turn).json);

  it('answers every turn with one forwarded request, and the summaries it was given held nothing', () => {
    expect(statuses).toEqual(new Array<number>(TURNS).fill(200));
    expect([...sentAt.keys()]).toHaveLength(TURNS);
    expect(summaryCalls(stack.stub).length).toBeGreaterThan(0);
    // Every block carries the stub's empty summary: nothing of the session came from a summariser.
    const blocks = [...sentAt.keys()].map(block).filter((b) => b !== '');
    expect(blocks.length).toBeGreaterThan(TURNS / 2);
    for (const b of blocks) expect(b).toContain('This summary records none of the values they named.');
  });

  it('clears old tool results to pointers naming their spans before any summary, keeping the calls', () => {
    const cleared = [...sentAt.keys()].filter((turn) => whole(turn).includes(POINTER));
    expect(cleared.length).toBeGreaterThan(0);
    const turn = cleared[0]!;
    // The first clearing came before any summary: no block in that request.
    expect(block(turn)).toBe('');
    const messages = messagesOf(sent(turn));
    const results = messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
    const pointers = results.filter((r) => r.startsWith(POINTER));
    expect(pointers.length).toBeGreaterThan(0);
    for (const p of pointers) expect(p).toMatch(/archived as [0-9-]+-[0-9a-f]{8}-[0-9a-f]{8}\/\d{4}\.json/);
    // The newest three results whole; every call still there.
    expect(results.slice(-3).every((r) => !r.startsWith(POINTER))).toBe(true);
    expect(messages.flatMap((m) => (m.tool_calls as Json[] | undefined) ?? [])).toHaveLength(results.length);
  });

  it('forwards CEDAR-789 as current at turn 31, MAPLE-123 only marked superseded, the unrelated pin kept', () => {
    const tail = messagesOf(sent(31))
      .filter((m) => m.role !== 'system')
      .map(textOf)
      .join('\n');
    expect(tail).not.toContain('CEDAR-789');
    const pins = pinsIn(block(31));
    expect(pins).toContain(`[current] ${UPDATE}`);
    expect(pins).toContain(`[superseded by a later value] ${OLD_PIN}`);
    expect(pins).toContain(OTHER_PIN);
    expect(whole(31).split('MAPLE-123')).toHaveLength(2);
  });

  it('brings the compacted doc12 line back when it is asked about, and adds nothing when it is not', () => {
    const asked = textOf(messagesOf(sent(TURNS)).at(-1)!);
    expect(asked.startsWith(ASK_DOC)).toBe(true);
    expect(asked).toContain(RECALL_HEADING);
    expect(asked).toContain(DOC_LINE);
    // The paste itself is evicted and the block does not quote it: the line came back by recall alone.
    expect(block(TURNS)).not.toContain(DOC_LINE);
    for (let turn = 1; turn < TURNS; turn++) expect(whole(turn)).not.toContain(RECALL_HEADING);
  });

  it('serves a hand-off with the current pins, and the same one from its file after a restart', async () => {
    const url = (base: string) => `${base}/guardian/sessions/${SESSION}/handoff`;
    const live = await getJson(url(stack.guardian.url));
    expect(live.status).toBe(200);
    expect(live.body.pins).toEqual([
      { text: OLD_PIN, status: 'superseded' },
      { text: OTHER_PIN, status: 'current' },
      { text: UPDATE, status: 'current' },
    ]);
    expect(live.body.open_question).toBe(ASK_DOC);
    expect(live.body.files).toEqual(
      expect.arrayContaining(['src/release/step4.ts', 'src/release/step30.ts']),
    );
    await stack.stopGuardian();
    let restarted: RunningGuardian | undefined;
    try {
      const config = GuardianConfig.fromEnv(
        {
          GUARDIAN_UPSTREAM_URL: stack.stub.baseUrl,
          GUARDIAN_DATA_DIR: stack.dataDir,
          GUARDIAN_LOG_LEVEL: 'silent',
          GUARDIAN_PRECOMPACT_THRESHOLD: '0',
          GUARDIAN_KEEPALIVE_MS: '0',
        },
        { version: 'test', home: stack.dataDir },
      );
      restarted = await startGuardian(config, createLogger({ level: 'silent' }), { port: 0 });
      const after = await getJson(url(restarted.url));
      expect([after.status, after.body]).toEqual([200, live.body]);
    } finally {
      await restarted?.close(200);
    }
  });
});
