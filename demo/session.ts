// A signed-in caller of a server started in-process: the demo and the benchmarks drive the public API with it.
import type { RunningServer } from '../server/start.js';

export type Json = Record<string, any>;
export type Call = (method: string, path: string, body?: unknown) => Promise<Json>;

export interface Session {
  call: Call;
  /** The session cookie (`svc_session=…`), for clients of their own (the SSE benchmark's). */
  cookie: string;
}

/** Signs in as `email` through a single-use link; each call answers the JSON body and throws on an error answer. */
export async function signIn(server: RunningServer, email: string): Promise<Session> {
  const link = await server.services.identity.issueSignInLink(email);
  const answer = await fetch(server.url + link, { redirect: 'manual' });
  const cookie = /svc_session=[^;]+/.exec(answer.headers.get('set-cookie') ?? '')?.[0];
  if (!cookie) throw new Error('could not sign in');
  const call: Call = async (method, path, body) => {
    const headers: Record<string, string> =
      body === undefined ? { cookie } : { cookie, 'content-type': 'application/json' };
    const res = await fetch(server.url + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as Json;
    if (res.status >= 400) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  return { call, cookie };
}

/** The fake provider's model as the workspace's agent model; answers the model. */
export async function useFakeModel(call: Call): Promise<Json> {
  await call('POST', '/api/providers', { name: 'Fake', kind: 'fake' });
  const model = (await call('GET', '/api/models')).items[0];
  await call('PATCH', '/api/settings', { agentModelId: model.id });
  return model;
}
