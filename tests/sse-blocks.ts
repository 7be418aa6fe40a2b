/** One message of a server-sent-event stream, its data parsed as JSON. */
export interface SseMessage {
  event: string;
  id: string | null;
  data: unknown;
}

/** Reads a server-sent-event answer to its end, handing over each message as it is complete (comments skipped). */
export async function eachSseMessage(res: Response, onMessage: (message: SseMessage) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of res.body!) {
    buffer += decoder.decode(chunk as Uint8Array, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      if (block.startsWith(':')) continue;
      const field = (name: string) =>
        block
          .split('\n')
          .find((l) => l.startsWith(`${name}: `))
          ?.slice(name.length + 2) ?? null;
      onMessage({ event: field('event') ?? 'message', id: field('id'), data: JSON.parse(field('data') ?? 'null') });
    }
  }
}
