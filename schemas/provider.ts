import Type, { type Static } from 'typebox';
import { Envelope, Nullable, listQueryProperties, type Agrees, type Same } from './common.js';
import type * as domain from '../domain/model-types.js';

export const ProviderKind = Type.Union([Type.Literal('anthropic'), Type.Literal('openai'), Type.Literal('fake')], {
  $id: 'ProviderKind',
});

/** Up to $10,000 per million tokens, far above any listed price, so cost sums stay exact integers. */
const microUsdPerMTok = { minimum: 0, maximum: 10_000_000_000 };

export const Price = Type.Object(
  {
    in: Type.Integer(microUsdPerMTok),
    out: Type.Integer(microUsdPerMTok),
    cacheRead: Type.Integer(microUsdPerMTok),
    cacheWrite: Type.Integer(microUsdPerMTok),
  },
  { $id: 'Price', additionalProperties: false, description: 'micro-USD per 1M tokens' },
);
export const Caps = Type.Object(
  {
    tools: Type.Boolean(),
    parallelTools: Type.Boolean(),
    reasoning: Type.Boolean(),
    jsonSchema: Type.Boolean(),
    promptCache: Type.Boolean(),
    vision: Type.Boolean(),
    context: Type.Integer({ minimum: 1, maximum: 1_000_000_000 }),
  },
  { $id: 'Caps', additionalProperties: false },
);

export const SyncResult = Type.Object(
  { added: Type.Integer(), updated: Type.Integer(), unlisted: Type.Integer(), error: Type.Optional(Type.String()) },
  { $id: 'SyncResult', additionalProperties: false },
);
export type SyncResult = Static<typeof SyncResult>;

export const ProviderDto = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    kind: ProviderKind,
    baseUrl: Nullable(Type.String()),
    hasApiKey: Type.Boolean(),
    createdAt: Type.Integer(),
    syncedAt: Nullable(Type.Integer({ description: 'Last sync, successful or not' })),
    syncError: Nullable(
      Type.String({ description: 'Why the last sync could not read the source; null when it could' }),
    ),
  },
  { $id: 'ProviderDto', additionalProperties: false },
);
export type ProviderDto = Static<typeof ProviderDto>;

export const CreateProviderInputBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    kind: ProviderKind,
    apiKey: Type.Optional(Type.String({ maxLength: 1000 })),
    baseUrl: Type.Optional(Type.String({ maxLength: 500, pattern: '^https?://' })),
  },
  { $id: 'CreateProviderInputBody', additionalProperties: false },
);
export const PatchProviderInputBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    apiKey: Type.Optional(Type.String({ maxLength: 1000, description: 'Empty removes the key' })),
    baseUrl: Type.Optional(Type.String({ maxLength: 500, description: 'Empty removes the base URL' })),
  },
  { $id: 'PatchProviderInputBody', additionalProperties: false },
);
export const TestProviderInputBody = Type.Object(
  { modelId: Type.String({ minLength: 1, maxLength: 100 }) },
  { $id: 'TestProviderInputBody', additionalProperties: false },
);
export const TestProviderOutputBody = Type.Object(
  {
    ok: Type.Boolean(),
    latencyMs: Type.Integer(),
    reply: Type.Optional(Type.String()),
    error: Type.Optional(Type.String()),
  },
  { $id: 'TestProviderOutputBody', additionalProperties: false },
);
export const ModelsEnabledInputBody = Type.Object(
  { enabled: Type.Boolean() },
  { $id: 'ModelsEnabledInputBody', additionalProperties: false },
);
export const ModelsEnabledOutputBody = Type.Object(
  { changed: Type.Integer({ description: 'How many models changed' }) },
  { $id: 'ModelsEnabledOutputBody', additionalProperties: false },
);
export const CreateProviderOutputBody = Type.Object(
  { id: Type.String(), sync: SyncResult },
  { $id: 'CreateProviderOutputBody', additionalProperties: false },
);

export const ModelDto = Type.Object(
  {
    id: Type.String(),
    providerId: Type.String(),
    providerName: Type.String(),
    providerKind: ProviderKind,
    model: Type.String(),
    label: Nullable(Type.String()),
    price: Price,
    contextWindow: Type.Integer(),
    caps: Caps,
    enabled: Type.Boolean(),
    synced: Type.Boolean(),
    followCatalog: Type.Boolean(),
    unlistedAt: Nullable(Type.Integer()),
  },
  { $id: 'ModelDto', additionalProperties: false },
);
export type ModelDto = Static<typeof ModelDto>;
export const ModelListEnvelope = Envelope(ModelDto, 'ModelListEnvelope');

export const CreateModelInputBody = Type.Object(
  {
    providerId: Type.String({ minLength: 1, maxLength: 100 }),
    model: Type.String({ minLength: 1, maxLength: 200 }),
    price: Price,
    caps: Caps,
    label: Type.Optional(Type.String({ maxLength: 100 })),
  },
  { $id: 'CreateModelInputBody', additionalProperties: false },
);
export const PatchModelInputBody = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    label: Type.Optional(Type.String({ maxLength: 100 })),
    price: Type.Optional(Price),
    caps: Type.Optional(Caps),
    followCatalog: Type.Optional(
      Type.Boolean({ description: 'Editing label, price or caps turns it off unless given' }),
    ),
  },
  { $id: 'PatchModelInputBody', additionalProperties: false },
);

export const CatalogEntryDto = Type.Object(
  { model: Type.String(), label: Type.String(), price: Price, caps: Caps },
  { $id: 'CatalogEntryDto', additionalProperties: false },
);

export const FakeResponse = Type.Object(
  {
    text: Type.Optional(Type.String({ maxLength: 100_000 })),
    reasoning: Type.Optional(Type.String({ maxLength: 100_000 })),
    toolCalls: Type.Optional(
      Type.Array(
        Type.Object(
          { name: Type.String({ minLength: 1, maxLength: 200 }), args: Type.Unknown() },
          { additionalProperties: false },
        ),
        { maxItems: 100 },
      ),
    ),
    stop: Type.Optional(Type.String({ maxLength: 50 })),
    usage: Type.Optional(
      Type.Object(
        {
          input: Type.Integer({ minimum: 0, maximum: 1_000_000_000 }),
          output: Type.Integer({ minimum: 0, maximum: 1_000_000_000 }),
        },
        { additionalProperties: false },
      ),
    ),
    delayMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 600_000 })),
    error: Type.Optional(Type.String({ maxLength: 2000 })),
    errorStatus: Type.Optional(Type.Integer({ minimum: 100, maximum: 599 })),
  },
  { $id: 'FakeResponse', additionalProperties: false },
);
export const FakeScriptBody = Type.Object(
  { responses: Type.Array(FakeResponse, { maxItems: 1000 }), reset: Type.Optional(Type.Boolean()) },
  { $id: 'FakeScriptBody', additionalProperties: false },
);

export const ProviderListQuery = Type.Object({ ...listQueryProperties }, { additionalProperties: false });

// The API carries the domain's price and capabilities exactly (docs/events.md, "Stored shapes").
export type ProviderSchemasAgree = [
  Agrees<Same<Static<typeof Price>, domain.Price>>,
  Agrees<Same<Static<typeof Caps>, domain.Caps>>,
];
