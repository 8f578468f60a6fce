// queen-mq: the Queen broker client and the streams runtime (ESM, no runtime dependencies)
export { Queen, QueueBuilder, Consumer, TransactionBuilder, Kv, Timers, Locks, Lock, uuidv7, ConflationUnsupportedError } from './src/client.js';
export { HttpClient, QueenHttpError } from './src/http.js';
export { Stream, StreamBuildError, compile } from './src/streams/Stream.js';
export { StreamsError, isoToUs, assignWindows } from './src/streams/runner.js';
export { configHashOf, canonicalChain } from './src/streams/configHash.js';
export { tokenBucketGate, slidingWindowGate } from './src/streams/rateLimiter.js';
