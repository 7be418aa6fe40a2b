import Type, { type Static } from 'typebox';

/** One key of a job's state (docs/jobs.md, "State": key 1..200 characters, value up to 1 MiB). */
export const StateEntryDto = Type.Object(
  {
    key: Type.String(),
    value: Type.String(),
    size: Type.Integer({
      description: 'Bytes the key and the value take in UTF-8; counts toward the 16 MiB a job may keep',
    }),
    updatedAt: Type.Integer({ description: 'Unix ms of the last write' }),
  },
  { $id: 'StateEntryDto', additionalProperties: false },
);
export type StateEntryDto = Static<typeof StateEntryDto>;

export const StateListDto = Type.Object(
  { items: Type.Array(StateEntryDto, { description: 'Every key of the job, sorted by key (at most 1,000)' }) },
  { $id: 'StateListDto', additionalProperties: false },
);
export type StateListDto = Static<typeof StateListDto>;

export const StateKeyParams = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 100 }),
    key: Type.String({ minLength: 1, maxLength: 200, description: 'The state key, URL-encoded as one path segment' }),
  },
  { additionalProperties: false },
);
export type StateKeyParams = Static<typeof StateKeyParams>;

export const StateSetBody = Type.Object(
  // The 1 MiB rule is in bytes and the domain words it (too_large); this bound only caps what is read at all.
  {
    value: Type.String({
      maxLength: 4 * 1024 * 1024,
      description: 'Up to 1 MiB in UTF-8. A job keeps at most 1,000 keys and 16 MiB of keys and values.',
    }),
  },
  { $id: 'StateSetBody', additionalProperties: false },
);
export type StateSetBody = Static<typeof StateSetBody>;
