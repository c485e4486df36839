import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { REPO_ROOT } from './paths';

/** The page whose settings the header check runs, so the page and the check cannot drift apart. */
export const SESSIONS_DOC = join(REPO_ROOT, 'docs', 'sessions.md');

/** What the page writes where the reader puts their own values. */
export const DOC_ORIGIN = 'http://guardian.llm.svc:8786';
export const DOC_MODEL = '<model>';
export const DOC_TOKEN = '<token>';
/** The developer every example on the page is. */
export const DOC_SESSION = 'alice';

/** What the check puts in place of the page's placeholders. */
export interface SnippetValues {
  origin: string;
  model: string;
  token: string;
}

/**
 * The fenced block that follows `<!-- header-check: ID -->` in docs/sessions.md, with the page's placeholders
 * replaced. Throws when the marker or its block is missing: a check that silently ran some other setting would prove
 * nothing about the page.
 */
export function docSnippet(
  id: string,
  values: SnippetValues,
  doc = readFileSync(SESSIONS_DOC, 'utf8'),
): string {
  const marker = `<!-- header-check: ${id} -->`;
  const at = doc.indexOf(marker);
  if (at === -1) throw new Error(`docs/sessions.md has no ${marker}`);
  const rest = doc.slice(at + marker.length);
  const m = /^\s*\n(`{3,})[^\n]*\n([\s\S]*?)\n\1[ \t]*(?:\n|$)/.exec(rest);
  if (!m?.[2]) throw new Error(`docs/sessions.md: no fenced block right after ${marker}`);
  return m[2]
    .replaceAll(DOC_ORIGIN, values.origin)
    .replaceAll(DOC_MODEL, values.model)
    .replaceAll(DOC_TOKEN, values.token);
}

/** Every `header-check` id the page marks, in page order (the runner fails on one it does not know). */
export function docSnippetIds(doc = readFileSync(SESSIONS_DOC, 'utf8')): string[] {
  return [...doc.matchAll(/<!-- header-check: ([\w./-]+) -->/g)].map((m) => m[1] ?? '');
}
