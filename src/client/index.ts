// svc-broker/client: the typed HTTP client, the batching producer and the consumer loop (issue 32 point 2). Runs in
// the caller's process; package.json "exports" maps ./client here. Nothing here imports the server's code.
export * from './api.js';
export { Producer, type ProducerOptions } from './producer.js';
export { Consumer, type ConsumerOptions, type ConsumerStats, type MessageHandler } from './consumer.js';
