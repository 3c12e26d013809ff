/**
 * Request validation for the activation routes: validate.ts's check(), except that a missing
 * property is named itself (`body.hardware.id: required`) rather than its parent object, so a
 * partner's tooling can point at the field it forgot.
 */
import type { TSchema } from 'typebox';
import { FleetError } from '../../engine/kernel/errors.ts';
import { fieldErrors, validatorOf, type FieldError } from './validate.ts';

export function checkRequest<T>(schema: TSchema, value: unknown, prefix: string): T {
  const validator = validatorOf(schema);
  if (validator.Check(value)) return value as T;
  const missing: FieldError[] = [];
  const parents = new Set<string>();
  for (const e of validator.Errors(value)) {
    const props = (e.params as { requiredProperties?: unknown } | undefined)?.requiredProperties;
    if (e.keyword !== 'required' || !Array.isArray(props)) continue;
    const parent = [prefix, ...e.instancePath.split('/').filter(Boolean)].join('.');
    parents.add(parent);
    for (const p of props) missing.push({ path: `${parent}.${String(p)}`, message: 'required' });
  }
  // The parent's own entry only repeats "must have required properties …"; keep any other message.
  const rest = fieldErrors(schema, value, prefix)
    .map((f) => (parents.has(f.path) ? { ...f, message: f.message.split(' or ').filter((m) => !m.startsWith('must have required propert')).join(' or ') } : f))
    .filter((f) => f.message !== '');
  const errors = [...missing, ...rest];
  const summary = errors.slice(0, 3).map((e) => `${e.path}: ${e.message}`).join('; ');
  throw new FleetError('VALIDATION_FAILED', summary || `invalid ${prefix}`, { detail: { errors } });
}
