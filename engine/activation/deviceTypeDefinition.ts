/**
 * What a device type definition must satisfy beyond its schema, checked when a draft is saved and
 * when a definition is published, so a device activated from it never carries an asset profile the
 * uplink validator cannot compile or a payload setting its codec cannot decode:
 * - every asset profile is in the supported JSON Schema subset (engine/uplink/admission/profile.ts);
 * - `payload.format` `binary` needs a `conversion` script that checks (engine/conversion/
 *   checkScript.ts); `json`, `cbor` and `cayenne` (a built-in script) take none.
 */
import { checkScript } from '../conversion/checkScript.ts';
import { FleetError } from '../kernel/errors.ts';
import { checkProfile } from '../uplink/admission/profile.ts';
import type { DeviceTypeDefinition } from '../../schemas/registry.ts';

function join(field: string, sub: string): string {
  return [field, sub].filter(Boolean).join('.');
}

/** Throws VALIDATION_FAILED naming the first offending field (prefixed by `field`, which may be ''). */
export function checkDeviceTypeDefinition(definition: DeviceTypeDefinition, field: string): void {
  definition.assets.forEach((asset, i) => {
    const reason = checkProfile(asset.profile ?? {});
    if (reason !== undefined) {
      const path = join(field, `assets.${i}.profile`);
      throw new FleetError('VALIDATION_FAILED', `${path}: ${reason}`, { detail: { field: path } });
    }
  });
  const payload = definition.payload;
  if (payload === undefined) return;
  const conversion = join(field, 'payload.conversion');
  if (payload.format !== 'binary') {
    if (payload.conversion !== undefined) {
      throw new FleetError('VALIDATION_FAILED', `${conversion}: only format binary takes a conversion script`, { detail: { field: conversion } });
    }
    return;
  }
  if (payload.conversion === undefined) {
    throw new FleetError('VALIDATION_FAILED', `${conversion}: format binary needs a conversion script`, { detail: { field: conversion } });
  }
  const issues = checkScript(payload.conversion);
  if (issues.length > 0) {
    const path = join(conversion, issues[0].path);
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more: ${issues.slice(1, 3).map((i) => i.path || 'script').join(', ')})` : '';
    throw new FleetError('VALIDATION_FAILED', `${path}: ${issues[0].message}${more}`, { detail: { field: path, issues: issues.slice(0, 20) } });
  }
}
