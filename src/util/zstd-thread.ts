/**
 * zstd compression on a thread of its own, beside the event loop, as gzip's runs on libuv's pool (zstd-napi
 * compresses synchronously, on the caller's thread). A stage is copied into a slot of memory shared with
 * the thread, compressed there into the slot's output, and copied out: no buffer crosses between the
 * threads, so neither heap grows with the bytes compressed. The thread starts on first use, never keeps
 * the process alive, and stops after a while idle. Input larger than a slot is not taken (the caller
 * compresses it itself), nor is any once the thread has failed.
 */
import { Worker } from 'node:worker_threads';
import binding from 'zstd-napi/binding.js';
import type { ZstdAnswer, ZstdRequest, ZstdWorkerData } from './zstd-worker.js';

// Run from the TypeScript sources (the tests), the worker is the compiled one: a worker runs JavaScript only.
const WORKER_URL = import.meta.url.endsWith('.ts')
  ? new URL('../../dist/src/util/zstd-worker.js', import.meta.url)
  : new URL('./zstd-worker.js', import.meta.url);

export interface ZstdThreadOptions {
  /** Stages compressing at once; more wait for a slot. */
  slots: number;
  /** The largest input a slot takes. */
  slotBytes: number;
  level: number;
  /** The thread stops after this long without a stage. */
  idleMs: number;
  /** The worker's script (tests give one that fails). */
  workerUrl?: URL;
}

interface Job {
  data: Uint8Array;
  resolve: (out: Buffer) => void;
  reject: (e: Error) => void;
}

export class ZstdThread {
  private worker: Worker | undefined;
  private memory: SharedArrayBuffer | undefined;
  private readonly outBytes: number;
  private readonly free: number[] = [];
  private readonly busy = new Map<number, { slot: number; job: Job }>();
  private readonly waiting: Job[] = [];
  private seq = 0;
  private idle: NodeJS.Timeout | undefined;
  /** Why the thread can no longer be used, once it failed. */
  failed: Error | undefined;

  constructor(private readonly o: ZstdThreadOptions) {
    this.outBytes = binding.compressBound(o.slotBytes);
  }

  /** Whether the thread is running (tests). */
  get running(): boolean {
    return this.worker !== undefined;
  }

  /** Whether `data` is taken: small enough for a slot, and the thread has not failed. */
  takes(data: Uint8Array): boolean {
    return data.length <= this.o.slotBytes && !this.failed;
  }

  /** One zstd frame of `data`, in memory of its own. */
  compress(data: Uint8Array): Promise<Buffer> {
    if (!this.takes(data))
      return Promise.reject(this.failed ?? new Error(`zstd thread: ${data.length} bytes exceed a slot`));
    return new Promise((resolve, reject) => {
      this.waiting.push({ data, resolve, reject });
      this.next();
    });
  }

  private next(): void {
    clearTimeout(this.idle);
    while (this.waiting.length > 0 && !this.failed) {
      let worker: Worker;
      try {
        worker = this.worker ?? this.start();
      } catch (e) {
        return this.fail(new Error(`zstd thread could not start: ${(e as Error).message}`));
      }
      const slot = this.free.pop();
      if (slot === undefined) return;
      const job = this.waiting.shift()!;
      const id = ++this.seq;
      new Uint8Array(this.memory!, slot * (this.o.slotBytes + this.outBytes), job.data.length).set(job.data);
      this.busy.set(id, { slot, job });
      if (this.busy.size === 1) worker.ref();
      worker.postMessage({ id, slot, length: job.data.length } satisfies ZstdRequest);
    }
  }

  private start(): Worker {
    const memory = new SharedArrayBuffer(this.o.slots * (this.o.slotBytes + this.outBytes));
    const worker = new Worker(this.o.workerUrl ?? WORKER_URL, {
      workerData: {
        memory,
        inBytes: this.o.slotBytes,
        outBytes: this.outBytes,
        level: this.o.level,
      } satisfies ZstdWorkerData,
      // It holds no data of its own: a small heap, so the thread costs little resident memory.
      resourceLimits: { maxOldGenerationSizeMb: 8, maxYoungGenerationSizeMb: 1 },
    });
    worker.unref();
    worker.on('message', (a: ZstdAnswer) => this.answered(worker, a));
    worker.on('error', (e) => worker === this.worker && this.fail(new Error(`zstd thread failed: ${e.message}`)));
    worker.on('exit', (code) => worker === this.worker && this.fail(new Error(`zstd thread exited (${code})`)));
    this.memory = memory;
    this.free.length = 0;
    for (let s = this.o.slots - 1; s >= 0; s--) this.free.push(s);
    this.worker = worker;
    return worker;
  }

  private answered(worker: Worker, a: ZstdAnswer): void {
    const entry = this.busy.get(a.id);
    if (worker !== this.worker || !entry) return;
    this.busy.delete(a.id);
    if ('size' in a) {
      const at = entry.slot * (this.o.slotBytes + this.outBytes) + this.o.slotBytes;
      entry.job.resolve(Buffer.from(new Uint8Array(this.memory!, at, a.size)));
    } else {
      entry.job.reject(new Error(`zstd: ${a.failure}`));
    }
    this.free.push(entry.slot);
    if (this.busy.size === 0) worker.unref();
    if (this.waiting.length > 0) return this.next();
    if (this.busy.size === 0) {
      this.idle = setTimeout(() => this.stop(), this.o.idleMs);
      this.idle.unref();
    }
  }

  /** Stops the thread (idle); the next stage starts it again. */
  private stop(): void {
    const worker = this.worker;
    if (!worker || this.busy.size > 0) return;
    this.worker = undefined;
    this.memory = undefined;
    void worker.terminate();
  }

  /** The thread failed: what it held and what waits is refused, and later stages are not taken. */
  private fail(e: Error): void {
    this.failed = e;
    const worker = this.worker;
    this.worker = undefined;
    void worker?.terminate();
    const jobs = [...[...this.busy.values()].map((b) => b.job), ...this.waiting.splice(0)];
    this.busy.clear();
    for (const job of jobs) job.reject(e);
  }
}
