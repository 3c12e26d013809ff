/**
 * Real headless Chromium for the console's browser tests, driven by playwright-core. The browser
 * is Debian's `chromium` package (.ci/run installs it), found at $CHROMIUM_PATH or on the usual
 * paths; without one the tests are registered as skips with a line saying how to run them.
 * Screenshots go to test-artifacts/ (gitignored) for a person to look at.
 */
import { accessSync, constants, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { unless } from './suite.ts';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/lib/chromium/chromium'];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The Chromium binary to drive, or undefined. */
export function chromiumPath(): string | undefined {
  const named = process.env.CHROMIUM_PATH;
  if (named) return executable(named) ? named : undefined;
  return CANDIDATES.find(executable);
}

/** Registers `register`'s tests, or skips them all saying why (no browser on this machine). */
export function withChromium(label: string, register: (path: string) => void): void {
  const path = chromiumPath();
  const missing = path === undefined
    ? `no Chromium found (${process.env.CHROMIUM_PATH ? `CHROMIUM_PATH=${process.env.CHROMIUM_PATH} is not executable` : `none of ${CANDIDATES.join(', ')}`}; apt-get install chromium, or set CHROMIUM_PATH)`
    : undefined;
  unless(label, missing, () => register(path ?? ''));
}

export function launchChromium(path: string): Promise<Browser> {
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath: path, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}

export const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url).pathname;

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Collects what the page logs as errors and what the CSP refuses, so a test can assert none. */
export function pageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    // A refused request is logged by Chromium too; the tests assert what the page shows instead.
    if (message.text().startsWith('Failed to load resource')) return;
    errors.push(`console: ${message.text()}`);
  });
  return errors;
}

/**
 * What a keyboard or screen-reader user would trip over on the current page: form controls without
 * a label, buttons and links without a name, and text whose contrast against its background is under
 * WCAG AA (4.5:1; 3:1 for large text). Runs in the page; returns one line per problem.
 */
export function accessibilityProblems(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const doc = (globalThis as any).document;
    const win = globalThis as any;
    const problems: string[] = [];
    const visible = (el: any) => el.getClientRects().length > 0 && win.getComputedStyle(el).visibility !== 'hidden';
    const describe = (el: any) => `${el.tagName.toLowerCase()}${el.name ? `[name=${el.name}]` : ''}${el.id ? `#${el.id}` : ''} "${(el.textContent ?? '').trim().slice(0, 30)}"`;
    for (const el of doc.querySelectorAll('input, select, textarea')) {
      if (!visible(el) || el.type === 'hidden') continue;
      if (el.labels.length === 0 && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby')) problems.push(`no label: ${describe(el)}`);
    }
    for (const el of doc.querySelectorAll('button, a[href]')) {
      if (visible(el) && (el.textContent ?? '').trim() === '' && !el.getAttribute('aria-label')) problems.push(`no name: ${describe(el)}`);
    }
    const rgb = (text: string) => (text.match(/[\d.]+/g) ?? []).map(Number);
    const luminance = ([r, g, b]: number[]) => {
      const f = (c: number) => { const s = c / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const background = (el: any): number[] => {
      for (let node = el; node; node = node.parentElement) {
        const c = rgb(win.getComputedStyle(node).backgroundColor);
        if (c.length === 3 || (c.length === 4 && c[3] === 1)) return c.slice(0, 3);
      }
      return [255, 255, 255];
    };
    const walker = doc.createTreeWalker(doc.body, 4 /* NodeFilter.SHOW_TEXT */);
    const seen = new Set();
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement;
      if (!el || seen.has(el) || node.textContent.trim() === '' || !visible(el) || el.closest('canvas, .u-legend')) continue;
      seen.add(el);
      const style = win.getComputedStyle(el);
      const fg = luminance(rgb(style.color).slice(0, 3));
      const bg = luminance(background(el));
      const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
      const size = parseFloat(style.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
      if (ratio < (large ? 3 : 4.5)) problems.push(`contrast ${ratio.toFixed(2)}: ${describe(el)}`);
    }
    return problems;
  });
}
