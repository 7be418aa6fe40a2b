import { streams } from '../domain/streams.js';
import { storedFields } from './doc-value.js';
import type { ProviderKind } from '../domain/provider.js';
import type { ModelDto } from '../schemas/provider.js';
import type { Doc, DocValue } from '../store/document-store.js';
import type { RecordedEvent } from '../store/event-store.js';
import type { DocOp, Projector } from './projector.js';

export interface ProviderDoc extends Doc {
  workspaceId: string;
  name: string;
  kind: ProviderKind;
  baseUrl: string | null;
  /** Sealed with the instance key; never part of a DTO. */
  apiKeySealed: string | null;
  createdAt: number;
  sortName: string;
  /** Set by the first sync; a fake provider never syncs. */
  syncedAt?: number;
  syncError?: string | null;
}

export interface ModelDoc extends Doc, Omit<ModelDto, 'id' | 'price' | 'caps'> {
  workspaceId: string;
  price: ModelDto['price'] & { [k: string]: DocValue };
  caps: ModelDto['caps'] & { [k: string]: DocValue };
}

export interface SettingsDoc extends Doc {
  [key: string]: DocValue | undefined;
}

export const providersCollection = 'providers';
export const modelsCollection = 'models';
export const settingsCollection = 'settings';

export const providersProjector: Projector = {
  name: 'providers',
  version: 1,
  collections: [providersCollection, modelsCollection, settingsCollection],
  indexes: [
    {
      collection: providersCollection,
      keys: [
        ['workspaceId', 1],
        ['sortName', 1],
      ],
    },
    {
      collection: modelsCollection,
      keys: [
        ['workspaceId', 1],
        ['model', 1],
      ],
    },
    { collection: modelsCollection, keys: [['providerId', 1]] },
  ],
  categories: [streams.settings, streams.provider],
  project(recorded: RecordedEvent): DocOp[] {
    const settings = streams.settings.decode(recorded);
    if (settings) {
      return [
        {
          kind: 'update',
          collection: settingsCollection,
          filter: { _id: settings.key },
          update: { $set: storedFields(settings.event.data.changes) },
          upsert: true,
        },
      ];
    }
    const decoded = streams.provider.decode(recorded);
    if (!decoded) return [];
    const { key: providerId, event: e } = decoded;
    switch (e.type) {
      case 'ProviderCreated': {
        const d = e.data;
        return [
          {
            kind: 'update',
            collection: providersCollection,
            filter: { _id: providerId },
            update: {
              $set: {
                workspaceId: d.workspaceId,
                name: d.name,
                sortName: d.name.toLowerCase(),
                kind: d.kind,
                baseUrl: d.baseUrl,
                apiKeySealed: d.apiKeySealed,
                createdAt: d.createdAt,
              },
            },
            upsert: true,
          },
        ];
      }
      case 'ProviderUpdated': {
        const set: Record<string, DocValue> = { ...(e.data as Record<string, DocValue>) };
        if (e.data.name !== undefined) {
          set.sortName = e.data.name.toLowerCase();
          return [
            { kind: 'update', collection: providersCollection, filter: { _id: providerId }, update: { $set: set } },
            {
              kind: 'update',
              collection: modelsCollection,
              filter: { providerId },
              update: { $set: { providerName: e.data.name } },
              many: true,
            },
          ];
        }
        return [
          { kind: 'update', collection: providersCollection, filter: { _id: providerId }, update: { $set: set } },
        ];
      }
      case 'ProviderDeleted':
        return [
          { kind: 'delete', collection: providersCollection, filter: { _id: providerId } },
          { kind: 'delete', collection: modelsCollection, filter: { providerId } },
        ];
      case 'ModelAdded': {
        const { modelId, ...m } = e.data;
        return [
          {
            kind: 'derive',
            collection: modelsCollection,
            async derive(docs) {
              const p = await docs.collection<ProviderDoc>(providersCollection).findOne({ _id: providerId });
              if (!p) return [];
              const doc: Record<string, DocValue> = {
                ...storedFields(m),
                providerId,
                workspaceId: p.workspaceId,
                providerName: p.name,
                providerKind: p.kind,
                contextWindow: m.caps.context,
                unlistedAt: null,
              };
              return [
                {
                  kind: 'update',
                  collection: modelsCollection,
                  filter: { _id: modelId },
                  update: { $set: doc },
                  upsert: true,
                },
              ];
            },
          },
        ];
      }
      case 'ModelChanged': {
        const { modelId, ...change } = e.data;
        const set: Record<string, DocValue> = { ...(change as Record<string, DocValue>) };
        if (change.caps) set.contextWindow = change.caps.context;
        return [{ kind: 'update', collection: modelsCollection, filter: { _id: modelId }, update: { $set: set } }];
      }
      case 'ProviderSynced':
        return [
          {
            kind: 'update',
            collection: providersCollection,
            filter: { _id: providerId },
            update: { $set: { syncError: e.data.error, syncedAt: e.data.at } },
          },
        ];
      case 'ModelRemoved':
        return [{ kind: 'delete', collection: modelsCollection, filter: { _id: e.data.modelId } }];
      default:
        return [];
    }
  },
};
