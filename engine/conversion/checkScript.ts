/**
 * Checks a conversion script when a device type is saved. Every issue names its statement path
 * (`sense[2].value.byte`, `actuate[0].field.calculation`); an empty list means the script compiles.
 * Never throws, whatever the input.
 */
import { analyzeScript } from './analyzeScript.ts';

export interface ScriptIssue {
  /** Where in the script, e.g. `sense[0].on[1].do[2].value.bytelength`; '' for the script itself. */
  path: string;
  message: string;
}

export function checkScript(script: unknown): ScriptIssue[] {
  try {
    return analyzeScript(script).issues;
  } catch (error) {
    // Defensive: a script is user input and checking it must not take the caller down.
    return [{ path: '', message: `script could not be checked: ${error instanceof Error ? error.message : String(error)}` }];
  }
}
