import { FieldErrors } from './decider.js';
import { isValidTimezone, validateCron } from './cron.js';
import { domainError, normalizeDomain } from './domains.js';
import {
  limitBounds,
  type IOField,
  type JobFields,
  type JobPatch,
  type LimitOverrides,
  type Spec,
} from './job-types.js';

/**
 * Normalisation and validation of job fields (docs/jobs.md, "Fields"). The API's JSON schema checks types and
 * bounds first; these rules are the source of truth and check every bound again, plus what a schema cannot say.
 */

export function text(errors: FieldErrors, field: string, raw: string, max: number): string {
  const value = raw.trim();
  if (value.length === 0) errors.add(field, 'blank', 'must not be blank');
  else if (value.length > max) errors.add(field, 'too_long', `must be at most ${max} characters`);
  return value;
}

/** Optional text: null or blank means unset; a PATCH clears with an empty string. */
export function optionalText(
  errors: FieldErrors,
  field: string,
  raw: string | null | undefined,
  max: number,
): string | null {
  if (raw === null || raw === undefined) return null;
  const value = raw.trim();
  if (value === '') return null;
  if (value.length > max) errors.add(field, 'too_long', `must be at most ${max} characters`);
  return value;
}

export function cron(errors: FieldErrors, raw: string | null | undefined): string | null {
  const value = optionalText(errors, 'cron', raw, 100);
  if (value !== null && value.length <= 100) {
    const problem = validateCron(value);
    if (problem) errors.add('cron', 'invalid', problem);
  }
  return value;
}

export function timezone(errors: FieldErrors, raw: string | null | undefined): string | null {
  const value = optionalText(errors, 'timezone', raw, 100);
  if (value !== null && value.length <= 100 && !isValidTimezone(value))
    errors.add('timezone', 'invalid', 'is not a known IANA timezone');
  return value;
}

export function domains(errors: FieldErrors, raw: string[]): string[] {
  if (raw.length > 100) {
    errors.add('allowedDomains', 'too_long', 'must have at most 100 items');
    return raw;
  }
  const out: string[] = [];
  raw.forEach((entry, i) => {
    const d = normalizeDomain(entry);
    const problem = domainError(d);
    if (problem) errors.add(`allowedDomains[${i}]`, 'invalid', problem);
    else if (!out.includes(d)) out.push(d);
  });
  return out;
}

export function limits(errors: FieldErrors, raw: LimitOverrides): LimitOverrides {
  const out: LimitOverrides = {};
  for (const key of Object.keys(limitBounds) as Array<keyof typeof limitBounds>) {
    const value = raw[key];
    if (value === undefined) continue;
    const b: { minimum: number; maximum?: number } = limitBounds[key];
    const integer = key !== 'maxCostUsd' && key !== 'cpus';
    if (!Number.isFinite(value) || (integer && !Number.isInteger(value))) {
      errors.add(`limits.${key}`, 'invalid', integer ? 'must be a whole number' : 'must be a number');
    } else if (value < b.minimum || (b.maximum !== undefined && value > b.maximum)) {
      errors.add(
        `limits.${key}`,
        'out_of_range',
        b.maximum === undefined ? `must be at least ${b.minimum}` : `must be between ${b.minimum} and ${b.maximum}`,
      );
    } else {
      out[key] = value;
    }
  }
  return out;
}

function ioFields(errors: FieldErrors, field: string, list: IOField[] | undefined): IOField[] | undefined {
  if (!list) return list;
  const seen = new Set<string>();
  return list.map((f, i) => {
    const name = f.name.trim();
    if (name === '') errors.add(`${field}[${i}].name`, 'blank', 'must not be blank');
    else if (seen.has(name)) errors.add(field, 'duplicate', `has more than one field named "${name}"`);
    seen.add(name);
    return { ...f, name };
  });
}

export function spec(errors: FieldErrors, raw: Spec): Spec {
  const out: Spec = { ...raw };
  const inputs = ioFields(errors, 'spec.inputs', raw.inputs);
  const outputs = ioFields(errors, 'spec.outputs', raw.outputs);
  if (inputs) out.inputs = inputs;
  if (outputs) out.outputs = outputs;
  return out;
}

export type { JobFields, JobPatch };
