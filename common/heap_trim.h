// Handing freed heap back to the system after a phase that freed far more than what follows keeps
// (a plan's expansion, a store's read-back; docs/SCALE.md).
// Thread-safety: safe to call from any thread, concurrently.
#pragma once

namespace am {

// glibc's malloc_trim(0). A no-op where the heap is not glibc's: other C libraries, and builds
// under AddressSanitizer, whose allocator replaces malloc. There glibc's arenas are never set up
// before the first malloc_trim, and two threads trimming at once race in glibc's lazy set-up: one
// reads the main arena before the other has given it a top chunk (a SEGV at address 0x8).
void release_free_heap() noexcept;

// Whether release_free_heap() hands anything back in this build (false where it is a no-op).
bool release_free_heap_is_effective() noexcept;

}  // namespace am
