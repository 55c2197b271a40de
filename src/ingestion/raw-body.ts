import type { IncomingMessage } from 'node:http';
import { AppError, BadRequestError, PayloadTooLargeError } from '../common/errors';
import type { BodyHold } from './intake-budget';

/**
 * Reads the request body as the exact bytes sent, refusing it as soon as it
 * passes `limit`: a declared Content-Length over the limit is refused before a
 * byte is read, a chunked body is cut off mid-stream. Each chunk is taken from
 * `hold` (the budget shared by all requests in flight) before it is kept.
 */
export async function readRawBody(req: IncomingMessage, limit: number, hold?: BodyHold): Promise<Buffer> {
  // Someone consumed the stream already: fail loudly instead of waiting for an 'end' that has passed.
  if (req.readableEnded) throw new BadRequestError('body_already_read', 'the request body was consumed before the route');
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw new PayloadTooLargeError();
  const encoding = req.headers['content-encoding'];
  if (encoding && encoding !== 'identity') {
    throw new BadRequestError('unsupported_content_encoding', 'compressed bodies are not accepted');
  }

  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
    };
    const refuse = (error: AppError) => {
      cleanup();
      req.pause();
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return refuse(new PayloadTooLargeError());
      try {
        hold?.take(chunk.length);
      } catch (error) {
        return refuse(error as AppError);
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(new BadRequestError('body_read_failed', error.message));
    };
    const onAborted = () => onError(new Error('request aborted'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}
