import fc from 'fast-check';

// Request bodies for the fuzz (parsers.fuzz.spec.ts, sidecar.fuzz.e2e-spec.ts): real request shapes of each route
// with any content, the same with one spot replaced by arbitrary JSON, and plain arbitrary JSON.

export const anyJson = fc.jsonValue({ maxDepth: 6 });
export const text = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constant(''));

/** A content value: a string, typed parts (known and unknown types), or anything. */
const content = fc.oneof(
  text,
  fc.array(
    fc.oneof(
      fc.record({
        type: fc.constantFrom('text', 'input_text', 'output_text'),
        text: fc.oneof(text, anyJson),
      }),
      fc.record({
        type: fc.constantFrom('image_url', 'image', 'input_image'),
        image_url: anyJson,
        source: anyJson,
      }),
      fc.record({
        type: fc.constantFrom('tool_use', 'tool_result'),
        id: anyJson,
        input: anyJson,
        content: anyJson,
      }),
      anyJson,
    ),
    { maxLength: 4 },
  ),
  anyJson,
);

const message = fc.record(
  {
    role: fc.oneof(fc.constantFrom('system', 'user', 'assistant', 'tool', 'developer', 'function'), anyJson),
    content,
    type: fc.oneof(fc.constantFrom('message', 'function_call', 'function_call_output', 'reasoning'), anyJson),
    tool_calls: fc.oneof(
      fc.array(
        fc.record({ id: anyJson, type: anyJson, function: fc.record({ name: anyJson, arguments: anyJson }) }),
      ),
      anyJson,
    ),
    tool_call_id: anyJson,
    call_id: anyJson,
    output: anyJson,
  },
  { requiredKeys: [] },
);

/** Structurally valid requests of each route, with any content; the mutation below then breaks one spot. */
const role = fc.constantFrom('system', 'user', 'assistant', 'tool', 'developer');
const chatRequest = fc.record(
  {
    model: fc.string({ minLength: 1 }),
    messages: fc.array(
      message.map((m) => ({ ...m, role: (m.role as string) ?? 'user' })),
      {
        minLength: 1,
        maxLength: 12,
      },
    ),
    tools: fc.array(anyJson, { maxLength: 3 }),
    stream: fc.boolean(),
  },
  { requiredKeys: ['model', 'messages'] },
);
const chatLike = fc.tuple(chatRequest, fc.array(role, { minLength: 1, maxLength: 12 })).map(([r, roles]) => ({
  ...r,
  messages: r.messages.map((m, i) => ({ ...m, role: roles[i % roles.length] })),
}));
const anthropicRequest = fc.record(
  {
    model: fc.string({ minLength: 1 }),
    max_tokens: fc.nat(),
    system: fc.oneof(text, fc.array(fc.record({ type: fc.constant('text'), text })), anyJson),
    messages: fc.array(fc.record({ role: fc.constantFrom('user', 'assistant'), content }), {
      minLength: 1,
      maxLength: 12,
    }),
    stream: fc.boolean(),
  },
  { requiredKeys: ['model', 'messages'] },
);
const responsesRequest = fc.record(
  {
    model: fc.string({ minLength: 1 }),
    instructions: text,
    store: fc.constant(false),
    input: fc.oneof(
      text,
      fc.array(
        fc.oneof(
          fc.record({ role, content }),
          fc.record({
            type: fc.constant('function_call'),
            call_id: fc.string(),
            name: fc.string(),
            arguments: text,
          }),
          fc.record({ type: fc.constant('function_call_output'), call_id: fc.string(), output: content }),
          fc.record({ type: fc.constant('reasoning'), summary: anyJson }),
        ),
        { minLength: 1, maxLength: 12 },
      ),
    ),
    stream: fc.boolean(),
  },
  { requiredKeys: ['model', 'input'] },
);

/** Every path (object key or array index) inside a JSON value. */
function paths(value: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = []) {
  if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      const p = [...prefix, Array.isArray(value) ? Number(k) : k];
      out.push(p);
      paths(v, p, out);
    }
  }
  return out;
}

/** The request with the value at one of its paths (picked by `pick`) replaced by `value`. */
function mutate(request: unknown, pick: number, value: unknown): unknown {
  const copy = structuredClone(request) as Record<string | number, unknown>;
  const all = paths(copy);
  const path = all[pick % Math.max(all.length, 1)];
  if (path === undefined) return value;
  let at: Record<string | number, unknown> = copy;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
  at[path[path.length - 1]!] = value;
  return copy;
}

/** Valid shapes (half), the same with one spot broken (a third), or any JSON at all. */
const bodyFor = (valid: fc.Arbitrary<unknown>) =>
  fc.oneof(
    { weight: 6, arbitrary: valid },
    { weight: 4, arbitrary: fc.tuple(valid, fc.nat(), anyJson).map(([r, pick, v]) => mutate(r, pick, v)) },
    { weight: 2, arbitrary: anyJson },
  );
export const BODIES: Record<string, fc.Arbitrary<unknown>> = {
  chat: bodyFor(chatLike),
  messages: bodyFor(anthropicRequest),
  responses: bodyFor(responsesRequest),
};
