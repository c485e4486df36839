import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

import { FABRICATED_SHAPES } from '@guardian/stub-backend';

import { startStack, type Stack } from '../support/stack';
import { filler, forwarded, getJson, messagesOf, summaryBlock, summaryCalls, textOf } from './support';

/**
 * Issue 32 item 7: with SmolLM2-135M-Instruct on llama.cpp's server at a 4,096 window, every summary guardian
 * accepted was fabricated (`[1] user: Notes for step 7: ...`, or a bare list `[21]` ... `[97]`, none with the
 * `## Must Keep` section the prompt asks for), and every later request carried the invented `user:` lines to the
 * model as a record of what was said. Here the stub answers every summary request that way (`fabricatedSummaries`),
 * each answer in the next of the shapes a model writes a transcript line in (`[1] user:`, `user:`, `User:`,
 * `**[7] user:**`, `Turn 7 (user):`, ...).
 */
const TURNS = 30;
const WINDOW = 4096;
/**
 * Any line that names a speaker before a colon near its start, however marked up (this test's own reading, wider than
 * guardian's check): `[1] user: ...`, `**User**: ...`, `Turn 7 (user): ...`, `> Human: ...`.
 */
const SPEAKER_LINE =
  /^[\s\-*>•#()[\]\d.]*(?:turn\s*\d+\s*)?[([]?\s*(user|assistant|human)\b[)\]*_\s]*:[*_\s]*(.*)$/i;

const flat = (s: string): string => s.replace(/\s+/g, ' ').trim().toLowerCase();

describe(`a ${TURNS}-turn session against a backend whose summaries invent transcript lines`, () => {
  let stack: Stack;
  const statuses: number[] = [];
  const history: ChatCompletionMessageParam[] = [{ role: 'system', content: 'You keep a deploy log.' }];

  beforeAll(async () => {
    stack = await startStack({
      stub: { window: WINDOW, fabricatedSummaries: true, maxRecorded: 1000 },
      env: { GUARDIAN_RESERVE_OUTPUT: '512' },
    });
    const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
    for (let turn = 1; turn <= TURNS; turn++) {
      const pin = turn === 1 ? 'Remember this: the rollback tag is FACT-ROLLBACK-20. ' : '';
      history.push({ role: 'user', content: `${pin}Step ${turn}: ${filler(turn, 100)}` });
      const res = await client.chat.completions
        .create({ model: 'stub-model', messages: history })
        .withResponse();
      statuses.push(res.response.status);
      history.push({ role: 'assistant', content: res.data.choices[0]?.message.content ?? '' });
    }
  });

  afterAll(async () => {
    await stack.close();
  });

  it('asked the model for summaries, and every turn was answered', () => {
    expect(statuses).toEqual(new Array<number>(TURNS).fill(200));
    expect(summaryCalls(stack.stub).length).toBeGreaterThan(0);
  });

  it('forwards no request that carries a transcript line the conversation never had', () => {
    const sent = forwarded(stack.stub);
    const invented: string[] = [];
    for (const rec of sent) {
      const text = messagesOf(rec).map(textOf).join('\n');
      if (text.includes('INVENTED-0007')) invented.push('INVENTED-0007');
      if (text.includes('Notes for step 7')) invented.push('Notes for step 7');
      for (const line of text.split('\n')) {
        const m = SPEAKER_LINE.exec(line);
        if (!m) continue;
        const role = m[1]!.toLowerCase() === 'human' ? 'user' : m[1]!.toLowerCase();
        const held = history.some(
          (said) =>
            said.role === role &&
            typeof said.content === 'string' &&
            flat(said.content).includes(flat(m[2] ?? '')),
        );
        if (!held) invented.push(line);
      }
    }
    expect(invented).toEqual([]);
  });

  it('stands the checkpoint in for the refused summaries, with the pinned fact', () => {
    const blocks = forwarded(stack.stub)
      .map(summaryBlock)
      .filter((b): b is string => b !== undefined);
    expect(blocks.length).toBeGreaterThan(TURNS / 3);
    for (const b of blocks) {
      expect(b).toContain('Checkpoint (no model-written summary was available)');
      expect(b).toContain('FACT-ROLLBACK-20');
    }
  });

  it('counts each refusal by reason and reports it as an event', async () => {
    const metrics = await (await fetch(`${stack.guardian.url}/metrics`)).text();
    const refused = (reason: string): number =>
      Number(
        new RegExp(`^guardian_summaries_refused_total\\{reason="${reason}"\\} (\\d+)`, 'm').exec(
          metrics,
        )?.[1] ?? 0,
      );
    // The stub's first answer of a stretch invents a line under a Must Keep heading; extending a summary so far, it
    // answers a bare list of turn numbers with no heading.
    expect(refused('invented_line')).toBeGreaterThan(0);
    expect(refused('no_must_keep')).toBeGreaterThan(0);
    expect(refused('invented_line') + refused('no_must_keep')).toBe(summaryCalls(stack.stub).length);
    const events = (await getJson(`${stack.guardian.url}/guardian/events`)).body.events as { kind: string }[];
    expect(events.filter((e) => e.kind === 'summary_refused').length).toBeGreaterThan(0);
  });
});

describe.each(FABRICATED_SHAPES.map((line, shape) => [line.slice(0, 16), shape] as const))(
  'a summariser that invents a transcript line shaped %j',
  (_, shape) => {
    let stack: Stack;
    const history: ChatCompletionMessageParam[] = [{ role: 'system', content: 'You keep a deploy log.' }];

    beforeAll(async () => {
      stack = await startStack({
        stub: { window: WINDOW, fabricatedSummaries: true, fabricatedShape: shape },
        env: { GUARDIAN_RESERVE_OUTPUT: '512' },
      });
      const client = new OpenAI({ baseURL: stack.baseURL, apiKey: 'sk-test', maxRetries: 0 });
      // Until the first summary was asked for and its answer refused, and a few turns after.
      for (let turn = 1; turn <= 12; turn++) {
        history.push({ role: 'user', content: `Step ${turn}: ${filler(turn, 250)}` });
        const res = await client.chat.completions.create({ model: 'stub-model', messages: history });
        history.push({ role: 'assistant', content: res.choices[0]?.message.content ?? '' });
      }
    });
    afterAll(async () => {
      await stack.close();
    });

    it('is refused as an invented line, and no forwarded request carries it', async () => {
      const metrics = await (await fetch(`${stack.guardian.url}/metrics`)).text();
      expect(metrics).toMatch(/^guardian_summaries_refused_total\{reason="invented_line"\} [1-9]/m);
      const blocks = forwarded(stack.stub)
        .map(summaryBlock)
        .filter((b): b is string => b !== undefined);
      expect(blocks.length).toBeGreaterThan(0);
      for (const rec of forwarded(stack.stub)) {
        const text = messagesOf(rec).map(textOf).join('\n');
        expect(text).not.toContain('INVENTED-0007');
        expect(text).not.toContain('Notes for step 7');
      }
    });
  },
);
