#pragma once

namespace Sandbox::Ui {

// Tunes the C library's allocator for a desktop that streams output: called once by main()
// before the first window (and by the benchmarks that measure the desktop's console).
//
// A flood of output allocates and frees blocks of 64 KiB to a few MiB many times a second: the
// socket's read chunks, the WebSocket frames, the console's scrollback blocks and its 4 MiB ring
// of line records. glibc by default gives such blocks back to the system (mmap/munmap above a
// threshold, and trims the top of its heap beyond twice that), so the next flood touches fresh
// memory again, a page fault per 4 KiB: on the virtual machines this runs on a fault costs
// 30-40 us, more than the copy it serves. Here blocks up to 16 MiB come from the heap, and up to
// 64 MiB of freed memory at its top is kept for the next ones (the cost: after a flood the
// desktop may hold that much more than it uses).
// Returns false where the allocator is not glibc's (nothing is changed then).
bool tuneAllocatorForStreams();

} // namespace Sandbox::Ui
