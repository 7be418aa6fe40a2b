/** A server-sent events stream read as a client would, kept whole as text and parsed into messages on demand. */
export interface SseReader {
  text(): string;
  messages(): Array<{ event: string; id: string | null; data: string }>;
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
  close(): void;
}

export async function openSse(url: string, headers: Record<string, string>): Promise<SseReader> {
  const abort = new AbortController();
  const res = await fetch(url, { headers, signal: abort.signal });
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${await res.text()}`);
  let text = '';
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const ended = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        text += decoder.decode(value, { stream: true });
      }
    } catch {
      // closed by the client
    }
  })();
  return {
    text: () => text,
    // The text after the last blank line is a message still arriving.
    messages: () =>
      text
        .split('\n\n')
        .slice(0, -1)
        .filter((block) => block.trim() !== '' && !block.startsWith(':'))
        .map((block) => {
          const field = (name: string) =>
            block
              .split('\n')
              .filter((l) => l.startsWith(`${name}:`))
              .map((l) => l.slice(name.length + 1).trimStart())
              .join('\n');
          return { event: field('event') || 'message', id: field('id') || null, data: field('data') };
        }),
    ended,
    close: () => abort.abort(),
  };
}
