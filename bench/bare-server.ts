// The baseline for the list benchmark: a bare fastify route answering fixed bytes, nothing else.
import Fastify from 'fastify';

const body = process.argv[2] ?? '{}';
const app = Fastify({ logger: false });
app.get('/api/jobs', async (_req, reply) => reply.type('application/json; charset=utf-8').send(body));
const address = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${address}\n`);
