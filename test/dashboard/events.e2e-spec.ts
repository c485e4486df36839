import { randomBytes } from 'node:crypto';

import { createParser, type EventSourceMessage } from 'eventsource-parser';

import type { Stack } from '../support/stack';
import { compactOnce, startWindowStack } from './support';

interface EventsBody {
  events: { kind: string; route: string; model?: string; tokens_before?: number; tokens_after?: number }[];
}

/** Reads `/guardian/events` as a live stream; resolves `connected` once the response has started. */
function openStream(url: string) {
  const abort = new AbortController();
  const received: EventSourceMessage[] = [];
  let text = '';
  const waiters: { kind: string; since: string; resolve: (e: EventSourceMessage) => void }[] = [];
  const parser = createParser({
    onEvent: (e) => {
      received.push(e);
      const at = String((JSON.parse(e.data) as { at?: unknown }).at);
      for (const w of waiters.filter((x) => x.kind === e.event && at >= x.since)) w.resolve(e);
    },
  });
  const connected = fetch(`${url}/guardian/events`, {
    headers: { accept: 'text/event-stream' },
    signal: abort.signal,
  }).then((res) => {
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const pump = (): Promise<void> =>
      reader.read().then(({ done, value }) => {
        if (done) return;
        const chunk = decoder.decode(value, { stream: true });
        text += chunk;
        parser.feed(chunk);
        return pump();
      });
    pump().catch((err: unknown) => {
      // The test aborts the stream when it is done: that rejection is the expected end.
      if (!abort.signal.aborted) throw err;
    });
    return res;
  });
  return {
    connected,
    received,
    text: () => text,
    /** The next event of `kind` that happened from now on (the stream replays recent ones first). */
    next: (kind: string) =>
      new Promise<EventSourceMessage>((resolve) =>
        waiters.push({ kind, since: new Date().toISOString(), resolve }),
      ),
    close: () => abort.abort(),
  };
}

describe('/guardian/events', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startWindowStack();
  });
  afterAll(async () => {
    await stack.close();
  });

  it('lists recent events as JSON, newest last, with counts and names only', async () => {
    const res = await fetch(`${stack.guardian.url}/guardian/events`);
    expect(res.headers.get('content-type')).toContain('application/json');
    const before = ((await res.json()) as EventsBody).events.length;
    expect(await compactOnce(stack, { tag: 'json-list' })).toBe(200);
    const body = (await (await fetch(`${stack.guardian.url}/guardian/events`)).json()) as EventsBody;
    expect(body.events).toHaveLength(before + 1);
    const last = body.events.at(-1)!;
    expect(last).toMatchObject({ kind: 'compaction', route: 'chat', model: 'stub-model' });
    expect(last.tokens_before).toBeGreaterThan(last.tokens_after!);
  });

  it('with Accept: text/event-stream delivers a compaction caused after connecting', async () => {
    const stream = openStream(stack.guardian.url);
    const res = await stream.connected;
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const next = stream.next('compaction');

    expect(await compactOnce(stack, { tag: 'live-stream' })).toBe(200);
    const event = await next;
    stream.close();
    // The stream replayed the earlier compaction first, then this one.
    expect(stream.received.filter((e) => e.event === 'compaction').length).toBeGreaterThanOrEqual(2);
    expect(JSON.parse(event.data)).toMatchObject({ kind: 'compaction', route: 'chat', model: 'stub-model' });
  });

  it('never carries message text: a planted marker reaches the upstream but no guardian endpoint', async () => {
    const marker = `MARKER${randomBytes(8).toString('hex')}`;
    const stream = openStream(stack.guardian.url);
    await stream.connected;
    const next = stream.next('compaction');
    stack.stub.reset();

    expect(await compactOnce(stack, { tag: 'marker', marker })).toBe(200);
    await next;
    // The marker travelled: in the summariser's prompt and in what was forwarded (pinned), so it was there
    // for guardian to leak.
    expect(stack.stub.requests.filter((r) => r.body.toString('utf8').includes(marker))).toHaveLength(2);
    expect(stack.stub.requests.some((r) => r.isSummary)).toBe(true);

    const seen: Record<string, string> = { stream: stream.text() };
    for (const path of ['/guardian/stats', '/guardian/events', '/guardian/usage', '/metrics']) {
      seen[path] = await (await fetch(`${stack.guardian.url}${path}`)).text();
    }
    stream.close();
    for (const [where, text] of Object.entries(seen)) {
      expect([where, text.includes(marker)]).toEqual([where, false]);
    }
    expect(JSON.parse(seen['/guardian/stats']!)).toMatchObject({ last_pins_carried: 1 });
  });
});
