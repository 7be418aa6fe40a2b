import type { FindOptions, Search } from '../../store/document-store.js';

/** One page of a list as the API asked for it: sort, skip and limit, and the literal search if any. */
export interface PageRequest {
  find: FindOptions;
  search: Search | undefined;
}

export interface Page<T> {
  items: T[];
  total: number;
}
