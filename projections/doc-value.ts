import type { DocValue, Scalar } from '../store/document-store.js';

/**
 * A type made only of what a document holds: scalars, arrays and plain objects of them, optional fields included.
 * `unknown` passes: it types values parsed from JSON (run inputs, tool schemas), which are storable by construction.
 */
export type Storable<T> = unknown extends T
  ? T
  : T extends Scalar
    ? T
    : T extends readonly (infer U)[]
      ? readonly Storable<U>[]
      : T extends (...args: never[]) => unknown
        ? never
        : T extends object
          ? { [K in keyof T]: Storable<T[K]> }
          : never;

/**
 * A domain value as a document value. Domain types are interfaces, which TypeScript does not let stand for an index
 * signature, so the conversion is asserted here once; a value that is not storable as it is (a function, a class
 * instance with methods) asks for a second argument of type `never` and so does not compile.
 */
export function stored<T>(value: T, ..._notStorable: [T] extends [Storable<T>] ? [] : [never]): DocValue {
  return value as unknown as DocValue;
}

/** A domain record's fields as document fields, to spread into a document; storable as `stored` checks. */
export function storedFields<T extends object>(
  value: T,
  ..._notStorable: [T] extends [Storable<T>] ? [] : [never]
): Record<string, DocValue> {
  return value as unknown as Record<string, DocValue>;
}
