import type { Principal } from '../app/principal.js';

export type { Principal };

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}
