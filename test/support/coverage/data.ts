/**
 * Generated datasets shaped like the docs' samples (apl.md 3.1, 3.2; ai-logs of 3.3), seeded, so the
 * coverage suite computes every expected value from the same events it ingests.
 */
export interface HttpEvent {
  _time: string;
  id: string;
  status: string;
  method: string;
  uri: string;
  req_duration_ms: number;
  resp_body_size_bytes: number;
  resp_header_size_bytes: number;
  content_type: string;
  geo: { city: string; country: string };
  is_tls: boolean;
  server_datacenter: string;
  user_agent: string;
  message?: string;
}

export interface TraceEvent {
  _time: string;
  trace_id: string;
  span_id: string;
  parent_span_id: string;
  name: string;
  kind: string;
  /** Nanoseconds: the docs' timespan field, a number once ingested as JSON. */
  duration: number;
  error: boolean;
  status_code: string;
  service: { name: string };
  events: { name: string; timestamp: number }[];
}

export interface AiEvent {
  _time: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  finish_reason: string;
  messages: { role: string; content: string }[];
}

function rng(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) % 2147483648) / 2147483648;
}

const BASE = Date.UTC(2024, 4, 6);
export const RANGE = { startTime: '2024-05-05T00:00:00Z', endTime: '2024-05-08T00:00:00Z' };

const hex = (r: () => number, n: number) =>
  Array.from({ length: n }, () => '0123456789abcdef'[Math.floor(r() * 16)]).join('');

export function httpEvents(n = 120): HttpEvent[] {
  const r = rng(11);
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
  const cities: [string, string][] = [
    ['Seattle', 'United States'],
    ['Camaquã', 'Brazil'],
    ['Okayama', 'Japan'],
    ['Nevers', 'France'],
    ['New York', 'United States'],
  ];
  return Array.from({ length: n }, (_, i) => {
    const [city, country] = pick(cities);
    return {
      _time: new Date(BASE + i * 7 * 60_000 + i * 123).toISOString(),
      id: `${hex(r, 8)}-${hex(r, 4)}-4${hex(r, 3)}-8${hex(r, 3)}-${hex(r, 12)}`,
      status: pick(['200', '200', '200', '201', '304', '404', '500', '503']),
      method: pick(['GET', 'GET', 'GET', 'POST', 'PUT', 'DELETE']),
      uri: pick(['/api/v1/bank/warn', '/api/v1/messages/back', '/api/v1/textdata/cnfigs', '/api/v2/buy/commit/id/go']),
      req_duration_ms: Math.round(r() * 5000) / 1000 + 0.001,
      resp_body_size_bytes: 1000 + Math.floor(r() * 4000),
      resp_header_size_bytes: 20 + Math.floor(r() * 70),
      content_type: pick(['text/html', 'application/json', 'image/jpeg', 'text/csv']),
      geo: { city, country },
      is_tls: r() < 0.5,
      server_datacenter: pick(['DCA', 'GRU', 'FRA']),
      user_agent: pick([
        'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
        'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/131.0.0.0 Safari/537.36',
      ]),
      ...(i % 4 === 0 ? { message: 'QCD permutations were not solvable in linear time, expected compressed time' } : {}),
    };
  });
}

export function traceEvents(n = 80): TraceEvent[] {
  const r = rng(23);
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
  return Array.from({ length: n }, (_, i) => ({
    _time: new Date(BASE + i * 11 * 60_000).toISOString(),
    trace_id: hex(r, 32),
    span_id: hex(r, 16),
    parent_span_id: i % 3 === 0 ? '' : hex(r, 16),
    name: pick(['oteldemo.CartService/GetCart', 'HTTP GET', 'HTTP POST', 'oteldemo.CheckoutService/PlaceOrder']),
    kind: pick(['server', 'client', 'internal']),
    duration: Math.floor(r() * 50_000_000) + 100_000,
    error: r() < 0.2,
    status_code: pick(['UNSET', 'OK', 'ERROR']),
    service: { name: pick(['frontend', 'cartservice', 'checkoutservice', 'productcatalogservice']) },
    events: i % 2 ? [{ name: 'Enqueued', timestamp: i }, { name: 'Sent', timestamp: i + 1 }] : [],
  }));
}

export function aiEvents(): AiEvent[] {
  const models = ['gpt-4', 'gpt-4o', 'claude-3-opus-20240229'];
  return models.map((model, i) => ({
    _time: new Date(BASE + i * 60_000).toISOString(),
    model,
    input_tokens: 1000 * (i + 1),
    output_tokens: 500 * (i + 1),
    finish_reason: i === 2 ? 'length' : 'stop',
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: `Question ${i}` },
      { role: 'assistant', content: `Answer ${i}` },
    ],
  }));
}
