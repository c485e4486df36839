import { startStack, type Stack } from '../support/stack';
import {
  assistantItem,
  filler,
  itemsOf,
  loadRecordings,
  openingBody,
  userItem,
  type Json,
} from '../support/recordings';
import { checkResponses, FENCE_TITLE } from './support/checks';

/**
 * Issue 11 finding 5: Codex sends its instructions as leading `developer` items (~19 KB); guardian put its archived-data
 * block in front of them, so the block's "the instructions above still govern" was false, and every new summary
 * changed the start of the request, which defeats the backend's prefix cache. The block now goes right after the
 * client's leading instruction items, and the bytes before the kept tail change only when a new cut is made.
 */
const codex = loadRecordings().find((r) => r.client === 'codex');
if (!codex) throw new Error('the Codex recording is missing from test/works-with/recordings');

const TURNS = 30;

describe('a Codex-shaped /v1/responses session: summary placement and prefix stability', () => {
  let stack: Stack;
  const sent: Json[] = [];
  const opening = openingBody(codex, 'Remember this: the deploy key is FACT-CODEX-7. Start with the parser.');

  beforeAll(async () => {
    stack = await startStack({
      stub: { window: 16384 },
      env: { GUARDIAN_RESERVE_OUTPUT: '2048' },
    });
    let items = itemsOf(opening.body);
    for (let turn = 1; turn <= TURNS; turn++) {
      if (turn > 1) items = [...items, userItem('responses', `Step ${turn}: ${filler(1400, turn)}`)];
      const body = { ...opening.body, input: items };
      sent.push(body);
      const res = await fetch(`${stack.guardian.url}${opening.path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      items = [...items, assistantItem('responses', `Done with step ${turn}.`)];
    }
  });

  afterAll(async () => {
    await stack.close();
  });

  const generations = () => stack.stub.requests.filter((r) => r.route === 'responses' && !r.isSummary);

  it("starts every compacted request with the client's own instruction items, then the block", () => {
    const leading = itemsOf(opening.body).filter((i) => i.role === 'developer');
    expect(leading.length).toBeGreaterThan(0);
    let compacted = 0;
    generations().forEach((r, i) => {
      const json = r.json as Json;
      const verdict = checkResponses(sent[i]!, json);
      expect({ turn: i + 1, problems: verdict.problems }).toEqual({ turn: i + 1, problems: [] });
      if (!verdict.compacted) return;
      compacted += 1;
      const input = itemsOf(json);
      expect(input.slice(0, leading.length)).toEqual(leading);
      expect(JSON.stringify(input[leading.length])).toContain(FENCE_TITLE);
    });
    expect(compacted).toBeGreaterThan(10);
  });

  it('changes the bytes before the kept tail only when a new cut is made', () => {
    const prefixes = generations()
      .map((r) => itemsOf(r.json as Json))
      .map((input) => {
        const at = input.findIndex((i) => JSON.stringify(i).includes(FENCE_TITLE));
        return at === -1 ? undefined : JSON.stringify(input.slice(0, at + 1));
      })
      .filter((p): p is string => p !== undefined);
    // Each distinct prefix is one cut, and its turns are consecutive: a prefix never comes back after another.
    const runs = prefixes.filter((p, i) => i === 0 || p !== prefixes[i - 1]);
    expect(new Set(runs).size).toBe(runs.length);
    // Several turns share each cut (the sticky cut is reused), so most turns hit the backend's prefix cache.
    expect(prefixes.length).toBeGreaterThanOrEqual(2 * runs.length);
    const summaries = stack.stub.requests.filter((r) => r.isSummary).length;
    expect(summaries).toBe(runs.length);
  });
});
