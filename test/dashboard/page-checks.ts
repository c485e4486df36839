import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

import type { Page } from 'playwright-core';

// What the console's page is held to besides its figures (issue 31 item 5): readable text in either colour scheme,
// its CSP, and the README's screenshots, which the test run makes.

const ARTIFACTS = join(__dirname, '..', 'artifacts');
const DOCS_IMAGES = join(__dirname, '..', '..', 'docs', 'images');

/**
 * Saves a screenshot of `page` (the whole page, cut to `clip` when given) as `test/artifacts/<name>` on every run.
 * One the README shows (`docs: true`) is also written as `docs/images/<name>`, only with CG_UPDATE_SCREENSHOTS=1
 * (`npm run screenshots`): a plain `npm test` leaves the tracked images alone.
 */
export async function screenshot(
  page: Page,
  name: string,
  opts: { clip?: { x: number; y: number; width: number; height: number }; docs?: boolean } = {},
): Promise<void> {
  const png = await page.screenshot({ fullPage: true, ...(opts.clip ? { clip: opts.clip } : {}) });
  await mkdir(ARTIFACTS, { recursive: true });
  await writeFile(join(ARTIFACTS, name), png);
  if (opts.docs === true && process.env.CG_UPDATE_SCREENSHOTS === '1')
    await writeFile(join(DOCS_IMAGES, name), png);
}

// Scripts that run in the page are strings: this project's TypeScript has no DOM library (its code runs under
// Node). page.evaluate runs them through the DevTools protocol, which the page's CSP (no eval) does not stop.

/** The page-coordinates box from the top of `from` to the bottom of `to`, the page's width, with a small margin. */
export async function boxBetween(
  page: Page,
  from: string,
  to: string,
): Promise<{ x: number; y: number; width: number; height: number }> {
  const [top, bottom, width] = await page.evaluate<[number, number, number]>(`(() => {
    const y = (sel, edge) => {
      const el = document.querySelector(sel);
      if (!el) throw new Error('no ' + sel + ' in the page');
      return el.getBoundingClientRect()[edge] + window.scrollY;
    };
    return [y(${JSON.stringify(from)}, 'top'), y(${JSON.stringify(to)}, 'bottom'), document.documentElement.clientWidth];
  })()`);
  const y = Math.max(0, Math.floor(top) - 8);
  return { x: 0, y, width, height: Math.ceil(bottom) + 8 - y };
}

/** A shown text whose colour does not stand out enough from what is behind it (WCAG 2.2, 1.4.3). */
export interface LowContrast {
  text: string;
  color: string;
  background: string;
  ratio: number;
  needs: number;
}

const LOW_CONTRAST = `(() => {
  const rgb = (css) => {
    const m = /rgba?\\(([\\d.]+),\\s*([\\d.]+),\\s*([\\d.]+)(?:,\\s*([\\d.]+))?\\)/.exec(css);
    return m ? [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])] : null;
  };
  const lin = (v) => {
    const s = v / 255;
    return s <= 0.03928 ? s / 12.92 : Math.pow((s + 0.055) / 1.055, 2.4);
  };
  const luminance = (c) => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
  const behind = (el) => {
    for (let at = el; at; at = at.parentElement) {
      const bg = getComputedStyle(at).backgroundColor;
      const c = rgb(bg);
      if (c && c[3] > 0) return bg;
    }
    return 'rgb(255, 255, 255)'; // the canvas, when nothing paints one
  };
  const out = [];
  for (const el of document.body.querySelectorAll('*')) {
    const own = Array.from(el.childNodes)
      .filter((n) => n.nodeType === Node.TEXT_NODE)
      .map((n) => n.textContent)
      .join('')
      .trim();
    if (own === '' && el.tagName !== 'SELECT') continue;
    if (!el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) continue;
    const style = getComputedStyle(el);
    const fg = rgb(style.color);
    const background = behind(el);
    const bg = rgb(background);
    if (!fg || !bg) continue;
    const [hi, lo] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
    const ratio = Math.round(((hi + 0.05) / (lo + 0.05)) * 100) / 100;
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
    const needs = large ? 3 : 4.5;
    if (ratio < needs) out.push({ text: (own || el.value).slice(0, 40), color: style.color, background, ratio, needs });
  }
  return out;
})()`;

/**
 * Every text the page shows (an element's own text, and each select's), with its contrast ratio against the first
 * opaque background behind it, below WCAG AA: 4.5:1, or 3:1 for large text (24 px, or 18.66 px bold).
 */
export function lowContrast(page: Page): Promise<LowContrast[]> {
  return page.evaluate<LowContrast[]>(LOW_CONTRAST);
}

/** The directives of a Content-Security-Policy header, each with its sources. */
export function cspDirectives(header: string | undefined): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const part of (header ?? '').split(';')) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (name) out[name] = sources;
  }
  return out;
}
