#pragma once

namespace Sandbox {

// Tunes the C library's allocator for a client that streams output: called once by the main() of
// every program that follows streams (the desktop, before its first window; sandboxctl), and by
// the benchmarks that measure them, before their first allocation it is meant for.
//
// A flood of output allocates and frees blocks of 64 KiB to a few MiB many times a second: the
// socket's read chunks and the WebSocket frames (QWebSocket reads each message into an array of
// its own), and in the desktop the console's scrollback blocks and its 4 MiB ring of line
// records. glibc by default gives such blocks back to the system (mmap/munmap above a
// threshold, and trims the top of its heap beyond twice that), so the next flood touches fresh
// memory again, a page fault per 4 KiB: on the virtual machines this runs on a fault costs
// 20-40 us, more than the copy it serves (bench_engine's streamed output, runs of 64 MiB: the
// client's CPU 1.3-3.7 ms per MiB in runs with 50-160 faults per MiB, 0.1-0.9 ms with this
// setting, at most 37 faults per MiB in a first flood). Here blocks up to 16 MiB come from the
// heap, and up to 64 MiB of freed memory at its top is kept for the next ones (the cost: after a
// flood the program may hold that much more than it uses; the benchmark's peak RSS is the same,
// 50-53 MiB, with and without it).
// Returns false where the allocator is not glibc's (nothing is changed then).
bool tuneAllocatorForStreams();

} // namespace Sandbox
