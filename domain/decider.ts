/**
 * The decider pattern: an aggregate is its initial state, a fold (`evolve`) and a pure decision (`decide`).
 * Nothing here touches I/O; ids and the clock come in through commands.
 */

/** An event as a decider produces it: metadata is attached by the command handler. */
export interface DomainEvent<Type extends string = string, Data = unknown> {
  type: Type;
  data: Data;
}

export interface Decider<Command, Event extends DomainEvent, State> {
  initialState: State;
  evolve(state: State, event: Event): State;
  /** Returns the events the command produces, or throws `DomainError`. An empty array means nothing to do. */
  decide(command: Command, state: State): Event[];
}

export interface FieldError {
  field: string;
  code: string;
  message: string;
}

export type DomainErrorCode =
  | 'validation_failed'
  | 'not_found'
  | 'conflict'
  | 'forbidden'
  | 'invalid_token'
  | 'not_signed_in'
  | 'unsupported'
  | 'rate_limited';

/** A refusal with a code the API answers as it is, with the HTTP status the code stands for (`api/errors.ts`). */
export class DomainError extends Error {
  constructor(
    readonly code: DomainErrorCode,
    message: string,
    readonly fields: FieldError[] | null = null,
  ) {
    super(message);
    this.name = 'DomainError';
  }

  static validation(fields: FieldError[]): DomainError {
    const first = fields[0];
    const message = fields.length === 1 && first ? `${first.field} ${first.message}` : 'Some fields are not valid';
    return new DomainError('validation_failed', message, fields);
  }

  static notFound(what: string): DomainError {
    return new DomainError('not_found', `${what} not found`);
  }
}

/** Collects field errors so one request reports every failing field at once. */
export class FieldErrors {
  readonly list: FieldError[] = [];
  add(field: string, code: string, message: string): void {
    this.list.push({ field, code, message });
  }
  throwIfAny(): void {
    if (this.list.length > 0) throw DomainError.validation(this.list);
  }
}
