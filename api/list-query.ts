import { DomainError, FieldErrors } from '../domain/decider.js';
import { bounds } from '../schemas/common.js';
import type { FindOptions, Search, Sort } from '../store/document-store.js';

export interface ListRules {
  /** API sort key → document field. */
  sortKeys: Record<string, string>;
  /** Default sort, in the API's syntax (`name`, `-queuedAt`). */
  defaultSort: string;
  searchFields: string[];
}

export interface ListQueryInput {
  page?: number;
  pageSize?: number;
  sort?: string;
  search?: string;
}

export interface ParsedList {
  page: number;
  pageSize: number;
  find: FindOptions;
  search: Search | undefined;
}

/** Page from 1, pageSize 1..100, up to three sort keys with `-`, literal search; id breaks ties (docs/api.md). */
export function parseListQuery(q: ListQueryInput, rules: ListRules): ParsedList {
  const errors = new FieldErrors();
  const page = q.page ?? 1;
  const pageSize = q.pageSize ?? 25;
  // The schema bounds page too; checked again here so no caller's offset can leave the exact integers.
  if (!Number.isInteger(page) || page < 1 || page > bounds.page)
    errors.add('page', 'out_of_range', `must be between 1 and ${bounds.page}`);
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100)
    errors.add('pageSize', 'out_of_range', 'must be between 1 and 100');

  const sort: Sort = [];
  const keys = (q.sort ?? rules.defaultSort)
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  if (keys.length > 3) errors.add('sort', 'too_long', 'takes at most three keys');
  for (const raw of keys.slice(0, 3)) {
    const desc = raw.startsWith('-');
    const key = desc ? raw.slice(1) : raw;
    // Own keys only: `constructor` or `toString` would otherwise find Object.prototype's members (a 500 the fuzz found).
    const field = Object.hasOwn(rules.sortKeys, key) ? rules.sortKeys[key] : undefined;
    if (!field) {
      errors.add('sort', 'invalid', `"${key}" is not a sort key; use one of ${Object.keys(rules.sortKeys).join(', ')}`);
      continue;
    }
    if (sort.some(([f]) => f === field)) {
      errors.add('sort', 'duplicate', `"${key}" is given twice`);
      continue;
    }
    sort.push([field, desc ? -1 : 1]);
  }
  const text = q.search?.trim() ?? '';
  if (text.length > 200) errors.add('search', 'too_long', 'must be at most 200 characters');
  errors.throwIfAny();
  const search = text === '' ? undefined : { fields: rules.searchFields, text };
  return {
    page,
    pageSize,
    search,
    find: {
      sort: [...sort, ['_id', 1]].slice(0, Math.max(3, sort.length)) as Sort,
      skip: (page - 1) * pageSize,
      limit: pageSize,
      search,
    },
  };
}

/** Comma-separated filter values, each checked against the allowed set. */
export function parseCsvFilter<T extends string>(
  field: string,
  raw: string | undefined,
  allowed: readonly T[],
): T[] | null {
  if (raw === undefined || raw.trim() === '') return null;
  const values = raw
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);
  const bad = values.filter((v) => !allowed.includes(v as T));
  if (bad.length > 0) {
    throw DomainError.validation([
      { field, code: 'invalid', message: `must be one of ${allowed.join(', ')} (got ${bad.join(', ')})` },
    ]);
  }
  return values as T[];
}
