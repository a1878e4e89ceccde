import { type IncomingMessage, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A local alarm webhook receiver (IDPOOL_ALERT_WEBHOOK_URL) that records every JSON POST body. */
export interface WebhookReceiver {
  readonly url: string;
  readonly calls: Record<string, any>[];
  close(): Promise<void>;
}

export async function startReceiver(): Promise<WebhookReceiver> {
  const calls: Record<string, any>[] = [];
  const read = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let body = '';
      req.on('data', (d) => (body += String(d)));
      req.on('end', () => resolve(body));
    });
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await read(req);
      if (req.method === 'POST' && req.headers['content-type'] === 'application/json') calls.push(JSON.parse(body));
      res.writeHead(204).end();
    })();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/idpool?token=receiver-secret`,
    calls,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
