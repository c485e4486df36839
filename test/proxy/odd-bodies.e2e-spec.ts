import { startStack, type Stack } from '../support/stack';

/**
 * Bad input loses nothing: bodies of the wrong shape on the routes guardian reads go upstream byte for byte, and the
 * client hears the upstream, never a guardian 500 (ARCHITECTURE.md#fail-open rule 1). Over budget too, where the
 * engine does real work.
 */
const BIG = 'x '.repeat(40_000);
const ODD: Record<string, string[]> = {
  '/v1/chat/completions': [
    '[1,2,3]',
    '"just a string"',
    'null',
    '{"model":5,"messages":[]}',
    '{"model":"stub-model","messages":"not a list"}',
    '{"model":"stub-model","messages":[null]}',
    '{"model":"stub-model","messages":[{"role":"user","content":{"weird":true}}]}',
    '{"model":"stub-model","messages":[{"role":"user","content":[null,5,{"type":"text"}]}]}',
    `{"model":"stub-model","messages":[{"role":"assistant","tool_calls":"nope","content":null},{"role":"tool","tool_call_id":7,"content":"${BIG}"},{"role":"user","content":"${BIG}"}],"tools":"x"}`,
    `{"model":"stub-model","messages":[{"role":"user","content":"${BIG}"},{"role":"assistant","content":[{"type":"image_url"}]},{"role":"user","content":"${BIG}"},{"role":"assistant","tool_calls":[{"id":1,"function":null}]},{"role":"user","content":"again"}]}`,
  ],
  '/v1/messages': [
    '{"model":"stub-model","max_tokens":10,"system":5,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":{"a":1},"content":[null]}]}]}',
    `{"model":"stub-model","max_tokens":10,"system":[null,{"type":"text"}],"messages":[{"role":"user","content":"${BIG}"},{"role":"assistant","content":[{"type":"tool_use","id":null,"input":"str"}]},{"role":"user","content":"${BIG}"}]}`,
  ],
  '/v1/responses': [
    '{"model":"stub-model","input":[{"type":"function_call_output","call_id":null,"output":{"x":[1]}}]}',
    `{"model":"stub-model","input":[{"role":"user","content":"${BIG}"},{"type":"reasoning","summary":"s"},{"role":"user","content":[{"type":"input_text"}]},{"role":"user","content":"${BIG}"}]}`,
    '{"model":"stub-model","input":"a plain string input"}',
  ],
};

describe('odd request bodies on the routes guardian reads', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({
      stub: { window: 200_000 },
      env: { GUARDIAN_NUM_CTX: '8192', GUARDIAN_RESERVE_OUTPUT: '1024' },
    });
  });
  afterAll(async () => {
    await stack.close();
  });

  const cases = Object.entries(ODD).flatMap(([path, bodies]) =>
    bodies.map((body, i) => [path, i, body] as const),
  );
  it.each(cases)('%s body #%i: answered by the upstream, never a guardian 500', async (path, _i, body) => {
    stack.stub.reset();
    const res = await fetch(`${stack.guardian.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const text = await res.text();
    expect(text).not.toContain('GUARDIAN_INTERNAL');
    expect(res.status).not.toBe(500);
    const upstream = stack.stub.requests.filter(
      (r) => !r.isSummary && r.route !== 'window' && r.route !== 'tokenize',
    );
    expect(upstream.length).toBeGreaterThanOrEqual(1);
  });
});
