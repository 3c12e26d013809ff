/**
 * Checks a conversion script when a device type is saved. Every issue names its statement path
 * (`sense[2].value.byte`, `actuate[0].field.calculation`); an empty list means the script compiles.
 * Never throws, whatever the input.
 */
import { analyzeScript } from './analyzeScript.ts';
import type { ScriptIssue } from './types.ts';

export type { ScriptIssue };

export function checkScript(script: unknown): ScriptIssue[] {
  try {
    return analyzeScript(script).issues;
  } catch (error) {
    // Defensive: a script is user input and checking it must not take the caller down.
    return [{ path: '', message: `script could not be checked: ${error instanceof Error ? error.message : String(error)}` }];
  }
}
