/**
 * Realistic nginx-style JSON access-log events (about 350 bytes each), from a seeded generator so every run
 * sees the same data. Shared by the benchmarks.
 */

/** mulberry32: small, fast, seedable. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const METHODS = ['GET', 'GET', 'GET', 'GET', 'GET', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH'];
const ROUTES = [
  '/api/v1/users/{id}',
  '/api/v1/users/{id}/orders',
  '/api/v1/orders/{id}',
  '/api/v1/products/{id}',
  '/api/v1/search?q={q}',
  '/api/v1/cart',
  '/api/v1/checkout',
  '/static/js/app.{h}.js',
  '/static/css/main.{h}.css',
  '/images/products/{id}.jpg',
  '/health',
  '/login',
  '/logout',
  '/',
  '/docs/getting-started',
  '/api/v2/inventory/{id}',
  '/api/v2/recommendations?user={id}',
];
const STATUS = [
  200, 200, 200, 200, 200, 200, 200, 200, 201, 204, 301, 304, 304, 400, 401, 403, 404, 404, 429, 500, 502, 503,
];
const AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_7_1) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
  'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36',
  'curl/8.11.0',
  'python-requests/2.32.3',
  'Go-http-client/2.0',
  'kube-probe/1.31',
  'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
];
const REFERERS = [
  '-',
  '-',
  '-',
  'https://www.example.com/',
  'https://www.google.com/',
  'https://shop.example.com/cart',
];
const HOSTS = ['api.example.com', 'www.example.com', 'shop.example.com'];

export class AccessLogGenerator {
  private readonly r: () => number;
  private timeMs: number;
  private readonly ips: string[];

  constructor(seed = 42, startMs = Date.UTC(2026, 10, 1)) {
    this.r = rng(seed);
    this.timeMs = startMs;
    this.ips = Array.from(
      { length: 5000 },
      () => `${this.int(1, 223)}.${this.int(0, 255)}.${this.int(0, 255)}.${this.int(1, 254)}`,
    );
  }

  private int(lo: number, hi: number): number {
    return lo + Math.floor(this.r() * (hi - lo + 1));
  }

  private pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.r() * xs.length)]!;
  }

  private hex(n: number): string {
    let s = '';
    for (let i = 0; i < n; i++) s += '0123456789abcdef'[Math.floor(this.r() * 16)];
    return s;
  }

  next(): Record<string, unknown> {
    this.timeMs += this.r() * 2; // ~1000 events per second of log time
    const status = this.pick(STATUS);
    const uri = this.pick(ROUTES)
      .replace('{id}', String(this.int(1, 200000)))
      .replace('{q}', this.pick(['shoes', 'red+dress', 'laptop', 'usb-c+cable', 'gift']))
      .replace('{h}', this.hex(8));
    const rt = Math.round(Math.exp(this.r() * 6 - 5) * 1000) / 1000;
    return {
      _time: new Date(this.timeMs).toISOString(),
      remote_addr: this.pick(this.ips),
      request_id: this.hex(16),
      method: this.pick(METHODS),
      uri,
      protocol: this.r() < 0.7 ? 'HTTP/2.0' : 'HTTP/1.1',
      status,
      body_bytes_sent: status === 204 || status === 304 ? 0 : this.int(120, 90000),
      request_time: rt,
      http_referer: this.pick(REFERERS),
      http_user_agent: this.pick(AGENTS),
      host: this.pick(HOSTS),
    };
  }

  /** NDJSON of n events, no trailing newline. */
  ndjson(n: number): string {
    const lines = new Array<string>(n);
    for (let i = 0; i < n; i++) lines[i] = JSON.stringify(this.next());
    return lines.join('\n');
  }
}
