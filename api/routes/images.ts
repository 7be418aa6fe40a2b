import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { imageStatuses } from '../../domain/image.js';
import type { ImageDoc } from '../../projections/images.js';
import { IdParams } from '../../schemas/common.js';
import {
  ImageDto,
  ImageGetOutputBody,
  ImageIDOutputBody,
  ImageListEnvelope,
  ImageListQuery,
  ImageParams,
} from '../../schemas/image.js';
import { principalOf } from '../auth.js';
import { requestContext } from '../context.js';
import type { AppDeps } from '../deps.js';
import { parseCsvFilter, parseListQuery, type ListRules } from '../list-query.js';

const listRules: ListRules = {
  sortKeys: { createdAt: 'createdAt', status: 'status', sizeBytes: 'sizeBytes' },
  defaultSort: '-createdAt',
  searchFields: ['dockerfileHash', 'ref', 'error'],
};

export function toImageDto(d: ImageDoc): ImageDto {
  return {
    id: d._id,
    dockerfileHash: d.dockerfileHash,
    status: d.status,
    ref: d.ref,
    digest: d.digest,
    baseDigest: d.baseDigest,
    sizeBytes: d.sizeBytes,
    error: d.error,
    createdAt: d.createdAt,
    startedAt: d.startedAt,
    finishedAt: d.finishedAt,
  };
}

/** Job images (docs/design.md): builds of the playbook's Dockerfile, one with its log, and a rebuild. */
export default function imageRoutes(fastify: FastifyInstance, deps: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/api/jobs/:id/images',
    {
      schema: {
        summary: "A job's image builds",
        description: 'Filter `status`; sort keys createdAt (default `-createdAt`), status, sizeBytes.',
        tags: ['images'],
        params: IdParams,
        querystring: ImageListQuery,
        response: { 200: ImageListEnvelope },
      },
    },
    async (request) => {
      const images = deps.queries.forPrincipal(principalOf(request)).images;
      const list = parseListQuery(request.query, listRules);
      const status = parseCsvFilter('status', request.query.status, imageStatuses);
      const { items, total } = await images.list(request.params.id, list, status);
      return { items: items.map(toImageDto), page: list.page, pageSize: list.pageSize, total };
    },
  );

  app.get(
    '/api/jobs/:id/images/:imageId',
    {
      schema: {
        summary: 'One image build, with its Dockerfile and log',
        tags: ['images'],
        params: ImageParams,
        response: { 200: ImageGetOutputBody },
      },
    },
    async (request) => {
      const images = deps.queries.forPrincipal(principalOf(request)).images;
      const image = await images.get(request.params.id, request.params.imageId);
      return { ...toImageDto(image), dockerfile: image.dockerfile, log: await deps.images.logs.read(image._id) };
    },
  );

  app.post(
    '/api/jobs/:id/images/rebuild',
    {
      schema: {
        summary: 'Rebuild the job image',
        description:
          "Queues a fresh build of the playbook's current Dockerfile, resolving its base image again. 422 `unsupported` when the playbook has no Dockerfile or no sandbox backend here can build images.",
        tags: ['images'],
        params: IdParams,
        response: { 202: ImageIDOutputBody },
      },
    },
    async (request, reply) => {
      const workspaceId = principalOf(request).workspaceId;
      const queued = await deps.images.rebuild(requestContext(request), workspaceId, request.params.id);
      await deps.engine.readYourWrites(queued.position);
      return reply.status(202).send({ id: queued.imageId });
    },
  );
}
