import { allTexts, type PromptText } from './prompt-text';

/** Text that marks a request as a Context Guardian summary request (the summariser prompt carries it). */
export const SUMMARY_MARKER = 'Context Guardian summary request';

/** Facts a test plants in a conversation; the stub's summary lists each once under `## Must Keep`. */
const FACT_PATTERN = /\bFACT-[A-Za-z0-9-]+\b/g;

/** True when any text of the prompt contains {@link SUMMARY_MARKER}. */
export function isSummaryPrompt(prompt: PromptText): boolean {
  return allTexts(prompt).some((t) => t.includes(SUMMARY_MARKER));
}

/** Distinct `FACT-...` tokens of the prompt, in order of first appearance. */
export function factTokens(prompt: PromptText): string[] {
  const seen = new Set<string>();
  for (const text of allTexts(prompt)) {
    for (const match of text.matchAll(FACT_PATTERN)) seen.add(match[0]);
  }
  return [...seen];
}

/**
 * The stub summariser's answer: deterministic, 300-600 characters of prose that names how much transcript it
 * read, then the `## Must Keep` section the seed's summary prompt asks for (one bullet per fact, or
 * `- (none)`), so pin carrying can be tested without a model.
 */
export function summaryText(prompt: PromptText): string {
  const texts = allTexts(prompt);
  const chars = texts.reduce((n, t) => n + t.length, 0);
  const facts = factTokens(prompt);
  const prose =
    `Summary of the earlier conversation: the stub summariser read ${chars} transcript characters ` +
    `in ${prompt.messages.length} messages. The user and the assistant worked through the task step by ` +
    `step; decisions, open questions and the exact values the conversation named are listed below so ` +
    `that later turns can rely on them. This summary is produced by the stub backend and is identical ` +
    `for identical input.`;
  const bullets = facts.length > 0 ? facts.map((f) => `- ${f}`) : ['- (none)'];
  return [prose, '## Must Keep', ...bullets].join('\n');
}

/**
 * A summary in the asked-for shape that holds nothing of the conversation (issue 32): no value, no name, no
 * `FACT-` token, `- (none)` under `## Must Keep`. What a summariser that paraphrases everything away gives; against
 * it, whatever of a conversation reaches a compacted request got there by guardian's own rules.
 */
export function blankSummaryText(): string {
  return [
    'Summary of the earlier conversation: the user and the assistant worked through a series of steps on the ' +
      'project, one at a time. This summary records none of the values they named.',
    '## Must Keep',
    '- (none)',
  ].join('\n');
}

/** The invented line, in each shape a model writes a transcript line (issue 32 item 7 and its audit). */
export const FABRICATED_SHAPES: readonly string[] = [
  '[1] user: Notes for step 7: the release codename is INVENTED-0007 and the staging host is down.',
  'user: Notes for step 7: the release codename is INVENTED-0007 and the staging host is down.',
  'User: Notes for step 7: the release codename is INVENTED-0007 and the staging host is down.',
  '**[7] user:** Notes for step 7: the release codename is INVENTED-0007 and the staging host is down.',
  '- **User**: Notes for step 7: the release codename is INVENTED-0007 and the staging host is down.',
  'Turn 7 (user): Notes for step 7: the release codename is INVENTED-0007 and the staging host is down.',
  '#7 user: Notes for step 7: the release codename is INVENTED-0007 and the staging host is down.',
  '(7) user: Notes for step 7: the release codename is INVENTED-0007 and the staging host is down.',
  '> Human: Notes for step 7: the release codename is INVENTED-0007 and the staging host is down.',
];

/**
 * What a model too small to summarise answered guardian's summary prompt with (issue 32 item 7: SmolLM2-135M on
 * llama.cpp at a 4,096 window): a line shaped like the transcript that matches no real turn, under a `## Must Keep`
 * heading, one line only, each such answer in the next of FABRICATED_SHAPES (`next` counts them: a session meets every
 * shape in turn, and each refusal is that shape's); or, when asked to extend a summary so far, a bare list of turn
 * numbers with no heading at all. Every shape carries the invented `Notes for step 7: ... INVENTED-0007`, which no
 * test conversation holds.
 */
export function fabricatedSummaryText(prompt: PromptText, next: () => number = () => 0): string {
  const extending = allTexts(prompt).some((t) => t.includes('SUMMARY-SO-FAR-'));
  if (extending)
    return [FABRICATED_SHAPES[0]!, ...Array.from({ length: 8 }, (_, i) => `[${21 + 11 * i}]`)].join('\n');
  const shape = FABRICATED_SHAPES[next() % FABRICATED_SHAPES.length]!;
  return ['Summary of the earlier conversation:', shape, '## Must Keep', '- INVENTED-0007'].join('\n');
}
