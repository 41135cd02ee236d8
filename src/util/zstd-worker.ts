/**
 * The worker thread of zstd-thread.ts: compresses a slot of the shared memory it is given into the slot's
 * output, at level 1, and answers with the frame's size. Nothing is allocated per stage: input and output
 * stay in the shared memory, so the thread's heap does not grow with the bytes it compresses.
 */
import { parentPort, workerData } from 'node:worker_threads';
import binding from 'zstd-napi/binding.js';

export interface ZstdWorkerData {
  memory: SharedArrayBuffer;
  /** Bytes of input a slot takes; its output follows, outBytes long. */
  inBytes: number;
  outBytes: number;
  level: number;
}

export interface ZstdRequest {
  id: number;
  slot: number;
  length: number;
}

export type ZstdAnswer = { id: number; size: number } | { id: number; failure: string };

const { memory, inBytes, outBytes, level } = workerData as ZstdWorkerData;
const cctx = new binding.CCtx();

parentPort?.on('message', ({ id, slot, length }: ZstdRequest) => {
  let answer: ZstdAnswer;
  try {
    const at = slot * (inBytes + outBytes);
    const input = new Uint8Array(memory, at, length);
    const output = new Uint8Array(memory, at + inBytes, outBytes);
    answer = { id, size: cctx.compress(output, input, level) };
  } catch (e) {
    answer = { id, failure: (e as Error).message };
  }
  parentPort!.postMessage(answer);
});
