// Entry of one broker node. It only sets what must be set before any module starts libuv's thread pool, then
// loads the node (src/node.ts). The pool is shared by every thread of the process: the ingress log's fdatasync and
// the partition workers' segment syncs all run there, so its default size of 4 made the ingress sync that a 202
// waits for queue behind segment syncs.
process.env.UV_THREADPOOL_SIZE ??= '16';
await import('./node.js');
