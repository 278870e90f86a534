/**
 * Compresses response bodies with node:zlib at the configured cost: a body already in memory
 * in one synchronous call (no thread-pool hop, and it stays one buffer for the listener's
 * single write and for the cache), a streamed body through a compressor flushed after every
 * chunk, so that a slow stream (a long list, events) reaches the client as it comes instead
 * of waiting for the compressor's window to fill.
 */
import { pipeline, type Readable } from 'node:stream';
import { brotliCompressSync, constants, createBrotliCompress, createGzip, gzipSync } from 'node:zlib';
import type { CompressionConfig } from '../config/schema/compression.ts';

export type ContentCoding = 'br' | 'gzip';

export interface Encoder {
  buffer(body: Buffer, coding: ContentCoding): Buffer;
  stream(body: Readable, coding: ContentCoding, sizeHint: number | undefined): Readable;
}

export function createEncoder(config: CompressionConfig): Encoder {
  const brotliParams = (sizeHint: number | undefined) => ({
    [constants.BROTLI_PARAM_QUALITY]: config.brotliQuality,
    [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
    ...(sizeHint === undefined ? {} : { [constants.BROTLI_PARAM_SIZE_HINT]: sizeHint }),
  });
  return {
    buffer(body, coding) {
      return coding === 'br'
        ? brotliCompressSync(body, { params: brotliParams(body.length) })
        : gzipSync(body, { level: config.gzipLevel });
    },
    stream(body, coding, sizeHint) {
      const compressor =
        coding === 'br'
          ? createBrotliCompress({ params: brotliParams(sizeHint), flush: constants.BROTLI_OPERATION_FLUSH })
          : createGzip({ level: config.gzipLevel, flush: constants.Z_SYNC_FLUSH });
      // Errors travel both ways: an upstream failure cuts the client's response, a client
      // that went away (the compressor destroyed) stops the upstream body.
      return pipeline(body, compressor, () => {});
    },
  };
}
