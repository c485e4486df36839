// A conversation through a running guardian, for the live deploy checks (plain JS: Node 20 runs no
// TypeScript, and test/ is not compiled). It grows one chat session past the upstream's
// window, as a coding agent does, then prints what guardian reports as one JSON line:
//   node session.mjs <guardian base URL> <model> [turns]
//   {"statuses":[200,...],"compactions":N,"num_ctx":W,"window_source":"detected:vllm"}
// Exits 1 when any request failed. Message text is generated, so nothing real is sent anywhere.
const [base, model, turnsArg] = process.argv.slice(2);
if (!base || !model) {
  process.stderr.write('usage: node session.mjs <guardian base URL> <model> [turns]\n');
  process.exit(2);
}
const turns = Number(turnsArg ?? 10);
const session = `live-check-${process.pid}`;

// About 450 tokens a turn at 3.5 characters per token: a 4096-token window overflows by the fifth turn.
function userTurn(i) {
  const facts = Array.from(
    { length: 24 },
    (_, j) => `step ${i}.${j}: module m${(i * 31 + j) % 97} calls m${(i * 17 + j) % 89}`,
  );
  return `Turn ${i}. Here is the next part of the build log, please keep track of it.\n${facts.join('\n')}`;
}

async function post(messages) {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-guardian-session': session },
    body: JSON.stringify({ model, messages, max_tokens: 64 }),
    signal: AbortSignal.timeout(60_000),
  });
  const body = await res.json().catch(() => ({}));
  return { status: res.status, reply: body?.choices?.[0]?.message?.content ?? '' };
}

const messages = [{ role: 'system', content: 'You are a careful build engineer.' }];
const statuses = [];
for (let i = 1; i <= turns; i++) {
  messages.push({ role: 'user', content: userTurn(i) });
  const { status, reply } = await post(messages);
  statuses.push(status);
  messages.push({ role: 'assistant', content: reply || 'noted' });
}
const stats = await (await fetch(`${base}/guardian/stats`, { signal: AbortSignal.timeout(10_000) })).json();
process.stdout.write(
  `${JSON.stringify({
    statuses,
    compactions: stats.compactions_performed,
    num_ctx: stats.num_ctx,
    window_source: stats.window_source,
  })}\n`,
);
process.exitCode = statuses.every((s) => s === 200) ? 0 : 1;
