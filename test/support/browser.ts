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
