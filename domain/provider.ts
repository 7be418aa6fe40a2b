import { DomainError, type Decider, type DomainEvent } from './decider.js';
import type { Caps, Price } from './model-types.js';
import { streamCategory } from './stream.js';

export type ProviderKind = 'anthropic' | 'openai' | 'fake';

export interface ModelSpec {
  modelId: string;
  model: string;
  label: string | null;
  price: Price;
  caps: Caps;
  synced: boolean;
  followCatalog: boolean;
}

/** A provider and its models are one aggregate: models never outlive their provider. */
export type ProviderEvent =
  | DomainEvent<
      'ProviderCreated',
      {
        providerId: string;
        workspaceId: string;
        name: string;
        kind: ProviderKind;
        baseUrl: string | null;
        apiKeySealed: string | null;
        createdAt: number;
      }
    >
  | DomainEvent<'ProviderUpdated', { name?: string; baseUrl?: string | null; apiKeySealed?: string | null }>
  | DomainEvent<'ProviderDeleted', { deletedAt: number }>
  | DomainEvent<'ModelAdded', ModelSpec & { enabled: boolean }>
  | DomainEvent<
      'ModelChanged',
      {
        modelId: string;
        enabled?: boolean;
        label?: string | null;
        price?: ModelSpec['price'];
        caps?: ModelSpec['caps'];
        followCatalog?: boolean;
        synced?: boolean;
        unlistedAt?: number | null;
      }
    >
  | DomainEvent<
      'ProviderSynced',
      { result: { added: number; updated: number; unlisted: number }; error: string | null; at: number }
    >
  | DomainEvent<'ModelRemoved', { modelId: string }>;

export type ProviderState =
  | { status: 'none' }
  | {
      status: 'active' | 'deleted';
      providerId: string;
      workspaceId: string;
      kind: ProviderKind;
      name: string;
      models: Array<ModelSpec & { enabled: boolean }>;
    };

export type ProviderCommand =
  | {
      type: 'CreateProvider';
      providerId: string;
      workspaceId: string;
      name: string;
      kind: ProviderKind;
      baseUrl: string | null;
      apiKeySealed: string | null;
      models: ModelSpec[];
      now: number;
    }
  | { type: 'UpdateProvider'; name?: string; baseUrl?: string | null; apiKeySealed?: string | null }
  | { type: 'DeleteProvider'; now: number }
  | { type: 'AddModel'; spec: ModelSpec }
  | {
      type: 'ChangeModel';
      modelId: string;
      enabled?: boolean;
      label?: string | null;
      price?: ModelSpec['price'];
      caps?: ModelSpec['caps'];
      followCatalog?: boolean;
    }
  /** Every model of the provider on or off; answers only the models that changed. */
  | { type: 'SetModelsEnabled'; enabled: boolean }
  | { type: 'RemoveModel'; modelId: string }
  /** What the provider's source lists now (docs/models.md, "Sources and sync"); null when it could not be read. */
  | {
      type: 'SyncModels';
      listed: Array<Omit<ModelSpec, 'modelId' | 'synced' | 'followCatalog'>> | null;
      error: string | null;
      newIds: () => string;
      now: number;
    };

export const providerStream = streamCategory<ProviderEvent>('provider');
export const providerStreamId = providerStream.id;

/** A base URL as stored: trimmed, without trailing slashes, http or https only; empty means none. */
export function normalizeBaseUrl(raw: string | null | undefined): string | null {
  const text = raw?.trim().replace(/\/+$/, '') ?? '';
  if (text === '') return null;
  let ok = false;
  try {
    const u = new URL(text);
    ok =
      (u.protocol === 'http:' || u.protocol === 'https:') &&
      u.hostname !== '' &&
      u.username === '' &&
      u.password === '';
  } catch {
    ok = false;
  }
  if (!ok)
    throw DomainError.validation([
      { field: 'baseUrl', code: 'invalid', message: 'must be an http or https URL without credentials' },
    ]);
  return text;
}

export const providerDecider: Decider<ProviderCommand, ProviderEvent, ProviderState> = {
  initialState: { status: 'none' },
  evolve(state, event) {
    if (event.type === 'ProviderCreated') {
      const d = event.data;
      return {
        status: 'active',
        providerId: d.providerId,
        workspaceId: d.workspaceId,
        kind: d.kind,
        name: d.name,
        models: [],
      };
    }
    if (state.status === 'none') return state;
    switch (event.type) {
      case 'ProviderUpdated':
        return { ...state, name: event.data.name ?? state.name };
      case 'ProviderDeleted':
        return { ...state, status: 'deleted' };
      case 'ModelAdded':
        return { ...state, models: [...state.models, event.data] };
      case 'ModelChanged': {
        const { modelId, ...change } = event.data;
        return { ...state, models: state.models.map((m) => (m.modelId === modelId ? { ...m, ...change } : m)) };
      }
      case 'ModelRemoved':
        return { ...state, models: state.models.filter((m) => m.modelId !== event.data.modelId) };
      case 'ProviderSynced':
        return state;
    }
  },
  decide(command, state) {
    if (command.type === 'CreateProvider') {
      if (state.status !== 'none') throw new DomainError('conflict', 'The provider already exists');
      const { type: _t, models, now, ...rest } = command;
      return [
        { type: 'ProviderCreated', data: { ...rest, createdAt: now } },
        ...models.map((m): ProviderEvent => ({ type: 'ModelAdded', data: { ...m, enabled: true } })),
      ];
    }
    if (state.status !== 'active') throw DomainError.notFound('Provider');
    const model = (id: string) => {
      const m = state.models.find((x) => x.modelId === id);
      if (!m) throw DomainError.notFound('Model');
      return m;
    };
    switch (command.type) {
      case 'UpdateProvider': {
        const { type: _t, ...change } = command;
        return Object.keys(change).length ? [{ type: 'ProviderUpdated', data: change }] : [];
      }
      case 'DeleteProvider':
        return [{ type: 'ProviderDeleted', data: { deletedAt: command.now } }];
      case 'AddModel':
        if (state.models.some((m) => m.model === command.spec.model))
          throw new DomainError('conflict', `${command.spec.model} is already a model of this provider`);
        return [{ type: 'ModelAdded', data: { ...command.spec, enabled: true } }];
      case 'ChangeModel': {
        model(command.modelId);
        const { type: _t, ...change } = command;
        // Editing metadata by hand stops the catalog from overwriting it, unless the same edit asks to follow it.
        const edited = command.price !== undefined || command.caps !== undefined || command.label !== undefined;
        const follow = command.followCatalog ?? (edited ? false : undefined);
        const data = { ...change, ...(follow !== undefined ? { followCatalog: follow } : {}) };
        return Object.keys(data).length > 1 ? [{ type: 'ModelChanged', data }] : [];
      }
      case 'SetModelsEnabled':
        return state.models
          .filter((m) => m.enabled !== command.enabled)
          .map((m): ProviderEvent => ({
            type: 'ModelChanged',
            data: { modelId: m.modelId, enabled: command.enabled },
          }));
      case 'RemoveModel':
        model(command.modelId);
        return [{ type: 'ModelRemoved', data: { modelId: command.modelId } }];
      case 'SyncModels':
        return syncEvents(state.models, command);
    }
  },
};

type Listed = Extract<ProviderCommand, { type: 'SyncModels' }>['listed'];
type UnlistedMark = { unlistedAt?: number | null };

/**
 * Sync never deletes: new models are added enabled, hand-added ones the source lists are adopted, returning ones are
 * re-listed, catalog-following ones take the source's metadata, and synced ones the source dropped are unlisted.
 */
function syncEvents(
  models: Array<ModelSpec & { enabled: boolean } & UnlistedMark>,
  command: { listed: Listed; error: string | null; newIds: () => string; now: number },
): ProviderEvent[] {
  if (command.listed === null)
    return [
      {
        type: 'ProviderSynced',
        data: { result: { added: 0, updated: 0, unlisted: 0 }, error: command.error, at: command.now },
      },
    ];
  const events: ProviderEvent[] = [];
  let added = 0;
  let updated = 0;
  let unlisted = 0;
  for (const l of command.listed) {
    const m = models.find((x) => x.model === l.model);
    if (!m) {
      events.push({
        type: 'ModelAdded',
        data: { ...l, modelId: command.newIds(), synced: true, followCatalog: true, enabled: true },
      });
      added++;
      continue;
    }
    const change: Extract<ProviderEvent, { type: 'ModelChanged' }>['data'] = { modelId: m.modelId };
    if (!m.synced) change.synced = true;
    if (m.unlistedAt) change.unlistedAt = null;
    if (
      m.followCatalog &&
      (JSON.stringify(m.price) !== JSON.stringify(l.price) ||
        JSON.stringify(m.caps) !== JSON.stringify(l.caps) ||
        m.label !== l.label)
    ) {
      Object.assign(change, { price: l.price, caps: l.caps, label: l.label });
      updated++;
    }
    if (Object.keys(change).length > 1) events.push({ type: 'ModelChanged', data: change });
  }
  for (const m of models) {
    if (m.synced && !m.unlistedAt && !command.listed.some((l) => l.model === m.model)) {
      events.push({ type: 'ModelChanged', data: { modelId: m.modelId, unlistedAt: command.now } });
      unlisted++;
    }
  }
  events.push({ type: 'ProviderSynced', data: { result: { added, updated, unlisted }, error: null, at: command.now } });
  return events;
}
